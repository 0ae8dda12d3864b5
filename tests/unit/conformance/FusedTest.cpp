//===- FusedTest.cpp - Fused steps against formulas -----------------------===//
//
// The "fused" step on the backend under test against formulas in double:
// every element function inside a body; a gelu -> add -> layer-norm body
// with a transposed operand, a broadcast one and a per-row output, in every
// float type; an element-wise body longer than one block with broadcasts;
// softmax with its row sums over many short rows, few long ones (a GPU cuts
// them into chunks) and into a scalar; empty and scalar iteration spaces;
// bf16 and f16 values rounded per instruction ("round") as unfused steps
// store them.
//
//===----------------------------------------------------------------------===//

#include "Conformance.h"
#include "Formulas.h"

#include <cmath>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;
using nlohmann::json;

namespace {

TEST_P(Conformance, Fused_EveryFunctionInABody) {
  ASSERT_EQ(functionWithoutFormula(), "");
  const int64_t N = 300;
  std::vector<float> x = testData("x", N), y = testData("y", N);
  for (float &v : y)
    v += 3.0f; // keep div away from zero
  for (const auto &[fn, formula] : unaryFormulas()) {
    SCOPED_TRACE(fn);
    std::vector<float> in = x;
    if (positiveDomain(fn))
      for (float &v : in)
        v = std::abs(v) + 0.1f;
    StepHarness h = steps();
    int64_t xb = h.f32(in), out = h.f32(std::vector<float>(N));
    json instruction = instr(fn.c_str(), {0});
    if (fn == "scale")
      instruction["value"] = 2.5;
    h.run({{"op", "fused"},
           {"dims", {"n"}},
           {"reduced", 0},
           {"sizes", {{"n", N}}},
           {"in", {operand(xb, {"n"})}},
           {"out", {output(out, {"n"}, 1)}},
           {"body", {instruction}}});
    std::vector<double> want;
    for (float v : in)
      want.push_back(formula(v));
    expectNear(h.readF32(out), want, 1e-5);
  }
  for (const auto &[fn, formula] : binaryFormulas()) {
    SCOPED_TRACE(fn);
    // Every third y equals x, so eq and lt see ties.
    std::vector<float> rhs = y;
    for (int64_t i = 0; i < N; i += 3)
      rhs[i] = x[i];
    StepHarness h = steps();
    int64_t xb = h.f32(x), yb = h.f32(rhs), out = h.f32(std::vector<float>(N));
    h.run({{"op", "fused"},
           {"dims", {"n"}},
           {"reduced", 0},
           {"sizes", {{"n", N}}},
           {"in", {operand(xb, {"n"}), operand(yb, {"n"})}},
           {"out", {output(out, {"n"}, 2)}},
           {"body", {instr(fn.c_str(), {0, 1})}}});
    std::vector<double> want;
    for (int64_t i = 0; i < N; ++i)
      want.push_back(formula(x[i], rhs[i]));
    expectNear(h.readF32(out), want, 1e-6);
  }
}

TEST_P(Conformance, Fused_LayerNormInEveryFloatType) {
  const int64_t batch = 5, d = 37;
  for (const std::string &dtype : kFloatTypes) {
    SCOPED_TRACE(dtype);
    std::vector<float> x = roundedTo(dtype, testData("x", batch * d)),
                       r = roundedTo(dtype, testData("r", batch * d)),
                       g = roundedTo(dtype, testData("g", d));
    StepHarness h = steps();
    int64_t xb = h.floats(dtype, x), rb = h.floats(dtype, r),
            gb = h.floats(dtype, g),
            yb = h.floats(dtype, std::vector<float>(batch * d)),
            rsb = h.floats(dtype, std::vector<float>(batch)),
            ytb = h.floats(dtype, std::vector<float>(batch * d));
    h.run(layerNormStep(xb, rb, gb, yb, rsb, ytb, batch, d));
    std::vector<double> y(batch * d), rs(batch), yT(batch * d);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<double> a(d);
      double mean = 0, var = 0;
      for (int64_t i = 0; i < d; ++i) {
        a[i] = geluFormula(x[i * batch + b]) + r[b * d + i];
        mean += a[i] / d;
      }
      for (int64_t i = 0; i < d; ++i)
        var += (a[i] - mean) * (a[i] - mean) / d;
      rs[b] = 1.0 / std::sqrt(var + 1e-5);
      for (int64_t i = 0; i < d; ++i)
        y[b * d + i] = yT[i * batch + b] = (a[i] - mean) * rs[b] * g[i];
    }
    double tolerance = dtype == "f32" ? 2e-5 : storedTolerance(dtype);
    expectNear(h.readFloats(rsb), rs, tolerance);
    expectNear(h.readFloats(yb), y, tolerance);
    expectNear(h.readFloats(ytb), yT, tolerance);
  }
}

