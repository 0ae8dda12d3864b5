//===- FusedStepTest.cpp - Fused steps on the CPU
//---------------------------===//
//
// The "fused" step through the loader and a CpuDevice against direct
// double-precision formulas: a gelu -> add -> layer-norm body with a
// transposed operand (gathered runs), a broadcast one and a per-row output;
// an elementwise body longer than one block with broadcasts; empty and
// scalar iteration spaces; and the loader's errors for malformed bodies.
//
//===----------------------------------------------------------------------===//

#include "StepHarness.h"

#include "runtime/Error.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;
using nlohmann::json;

namespace {

double gelu(double x) {
  return 0.5 * x *
         (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

void expectNear(float got, double want, const std::string &what) {
  ASSERT_NEAR(got, want, 2e-5 * std::max(1.0, std::abs(want))) << what;
}

/// y = layer_norm(gelu(x) + r) * g over d, x stored [d, batch].
json layerNormStep(int64_t x, int64_t r, int64_t g, int64_t y, int64_t rs,
                   int64_t yT, int64_t batch, int64_t d) {
  // Values: layerNormBody's.
  return {{"op", "fused"},
          {"dims", {"batch", "d"}},
          {"reduced", 1},
          {"sizes", {{"batch", batch}, {"d", d}}},
          {"in",
           {operand(x, {"d", "batch"}), operand(r, {"batch", "d"}),
            operand(g, {"d"})}},
          {"out",
           {output(y, {"batch", "d"}, 15), output(rs, {"batch"}, 13),
            output(yT, {"d", "batch"}, 15)}},
          {"body", layerNormBody(d)}};
}

TEST(FusedStepTest, LayerNormMatchesTheFormula) {
  const int64_t batch = 5, d = 37;
  std::vector<float> x = testData("x", batch * d), r = testData("r", batch * d),
                     g = testData("g", d);
  StepHarness harness;
  int64_t xb = harness.f32(x), rb = harness.f32(r), gb = harness.f32(g),
          yb = harness.f32(std::vector<float>(batch * d)),
          rsb = harness.f32(std::vector<float>(batch)),
          ytb = harness.f32(std::vector<float>(batch * d));
  harness.run(layerNormStep(xb, rb, gb, yb, rsb, ytb, batch, d));
  std::vector<float> y = harness.readF32(yb), rs = harness.readF32(rsb),
                     yT = harness.readF32(ytb);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<double> a(d);
    double mean = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) {
      a[i] = gelu(x[i * batch + b]) + r[b * d + i];
      mean += a[i] / d;
    }
    for (int64_t i = 0; i < d; ++i)
      var += (a[i] - mean) * (a[i] - mean) / d;
    double scale = 1.0 / std::sqrt(var + 1e-5);
    expectNear(rs[b], scale, "rsqrt row " + std::to_string(b));
    for (int64_t i = 0; i < d; ++i) {
      double want = (a[i] - mean) * scale * g[i];
      expectNear(y[b * d + i], want, "y");
      expectNear(yT[i * batch + b], want, "y transposed");
    }
  }
}

TEST(FusedStepTest, ElementwiseBlocksAndBroadcasts) {
  // out[a, b] = tanh(x[a, b] * w[b] + s) - max(x, 0): the run of 3 x 1100
  // elements is cut into blocks (with a tail); w repeats along a, s is a
  // scalar operand.
  const int64_t a = 3, b = 1100;
  std::vector<float> x = testData("x", a * b), w = testData("w", b);
  StepHarness harness;
  int64_t xb = harness.f32(x), wb = harness.f32(w), sb = harness.f32({0.25f}),
          ob = harness.f32(std::vector<float>(a * b));
  harness.run(
      {{"op", "fused"},
       {"dims", {"a", "b"}},
       {"reduced", 0},
       {"sizes", {{"a", a}, {"b", b}}},
       {"in", {operand(xb, {"a", "b"}), operand(wb, {"b"}), operand(sb, {})}},
       {"out", {output(ob, {"a", "b"}, 8)}},
       {"body",
        {instr("mul", {0, 1}),
         instr("add", {3, 2}),
         instr("tanh", {4}),
         {{"fn", "const"}, {"value", 0.0}},
         instr("max", {0, 6}),
         instr("sub", {5, 7})}}});
  std::vector<float> out = harness.readF32(ob);
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j) {
      double v = x[i * b + j];
      expectNear(out[i * b + j], std::tanh(v * w[j] + 0.25) - std::max(v, 0.0),
                 "element " + std::to_string(i * b + j));
    }
}

