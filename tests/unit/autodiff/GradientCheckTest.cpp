//===- GradientCheckTest.cpp - every gradient against finite differences -===//
//
// For each differentiable op, a small model whose loss is a weighted sum of
// the op's result (the weights are a synthetic input, so every element of
// the result matters differently). mtf-autodiff adds grad/NAME outputs; the
// reference interpreter (double precision) computes them, and central finite
// differences of the forward loss (evaluation runs with one parameter
// element moved by ±h, in training run 0) must agree to 1e-6 relative.
//
//===----------------------------------------------------------------------===//

#include "AutodiffTestSupport.h"

#include <cmath>

using meshc::interp::Tensor;
using meshc::testing::compile;

namespace {

/// The forward loss of training run 0 (dropout masks included) with
/// `params` as the parameter values.
double lossAt(mlir::mtf::ProgramOp program,
              const std::map<std::string, Tensor> &params) {
  meshc::interp::Options options;
  options.params = params;
  auto result = meshc::interp::interpretRuns(program, options);
  EXPECT_TRUE(succeeded(result));
  return succeeded(result) ? result->outputs.at("loss").data.at(0) : NAN;
}

/// Checks every gradient output of `source` against finite differences.
void checkGradients(const std::string &source, double tolerance = 1e-6,
                    bool ir = false) {
  auto compiled = compile(source, /*outputGrads=*/true, ir);
  ASSERT_TRUE(compiled->module) << compiled->diagnostics;
  mlir::mtf::ProgramOp program = compiled->program();

  meshc::interp::Options evalOptions;
  evalOptions.eval = true;
  auto initial = meshc::interp::interpretRuns(program, evalOptions);
  ASSERT_TRUE(succeeded(initial)) << compiled->diagnostics;
  std::map<std::string, Tensor> params = initial->params;

  auto trained =
      meshc::interp::interpretRuns(program, meshc::interp::Options());
  ASSERT_TRUE(succeeded(trained)) << compiled->diagnostics;

  int checked = 0;
  for (auto &[name, value] : params) {
    if (name.find('/') != std::string::npos) // optimizer slots
      continue;
    auto it = trained->outputs.find("grad/" + name);
    ASSERT_NE(it, trained->outputs.end()) << "no gradient of " << name;
    const Tensor &grad = it->second;
    ASSERT_EQ(grad.shape, value.shape) << name;
    ASSERT_EQ(grad.dims, value.dims) << name;
    for (size_t i = 0; i < value.data.size(); ++i) {
      double h = 1e-6 * std::max(1.0, std::fabs(value.data[i]));
      std::map<std::string, Tensor> moved = params;
      moved[name].data[i] += h;
      double up = lossAt(program, moved);
      moved[name].data[i] -= 2 * h;
      double down = lossAt(program, moved);
      double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(grad.data[i], numeric,
                  tolerance * std::max(1.0, std::fabs(numeric)))
          << "d loss / d " << name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

/// A model around one expression `z` of params `x` [a, b] and `y` [b] (and
/// `q` [b, c]); the loss is sum(z * w) for a synthetic input `w` with z's
/// dims `zdims`.
std::string model(const std::string &z, const std::string &zdims,
                  const std::string &init = "normal(0, 1)") {
  return "dim a = 3\n"
         "dim b = 4\n"
         "dim c = 2\n"
         "param x : f32[a, b] = " +
         init +
         "\n"
         "param y : f32[b] = " +
         init +
         "\n"
         "param q : f32[b, c] = normal(0, 1)\n"
         "input w : f32[" +
         zdims +
         "]\n"
         "z = " +
         z +
         "\n"
         "loss = sum(z * w)\n"
         "output loss\n"
         "train loss with sgd(lr = 0.1)\n";
}

TEST(GradientCheck, EinsumMatmul) {
  checkGradients(model("einsum(x, q -> [a, c])", "a, c"));
}
TEST(GradientCheck, EinsumThreeOperandsAndBroadcastDim) {
  checkGradients(model("einsum(x, y, q -> [c, a])", "c, a"));
}
TEST(GradientCheck, EinsumSumsADimOnlyOneOperandHas) {
  // b is only in x (and summed): its gradient is constant along b.
  checkGradients(model("einsum(x -> [a])", "a"));
}
TEST(GradientCheck, EinsumOfTheSameTensorTwice) {
  checkGradients(model("einsum(x, x -> [b])", "b"));
}
TEST(GradientCheck, Rename) {
  checkGradients(model("rename(x, b, c2)", "a, c2").insert(0, "dim c2 = 4\n"));
}
TEST(GradientCheck, SplitDimAndMergeDims) {
  // Not written in the language (a pipeline makes them): the weight's rows
  // cut into [s, i], scaled elementwise, joined back under another name.
  checkGradients(R"mlir(
mtf.program @split_merge {
  %w = mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[a=4, b=3], f32>
  %u = mtf.input "u" : !mtf.tensor<[s=2, i=2, b=3], f32>
  %v = mtf.input "v" : !mtf.tensor<[k=4, b=3], f32>
  %s = mtf.split_dim %w "a" : !mtf.tensor<[a=4, b=3], f32> -> !mtf.tensor<[s=2, i=2, b=3], f32>
  %t = mtf.mul %s, %u : !mtf.tensor<[s=2, i=2, b=3], f32>, !mtf.tensor<[s=2, i=2, b=3], f32> -> !mtf.tensor<[s=2, i=2, b=3], f32>
  %h = mtf.tanh %t : !mtf.tensor<[s=2, i=2, b=3], f32>
  %m = mtf.merge_dims %h "s" : !mtf.tensor<[s=2, i=2, b=3], f32> -> !mtf.tensor<[k=4, b=3], f32>
  %p = mtf.mul %m, %v : !mtf.tensor<[k=4, b=3], f32>, !mtf.tensor<[k=4, b=3], f32> -> !mtf.tensor<[k=4, b=3], f32>
  %l = mtf.reduce_sum %p : !mtf.tensor<[k=4, b=3], f32> -> !mtf.tensor<[], f32>
  mtf.output "loss" %l : !mtf.tensor<[], f32>
  mtf.train %l with "sgd" {lr = 0.1 : f64} : !mtf.tensor<[], f32>
}
)mlir",
                 1e-6, /*ir=*/true);
}
TEST(GradientCheck, SplitDimAndMergeDimsWithBlocks) {
  // A pipeline's uneven stages: 5 rows cut into 3 blocks [2, 0, 3] of up
  // to 3, zeros after each block (tanh(0) * u adds nothing), joined back;
  // the padding's gradient is dropped.
  checkGradients(R"mlir(
mtf.program @split_merge_blocks {
  %w = mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[a=5, b=2], f32>
  %u = mtf.input "u" : !mtf.tensor<[s=3, i=3, b=2], f32>
  %v = mtf.input "v" : !mtf.tensor<[k=5, b=2], f32>
  %s = mtf.split_dim %w "a" blocks [2, 0, 3] : !mtf.tensor<[a=5, b=2], f32> -> !mtf.tensor<[s=3, i=3, b=2], f32>
  %t = mtf.mul %s, %u : !mtf.tensor<[s=3, i=3, b=2], f32>, !mtf.tensor<[s=3, i=3, b=2], f32> -> !mtf.tensor<[s=3, i=3, b=2], f32>
  %h = mtf.tanh %t : !mtf.tensor<[s=3, i=3, b=2], f32>
  %e = mtf.mul %h, %u : !mtf.tensor<[s=3, i=3, b=2], f32>, !mtf.tensor<[s=3, i=3, b=2], f32> -> !mtf.tensor<[s=3, i=3, b=2], f32>
  %m = mtf.merge_dims %e "s" blocks [2, 0, 3] : !mtf.tensor<[s=3, i=3, b=2], f32> -> !mtf.tensor<[k=5, b=2], f32>
  %p = mtf.mul %m, %v : !mtf.tensor<[k=5, b=2], f32>, !mtf.tensor<[k=5, b=2], f32> -> !mtf.tensor<[k=5, b=2], f32>
  %l1 = mtf.reduce_sum %p : !mtf.tensor<[k=5, b=2], f32> -> !mtf.tensor<[], f32>
  %l2 = mtf.reduce_sum %e : !mtf.tensor<[s=3, i=3, b=2], f32> -> !mtf.tensor<[], f32>
  %l = mtf.add %l1, %l2 : !mtf.tensor<[], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[], f32>
  mtf.output "loss" %l : !mtf.tensor<[], f32>
  mtf.train %l with "sgd" {lr = 0.1 : f64} : !mtf.tensor<[], f32>
}
)mlir",
                 1e-6, /*ir=*/true);
}
TEST(GradientCheck, LoopWithTwoCarriedValues) {
  // Each layer mixes both carried values; the loss reads both finals.
  checkGradients(R"mlir(
mtf.program @two_carried {
  %w = mtf.param "w" normal(0.0, 0.7) : !mtf.tensor<[layers=3, a=2], f32>
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  %v = mtf.input "v" : !mtf.tensor<[a=2], f32>
  %y:2 = mtf.loop "layers" 3 carry(%x, %v : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32>) stacked(%w : !mtf.tensor<[layers=3, a=2], f32>) -> (!mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32>) {
  ^bb0(%h: !mtf.tensor<[a=2], f32>, %g: !mtf.tensor<[a=2], f32>, %wi: !mtf.tensor<[a=2], f32>):
    %m = mtf.mul %h, %wi : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
    %n = mtf.add %m, %g : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
    %p = mtf.mul %g, %wi : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
    %t = mtf.tanh %p : !mtf.tensor<[a=2], f32>
    mtf.yield %n, %t : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32>
  }
  %q = mtf.mul %y#0, %v : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
  %r = mtf.add %q, %y#1 : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
  %l = mtf.reduce_sum %r : !mtf.tensor<[a=2], f32> -> !mtf.tensor<[], f32>
  mtf.output "loss" %l : !mtf.tensor<[], f32>
  mtf.train %l with "sgd" {lr = 0.1 : f64} : !mtf.tensor<[], f32>
}
)mlir",
                 1e-6, /*ir=*/true);
}
TEST(GradientCheck, LoopWithStackedResultsAndAnUnreadFinal) {
  // The loss reads each layer's stacked value and an invariant's gradient
  // sums over the layers; the second carried value's final is unread.
  checkGradients(R"mlir(
mtf.program @stacked {
  %w = mtf.param "w" normal(0.0, 0.7) : !mtf.tensor<[layers=3, a=2], f32>
  %c = mtf.param "c" normal(0.0, 0.7) : !mtf.tensor<[a=2], f32>
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  %u = mtf.input "u" : !mtf.tensor<[layers=3, a=2], f32>
  %y:3 = mtf.loop "layers" 3 carry(%x, %x : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32>) stacked(%w : !mtf.tensor<[layers=3, a=2], f32>) invariant(%c : !mtf.tensor<[a=2], f32>) -> (!mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32>) stacked(!mtf.tensor<[layers=3, a=2], f32>) {
  ^bb0(%h: !mtf.tensor<[a=2], f32>, %g: !mtf.tensor<[a=2], f32>, %wi: !mtf.tensor<[a=2], f32>, %ci: !mtf.tensor<[a=2], f32>):
    %m = mtf.mul %h, %wi : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
    %n = mtf.add %m, %ci : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
    %t = mtf.tanh %n : !mtf.tensor<[a=2], f32>
    %s = mtf.mul %t, %g : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
    mtf.yield %t, %g, %s : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32>
  }
  %q = mtf.mul %y#2, %u : !mtf.tensor<[layers=3, a=2], f32>, !mtf.tensor<[layers=3, a=2], f32> -> !mtf.tensor<[layers=3, a=2], f32>
  %r = mtf.reduce_sum %q : !mtf.tensor<[layers=3, a=2], f32> -> !mtf.tensor<[], f32>
  %e = mtf.reduce_sum %y#0 : !mtf.tensor<[a=2], f32> -> !mtf.tensor<[], f32>
  %l = mtf.add %r, %e : !mtf.tensor<[], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[], f32>
  mtf.output "loss" %l : !mtf.tensor<[], f32>
  mtf.train %l with "sgd" {lr = 0.1 : f64} : !mtf.tensor<[], f32>
}
)mlir",
                 1e-6, /*ir=*/true);
}
TEST(GradientCheck, Constrain) {
  checkGradients(model("constrain(x, a: m) * 2", "a, b"));
}
TEST(GradientCheck, Relu) { checkGradients(model("relu(x)", "a, b")); }
TEST(GradientCheck, Gelu) { checkGradients(model("gelu(x)", "a, b")); }
TEST(GradientCheck, Silu) { checkGradients(model("silu(x)", "a, b")); }
TEST(GradientCheck, Sigmoid) { checkGradients(model("sigmoid(x)", "a, b")); }
TEST(GradientCheck, LogSumExp) {
  checkGradients(model("logsumexp(x * 3, b)", "a"));
}
TEST(GradientCheck, LogSumExpOfABroadcastOperand) {
  checkGradients(model("logsumexp(x + y, a)", "b"));
}
TEST(GradientCheck, Exp) { checkGradients(model("exp(x)", "a, b")); }
TEST(GradientCheck, Log) {
  checkGradients(model("log(x)", "a, b", "uniform(0.5, 2)"));
}
TEST(GradientCheck, Tanh) { checkGradients(model("tanh(x)", "a, b")); }
TEST(GradientCheck, Sqrt) {
  checkGradients(model("sqrt(x)", "a, b", "uniform(0.5, 2)"));
}
TEST(GradientCheck, Rsqrt) {
  checkGradients(model("rsqrt(x)", "a, b", "uniform(0.5, 2)"));
}
TEST(GradientCheck, Negate) { checkGradients(model("-x", "a, b")); }
TEST(GradientCheck, AddBroadcasts) { checkGradients(model("x + y", "a, b")); }
TEST(GradientCheck, SubBroadcasts) { checkGradients(model("y - x", "a, b")); }
TEST(GradientCheck, MulBroadcasts) { checkGradients(model("x * y", "a, b")); }
TEST(GradientCheck, DivBroadcasts) {
  checkGradients(model("x / y", "a, b", "uniform(0.5, 2)"));
}
TEST(GradientCheck, Maximum) { checkGradients(model("maximum(x, y)", "a, b")); }
TEST(GradientCheck, Minimum) { checkGradients(model("minimum(y, x)", "a, b")); }
TEST(GradientCheck, Sum) { checkGradients(model("sum(x, [a])", "b")); }
TEST(GradientCheck, Mean) { checkGradients(model("mean(x, [b])", "a")); }
TEST(GradientCheck, MeanOfAll) { checkGradients(model("mean(x) * y", "b")); }
TEST(GradientCheck, Max) { checkGradients(model("max(x, [a])", "b")); }
TEST(GradientCheck, Softmax) { checkGradients(model("softmax(x, b)", "a, b")); }
TEST(GradientCheck, Cumsum) { checkGradients(model("cumsum(x, b)", "a, b")); }
TEST(GradientCheck, CumsumAlongTheFirstDimTwice) {
  checkGradients(model("cumsum(cumsum(x, a) * x, a)", "a, b"));
}
TEST(GradientCheck, RangeAndLessMaskScores) {
  // A causal mask: constant, so the gradient flows through x only.
  checkGradients(model("x * (1 - less(range(a), range(b))) + "
                       "less(range(b), range(a)) * -1e3",
                       "a, b"));
}
TEST(GradientCheck, SliceAndPad) {
  checkGradients(model("pad(slice(x, b, 1, c), c, 1, b) * x", "a, b"));
}
TEST(GradientCheck, ShiftBothWays) {
  checkGradients(model("shift(x, b, 1) * shift(x, b, -2) + x", "a, b"));
}
TEST(GradientCheck, Concat) {
  checkGradients(
      model("concat(x, b, x * x, b, b2)", "a, b2").insert(0, "dim b2 = 8\n"));
}
TEST(GradientCheck, TopKIsAConstantMask) {
  // d/dx (x * mask) = mask: the selection itself carries no gradient.
  checkGradients(model("x * top_k(x, b, 2)", "a, b"));
}
TEST(GradientCheck, ScalarConstants) {
  checkGradients(model("2.5 * x - x / 4 + 1", "a, b"));
}

