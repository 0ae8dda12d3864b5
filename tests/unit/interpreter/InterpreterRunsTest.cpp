//===- InterpreterRunsTest.cpp - training runs, evaluation runs, dropout --===//
//
// interpretRuns: parameters and slots carried across runs by mtf.assign
// (against counts and closed forms), evaluation runs (no backward or update
// op, no assign, dropout off), given initial parameters and their errors, and
// dropout masks against runtime/core/Random.h.
//
//===----------------------------------------------------------------------===//

#include "InterpreterTestSupport.h"

#include "compiler/interpreter/NamedIndex.h"
#include "runtime/core/Random.h"

#include <cmath>

namespace meshc::interp {
namespace {

using RunsTest = InterpreterTest;

//===----------------------------------------------------------------------===//
// Assigns across runs
//===----------------------------------------------------------------------===//

/// A step counter: the slot is read (and output) at the start of each run
/// and assigned its successor at the end.
constexpr const char *kCounter = R"mlir(
mtf.program @p {
  %c = mtf.param "count" zeros slot : !mtf.tensor<[], f32>
  %one = mtf.constant 1.000000e+00 {mtf.phase = "update"} : !mtf.tensor<[], f32>
  %n = mtf.add %c, %one {mtf.phase = "update"} : !mtf.tensor<[], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[], f32>
  mtf.output "count" %c : !mtf.tensor<[], f32>
  mtf.assign "count" %n {mtf.phase = "update"} : !mtf.tensor<[], f32>
}
)mlir";

TEST_F(RunsTest, CounterSlotCountsRuns) {
  Options options;
  options.steps = 3;
  Result result = runAll(kCounter, options);
  ASSERT_EQ(result.params.count("count"), 1u);
  expectTensor(result.params["count"], {}, {}, {3}, 0.0);
  // The last run read the value from its start.
  expectTensor(result.outputs["count"], {}, {}, {2}, 0.0);
}

TEST_F(RunsTest, OneRunByDefault) {
  Result result = runAll(kCounter);
  expectTensor(result.params["count"], {}, {}, {1}, 0.0);
  expectTensor(result.outputs["count"], {}, {}, {0}, 0.0);
}

TEST_F(RunsTest, GivenSlotValueStartsTheCount) {
  Options options;
  options.steps = 4;
  options.params["count"] = makeTensor({}, {}, {10});
  Result result = runAll(kCounter, options);
  expectTensor(result.params["count"], {}, {}, {14}, 0.0);
  expectTensor(result.outputs["count"], {}, {}, {13}, 0.0);
}

TEST_F(RunsTest, InterpretReturnsTheLastRunsOutputs) {
  Options options;
  options.steps = 3;
  auto outputs = run(kCounter, options);
  expectTensor(outputs["count"], {}, {}, {2}, 0.0);
}

/// loss = (w x - y)^2 / 2 with a hand-written SGD step w -= lr * (w x - y) x.
constexpr const char *kScalarSgd = R"mlir(
mtf.program @p {
  %w = mtf.param "w" zeros : !mtf.tensor<[], f32>
  %x = mtf.input "x" : !mtf.tensor<[], f32>
  %y = mtf.input "y" : !mtf.tensor<[], f32>
  %p = mtf.mul %w, %x : !mtf.tensor<[], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[], f32>
  %r = mtf.sub %p, %y : !mtf.tensor<[], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[], f32>
  %r2 = mtf.mul %r, %r : !mtf.tensor<[], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[], f32>
  %half = mtf.constant 5.000000e-01 : !mtf.tensor<[], f32>
  %loss = mtf.mul %r2, %half : !mtf.tensor<[], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[], f32>
  mtf.output "loss" %loss : !mtf.tensor<[], f32>
  %g = mtf.mul %r, %x {mtf.phase = "backward"} : !mtf.tensor<[], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[], f32>
  %lr = mtf.constant 1.000000e-01 {mtf.phase = "update"} : !mtf.tensor<[], f32>
  %s = mtf.mul %g, %lr {mtf.phase = "update"} : !mtf.tensor<[], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[], f32>
  %wn = mtf.sub %w, %s {mtf.phase = "update"} : !mtf.tensor<[], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[], f32>
  mtf.assign "w" %wn {mtf.phase = "update"} : !mtf.tensor<[], f32>
}
)mlir";