TEST(FusedStepTest, EmptyRowsAndScalarSpaces) {
  // Reductions over an empty dim: the sum is 0 and the maximum -inf.
  StepHarness harness;
  int64_t x = harness.f32({}), sum = harness.f32({7, 7}),
          top = harness.f32({7, 7}), s = harness.f32({3}),
          out = harness.f32({0});
  harness.run({{"op", "fused"},
               {"dims", {"r", "k"}},
               {"reduced", 1},
               {"sizes", {{"r", 2}, {"k", 0}}},
               {"in", {operand(x, {"r", "k"})}},
               {"out", {output(sum, {"r"}, 1), output(top, {"r"}, 2)}},
               {"body", {instr("reduce_sum", {0}), instr("reduce_max", {0})}}});
  EXPECT_EQ(harness.readF32(sum), (std::vector<float>{0, 0}));
  EXPECT_EQ(harness.readF32(top), (std::vector<float>{-INFINITY, -INFINITY}));
  // No dims at all: one element.
  harness.run({{"op", "fused"},
               {"dims", json::array()},
               {"reduced", 0},
               {"sizes", json::object()},
               {"in", {operand(s, {})}},
               {"out", {output(out, {}, 2)}},
               {"body", {instr("sqrt", {0}), instr("mul", {1, 1})}}});
  EXPECT_NEAR(harness.readF32(out)[0], 3.0f, 1e-6);
}

/// The loader's message for the layer-norm step changed by `edit`.
template <typename Edit> std::string errorAfter(Edit edit) {
  StepHarness harness;
  int64_t x = harness.f32(std::vector<float>(6)),
          r = harness.f32(std::vector<float>(6)),
          g = harness.f32(std::vector<float>(3)),
          y = harness.f32(std::vector<float>(6)),
          rs = harness.f32(std::vector<float>(2)),
          yT = harness.f32(std::vector<float>(6));
  json step = layerNormStep(x, r, g, y, rs, yT, 2, 3);
  edit(step);
  try {
    harness.load(step);
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "";
}

TEST(FusedStepTest, LoaderErrors) {
  EXPECT_EQ(errorAfter([](json &) {}), "");
  EXPECT_EQ(errorAfter([](json &s) { s["body"][0]["fn"] = "erf"; }),
            "step.mprog: steps[0].body[0].fn: unknown fused fn \"erf\" "
            "(known: const, reduce_sum, reduce_max, relu, gelu, silu, "
            "sigmoid, exp, log, tanh, sqrt, rsqrt, negate, scale, positive, "
            "gelu_grad, add, sub, mul, div, max, min, eq, lt)");
  EXPECT_EQ(errorAfter([](json &s) {
              s["body"][1]["args"] = {4, 1};
            }),
            "step.mprog: steps[0].body[1].args[0]: value 4 is not defined "
            "before value 4 (the operands are values 0..2, then one per "
            "instruction)");
  EXPECT_EQ(errorAfter([](json &s) { s["body"][1]["args"] = {3}; }),
            "step.mprog: steps[0].body[1].args: add takes 2 argument(s), "
            "got 1");
  EXPECT_EQ(errorAfter([](json &s) { s["reduced"] = 0; }),
            "step.mprog: steps[0].body[2].fn: reduce_sum in a fused body "
            "that reduces no dims (\"reduced\" is 0)");
  EXPECT_EQ(errorAfter([](json &s) { s["reduced"] = 3; }),
            "step.mprog: steps[0].reduced: reduces 3 dims but the step has 2");
  EXPECT_EQ(errorAfter([](json &s) { s["out"][0]["value"] = 16; }),
            "step.mprog: steps[0].out[0].value: value 16 is not a value of "
            "the body (it has 16)");
  EXPECT_EQ(errorAfter([](json &s) { s["out"][1]["value"] = 15; }),
            "step.mprog: steps[0].out[1].dims: value 15 varies along 'd', "
            "which [batch=2] lacks");
  EXPECT_EQ(errorAfter([](json &s) { s["out"][2]["buf"] = 0; }),
            "step.mprog: steps[0].out[2]: buffer 0 overlaps buffer 0, which "
            "the fused step reads");
  EXPECT_EQ(errorAfter([](json &s) { s["out"][2]["buf"] = 3; }),
            "step.mprog: steps[0].out[2]: buffer 3 overlaps buffer 3, which "
            "the fused step also writes");
  EXPECT_EQ(errorAfter([](json &s) { s["dims"] = {"batch"}; }),
            "step.mprog: steps[0].in[0].dims: dim 'd' is not an iteration "
            "dim of the fused step (\"dims\")");
  EXPECT_EQ(errorAfter([](json &s) {
              s["dims"] = {"batch", "d", "d"};
            }),
            "step.mprog: steps[0].dims[2]: dim 'd' appears twice");
  EXPECT_EQ(errorAfter([](json &s) { s["out"] = json::array(); }),
            "step.mprog: steps[0].out: a fused step writes at least one "
            "output");
}

} // namespace