TEST(GradientCheck, SoftmaxCrossEntropy) {
  checkGradients("dim batch = 5\n"
                 "dim classes = 3\n"
                 "input labels : i32[batch]\n"
                 "param logits : f32[batch, classes] = normal(0, 1)\n"
                 "loss = mean(softmax_cross_entropy(logits, labels, classes))\n"
                 "output loss\n"
                 "train loss with sgd(lr = 0.1)\n");
}

TEST(GradientCheck, EmbeddingLookupThroughOneHot) {
  checkGradients("dim seq = 5\n"
                 "dim vocab = 7\n"
                 "dim d = 3\n"
                 "input ids : i32[seq]\n"
                 "input w : f32[seq, d]\n"
                 "param table : f32[vocab, d] = normal(0, 1)\n"
                 "e = einsum(one_hot(ids, vocab), table -> [seq, d])\n"
                 "loss = sum(e * w)\n"
                 "output loss\n"
                 "train loss with sgd(lr = 0.1)\n");
}

TEST(GradientCheck, DropoutScalesLikeItsMask) {
  checkGradients(model("dropout(x, 0.5)", "a, b"));
}

TEST(GradientCheck, LayerNorm) {
  checkGradients("dim a = 3\n"
                 "dim d = 6\n"
                 "param x : f32[a, d] = normal(0, 1)\n"
                 "param gain : f32[d] = normal(1, 0.1)\n"
                 "param shift : f32[d] = normal(0, 0.1)\n"
                 "input w : f32[a, d]\n"
                 "mu = mean(x, [d])\n"
                 "xc = x - mu\n"
                 "var = mean(xc * xc, [d])\n"
                 "y = xc * rsqrt(var + 1e-5) * gain + shift\n"
                 "loss = sum(y * w)\n"
                 "output loss\n"
                 "train loss with sgd(lr = 0.1)\n");
}