TEST_F(RunsTest, ScalarSgdMatchesClosedForm) {
  // w_{k+1} = (1 - lr x^2) w_k + lr x y, so with w* = y / x,
  // w_k = w* + (1 - lr x^2)^k (w_0 - w*). x = 2, y = 3, lr = 0.1, w_0 = 0.5:
  // w_k = 1.5 - 0.6^k, and loss_k = (x (w_k - w*))^2 / 2 = 2 * 0.36^k.
  for (int64_t steps : {1, 2, 3, 5}) {
    Options options;
    options.steps = steps;
    options.inputs["x"] = makeTensor({}, {}, {2.0});
    options.inputs["y"] = makeTensor({}, {}, {3.0});
    options.params["w"] = makeTensor({}, {}, {0.5});
    Result result = runAll(kScalarSgd, options);
    double k = static_cast<double>(steps);
    expectTensor(result.params["w"], {}, {}, {1.5 - std::pow(0.6, k)}, 1e-14);
    expectTensor(result.outputs["loss"], {}, {}, {2 * std::pow(0.36, k - 1)},
                 1e-14);
  }
}

TEST_F(RunsTest, LinearRegressionSgdMatchesExplicitLoops) {
  // loss = mean_b (sum_d x[b,d] w[d] - y[b])^2; dloss/dw[d] =
  // (2/B) sum_b r[b] x[b,d] with B = 4; lr = 0.125, so w -= 0.0625 * g.
  constexpr const char *source = R"mlir(
mtf.program @p {
  %w = mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[d=2], f32>
  %v = mtf.param "w/unused_slot" ones slot : !mtf.tensor<[d=2], f32>
  %x = mtf.input "x" : !mtf.tensor<[batch=4, d=2], f32>
  %y = mtf.input "y" : !mtf.tensor<[batch=4], f32>
  %p = mtf.einsum %x, %w : !mtf.tensor<[batch=4, d=2], f32>, !mtf.tensor<[d=2], f32> -> !mtf.tensor<[batch=4], f32>
  %r = mtf.sub %p, %y : !mtf.tensor<[batch=4], f32>, !mtf.tensor<[batch=4], f32> -> !mtf.tensor<[batch=4], f32>
  %r2 = mtf.mul %r, %r : !mtf.tensor<[batch=4], f32>, !mtf.tensor<[batch=4], f32> -> !mtf.tensor<[batch=4], f32>
  %loss = mtf.reduce_mean %r2 : !mtf.tensor<[batch=4], f32> -> !mtf.tensor<[], f32>
  mtf.output "loss" %loss : !mtf.tensor<[], f32>
  mtf.output "v" %v : !mtf.tensor<[d=2], f32>
  %g = mtf.einsum %r, %x {mtf.phase = "backward"} : !mtf.tensor<[batch=4], f32>, !mtf.tensor<[batch=4, d=2], f32> -> !mtf.tensor<[d=2], f32>
  %c = mtf.constant 6.250000e-02 {mtf.phase = "update"} : !mtf.tensor<[], f32>
  %s = mtf.mul %g, %c {mtf.phase = "update"} : !mtf.tensor<[d=2], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[d=2], f32>
  %wn = mtf.sub %w, %s {mtf.phase = "update"} : !mtf.tensor<[d=2], f32>, !mtf.tensor<[d=2], f32> -> !mtf.tensor<[d=2], f32>
  mtf.assign "w" %wn {mtf.phase = "update"} : !mtf.tensor<[d=2], f32>
}
)mlir";
  std::vector<double> x = {1.0, 0.5, -0.5, 2.0, 0.25, -1.0, 1.5, 1.0};
  std::vector<double> y = {1.0, -2.0, 0.5, 3.0};
  Options options;
  options.seed = 5;
  options.steps = 3;
  options.inputs["x"] = makeTensor({"batch", "d"}, {4, 2}, x);
  options.inputs["y"] = makeTensor({"batch"}, {4}, y);
  Result result = runAll(source, options);

  std::vector<float> initial(2);
  runtime::fillBlock({runtime::InitSpec::Kind::Normal, 0.0, 1.0}, 5, "w", {2},
                     {0}, {2}, initial.data());
  std::vector<double> w(initial.begin(), initial.end());
  double loss = 0;
  for (int step = 0; step < 3; ++step) {
    std::vector<double> r(4), g(2, 0.0);
    loss = 0;
    for (int b = 0; b < 4; ++b) {
      r[b] = x[b * 2] * w[0] + x[b * 2 + 1] * w[1] - y[b];
      loss += r[b] * r[b] / 4;
    }
    for (int d = 0; d < 2; ++d) {
      for (int b = 0; b < 4; ++b)
        g[d] += r[b] * x[b * 2 + d];
      w[d] -= 0.0625 * g[d];
    }
  }
  expectTensor(result.params["w"], {"d"}, {2}, w, 1e-12);
  expectTensor(result.outputs["loss"], {}, {}, {loss}, 1e-12);
  // Every parameter and slot is in the result, assigned or not.
  EXPECT_EQ(result.params.size(), 2u);
  expectTensor(result.params["w/unused_slot"], {"d"}, {2}, {1, 1}, 0.0);
  expectTensor(result.outputs["v"], {"d"}, {2}, {1, 1}, 0.0);
}

