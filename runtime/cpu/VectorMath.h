//===- VectorMath.h - Array element functions of the CPU backend -*- C++
//-*-===//
//
// The element functions of ElementFunctions.def applied to arrays: what the
// CPU's unary and binary kernels and its fused steps run on each contiguous
// run of elements. Every function computes, element for element, the
// formula of its unaryValue / binaryValue specialization in
// ElementFunctions.h, on SIMD vectors (Highway); the transcendental ones
// (exp, log, tanh and those made of them) may differ from the C library's by
// the few ulps docs/runtime.md states, and sum adds in another order.
// `in`/`out` (and `lhs`/`rhs`/`out`) may be the same array; they do not
// otherwise overlap.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CPU_VECTORMATH_H
#define MESHC_RUNTIME_CPU_VECTORMATH_H

#include "runtime/ElementFunctions.h"

#include <cstdint>

namespace meshc::runtime::vmath {

/// out[i] = fn(in[i]) for i < n; `factor` is Scale's.
void unary(UnaryFn fn, float factor, const float *in, float *out, int64_t n);

/// out[i] = fn(lhs[i], rhs[i]) for i < n (f32 functions: not Eq or Lt on
/// i32, which compareKernel runs).
void binary(BinaryFn fn, const float *lhs, const float *rhs, float *out,
            int64_t n);
/// out[i] = fn(lhs[i], rhs).
void binaryScalarRhs(BinaryFn fn, const float *lhs, float rhs, float *out,
                     int64_t n);
/// out[i] = fn(lhs, rhs[i]).
void binaryScalarLhs(BinaryFn fn, float lhs, const float *rhs, float *out,
                     int64_t n);

/// The sum of in[0..n), and the maximum (-inf for n = 0; a NaN element
/// loses to every number, as maxOf's running maximum from -inf does).
float sum(const float *in, int64_t n);
/// Rounds values[0..n) to bf16 in place (to nearest, ties to even): bit for
/// bit half::roundToBf16, vectorized.
void roundToBf16(float *values, int64_t n);
float max(const float *in, int64_t n);
/// out[i] = e^(in[i] - shift) for i < n (each what unary Exp gives the
/// difference; `in` may be `out`), returning sum(out, n): a softmax row's
/// exponentials and their sum in one call (the attention kernels).
float expShifted(const float *in, float shift, float *out, int64_t n);

/// The array function unary(fn, ...) runs on this CPU, and binary's (with
/// the scalar-operand variants): for a caller that runs one function on
/// many short arrays and would rather choose it once.
using UnaryArray = void (*)(float factor, const float *in, float *out,
                            int64_t n);
UnaryArray unaryArray(UnaryFn fn);
struct BinaryArrays {
  void (*both)(const float *lhs, const float *rhs, float *out, int64_t n);
  void (*scalarLhs)(float lhs, const float *rhs, float *out, int64_t n);
  void (*scalarRhs)(const float *lhs, float rhs, float *out, int64_t n);
};
BinaryArrays binaryArrays(BinaryFn fn);

/// fn of one element: the value unary / binary give it (the scalar formula
/// where that is IEEE arithmetic, else one padded vector).
float unaryOne(UnaryFn fn, float x, float factor);
float binaryOne(BinaryFn fn, float x, float y);

/// The SIMD target these functions run on this CPU ("AVX3", "AVX2",
/// "SSE4", ...: Highway's name of the best one it has).
const char *targetName();

} // namespace meshc::runtime::vmath

#endif // MESHC_RUNTIME_CPU_VECTORMATH_H