TEST_P(Conformance, Fused_ElementwiseBlocksAndBroadcasts) {
  // out[a, b] = tanh(x[a, b] * w[b] + s) - max(x, 0): the run of 3 x 1100
  // elements is cut into blocks (with a tail); w repeats along a, s is a
  // scalar operand.
  const int64_t A = 3, B = 1100;
  for (const std::string &dtype : kFloatTypes) {
    SCOPED_TRACE(dtype);
    std::vector<float> x = roundedTo(dtype, testData("x", A * B)),
                       w = roundedTo(dtype, testData("w", B));
    StepHarness h = steps();
    int64_t xb = h.floats(dtype, x), wb = h.floats(dtype, w),
            sb = h.floats(dtype, {0.25f}),
            ob = h.floats(dtype, std::vector<float>(A * B));
    h.run(
        {{"op", "fused"},
         {"dims", {"a", "b"}},
         {"reduced", 0},
         {"sizes", {{"a", A}, {"b", B}}},
         {"in", {operand(xb, {"a", "b"}), operand(wb, {"b"}), operand(sb, {})}},
         {"out", {output(ob, {"a", "b"}, 8)}},
         {"body",
          {instr("mul", {0, 1}),
           instr("add", {3, 2}),
           instr("tanh", {4}),
           {{"fn", "const"}, {"value", 0.0}},
           instr("max", {0, 6}),
           instr("sub", {5, 7})}}});
    std::vector<double> want;
    for (int64_t i = 0; i < A; ++i)
      for (int64_t j = 0; j < B; ++j) {
        double v = x[i * B + j];
        want.push_back(std::tanh(v * w[j] + 0.25) - std::max(v, 0.0));
      }
    expectNear(h.readFloats(ob), want,
               dtype == "f32" ? 2e-5 : storedTolerance(dtype));
  }
}

TEST_P(Conformance, Fused_HalfValuesAreRoundedAsTheUnfusedStepsStoreThem) {
  // out = x * y + x in bf16 and f16, read and written as they are, each
  // value marked "round" rounded once computed, as a mul step and then an
  // add step would store them: bit for bit, and (the data shows) not what
  // one rounding of the f32 chain gives.
  const int64_t N = 1200;
  for (std::string dtype : {"bf16", "f16"}) {
    SCOPED_TRACE(dtype);
    std::vector<float> x = roundedTo(dtype, testData("x", N)),
                       y = roundedTo(dtype, testData("y", N));
    StepHarness h = steps();
    int64_t xb = h.floats(dtype, x), yb = h.floats(dtype, y),
            ob = h.floats(dtype, std::vector<float>(N));
    json mul = instr("mul", {0, 1}), add = instr("add", {2, 0});
    mul["round"] = dtype;
    add["round"] = dtype;
    h.run({{"op", "fused"},
           {"dims", {"n"}},
           {"reduced", 0},
           {"sizes", {{"n", N}}},
           {"in", {operand(xb, {"n"}), operand(yb, {"n"})}},
           {"out", {output(ob, {"n"}, 3)}},
           {"body", {mul, add}}});
    auto round = [&](float v) { return roundedTo(dtype, {v})[0]; };
    std::vector<float> got = h.readFloats(ob);
    int64_t apart = 0;
    for (int64_t i = 0; i < N; ++i) {
      float stepwise = round(round(x[i] * y[i]) + x[i]);
      ASSERT_EQ(got[i], stepwise) << "element " << i;
      apart += round(x[i] * y[i] + x[i]) != stepwise;
    }
    EXPECT_GT(apart, 0) << "the data does not tell the two roundings apart";
  }
}