//===----------------------------------------------------------------------===//
// Evaluation runs
//===----------------------------------------------------------------------===//

TEST_F(RunsTest, EvalAssignsNothing) {
  Options options;
  options.steps = 3;
  options.eval = true;
  options.params["count"] = makeTensor({}, {}, {7});
  Result result = runAll(kCounter, options);
  expectTensor(result.params["count"], {}, {}, {7}, 0.0);
  expectTensor(result.outputs["count"], {}, {}, {7}, 0.0);
}

TEST_F(RunsTest, EvalAssignsNothingEvenWithoutPhase) {
  Options options;
  options.steps = 2;
  options.eval = true;
  Result result = runAll(R"mlir(
mtf.program @p {
  %w = mtf.param "w" zeros : !mtf.tensor<[a=2], f32>
  %one = mtf.constant 1.000000e+00 : !mtf.tensor<[a=2], f32>
  %n = mtf.add %w, %one : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
  mtf.output "n" %n : !mtf.tensor<[a=2], f32>
  mtf.assign "w" %n : !mtf.tensor<[a=2], f32>
}
)mlir",
                         options);
  expectTensor(result.params["w"], {"a"}, {2}, {0, 0}, 0.0);
  expectTensor(result.outputs["n"], {"a"}, {2}, {1, 1}, 0.0);
}

/// A forward output, and a backward op that fails on the given ids: only a
/// training run executes it.
constexpr const char *kPhases = R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  %ids = mtf.input "ids" : !mtf.tensor<[a=2], i32>
  %y = mtf.negate %x : !mtf.tensor<[a=2], f32>
  mtf.output "y" %y : !mtf.tensor<[a=2], f32>
  %o = mtf.one_hot %ids over "c" {mtf.phase = "backward"} : !mtf.tensor<[a=2], i32> -> !mtf.tensor<[a=2, c=3], f32>
  %g = mtf.mul %x, %x {mtf.phase = "backward"} : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
  mtf.output "g" %g {mtf.phase = "backward"} : !mtf.tensor<[a=2], f32>
}
)mlir";

TEST_F(RunsTest, EvalSkipsPhaseOps) {
  Options options;
  options.eval = true;
  options.inputs["x"] = makeTensor({"a"}, {2}, {1.5, -2});
  options.inputs["ids"] = makeTensor({"a"}, {2}, {0, 3}, true);
  Result result = runAll(kPhases, options);
  expectTensor(result.outputs["y"], {"a"}, {2}, {-1.5, 2}, 0.0);
  EXPECT_EQ(result.outputs.count("g"), 0u);
}

TEST_F(RunsTest, TrainingRunsPhaseOps) {
  Options options;
  options.inputs["x"] = makeTensor({"a"}, {2}, {1.5, -2});
  options.inputs["ids"] = makeTensor({"a"}, {2}, {0, 2}, true);
  Result result = runAll(kPhases, options);
  expectTensor(result.outputs["y"], {"a"}, {2}, {-1.5, 2}, 0.0);
  expectTensor(result.outputs["g"], {"a"}, {2}, {2.25, 4}, 0.0);

  options.inputs["ids"] = makeTensor({"a"}, {2}, {0, 3}, true);
  Reported error = runAllError(kPhases, options);
  EXPECT_EQ(error.line, 7u);
  EXPECT_EQ(error.message, "'mtf.one_hot' op index 3 at [a=1] is outside "
                           "[0, 3) of dimension 'c'");
}

TEST_F(RunsTest, EvalForwardOpReadingASkippedValue) {
  Options options;
  options.eval = true;
  Reported error = runAllError(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  %g = mtf.mul %x, %x {mtf.phase = "backward"} : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
  %y = mtf.add %x, %g : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
  mtf.output "y" %y : !mtf.tensor<[a=2], f32>
}
)mlir",
                               options);
  EXPECT_EQ(error.line, 5u);
  EXPECT_EQ(error.message,
            "'mtf.add' op operand #1 is computed by 'mtf.mul' with mtf.phase "
            "= \"backward\", which an evaluation run skips");
}

