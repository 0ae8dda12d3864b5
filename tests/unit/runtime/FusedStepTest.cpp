//===- FusedStepTest.cpp - The loader's errors for fused steps ------------===//
//
// Every error the loader gives a malformed "fused" step, on the layer-norm
// body (what fused steps compute, on every backend, is in
// tests/unit/conformance/FusedTest.cpp).
//
//===----------------------------------------------------------------------===//

#include "StepHarness.h"

#include "runtime/Error.h"

#include <gtest/gtest.h>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;
using nlohmann::json;

namespace {

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
  EXPECT_EQ(errorAfter([](json &s) { s["body"][1]["round"] = "bf16"; }), "");
  EXPECT_EQ(errorAfter([](json &s) { s["body"][1]["round"] = "f32"; }),
            "step.mprog: steps[0].body[1].round: \"f32\" is not a 16-bit "
            "float type (bf16, f16); a value without \"round\" stays f32");
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
