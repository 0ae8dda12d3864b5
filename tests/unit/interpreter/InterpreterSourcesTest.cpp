//===- InterpreterSourcesTest.cpp - parameters and synthetic inputs -------===//
//
// Parameters and synthetic inputs must equal what the runtime generates
// (runtime/core/Random.h over the whole tensor) bit for bit; synthetic labels
// must be valid class indices.
//
//===----------------------------------------------------------------------===//

#include "InterpreterTestSupport.h"

#include "compiler/interpreter/NamedIndex.h"
#include "runtime/core/Random.h"

#include <set>

namespace meshc::interp {
namespace {

using SourcesTest = InterpreterTest;
using runtime::InitSpec;

/// The whole tensor `name` of `shape` as runtime::fillBlock generates it.
std::vector<double> runtimeValues(const InitSpec &spec, uint64_t seed,
                                  const std::string &name,
                                  const std::vector<int64_t> &shape) {
  std::vector<float> values(countElements(shape));
  runtime::fillBlock(spec, seed, name, shape,
                     std::vector<int64_t>(shape.size(), 0), shape,
                     values.data());
  return std::vector<double>(values.begin(), values.end());
}

/// The whole i32 tensor `name` of `shape` as runtime::fillBlockInt
/// generates it over [0, high).
std::vector<double> runtimeInts(int64_t high, uint64_t seed,
                                const std::string &name,
                                const std::vector<int64_t> &shape) {
  std::vector<int32_t> values(countElements(shape));
  runtime::fillBlockInt(0, high, seed, name, shape,
                        std::vector<int64_t>(shape.size(), 0), shape,
                        values.data());
  return std::vector<double>(values.begin(), values.end());
}

constexpr const char *kParams = R"mlir(
mtf.program @p {
  %w = mtf.param "w" normal(5.0e-01, 2.0) : !mtf.tensor<[a=3, b=4], f32>
  %u = mtf.param "u" uniform(-1.0, 1.0) : !mtf.tensor<[a=3], f32>
  %c = mtf.param "c" constant(3.0) : !mtf.tensor<[b=4], f32>
  %z = mtf.param "z" zeros : !mtf.tensor<[b=4], f32>
  %o = mtf.param "o" ones : !mtf.tensor<[a=3], f32>
  %s = mtf.param "s" normal(0.0, 1.0) : !mtf.tensor<[], f32>
  mtf.output "w" %w : !mtf.tensor<[a=3, b=4], f32>
  mtf.output "u" %u : !mtf.tensor<[a=3], f32>
  mtf.output "c" %c : !mtf.tensor<[b=4], f32>
  mtf.output "z" %z : !mtf.tensor<[b=4], f32>
  mtf.output "o" %o : !mtf.tensor<[a=3], f32>
  mtf.output "s" %s : !mtf.tensor<[], f32>
}
)mlir";

TEST_F(SourcesTest, ParametersEqualRuntimeFillBlock) {
  Options options;
  options.seed = 7;
  auto outputs = run(kParams, options);
  expectTensor(
      outputs["w"], {"a", "b"}, {3, 4},
      runtimeValues({InitSpec::Kind::Normal, 0.5, 2.0}, 7, "w", {3, 4}), 0);
  expectTensor(outputs["u"], {"a"}, {3},
               runtimeValues({InitSpec::Kind::Uniform, -1.0, 1.0}, 7, "u", {3}),
               0);
  expectTensor(outputs["c"], {"b"}, {4}, {3, 3, 3, 3}, 0);
  expectTensor(outputs["z"], {"b"}, {4}, {0, 0, 0, 0}, 0);
  expectTensor(outputs["o"], {"a"}, {3}, {1, 1, 1}, 0);
  expectTensor(outputs["s"], {}, {},
               runtimeValues({InitSpec::Kind::Normal, 0.0, 1.0}, 7, "s", {}),
               0);
  // Random values really are random: not one repeated value.
  std::set<double> distinct(outputs["w"].data.begin(), outputs["w"].data.end());
  EXPECT_EQ(distinct.size(), 12u);
  for (double x : outputs["u"].data) {
    EXPECT_GE(x, -1.0);
    EXPECT_LT(x, 1.0);
  }
}

TEST_F(SourcesTest, SeedSelectsTheValues) {
  Options seven, eight;
  seven.seed = 7;
  eight.seed = 8;
  std::vector<double> first = run(kParams, seven)["w"].data;
  std::vector<double> again = run(kParams, seven)["w"].data;
  std::vector<double> other = run(kParams, eight)["w"].data;
  EXPECT_EQ(first, again);
  EXPECT_NE(first, other);
  EXPECT_EQ(other,
            runtimeValues({InitSpec::Kind::Normal, 0.5, 2.0}, 8, "w", {3, 4}));
}

TEST_F(SourcesTest, SyntheticFloatInputIsStandardNormal) {
  Options options;
  options.seed = 3;
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[batch=4, io=5], f32>
  mtf.output "x" %x : !mtf.tensor<[batch=4, io=5], f32>
}
)mlir",
                     options);
  expectTensor(
      outputs["x"], {"batch", "io"}, {4, 5},
      runtimeValues({InitSpec::Kind::Normal, 0.0, 1.0}, 3, "x", {4, 5}), 0);
}

