//===- VectorMath.cpp - Array element functions of the CPU backend --------===//

#include "runtime/cpu/VectorMath.h"

#include <limits>

namespace meshc::runtime::vmath {
namespace {

template <UnaryFn Fn>
void unaryLoop(float factor, const float *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = unaryValue<Fn>(in[i], factor);
}

template <BinaryFn Fn>
void binaryLoop(const float *lhs, const float *rhs, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = binaryValue<Fn>(lhs[i], rhs[i]);
}
template <BinaryFn Fn>
void scalarRhsLoop(const float *lhs, float rhs, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = binaryValue<Fn>(lhs[i], rhs);
}
template <BinaryFn Fn>
void scalarLhsLoop(float lhs, const float *rhs, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = binaryValue<Fn>(lhs, rhs[i]);
}

} // namespace

void unary(UnaryFn fn, float factor, const float *in, float *out, int64_t n) {
  switch (fn) {
#define MESHC_UNARY_FN(Fn, Spelling)                                           \
  case UnaryFn::Fn:                                                            \
    return unaryLoop<UnaryFn::Fn>(factor, in, out, n);
#include "runtime/core/ElementFunctions.def"
  }
}

void binary(BinaryFn fn, const float *lhs, const float *rhs, float *out,
            int64_t n) {
  switch (fn) {
#define MESHC_BINARY_FN(Fn, Spelling)                                          \
  case BinaryFn::Fn:                                                           \
    return binaryLoop<BinaryFn::Fn>(lhs, rhs, out, n);
#include "runtime/core/ElementFunctions.def"
  }
}

void binaryScalarRhs(BinaryFn fn, const float *lhs, float rhs, float *out,
                     int64_t n) {
  switch (fn) {
#define MESHC_BINARY_FN(Fn, Spelling)                                          \
  case BinaryFn::Fn:                                                           \
    return scalarRhsLoop<BinaryFn::Fn>(lhs, rhs, out, n);
#include "runtime/core/ElementFunctions.def"
  }
}

void binaryScalarLhs(BinaryFn fn, float lhs, const float *rhs, float *out,
                     int64_t n) {
  switch (fn) {
#define MESHC_BINARY_FN(Fn, Spelling)                                          \
  case BinaryFn::Fn:                                                           \
    return scalarLhsLoop<BinaryFn::Fn>(lhs, rhs, out, n);
#include "runtime/core/ElementFunctions.def"
  }
}

float sum(const float *in, int64_t n) {
  float total = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    total += in[i];
  return total;
}

float max(const float *in, int64_t n) {
  float top = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i)
    top = maxOf(top, in[i]);
  return top;
}

} // namespace meshc::runtime::vmath