//===----------------------------------------------------------------------===//
// Errors of the options
//===----------------------------------------------------------------------===//

TEST_F(RunsTest, NoRuns) {
  Options options;
  options.steps = 0;
  Reported error = runAllError(kCounter, options);
  EXPECT_EQ(error.line, 2u);
  EXPECT_EQ(error.message,
            "'mtf.program' op needs at least one run, got steps = 0");
}

TEST_F(RunsTest, GivenParameterThatIsNone) {
  Options options;
  options.params["counter"] = makeTensor({}, {}, {1});
  Reported error = runAllError(kCounter, options);
  EXPECT_EQ(error.line, 2u);
  EXPECT_EQ(error.message, "given parameter 'counter' is not a parameter or "
                           "slot of the program");
}

TEST_F(RunsTest, GivenParameterOfTheWrongShape) {
  Options options;
  options.params["count"] = makeTensor({"a"}, {2}, {1, 2});
  Reported error = runAllError(kCounter, options);
  EXPECT_EQ(error.line, 3u);
  EXPECT_EQ(error.message, "'mtf.param' op given parameter 'count' has "
                           "dimensions [a=2], expected []");
}

TEST_F(RunsTest, GivenParameterOfIntegers) {
  Options options;
  options.params["count"] = makeTensor({}, {}, {1}, true);
  Reported error = runAllError(kCounter, options);
  EXPECT_EQ(error.line, 3u);
  EXPECT_EQ(error.message, "'mtf.param' op given parameter 'count' holds "
                           "integers but the parameter is 'f32'");
}

TEST_F(RunsTest, GivenParameterWithTooFewValues) {
  Options options;
  options.params["count"] = makeTensor({}, {}, {});
  Reported error = runAllError(kCounter, options);
  EXPECT_EQ(error.line, 3u);
  EXPECT_EQ(
      error.message,
      "'mtf.param' op given parameter 'count' holds 0 values, expected 1");
}

//===----------------------------------------------------------------------===//
// Dropout masks
//===----------------------------------------------------------------------===//

constexpr const char *kDropout = R"mlir(
mtf.program @p {
  %m = mtf.dropout_mask "dropout_0" rate 2.500000e-01 : !mtf.tensor<[a=256, b=256], f32>
  mtf.output "m" %m : !mtf.tensor<[a=256, b=256], f32>
}
)mlir";

/// The mask of `name` in run `run` as runtime::DropoutMask writes it.
std::vector<double> runtimeMask(uint64_t seed, const std::string &name,
                                uint64_t run, double rate, size_t count) {
  runtime::DropoutMask mask(seed, name, run, rate);
  std::vector<double> values;
  for (size_t i = 0; i < count; ++i)
    values.push_back(static_cast<float>(mask.scale(i)));
  return values;
}

/// The number of elements where `a` and `b` differ.
size_t countDifferences(const Tensor &a, const Tensor &b) {
  size_t count = 0;
  for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i)
    count += a.data[i] != b.data[i];
  return count;
}

TEST_F(RunsTest, DropoutMaskValuesAndRate) {
  Options options;
  options.seed = 9;
  Result result = runAll(kDropout, options);
  const Tensor &mask = result.outputs["m"];
  ASSERT_EQ(mask.data.size(), 65536u);
  EXPECT_EQ(mask.dims, (std::vector<std::string>{"a", "b"}));
  const double kept = static_cast<float>(1.0 / 0.75);
  size_t zeros = 0;
  for (double value : mask.data) {
    EXPECT_TRUE(value == 0.0 || value == kept) << value;
    zeros += value == 0.0;
  }
  // The zero count is binomial(65536, 0.25): sd ~ 111, so +-1% is ~6 sd.
  double fraction = static_cast<double>(zeros) / 65536.0;
  EXPECT_NEAR(fraction, 0.25, 0.01);
}

TEST_F(RunsTest, DropoutMaskIsTheRuntimes) {
  Options options;
  options.seed = 9;
  Result result = runAll(kDropout, options);
  expectTensor(result.outputs["m"], {"a", "b"}, {256, 256},
               runtimeMask(9, "dropout_0", 0, 0.25, 65536), 0.0);
  // The docs/mprog.md formula, spelled out for a few elements of run 0:
  // key = splitmix64(splitmix64(seed ^ fnv1a64(name)) + r), u = u(i, 0).
  uint64_t key = runtime::splitmix64(
      runtime::splitmix64(9 ^ runtime::fnv1a64("dropout_0")) + 0);
  for (uint64_t i : {0u, 1u, 2u, 3u, 1000u, 65535u}) {
    uint64_t bits = runtime::splitmix64(key + (2 * i) * 0x9e3779b97f4a7c15ull);
    double u = static_cast<double>(bits >> 11) * 0x1.0p-53;
    double expected = u >= 0.25 ? static_cast<float>(1.0 / 0.75) : 0.0;
    EXPECT_EQ(result.outputs["m"].data[i], expected) << "element " << i;
  }
  // Run 0 is also what interpret() draws.
  expectTensor(run(kDropout, options)["m"], {"a", "b"}, {256, 256},
               runtimeMask(9, "dropout_0", 0, 0.25, 65536), 0.0);
}

