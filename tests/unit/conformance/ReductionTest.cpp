//===- ReductionTest.cpp - Reducing steps against formulas ----------------===//
//
// reduce, softmax, logsumexp, softmax_cross_entropy and argmax on the
// backend under test, in every float type, against formulas in double:
// sums and maxima to permuted dims and to a scalar, long rows (which a GPU
// cuts into chunks), softmax along a middle dim with a value that overflows
// exp unshifted, the first maximum of ties and NaNs, and the label error's
// exact text.
//
//===----------------------------------------------------------------------===//

#include "Conformance.h"

#include "runtime/Error.h"

#include <cmath>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;
using nlohmann::json;

namespace {

using Sizes = std::map<std::string, int64_t>;

/// The reduction `fn` (sum or max) of x[a, b, c] (row-major, sizes `sizes`)
/// onto `dims` (a subset, in that order), in double.
std::vector<double> reduced(const std::vector<float> &x, const Sizes &sizes,
                            const std::vector<std::string> &dims,
                            const std::string &fn) {
  int64_t A = sizes.at("a"), B = sizes.at("b"), C = sizes.at("c");
  int64_t count = 1;
  for (const std::string &d : dims)
    count *= sizes.at(d);
  std::vector<double> out(count, fn == "sum" ? 0.0 : -INFINITY);
  for (int64_t a = 0; a < A; ++a)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < C; ++c) {
        std::map<std::string, int64_t> index = {{"a", a}, {"b", b}, {"c", c}};
        int64_t at = 0;
        for (const std::string &d : dims)
          at = at * sizes.at(d) + index[d];
        double v = x[(a * B + b) * C + c];
        out[at] = fn == "sum" ? out[at] + v : std::max(out[at], v);
      }
  return out;
}

TEST_P(Conformance, Reduce_SumAndMaxToPermutedDimsAndScalars) {
  std::vector<Sizes> shapes = {{{"a", 3}, {"b", 4}, {"c", 5}},
                               {{"a", 7}, {"b", 300}, {"c", 5}},
                               // Long rows: a GPU cuts them into chunks.
                               {{"a", 3}, {"b", 200000}, {"c", 1}}};
  std::vector<std::vector<std::string>> targets = {
      {"c", "a"}, {}, {"b"}, {"a"}};
  for (const Sizes &sizes : shapes)
    for (const std::vector<std::string> &dims : targets)
      for (const char *fn : {"sum", "max"})
        for (const std::string &dtype : kFloatTypes) {
          int64_t B = sizes.at("b");
          if (B > 1000 && dtype != "f32")
            continue; // long rows once, in f32
          std::string shown = json(dims).dump();
          SCOPED_TRACE(std::string(fn) + " " + dtype +
                       " b=" + std::to_string(B) + " to " + shown);
          int64_t total = sizes.at("a") * B * sizes.at("c"), count = 1;
          for (const std::string &d : dims)
            count *= sizes.at(d);
          std::vector<float> x = roundedTo(dtype, testData("x", total));
          StepHarness h = steps();
          int64_t in = h.floats(dtype, x),
                  out = h.floats(dtype, std::vector<float>(count, 9));
          h.run({{"op", "reduce"},
                 {"fn", fn},
                 {"in", operand(in, {"a", "b", "c"})},
                 {"out", operand(out, dims)},
                 {"sizes", sizes}});
          // A maximum is exact; a sum of n terms ~N(0, 1) added in f32 in
          // any order is off by about sqrt(n) roundings, then stored.
          double tolerance = std::string(fn) == "max" ? 0.0
                             : dtype == "f32"
                                 ? 1e-6 * (1 + std::sqrt(double(total / count)))
                                 : storedTolerance(dtype);
          expectNear(h.readFloats(out), reduced(x, sizes, dims, fn), tolerance);
        }
}

/// Softmax along the middle dim c of [a, c, b], written as [b, a, c].
TEST_P(Conformance, Softmax_AlongMiddleDimIntoPermutedOut) {
  const int64_t A = 2, B = 3;
  for (int64_t C : {6, 60})
    for (const std::string &dtype : kFloatTypes) {
      SCOPED_TRACE(dtype + " c=" + std::to_string(C));
      std::vector<float> x = testData("x", A * C * B);
      x[0] = 80.0f; // exp would overflow without the max shift
      x = roundedTo(dtype, x);
      StepHarness h = steps();
      int64_t in = h.floats(dtype, x),
              out = h.floats(dtype, std::vector<float>(A * C * B));
      h.run({{"op", "softmax"},
             {"in", operand(in, {"a", "c", "b"})},
             {"out", operand(out, {"b", "a", "c"})},
             {"dim", "c"},
             {"sizes", {{"a", A}, {"b", B}, {"c", C}}}});
      std::vector<double> want;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t a = 0; a < A; ++a) {
          auto at = [&](int64_t c) { return double(x[(a * C + c) * B + b]); };
          double top = -INFINITY, total = 0;
          for (int64_t c = 0; c < C; ++c)
            top = std::max(top, at(c));
          for (int64_t c = 0; c < C; ++c)
            total += std::exp(at(c) - top);
          for (int64_t c = 0; c < C; ++c)
            want.push_back(std::exp(at(c) - top) / total);
        }
      expectNear(h.readFloats(out), want, storedTolerance(dtype));
    }
}

