//===- VectorMath.cpp - Array element functions of the CPU backend --------===//
//
// Highway (libhwy, hwy/contrib/math) vectors: this file is compiled once per
// SIMD target Highway knows on this architecture (foreach_target.h includes
// it again for each), and the first call picks the best target the CPU runs
// (HWY_DYNAMIC_DISPATCH), so one binary uses AVX-512 where the CPU has it and
// SSE4 or AVX2 where it does not.
//
// The arithmetic (add, mul, div, sqrt, comparisons) is IEEE's, as in the
// scalar formulas; exp, log and tanh are Highway's polynomials (1, 4 and 4
// ulps from the true value for f32, on Highway's valid ranges) with the C
// library's special values restored around them: exp of NaN is NaN and of a
// large x is +inf, log of 0 is -inf, of a negative number NaN and of +inf
// +inf. A tail shorter than a vector goes through a padded vector of its
// own, so an element's value never depends on where in an array it lies.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/VectorMath.h"

#include "runtime/core/HalfFloat.h"

#include <algorithm>
#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "runtime/cpu/VectorMath.cpp"
#include "hwy/foreach_target.h" // IWYU pragma: keep

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace meshc::runtime::vmath {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

/// The most lanes a vector of this target has.
constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);
/// The elements sum() adds in f32 lanes before adding in double.
constexpr int64_t kSumBlock = 4096;

HWY_INLINE V splat(float x) { return hn::Set(D(), x); }

/// e^x: Highway's Exp (valid up to 104, where e^x overflowed long before)
/// on x clamped below that, NaN kept.
HWY_INLINE V expOf(V x) {
  D d;
  V y = hn::Exp(d, hn::Min(x, splat(100.0f)));
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

/// ln x: Highway's Log on (0, FLT_MAX], the C library's values elsewhere.
HWY_INLINE V logOf(V x) {
  D d;
  const V zero = hn::Zero(d);
  V y = hn::Log(d, x);
  y = hn::IfThenElse(hn::Eq(x, zero),
                     splat(-std::numeric_limits<float>::infinity()), y);
  y = hn::IfThenElse(hn::Eq(x, splat(std::numeric_limits<float>::infinity())),
                     x, y);
  return hn::IfThenElse(hn::Or(hn::Lt(x, zero), hn::IsNaN(x)),
                        splat(std::numeric_limits<float>::quiet_NaN()), y);
}

/// tanh x (Highway's is right at ±inf and NaN).
HWY_INLINE V tanhOf(V x) { return hn::Tanh(D(), x); }

/// c (x + 0.044715 x³), the argument of gelu's tanh, in the scalar order.
HWY_INLINE V geluInner(V x) {
  V cube = hn::Mul(hn::Mul(hn::Mul(splat(0.044715f), x), x), x);
  return hn::Mul(splat(kSqrtTwoOverPi), hn::Add(x, cube));
}

/// The vector form of unaryValue<Fn> (ElementFunctions.h), operation for
/// operation.
template <UnaryFn Fn> V unaryVec(V x, V factor);

template <> HWY_INLINE V unaryVec<UnaryFn::Relu>(V x, V) {
  return hn::IfThenElseZero(hn::Gt(x, hn::Zero(D())), x);
}
template <> HWY_INLINE V unaryVec<UnaryFn::Gelu>(V x, V) {
  return hn::Mul(hn::Mul(splat(0.5f), x),
                 hn::Add(splat(1.0f), tanhOf(geluInner(x))));
}
template <> HWY_INLINE V unaryVec<UnaryFn::Silu>(V x, V) {
  return hn::Div(x, hn::Add(splat(1.0f), expOf(hn::Neg(x))));
}
template <> HWY_INLINE V unaryVec<UnaryFn::Sigmoid>(V x, V) {
  return hn::Div(splat(1.0f), hn::Add(splat(1.0f), expOf(hn::Neg(x))));
}
template <> HWY_INLINE V unaryVec<UnaryFn::Exp>(V x, V) { return expOf(x); }
template <> HWY_INLINE V unaryVec<UnaryFn::Log>(V x, V) { return logOf(x); }
template <> HWY_INLINE V unaryVec<UnaryFn::Tanh>(V x, V) { return tanhOf(x); }
template <> HWY_INLINE V unaryVec<UnaryFn::Sqrt>(V x, V) { return hn::Sqrt(x); }
template <> HWY_INLINE V unaryVec<UnaryFn::Rsqrt>(V x, V) {
  return hn::Div(splat(1.0f), hn::Sqrt(x));
}
template <> HWY_INLINE V unaryVec<UnaryFn::Negate>(V x, V) {
  return hn::Neg(x);
}
template <> HWY_INLINE V unaryVec<UnaryFn::Scale>(V x, V factor) {
  return hn::Mul(x, factor);
}
template <> HWY_INLINE V unaryVec<UnaryFn::Positive>(V x, V) {
  return hn::IfThenElseZero(hn::Gt(x, hn::Zero(D())), splat(1.0f));
}
template <> HWY_INLINE V unaryVec<UnaryFn::GeluGrad>(V x, V) {
  const V half = splat(0.5f), one = splat(1.0f);
  V t = tanhOf(geluInner(x));
  V slope = hn::Add(one, hn::Mul(hn::Mul(splat(3.0f * 0.044715f), x), x));
  V rest =
      hn::Mul(hn::Mul(hn::Mul(hn::Mul(half, x), hn::Sub(one, hn::Mul(t, t))),
                      splat(kSqrtTwoOverPi)),
              slope);
  return hn::Add(hn::Mul(half, hn::Add(one, t)), rest);
}

/// The vector form of binaryValue<Fn>.
template <BinaryFn Fn> V binaryVec(V x, V y);

template <> HWY_INLINE V binaryVec<BinaryFn::Add>(V x, V y) {
  return hn::Add(x, y);
}
template <> HWY_INLINE V binaryVec<BinaryFn::Sub>(V x, V y) {
  return hn::Sub(x, y);
}
template <> HWY_INLINE V binaryVec<BinaryFn::Mul>(V x, V y) {
  return hn::Mul(x, y);
}
template <> HWY_INLINE V binaryVec<BinaryFn::Div>(V x, V y) {
  return hn::Div(x, y);
}
/// maxOf: y only where x < y (so a NaN y loses and a NaN x wins).
template <> HWY_INLINE V binaryVec<BinaryFn::Max>(V x, V y) {
  return hn::IfThenElse(hn::Lt(x, y), y, x);
}
template <> HWY_INLINE V binaryVec<BinaryFn::Min>(V x, V y) {
  return hn::IfThenElse(hn::Lt(y, x), y, x);
}
template <> HWY_INLINE V binaryVec<BinaryFn::Eq>(V x, V y) {
  return hn::IfThenElseZero(hn::Eq(x, y), splat(1.0f));
}
template <> HWY_INLINE V binaryVec<BinaryFn::Lt>(V x, V y) {
  return hn::IfThenElseZero(hn::Lt(x, y), splat(1.0f));
}

/// out[i] = body(in[i]...) over n elements, `Inputs` arrays in (those of
/// `in` that are null stand for the scalar `fill`). The tail goes through
/// padded vectors.
template <size_t Inputs, class Body>
HWY_INLINE void mapArrays(const float *const (&in)[Inputs], float *out,
                          int64_t n, Body body) {
  D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    V x[Inputs];
    for (size_t k = 0; k < Inputs; ++k)
      x[k] = hn::LoadU(d, in[k] + i);
    hn::StoreU(body(x), d, out + i);
  }
  if (i == n)
    return;
  HWY_ALIGN float buffer[kMaxLanes] = {};
  V x[Inputs];
  for (size_t k = 0; k < Inputs; ++k) {
    std::copy(in[k] + i, in[k] + n, buffer);
    x[k] = hn::Load(d, buffer);
  }
  hn::Store(body(x), d, buffer);
  std::copy(buffer, buffer + (n - i), out + i);
}