TEST_F(RunsTest, DropoutMaskChangesEveryRun) {
  Options options;
  options.seed = 9;
  Tensor run0 = runAll(kDropout, options).outputs["m"];
  options.firstRun = 1;
  Tensor run1 = runAll(kDropout, options).outputs["m"];
  expectTensor(run1, {"a", "b"}, {256, 256},
               runtimeMask(9, "dropout_0", 1, 0.25, 65536), 0.0);
  // Independent masks differ where exactly one drops: 2 * 0.25 * 0.75.
  EXPECT_NEAR(static_cast<double>(countDifferences(run0, run1)) / 65536.0,
              0.375, 0.015);

  // Run k of a call is training run firstRun + k.
  options.firstRun = 4;
  options.steps = 3;
  expectTensor(runAll(kDropout, options).outputs["m"], {"a", "b"}, {256, 256},
               runtimeMask(9, "dropout_0", 6, 0.25, 65536), 0.0);
}

TEST_F(RunsTest, DropoutMaskDependsOnSeedAndName) {
  Options options;
  options.seed = 9;
  Tensor seed9 = runAll(kDropout, options).outputs["m"];
  options.seed = 10;
  Tensor seed10 = runAll(kDropout, options).outputs["m"];
  EXPECT_GT(countDifferences(seed9, seed10), 20000u);

  options.seed = 9;
  Result renamed = runAll(R"mlir(
mtf.program @p {
  %m = mtf.dropout_mask "dropout_1" rate 2.500000e-01 : !mtf.tensor<[a=256, b=256], f32>
  mtf.output "m" %m : !mtf.tensor<[a=256, b=256], f32>
}
)mlir",
                          options);
  EXPECT_GT(countDifferences(seed9, renamed.outputs["m"]), 20000u);
  expectTensor(renamed.outputs["m"], {"a", "b"}, {256, 256},
               runtimeMask(9, "dropout_1", 0, 0.25, 65536), 0.0);
}

TEST_F(RunsTest, DropoutMaskIsAllOnesInEval) {
  Options options;
  options.seed = 9;
  options.eval = true;
  options.steps = 2;
  Result result = runAll(kDropout, options);
  expectTensor(result.outputs["m"], {"a", "b"}, {256, 256},
               std::vector<double>(65536, 1.0), 0.0);
}

TEST_F(RunsTest, DropoutRateZeroKeepsEverything) {
  Result result = runAll(R"mlir(
mtf.program @p {
  %m = mtf.dropout_mask "d" rate 0.000000e+00 : !mtf.tensor<[a=64], f32>
  mtf.output "m" %m : !mtf.tensor<[a=64], f32>
}
)mlir");
  expectTensor(result.outputs["m"], {"a"}, {64}, std::vector<double>(64, 1.0),
               0.0);
}

TEST_F(RunsTest, DropoutAppliedToAnInput) {
  // dropout(x) = x * mask, with a mask smaller than x broadcast by name.
  Options options;
  options.seed = 3;
  options.inputs["x"] =
      makeTensor({"batch", "d"}, {2, 8}, std::vector<double>(16, 2.0));
  Result result = runAll(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[batch=2, d=8], f32>
  %m = mtf.dropout_mask "drop" rate 5.000000e-01 : !mtf.tensor<[d=8], f32>
  %y = mtf.mul %x, %m : !mtf.tensor<[batch=2, d=8], f32>, !mtf.tensor<[d=8], f32> -> !mtf.tensor<[batch=2, d=8], f32>
  mtf.output "y" %y : !mtf.tensor<[batch=2, d=8], f32>
}
)mlir",
                         options);
  std::vector<double> mask = runtimeMask(3, "drop", 0, 0.5, 8);
  std::vector<double> expected;
  for (int b = 0; b < 2; ++b)
    for (double m : mask)
      expected.push_back(2.0 * m);
  expectTensor(result.outputs["y"], {"batch", "d"}, {2, 8}, expected, 0.0);
}

} // namespace
} // namespace meshc::interp