/// A fused softmax over b of x[a, b] with its row sums.
TEST_P(Conformance, Fused_SoftmaxByRowsAndInChunks) {
  // Many short rows (a GPU block per row), few long rows (chunks).
  for (auto [A, B] : {std::pair<int64_t, int64_t>{2000, 300}, {3, 200000}}) {
    SCOPED_TRACE(std::to_string(A) + " rows of " + std::to_string(B));
    std::vector<float> x = testData("x", A * B);
    StepHarness h = steps();
    int64_t xb = h.f32(x), y = h.f32(std::vector<float>(A * B)),
            sums = h.f32(std::vector<float>(A));
    h.run({{"op", "fused"},
           {"dims", {"a", "b"}},
           {"reduced", 1},
           {"in", {operand(xb, {"a", "b"})}},
           {"out", {output(y, {"a", "b"}, 5), output(sums, {"a"}, 4)}},
           {"sizes", {{"a", A}, {"b", B}}},
           {"body",
            {instr("reduce_max", {0}), instr("sub", {0, 1}), instr("exp", {2}),
             instr("reduce_sum", {3}), instr("div", {3, 4})}}});
    std::vector<double> wantY(A * B), wantSums(A);
    for (int64_t a = 0; a < A; ++a) {
      double top = -INFINITY;
      for (int64_t b = 0; b < B; ++b)
        top = std::max(top, double(x[a * B + b]));
      for (int64_t b = 0; b < B; ++b)
        wantSums[a] += std::exp(x[a * B + b] - top);
      for (int64_t b = 0; b < B; ++b)
        wantY[a * B + b] = std::exp(x[a * B + b] - top) / wantSums[a];
    }
    // Sums of up to 200,000 positive terms in f32.
    expectNear(h.readF32(sums), wantSums, 1e-5 * std::sqrt(double(B)));
    expectNear(h.readF32(y), wantY, 1e-5);
  }
}

TEST_P(Conformance, Fused_ReducedIntoAScalarInChunks) {
  // sum(x * x) / 2 over 256 x 4096 elements: one row in many chunks.
  const int64_t A = 256, B = 4096;
  std::vector<float> x = testData("x", A * B);
  StepHarness h = steps();
  int64_t xb = h.f32(x), total = h.f32(std::vector<float>(1));
  h.run({{"op", "fused"},
         {"dims", {"a", "b"}},
         {"reduced", 2},
         {"in", {operand(xb, {"a", "b"})}},
         {"out", {output(total, {}, 3)}},
         {"sizes", {{"a", A}, {"b", B}}},
         {"body",
          {instr("mul", {0, 0}),
           instr("reduce_sum", {1}),
           {{"fn", "scale"}, {"args", {2}}, {"value", 0.5}}}}});
  double want = 0;
  for (float v : x)
    want += 0.5 * double(v) * v;
  expectNear(h.readF32(total), {want}, 1e-5);
}

TEST_P(Conformance, Fused_EmptyRowsAndScalarSpaces) {
  // Reductions over an empty dim: the sum is 0 and the maximum -inf.
  StepHarness h = steps();
  int64_t x = h.f32({}), sum = h.f32({7, 7}), top = h.f32({7, 7}),
          s = h.f32({3}), out = h.f32({0});
  h.run({{"op", "fused"},
         {"dims", {"r", "k"}},
         {"reduced", 1},
         {"sizes", {{"r", 2}, {"k", 0}}},
         {"in", {operand(x, {"r", "k"})}},
         {"out", {output(sum, {"r"}, 1), output(top, {"r"}, 2)}},
         {"body", {instr("reduce_sum", {0}), instr("reduce_max", {0})}}});
  EXPECT_EQ(h.readF32(sum), (std::vector<float>{0, 0}));
  EXPECT_EQ(h.readF32(top), (std::vector<float>{-INFINITY, -INFINITY}));
  // No dims at all: one element.
  h.run({{"op", "fused"},
         {"dims", json::array()},
         {"reduced", 0},
         {"sizes", json::object()},
         {"in", {operand(s, {})}},
         {"out", {output(out, {}, 2)}},
         {"body", {instr("sqrt", {0}), instr("mul", {1, 1})}}});
  expectNear(h.readF32(out), {3.0}, 1e-6);
}

} // namespace