TEST(GradientCheck, ParameterUnusedByTheLossGetsZeroAndAWarning) {
  auto compiled = compile("dim a = 2\n"
                          "param x : f32[a] = normal(0, 1)\n"
                          "param unused : f32[a] = normal(0, 1)\n"
                          "loss = sum(x * x)\n"
                          "output loss\n"
                          "train loss with sgd(lr = 0.1)\n");
  ASSERT_TRUE(compiled->module) << compiled->diagnostics;
  EXPECT_NE(compiled->diagnostics.find(
                "parameter 'unused' does not affect the loss; its gradient "
                "is zero"),
            std::string::npos)
      << compiled->diagnostics;
  auto result = meshc::interp::interpretRuns(compiled->program(),
                                             meshc::interp::Options());
  ASSERT_TRUE(succeeded(result));
  for (double v : result->outputs.at("grad/unused").data)
    EXPECT_EQ(v, 0.0);
}

TEST(GradientCheck, GradientsStopAtArgmaxAndEqual) {
  // accuracy-like terms are piecewise constant: no gradient flows through.
  checkGradients("dim a = 3\n"
                 "dim k = 4\n"
                 "param x : f32[a, k] = normal(0, 1)\n"
                 "input labels : i32[a]\n"
                 "hit = equal(argmax(x, k), labels)\n"
                 "loss = sum(x * x) + sum(hit)\n"
                 "output loss\n"
                 "train loss with sgd(lr = 0.1)\n");
}

} // namespace
