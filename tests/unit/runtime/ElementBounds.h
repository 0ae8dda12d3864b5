//===- ElementBounds.h - How far vectorized element functions may stray -*- C++
//-*-===//
//
// The bounds docs/runtime.md states for the CPU's vectorized element
// functions (runtime/cpu/VectorMath.h) around the scalar formulas of
// ElementFunctions.h, which the reference interpreter and CUDA's host path
// run; the tests of both compare with them.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_TESTS_UNIT_RUNTIME_ELEMENTBOUNDS_H
#define MESHC_TESTS_UNIT_RUNTIME_ELEMENTBOUNDS_H

#include "runtime/ElementFunctions.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

namespace meshc::runtime {

/// unaryValue<fn>(x, factor), fn chosen at run time.
inline float scalarUnary(UnaryFn fn, float x, float factor) {
  switch (fn) {
#define MESHC_UNARY_FN(Fn, Spelling)                                           \
  case UnaryFn::Fn:                                                            \
    return unaryValue<UnaryFn::Fn>(x, factor);
#include "runtime/core/ElementFunctions.def"
  }
  return std::numeric_limits<float>::quiet_NaN();
}

/// How many floats lie between a and b (0: the same number).
inline int64_t ulpsApart(float a, float b) {
  auto ordered = [](float f) {
    int32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits < 0 ? static_cast<int64_t>(INT32_MIN) - bits
                    : static_cast<int64_t>(bits);
  };
  return std::llabs(ordered(a) - ordered(b));
}

/// The bound docs/runtime.md states for `fn`: ulps from the scalar formula,
/// or (gelu and its derivative, whose 1 + tanh cancels) an absolute error
/// in units of 2^-24 max(|x|, |value|).
struct Bound {
  int64_t ulps;
  double scaled;
};
inline Bound boundOf(UnaryFn fn) {
  switch (fn) {
  case UnaryFn::Exp:
    return {2, 0};
  case UnaryFn::Log:
    return {4, 0};
  case UnaryFn::Tanh:
  case UnaryFn::Silu:
  case UnaryFn::Sigmoid:
    return {6, 0};
  case UnaryFn::Gelu:
  case UnaryFn::GeluGrad:
    return {6, 8};
  default:
    return {0, 0};
  }
}

/// Whether the vector result v of fn(x) keeps to fn's bound around the
/// scalar result s; `why` says how it missed.
inline bool withinBound(UnaryFn fn, float x, float s, float v,
                        std::string &why) {
  why = std::string(unaryFnName(fn)) + "(" + std::to_string(x) + "): scalar " +
        std::to_string(s) + ", vector " + std::to_string(v);
  if (std::isnan(s) || std::isnan(v))
    return std::isnan(s) && std::isnan(v);
  if (std::isinf(s) || std::isinf(v))
    return s == v;
  Bound bound = boundOf(fn);
  if (ulpsApart(s, v) <= bound.ulps)
    return true;
  double scale = std::max(std::fabs(double(x)), std::fabs(double(s)));
  return std::fabs(double(s) - double(v)) <=
         bound.scaled * std::ldexp(1.0, -24) * scale;
}

} // namespace meshc::runtime

#endif // MESHC_TESTS_UNIT_RUNTIME_ELEMENTBOUNDS_H