template <UnaryFn Fn>
void unaryLoop(float factor, const float *in, float *out, int64_t n) {
  const V f = splat(factor);
  mapArrays<1>({in}, out, n,
               [f](const V(&x)[1]) { return unaryVec<Fn>(x[0], f); });
}

template <BinaryFn Fn>
void binaryLoop(const float *lhs, const float *rhs, float *out, int64_t n) {
  mapArrays<2>({lhs, rhs}, out, n,
               [](const V(&x)[2]) { return binaryVec<Fn>(x[0], x[1]); });
}
template <BinaryFn Fn>
void scalarRhsLoop(const float *lhs, float rhs, float *out, int64_t n) {
  const V y = splat(rhs);
  mapArrays<1>({lhs}, out, n,
               [y](const V(&x)[1]) { return binaryVec<Fn>(x[0], y); });
}
template <BinaryFn Fn>
void scalarLhsLoop(float lhs, const float *rhs, float *out, int64_t n) {
  const V x = splat(lhs);
  mapArrays<1>({rhs}, out, n,
               [x](const V(&y)[1]) { return binaryVec<Fn>(x, y[0]); });
}

// The entry points of each target (HWY_EXPORT needs plain functions).

void UnaryTarget(UnaryFn fn, float factor, const float *in, float *out,
                 int64_t n) {
  switch (fn) {
#define MESHC_UNARY_FN(Fn, Spelling)                                           \
  case UnaryFn::Fn:                                                            \
    return unaryLoop<UnaryFn::Fn>(factor, in, out, n);
#include "runtime/core/ElementFunctions.def"
  }
}

