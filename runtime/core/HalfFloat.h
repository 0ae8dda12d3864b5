//===- HalfFloat.h - bf16 and f16 conversions -------------------*- C++ -*-===//
//
// The 16-bit float formats a .mprog buffer may hold, converted to and from
// f32 one element at a time, on the host. f32 -> bf16 rounds to nearest,
// ties to even (what XLA, Eigen and PyTorch do; a NaN stays a quiet NaN);
// f16 uses the compiler's _Float16, whose conversions are IEEE's (ties to
// even, subnormals, infinities). The runtime's kernels and the reference
// interpreter both round through here, so they agree bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CORE_HALFFLOAT_H
#define MESHC_RUNTIME_CORE_HALFFLOAT_H

#include <cstdint>
#include <cstring>

namespace meshc::half {

/// The bf16 nearest to `x` (ties to even), as its bits.
inline uint16_t bf16FromF32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

/// The f32 whose value the bf16 `bits` hold (exact).
inline float f32FromBf16(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float x;
  std::memcpy(&x, &wide, 4);
  return x;
}

/// The f16 nearest to `x` (IEEE: ties to even), as its bits.
inline uint16_t f16FromF32(float x) {
  _Float16 h = static_cast<_Float16>(x);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

/// The f32 whose value the f16 `bits` hold (exact).
inline float f32FromF16(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}

/// `x` rounded to bf16 and back.
inline float roundToBf16(float x) { return f32FromBf16(bf16FromF32(x)); }
/// `x` rounded to f16 and back.
inline float roundToF16(float x) { return f32FromF16(f16FromF32(x)); }

/// dst[i] = dst[i] + src[i] (or the max, with `max`) for i < count, of
/// 16-bit floats whose bits `Load` widens and `Store` rounds: in f32, each
/// result rounded once. What the CPU and MPI collectives reduce them with.
template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void combine(uint16_t *dst, const uint16_t *src, int64_t count, bool max) {
  for (int64_t i = 0; i < count; ++i) {
    float a = Load(dst[i]), b = Load(src[i]);
    dst[i] = Store(max ? (a < b ? b : a) : a + b);
  }
}

} // namespace meshc::half

#endif // MESHC_RUNTIME_CORE_HALFFLOAT_H