TEST_F(SourcesTest, SyntheticLabelsAreClassIndices) {
  Options options;
  options.seed = 11;
  auto outputs = run(R"mlir(
mtf.program @p {
  %logits = mtf.input "logits" : !mtf.tensor<[batch=64, classes=5], f32>
  %labels = mtf.input "labels" : !mtf.tensor<[batch=64], i32>
  %l = mtf.softmax_cross_entropy %logits, %labels over "classes" : !mtf.tensor<[batch=64, classes=5], f32>, !mtf.tensor<[batch=64], i32> -> !mtf.tensor<[batch=64], f32>
  %loss = mtf.reduce_mean %l : !mtf.tensor<[batch=64], f32> -> !mtf.tensor<[], f32>
  mtf.output "labels" %labels : !mtf.tensor<[batch=64], i32>
  mtf.output "loss" %loss : !mtf.tensor<[], f32>
}
)mlir",
                     options);
  const Tensor &labels = outputs["labels"];
  EXPECT_TRUE(labels.isInteger);
  std::set<double> classes(labels.data.begin(), labels.data.end());
  EXPECT_EQ(classes, (std::set<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(labels.data, runtimeInts(5, 11, "labels", {64}));
  ASSERT_EQ(outputs["loss"].data.size(), 1u);
  EXPECT_TRUE(std::isfinite(outputs["loss"].data[0]));
  EXPECT_GT(outputs["loss"].data[0], 0.0);
}

TEST_F(SourcesTest, LabelRangeComesFromTheFirstCrossEntropy) {
  Options options;
  options.seed = 5;
  auto outputs = run(R"mlir(
mtf.program @p {
  %labels = mtf.input "labels" : !mtf.tensor<[batch=32], i32>
  %small = mtf.input "small" : !mtf.tensor<[batch=32, c3=3], f32>
  %large = mtf.input "large" : !mtf.tensor<[batch=32, c5=5], f32>
  %l3 = mtf.softmax_cross_entropy %small, %labels over "c3" : !mtf.tensor<[batch=32, c3=3], f32>, !mtf.tensor<[batch=32], i32> -> !mtf.tensor<[batch=32], f32>
  %l5 = mtf.softmax_cross_entropy %large, %labels over "c5" : !mtf.tensor<[batch=32, c5=5], f32>, !mtf.tensor<[batch=32], i32> -> !mtf.tensor<[batch=32], f32>
  mtf.output "labels" %labels : !mtf.tensor<[batch=32], i32>
}
)mlir",
                     options);
  std::set<double> classes(outputs["labels"].data.begin(),
                           outputs["labels"].data.end());
  EXPECT_EQ(classes, (std::set<double>{0, 1, 2}));
  EXPECT_EQ(outputs["labels"].data, runtimeInts(3, 5, "labels", {32}));
}

TEST_F(SourcesTest, LabelRangeLooksThroughLayoutConstraints) {
  // The partitioner turns a constraint into collectives, through which the
  // .mprog emitter finds the same cross-entropy: both sides must agree.
  auto outputs = run(R"mlir(
mtf.program @p {
  %labels = mtf.input "labels" : !mtf.tensor<[batch=32], i32>
  %pinned = mtf.constrain %labels to <batch: b> : !mtf.tensor<[batch=32], i32>
  %logits = mtf.input "logits" : !mtf.tensor<[batch=32, c=7], f32>
  %l = mtf.softmax_cross_entropy %logits, %pinned over "c" : !mtf.tensor<[batch=32, c=7], f32>, !mtf.tensor<[batch=32], i32> -> !mtf.tensor<[batch=32], f32>
  mtf.output "labels" %labels : !mtf.tensor<[batch=32], i32>
}
)mlir",
                     Options());
  EXPECT_EQ(outputs["labels"].data, runtimeInts(7, 0, "labels", {32}));
}

TEST_F(SourcesTest, SyntheticIntegersWithoutCrossEntropyAreZeroOrOne) {
  Options options;
  options.seed = 5;
  auto outputs = run(R"mlir(
mtf.program @p {
  %n = mtf.input "n" : !mtf.tensor<[a=4, b=8], i32>
  mtf.output "n" %n : !mtf.tensor<[a=4, b=8], i32>
}
)mlir",
                     options);
  std::set<double> values(outputs["n"].data.begin(), outputs["n"].data.end());
  EXPECT_EQ(values, (std::set<double>{0, 1}));
  EXPECT_EQ(outputs["n"].data, runtimeInts(2, 5, "n", {4, 8}));
}

TEST_F(SourcesTest, GivenInputsAreUsedAsGiven) {
  // 0.1 is not a float: given values are not rounded to the element type.
  Options options;
  options.inputs["x"] = makeTensor({"a"}, {2}, {0.1, -7});
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  %y = mtf.input "y" : !mtf.tensor<[a=2], f32>
  mtf.output "x" %x : !mtf.tensor<[a=2], f32>
  mtf.output "y" %y : !mtf.tensor<[a=2], f32>
}
)mlir",
                     options);
  expectTensor(outputs["x"], {"a"}, {2}, {0.1, -7}, 0);
  expectTensor(outputs["y"], {"a"}, {2},
               runtimeValues({InitSpec::Kind::Normal, 0.0, 1.0}, 0, "y", {2}),
               0);
}

} // namespace
} // namespace meshc::interp