void BinaryTarget(BinaryFn fn, const float *lhs, const float *rhs, float *out,
                  int64_t n) {
  switch (fn) {
#define MESHC_BINARY_FN(Fn, Spelling)                                          \
  case BinaryFn::Fn:                                                           \
    return binaryLoop<BinaryFn::Fn>(lhs, rhs, out, n);
#include "runtime/core/ElementFunctions.def"
  }
}

void ScalarRhsTarget(BinaryFn fn, const float *lhs, float rhs, float *out,
                     int64_t n) {
  switch (fn) {
#define MESHC_BINARY_FN(Fn, Spelling)                                          \
  case BinaryFn::Fn:                                                           \
    return scalarRhsLoop<BinaryFn::Fn>(lhs, rhs, out, n);
#include "runtime/core/ElementFunctions.def"
  }
}

void ScalarLhsTarget(BinaryFn fn, float lhs, const float *rhs, float *out,
                     int64_t n) {
  switch (fn) {
#define MESHC_BINARY_FN(Fn, Spelling)                                          \
  case BinaryFn::Fn:                                                           \
    return scalarLhsLoop<BinaryFn::Fn>(lhs, rhs, out, n);
#include "runtime/core/ElementFunctions.def"
  }
}

UnaryArray UnaryArrayTarget(UnaryFn fn) {
  switch (fn) {
#define MESHC_UNARY_FN(Fn, Spelling)                                           \
  case UnaryFn::Fn:                                                            \
    return &unaryLoop<UnaryFn::Fn>;
#include "runtime/core/ElementFunctions.def"
  }
  return nullptr;
}

BinaryArrays BinaryArraysTarget(BinaryFn fn) {
  switch (fn) {
#define MESHC_BINARY_FN(Fn, Spelling)                                          \
  case BinaryFn::Fn:                                                           \
    return {&binaryLoop<BinaryFn::Fn>, &scalarLhsLoop<BinaryFn::Fn>,           \
            &scalarRhsLoop<BinaryFn::Fn>};
#include "runtime/core/ElementFunctions.def"
  }
  return {};
}

/// Two vector accumulators, lanes summed at the end; the tail padded with 0.
float BlockSum(const float *in, int64_t n) {
  D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  V a = hn::Zero(d), b = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    a = hn::Add(a, hn::LoadU(d, in + i));
    b = hn::Add(b, hn::LoadU(d, in + i + lanes));
  }
  for (; i + lanes <= n; i += lanes)
    a = hn::Add(a, hn::LoadU(d, in + i));
  if (i < n) {
    HWY_ALIGN float buffer[kMaxLanes] = {};
    std::copy(in + i, in + n, buffer);
    b = hn::Add(b, hn::Load(d, buffer));
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(a, b)));
}

/// Blocks of kSumBlock elements summed by BlockSum, the blocks' sums added
/// in double (a row up to kSumBlock is BlockSum's sum exactly). Each lane
/// then adds at most kSumBlock / 32 elements: the f32 lanes adding 2^25
/// squares alone were 5.6e-4 below the exact sum (the mean loss of
/// bench/gpu/block_large.mtf on the CPU against the GPU's tree).
float SumTarget(const float *in, int64_t n) {
  if (n <= kSumBlock)
    return BlockSum(in, n);
  double total = 0;
  for (int64_t i = 0; i < n; i += kSumBlock)
    total += BlockSum(in + i, std::min(kSumBlock, n - i));
  return static_cast<float>(total);
}

/// A running maximum per lane from -inf (a NaN never replaces it), the
/// lanes combined the same way; the tail padded with -inf.
float MaxTarget(const float *in, int64_t n) {
  D d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const float lowest = -std::numeric_limits<float>::infinity();
  V top = splat(lowest);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes)
    top = binaryVec<BinaryFn::Max>(top, hn::LoadU(d, in + i));
  HWY_ALIGN float buffer[kMaxLanes];
  if (i < n) {
    std::fill(buffer, buffer + kMaxLanes, lowest);
    std::copy(in + i, in + n, buffer);
    top = binaryVec<BinaryFn::Max>(top, hn::Load(d, buffer));
  }
  hn::Store(top, d, buffer);
  float result = lowest;
  for (int64_t k = 0; k < lanes; ++k)
    result = maxOf(result, buffer[k]);
  return result;
}

/// out[i] = e^(in[i] - shift), element for element unary Exp of the
/// difference; returns SumTarget of them.
float ExpShiftedTarget(const float *in, float shift, float *out, int64_t n) {
  const V s = splat(shift);
  mapArrays<1>({in}, out, n,
               [s](const V(&x)[1]) { return expOf(hn::Sub(x[0], s)); });
  return SumTarget(out, n);
}

const char *TargetNameTarget() { return hwy::TargetName(HWY_TARGET); }