TEST_P(Conformance, Softmax_InPlace) {
  StepHarness h = steps();
  int64_t x = h.f32({0, std::log(3.0f), 1000, 1000});
  h.run({{"op", "softmax"},
         {"in", operand(x, {"a", "c"})},
         {"out", operand(x, {"a", "c"})},
         {"dim", "c"},
         {"sizes", {{"a", 2}, {"c", 2}}}});
  expectNear(h.readF32(x), {0.25, 0.75, 0.5, 0.5}, 1e-6);
}

TEST_P(Conformance, LogSumExp_OfEachRowIsStable) {
  // in[classes, batch]; out[batch]. Column 1 would overflow exp unshifted.
  StepHarness h = steps();
  std::vector<float> x = {0, 1000, -1, std::log(2.0f), //
                          0, 1000, -1, 0,              //
                          0, 1000, -1, -INFINITY};
  int64_t in = h.f32(x), out = h.f32(std::vector<float>(4, -9));
  h.run({{"op", "logsumexp"},
         {"in", operand(in, {"classes", "batch"})},
         {"out", operand(out, {"batch"})},
         {"dim", "classes"},
         {"sizes", {{"batch", 4}, {"classes", 3}}}});
  const double log3 = std::log(3.0);
  expectNear(h.readF32(out), {log3, 1000 + log3, -1 + log3, log3}, 1e-6);
}

TEST_P(Conformance, LogSumExp_InEveryFloatType) {
  const int64_t N = 37, K = 50;
  for (const std::string &dtype : kFloatTypes) {
    SCOPED_TRACE(dtype);
    std::vector<float> x = roundedTo(dtype, testData("x", N * K));
    StepHarness h = steps();
    int64_t in = h.floats(dtype, x),
            out = h.floats(dtype, std::vector<float>(N));
    h.run({{"op", "logsumexp"},
           {"in", operand(in, {"batch", "classes"})},
           {"out", operand(out, {"batch"})},
           {"dim", "classes"},
           {"sizes", {{"batch", N}, {"classes", K}}}});
    std::vector<double> want;
    for (int64_t n = 0; n < N; ++n) {
      double total = 0;
      for (int64_t k = 0; k < K; ++k)
        total += std::exp(double(x[n * K + k]));
      want.push_back(std::log(total));
    }
    expectNear(h.readFloats(out), want, storedTolerance(dtype));
  }
}

TEST_P(Conformance, SoftmaxCrossEntropy_InEveryFloatType) {
  const int64_t N = 64, K = 10;
  std::vector<int32_t> labels(N);
  for (int64_t n = 0; n < N; ++n)
    labels[n] = int32_t((n * 7) % K);
  for (const std::string &dtype : kFloatTypes) {
    SCOPED_TRACE(dtype);
    std::vector<float> logits = roundedTo(dtype, testData("logits", K * N));
    StepHarness h = steps();
    int64_t l = h.floats(dtype, logits), y = h.i32(labels),
            out = h.floats(dtype, std::vector<float>(N));
    h.run({{"op", "softmax_cross_entropy"},
           {"logits", operand(l, {"classes", "batch"})},
           {"labels", operand(y, {"batch"})},
           {"out", operand(out, {"batch"})},
           {"dim", "classes"},
           {"sizes", {{"batch", N}, {"classes", K}}}});
    std::vector<double> want;
    for (int64_t n = 0; n < N; ++n) {
      double total = 0;
      for (int64_t k = 0; k < K; ++k)
        total += std::exp(double(logits[k * N + n]));
      want.push_back(std::log(total) - logits[labels[n] * N + n]);
    }
    expectNear(h.readFloats(out), want, storedTolerance(dtype));
  }
}

TEST_P(Conformance, SoftmaxCrossEntropy_RejectsLabelOutOfRange) {
  StepHarness h = steps();
  int64_t l = h.f32(std::vector<float>(12)), y = h.i32({1, 3, 0, 5}),
          out = h.f32(std::vector<float>(4));
  try {
    h.run({{"op", "softmax_cross_entropy"},
           {"logits", operand(l, {"batch", "classes"})},
           {"labels", operand(y, {"batch"})},
           {"out", operand(out, {"batch"})},
           {"dim", "classes"},
           {"sizes", {{"batch", 4}, {"classes", 3}}}});
    ADD_FAILURE() << "expected a RuntimeError";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(), "label 3 (labels element 1) is outside [0, 3)");
  }
}

TEST_P(Conformance, Argmax_TakesTheFirstMaximumAndSkipsNaN) {
  // in[classes, batch]; out[batch].
  std::vector<float> x = {1, NAN, NAN, 5, //
                          3, 2,   NAN, 5, //
                          3, 7,   NAN, 1};
  for (const std::string &dtype : kFloatTypes) {
    SCOPED_TRACE(dtype);
    StepHarness h = steps();
    int64_t in = h.floats(dtype, x), out = h.i32(std::vector<int32_t>(4, -9));
    h.run({{"op", "argmax"},
           {"in", operand(in, {"classes", "batch"})},
           {"out", operand(out, {"batch"})},
           {"dim", "classes"},
           {"sizes", {{"batch", 4}, {"classes", 3}}}});
    EXPECT_EQ(h.readI32(out), (std::vector<int32_t>{1, 2, 0, 0}));
  }
}

} // namespace
