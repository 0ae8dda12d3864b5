//===- ElementFunctions.h - Scalar formulas of the step kernels -*- C++ -*-===//
//
// The element functions of the unary and binary steps (the list is
// ElementFunctions.def) and the other scalar formulas the CPU kernels
// (cpu/CpuKernels.cpp) and the CUDA kernels (cuda/CudaKernels.cu) share,
// defined once: under nvcc they are __host__ __device__, elsewhere plain
// inline functions. A kernel owns its loops and memory layout; what it
// computes per element comes from here, so the backends cannot drift apart.
//
// Host code calls the C library's float functions (expf, tanhf, ...), which
// is what std::exp(float) and friends call, so the CPU's results are those
// of the standard library; device code gets CUDA's functions of the same
// names (which may differ from glibc's by an ulp or two).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_ELEMENTFUNCTIONS_H
#define MESHC_RUNTIME_ELEMENTFUNCTIONS_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>

#if defined(__CUDACC__)
#define MESHC_HOST_DEVICE __host__ __device__
#else
#define MESHC_HOST_DEVICE
#endif

namespace meshc::runtime {

/// The functions of the unary step. Positive is the step function (1 where
/// x > 0, else 0) and GeluGrad the derivative of Gelu: the pieces of their
/// gradients.
enum class UnaryFn {
#define MESHC_UNARY_FN(Fn, Spelling) Fn,
#include "runtime/core/ElementFunctions.def"
};
/// The functions of the binary step. Eq (1 where equal, else 0) and Lt (1
/// where lhs < rhs, else 0) also compare two i32 operands.
enum class BinaryFn {
#define MESHC_BINARY_FN(Fn, Spelling) Fn,
#include "runtime/core/ElementFunctions.def"
};

namespace detail {
inline constexpr const char *kUnaryFnNames[] = {
#define MESHC_UNARY_FN(Fn, Spelling) Spelling,
#include "runtime/core/ElementFunctions.def"
};
inline constexpr const char *kBinaryFnNames[] = {
#define MESHC_BINARY_FN(Fn, Spelling) Spelling,
#include "runtime/core/ElementFunctions.def"
};
} // namespace detail

/// The number of unary and of binary functions.
constexpr size_t kUnaryFnCount = std::size(detail::kUnaryFnNames);
constexpr size_t kBinaryFnCount = std::size(detail::kBinaryFnNames);
/// The "fn" spelling of `fn`.
constexpr const char *unaryFnName(UnaryFn fn) {
  return detail::kUnaryFnNames[static_cast<size_t>(fn)];
}
constexpr const char *binaryFnName(BinaryFn fn) {
  return detail::kBinaryFnNames[static_cast<size_t>(fn)];
}

/// std::isnan, on host and device.
MESHC_HOST_DEVICE inline bool isNaN(float x) { return x != x; }
/// std::max(a, b): b only when a < b, so a NaN b loses and a NaN a wins.
template <typename T> MESHC_HOST_DEVICE inline T maxOf(T a, T b) {
  return a < b ? b : a;
}
/// std::min(a, b): b only when b < a.
template <typename T> MESHC_HOST_DEVICE inline T minOf(T a, T b) {
  return b < a ? b : a;
}
/// 1 where x == y (NaN equals nothing), else 0: eq on f32 and i32.
template <typename T> MESHC_HOST_DEVICE inline float equalOf(T x, T y) {
  return x == y ? 1.0f : 0.0f;
}
/// 1 where x < y, else 0: lt on f32 and i32.
template <typename T> MESHC_HOST_DEVICE inline float lessOf(T x, T y) {
  return x < y ? 1.0f : 0.0f;
}

/// √(2/π), of the tanh form of gelu.
constexpr float kSqrtTwoOverPi = 0.7978845608028654f;

/// unary fn `Fn` of x; `factor` is Scale's. One specialization per
/// function of ElementFunctions.def.
template <UnaryFn Fn> MESHC_HOST_DEVICE float unaryValue(float x, float factor);

template <>
MESHC_HOST_DEVICE inline float unaryValue<UnaryFn::Relu>(float x, float) {
  return x > 0.0f ? x : 0.0f;
}
/// The tanh approximation 0.5x(1 + tanh(c(x + 0.044715x³))), c = √(2/π).
template <>
MESHC_HOST_DEVICE inline float unaryValue<UnaryFn::Gelu>(float x, float) {
  return 0.5f * x *
         (1.0f + tanhf(kSqrtTwoOverPi * (x + 0.044715f * x * x * x)));
}
/// x sigmoid(x) = x / (1 + e^-x).
template <>
MESHC_HOST_DEVICE inline float unaryValue<UnaryFn::Silu>(float x, float) {
  return x / (1.0f + expf(-x));
}
template <>
MESHC_HOST_DEVICE inline float unaryValue<UnaryFn::Sigmoid>(float x, float) {
  return 1.0f / (1.0f + expf(-x));
}
template <>
MESHC_HOST_DEVICE inline float unaryValue<UnaryFn::Exp>(float x, float) {
  return expf(x);
}
template <>
MESHC_HOST_DEVICE inline float unaryValue<UnaryFn::Log>(float x, float) {
  return logf(x);
}
template <>
MESHC_HOST_DEVICE inline float unaryValue<UnaryFn::Tanh>(float x, float) {
  return tanhf(x);
}
template <>
MESHC_HOST_DEVICE inline float unaryValue<UnaryFn::Sqrt>(float x, float) {
  return sqrtf(x);
}
template <>
MESHC_HOST_DEVICE inline float unaryValue<UnaryFn::Rsqrt>(float x, float) {
  return 1.0f / sqrtf(x);
}
template <>
MESHC_HOST_DEVICE inline float unaryValue<UnaryFn::Negate>(float x, float) {
  return -x;
}
template <>
MESHC_HOST_DEVICE inline float unaryValue<UnaryFn::Scale>(float x,
                                                          float factor) {
  return x * factor;
}
/// 1 where x > 0, else 0 (NaN gives 0): the derivative of relu.
template <>
MESHC_HOST_DEVICE inline float unaryValue<UnaryFn::Positive>(float x, float) {
  return x > 0.0f ? 1.0f : 0.0f;
}
/// d/dx gelu(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3a x^2) with
/// t = tanh(c (x + a x^3)), c = sqrt(2/pi), a = 0.044715.
template <>
MESHC_HOST_DEVICE inline float unaryValue<UnaryFn::GeluGrad>(float x, float) {
  float t = tanhf(kSqrtTwoOverPi * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kSqrtTwoOverPi *
                                 (1.0f + 3.0f * 0.044715f * x * x);
}

/// binary fn `Fn` of x and y (f32). One specialization per function of
/// ElementFunctions.def.
template <BinaryFn Fn> MESHC_HOST_DEVICE float binaryValue(float x, float y);

template <>
MESHC_HOST_DEVICE inline float binaryValue<BinaryFn::Add>(float x, float y) {
  return x + y;
}
template <>
MESHC_HOST_DEVICE inline float binaryValue<BinaryFn::Sub>(float x, float y) {
  return x - y;
}
template <>
MESHC_HOST_DEVICE inline float binaryValue<BinaryFn::Mul>(float x, float y) {
  return x * y;
}
template <>
MESHC_HOST_DEVICE inline float binaryValue<BinaryFn::Div>(float x, float y) {
  return x / y;
}
template <>
MESHC_HOST_DEVICE inline float binaryValue<BinaryFn::Max>(float x, float y) {
  return maxOf(x, y);
}
template <>
MESHC_HOST_DEVICE inline float binaryValue<BinaryFn::Min>(float x, float y) {
  return minOf(x, y);
}
template <>
MESHC_HOST_DEVICE inline float binaryValue<BinaryFn::Eq>(float x, float y) {
  return equalOf(x, y);
}
template <>
MESHC_HOST_DEVICE inline float binaryValue<BinaryFn::Lt>(float x, float y) {
  return lessOf(x, y);
}

/// cast f32 to i32: truncation toward zero, saturating at the i32 range,
/// NaN to 0.
MESHC_HOST_DEVICE inline int32_t castToI32(float x) {
  const float low = -2147483648.0f, high = 2147483648.0f;
  return isNaN(x)    ? 0
         : x <= low  ? INT32_MIN
         : x >= high ? INT32_MAX
                     : static_cast<int32_t>(x);
}

/// argmax's choice: true when v at a later position replaces the best so
/// far (`best` < 0: none yet; `top`: its value). NaN never wins, so the
/// first maximum stays.
MESHC_HOST_DEVICE inline bool argmaxTakes(float v, int64_t best, float top) {
  return !isNaN(v) && (best < 0 || v > top);
}

/// top_k's order: true when the element w at position j of a row comes
/// before the element v at position c. Larger elements first, the earlier
/// of equal ones first, NaN after every number (the earlier of two NaNs
/// first).
MESHC_HOST_DEVICE inline bool topKBefore(float w, int64_t j, float v,
                                         int64_t c) {
  return isNaN(v) ? (!isNaN(w) || j < c)
                  : (!isNaN(w) && (w > v || (w == v && j < c)));
}

/// top_k's output at position c of a row of n elements `row[j * stride]`:
/// 1 when fewer than k elements come before it, else 0.
MESHC_HOST_DEVICE inline float topKValue(const float *row, int64_t stride,
                                         int64_t n, int64_t c, int64_t k) {
  float v = row[c * stride];
  int64_t before = 0;
  for (int64_t j = 0; j < n && before < k; ++j)
    before += topKBefore(row[j * stride], j, v, c) ? 1 : 0;
  return before < k ? 1.0f : 0.0f;
}

/// logsumexp of a row of n elements `row[j * stride]`: the row maximum plus
/// the log of the sum of exp(x - maximum), summed in row order (also the
/// first term of softmax_cross_entropy).
MESHC_HOST_DEVICE inline float logSumExpRow(const float *row, int64_t stride,
                                            int64_t n) {
  float top = -INFINITY;
  for (int64_t j = 0; j < n; ++j)
    top = maxOf(top, row[j * stride]);
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j)
    sum += expf(row[j * stride] - top);
  return top + logf(sum);
}

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_ELEMENTFUNCTIONS_H