/// values[i] rounded to bf16 (to nearest, ties to even; a NaN stays a
/// quiet NaN), bit for bit half::roundToBf16.
void RoundToBf16Target(float *values, int64_t n) {
  D d;
  const hn::RebindToSigned<D> di;
  using VI = hn::Vec<decltype(di)>;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const VI one = hn::Set(di, 1), bias = hn::Set(di, 0x7fff),
           high = hn::Set(di, static_cast<int32_t>(0xffff0000u)),
           magnitude = hn::Set(di, 0x7fffffff),
           infinity = hn::Set(di, 0x7f800000), quiet = hn::Set(di, 0x00400000);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const VI bits = hn::BitCast(di, hn::LoadU(d, values + i));
    const VI odd = hn::And(hn::ShiftRight<16>(bits), one);
    const VI rounded = hn::And(hn::Add(bits, hn::Add(bias, odd)), high);
    const auto nan = hn::Gt(hn::And(bits, magnitude), infinity);
    const VI kept = hn::Or(hn::And(bits, high), quiet);
    hn::StoreU(hn::BitCast(d, hn::IfThenElse(nan, kept, rounded)), d,
               values + i);
  }
  for (; i < n; ++i)
    values[i] = half::roundToBf16(values[i]);
}

} // namespace HWY_NAMESPACE
} // namespace meshc::runtime::vmath
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace meshc::runtime::vmath {

HWY_EXPORT(UnaryTarget);
HWY_EXPORT(BinaryTarget);
HWY_EXPORT(ScalarRhsTarget);
HWY_EXPORT(ScalarLhsTarget);
HWY_EXPORT(SumTarget);
HWY_EXPORT(MaxTarget);
HWY_EXPORT(ExpShiftedTarget);
HWY_EXPORT(TargetNameTarget);
HWY_EXPORT(RoundToBf16Target);
HWY_EXPORT(UnaryArrayTarget);
HWY_EXPORT(BinaryArraysTarget);

void unary(UnaryFn fn, float factor, const float *in, float *out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(UnaryTarget)(fn, factor, in, out, n);
}

void binary(BinaryFn fn, const float *lhs, const float *rhs, float *out,
            int64_t n) {
  HWY_DYNAMIC_DISPATCH(BinaryTarget)(fn, lhs, rhs, out, n);
}

void binaryScalarRhs(BinaryFn fn, const float *lhs, float rhs, float *out,
                     int64_t n) {
  HWY_DYNAMIC_DISPATCH(ScalarRhsTarget)(fn, lhs, rhs, out, n);
}

void binaryScalarLhs(BinaryFn fn, float lhs, const float *rhs, float *out,
                     int64_t n) {
  HWY_DYNAMIC_DISPATCH(ScalarLhsTarget)(fn, lhs, rhs, out, n);
}

float sum(const float *in, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(SumTarget)(in, n);
}

void roundToBf16(float *values, int64_t n) {
  HWY_DYNAMIC_DISPATCH(RoundToBf16Target)(values, n);
}

float max(const float *in, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(MaxTarget)(in, n);
}

float expShifted(const float *in, float shift, float *out, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(ExpShiftedTarget)(in, shift, out, n);
}

UnaryArray unaryArray(UnaryFn fn) {
  return HWY_DYNAMIC_DISPATCH(UnaryArrayTarget)(fn);
}

BinaryArrays binaryArrays(BinaryFn fn) {
  return HWY_DYNAMIC_DISPATCH(BinaryArraysTarget)(fn);
}

float unaryOne(UnaryFn fn, float x, float factor) {
  switch (fn) {
  case UnaryFn::Relu:
    return unaryValue<UnaryFn::Relu>(x, factor);
  case UnaryFn::Sqrt:
    return unaryValue<UnaryFn::Sqrt>(x, factor);
  case UnaryFn::Rsqrt:
    return unaryValue<UnaryFn::Rsqrt>(x, factor);
  case UnaryFn::Negate:
    return unaryValue<UnaryFn::Negate>(x, factor);
  case UnaryFn::Scale:
    return unaryValue<UnaryFn::Scale>(x, factor);
  case UnaryFn::Positive:
    return unaryValue<UnaryFn::Positive>(x, factor);
  default: {
    float y = 0;
    unary(fn, factor, &x, &y, 1);
    return y;
  }
  }
}

float binaryOne(BinaryFn fn, float x, float y) {
  switch (fn) {
#define MESHC_BINARY_FN(Fn, Spelling)                                          \
  case BinaryFn::Fn:                                                           \
    return binaryValue<BinaryFn::Fn>(x, y);
#include "runtime/core/ElementFunctions.def"
  }
  return 0;
}

const char *targetName() { return HWY_DYNAMIC_DISPATCH(TargetNameTarget)(); }

} // namespace meshc::runtime::vmath
#endif // HWY_ONCE
