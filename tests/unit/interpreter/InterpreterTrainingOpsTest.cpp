//===- InterpreterTrainingOpsTest.cpp - the ops autodiff emits ------------===//
//
// positive, gelu_grad, local_grad, equal, one_hot, argmax and slots, each
// against values written out by hand or computed by explicit loops in the
// test (gelu_grad against a central difference of gelu), plus the data
// error of one_hot.
//
//===----------------------------------------------------------------------===//

#include "InterpreterTestSupport.h"

#include "compiler/interpreter/NamedIndex.h"
#include "runtime/core/Random.h"

#include <limits>

namespace meshc::interp {
namespace {

using TrainingOpsTest = InterpreterTest;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

//===----------------------------------------------------------------------===//
// positive, gelu_grad, local_grad
//===----------------------------------------------------------------------===//

TEST_F(TrainingOpsTest, Positive) {
  Options options;
  options.inputs["x"] =
      makeTensor({"a"}, {7}, {-2.5, -0.0, 0.0, 1e-30, 3.0, kInf, kNaN});
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=7], f32>
  %y = mtf.positive %x : !mtf.tensor<[a=7], f32>
  mtf.output "y" %y : !mtf.tensor<[a=7], f32>
}
)mlir",
                     options);
  // 1 exactly where x > 0: not at -0, 0 or NaN.
  expectTensor(outputs["y"], {"a"}, {7}, {0, 0, 0, 1, 1, 1, 0}, 0.0);
}

/// gelu with the tanh approximation, as the interpreter defines it.
double geluOf(double x) {
  const double c = std::sqrt(2.0 / 3.141592653589793);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

TEST_F(TrainingOpsTest, GeluGradIsTheDerivativeOfGelu) {
  std::vector<double> xs = {-4.0, -2.0, -1.0, -0.5, -0.1, 0.0,
                            0.1,  0.5,  1.0,  1.7,  3.0,  6.0};
  Options options;
  options.inputs["x"] = makeTensor({"a"}, {12}, xs);
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=12], f32>
  %g = mtf.gelu %x : !mtf.tensor<[a=12], f32>
  %d = mtf.gelu_grad %x : !mtf.tensor<[a=12], f32>
  mtf.output "g" %g : !mtf.tensor<[a=12], f32>
  mtf.output "d" %d : !mtf.tensor<[a=12], f32>
}
)mlir",
                     options);
  // Central difference: error O(h^2 * gelu''') ~ 1e-10, rounding ~ 1e-11.
  const double h = 1e-5;
  std::vector<double> expected;
  for (double x : xs)
    expected.push_back((geluOf(x + h) - geluOf(x - h)) / (2 * h));
  expectTensor(outputs["d"], {"a"}, {12}, expected, 1e-8);
  // gelu'(0) = 1/2 exactly; the derivative of the interpreter's own gelu.
  EXPECT_EQ(outputs["d"].data[5], 0.5);
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_EQ(outputs["g"].data[i], geluOf(xs[i])) << "element " << i;
}

TEST_F(TrainingOpsTest, LocalGradIsTheIdentity) {
  Options options;
  options.inputs["g"] =
      makeTensor({"io", "hidden"}, {2, 3}, {1.5, -2, 0, kNaN, 7, -0.25});
  auto outputs = run(R"mlir(
mtf.program @p {
  %g = mtf.input "g" : !mtf.tensor<[io=2, hidden=3], f32>
  %l = mtf.local_grad %g : !mtf.tensor<[io=2, hidden=3], f32>
  mtf.output "l" %l : !mtf.tensor<[io=2, hidden=3], f32>
}
)mlir",
                     options);
  expectTensor(outputs["l"], {"io", "hidden"}, {2, 3},
               {1.5, -2, 0, kNaN, 7, -0.25}, 0.0);
}

//===----------------------------------------------------------------------===//
// equal
//===----------------------------------------------------------------------===//

TEST_F(TrainingOpsTest, EqualFloatBroadcastsByName) {
  Options options;
  options.inputs["a"] = makeTensor({"i"}, {3}, {1.0, 2.5, kNaN});
  options.inputs["b"] = makeTensor({"j"}, {4}, {2.5, 1.0, kNaN, 1.0});
  auto outputs = run(R"mlir(
mtf.program @p {
  %a = mtf.input "a" : !mtf.tensor<[i=3], f32>
  %b = mtf.input "b" : !mtf.tensor<[j=4], f32>
  %e = mtf.equal %a, %b : !mtf.tensor<[i=3], f32>, !mtf.tensor<[j=4], f32> -> !mtf.tensor<[j=4, i=3], f32>
  mtf.output "e" %e : !mtf.tensor<[j=4, i=3], f32>
}
)mlir",
                     options);
  // e[j, i] = a[i] == b[j]; NaN equals nothing, not even NaN.
  expectTensor(outputs["e"], {"j", "i"}, {4, 3},
               {0, 1, 0, //
                1, 0, 0, //
                0, 0, 0, //
                1, 0, 0},
               0.0);
  EXPECT_FALSE(outputs["e"].isInteger);
}

TEST_F(TrainingOpsTest, EqualInt32IsAccuracy) {
  // The accuracy of predictions: mean(equal(argmax(logits), labels)).
  Options options;
  options.inputs["pred"] = makeTensor({"batch"}, {4}, {3, 0, 7, -2}, true);
  options.inputs["labels"] = makeTensor({"batch"}, {4}, {3, 1, 7, -2}, true);
  auto outputs = run(R"mlir(
mtf.program @p {
  %p = mtf.input "pred" : !mtf.tensor<[batch=4], i32>
  %l = mtf.input "labels" : !mtf.tensor<[batch=4], i32>
  %e = mtf.equal %p, %l : !mtf.tensor<[batch=4], i32>, !mtf.tensor<[batch=4], i32> -> !mtf.tensor<[batch=4], f32>
  %m = mtf.reduce_mean %e : !mtf.tensor<[batch=4], f32> -> !mtf.tensor<[], f32>
  mtf.output "e" %e : !mtf.tensor<[batch=4], f32>
  mtf.output "acc" %m : !mtf.tensor<[], f32>
}
)mlir",
                     options);
  expectTensor(outputs["e"], {"batch"}, {4}, {1, 0, 1, 1}, 0.0);
  EXPECT_FALSE(outputs["e"].isInteger);
  expectTensor(outputs["acc"], {}, {}, {0.75}, 0.0);
}

//===----------------------------------------------------------------------===//
// one_hot
//===----------------------------------------------------------------------===//

TEST_F(TrainingOpsTest, OneHot) {
  Options options;
  options.inputs["ids"] = makeTensor({"batch"}, {3}, {2, 0, 3}, true);
  auto outputs = run(R"mlir(
mtf.program @p {
  %ids = mtf.input "ids" : !mtf.tensor<[batch=3], i32>
  %o = mtf.one_hot %ids over "vocab" : !mtf.tensor<[batch=3], i32> -> !mtf.tensor<[batch=3, vocab=4], f32>
  %t = mtf.one_hot %ids over "vocab" : !mtf.tensor<[batch=3], i32> -> !mtf.tensor<[vocab=4, batch=3], f32>
  mtf.output "o" %o : !mtf.tensor<[batch=3, vocab=4], f32>
  mtf.output "t" %t : !mtf.tensor<[vocab=4, batch=3], f32>
}
)mlir",
                     options);
  expectTensor(outputs["o"], {"batch", "vocab"}, {3, 4},
               {0, 0, 1, 0, //
                1, 0, 0, 0, //
                0, 0, 0, 1},
               0.0);
  EXPECT_FALSE(outputs["o"].isInteger);
  // The new dimension first: the transpose.
  expectTensor(outputs["t"], {"vocab", "batch"}, {4, 3},
               {0, 1, 0, //
                0, 0, 0, //
                1, 0, 0, //
                0, 0, 1},
               0.0);
}

TEST_F(TrainingOpsTest, OneHotEmbeddingLookup) {
  // einsum(one_hot(ids), table) picks rows of the table; the new dimension
  // in the middle of two index dimensions.
  std::vector<double> table(5 * 2);
  for (size_t i = 0; i < table.size(); ++i)
    table[i] = 10.0 * static_cast<double>(i / 2) + static_cast<double>(i % 2);
  Options options;
  options.inputs["ids"] =
      makeTensor({"batch", "seq"}, {2, 3}, {4, 0, 2, 2, 2, 1}, true);
  options.inputs["table"] = makeTensor({"vocab", "d"}, {5, 2}, table);
  auto outputs = run(R"mlir(
mtf.program @p {
  %ids = mtf.input "ids" : !mtf.tensor<[batch=2, seq=3], i32>
  %table = mtf.input "table" : !mtf.tensor<[vocab=5, d=2], f32>
  %o = mtf.one_hot %ids over "vocab" : !mtf.tensor<[batch=2, seq=3], i32> -> !mtf.tensor<[batch=2, vocab=5, seq=3], f32>
  %e = mtf.einsum %o, %table : !mtf.tensor<[batch=2, vocab=5, seq=3], f32>, !mtf.tensor<[vocab=5, d=2], f32> -> !mtf.tensor<[batch=2, seq=3, d=2], f32>
  mtf.output "e" %e : !mtf.tensor<[batch=2, seq=3, d=2], f32>
}
)mlir",
                     options);
  expectTensor(outputs["e"], {"batch", "seq", "d"}, {2, 3, 2},
               {40, 41, 0, 1, 20, 21, //
                20, 21, 20, 21, 10, 11},
               0.0);
}

constexpr const char *kOneHot = R"mlir(
mtf.program @p {
  %ids = mtf.input "ids" : !mtf.tensor<[batch=2, seq=2], i32>
  %o = mtf.one_hot %ids over "vocab" : !mtf.tensor<[batch=2, seq=2], i32> -> !mtf.tensor<[batch=2, seq=2, vocab=4], f32>
  mtf.output "o" %o : !mtf.tensor<[batch=2, seq=2, vocab=4], f32>
}
)mlir";

TEST_F(TrainingOpsTest, OneHotIndexAboveTheSize) {
  Options options;
  options.inputs["ids"] =
      makeTensor({"batch", "seq"}, {2, 2}, {0, 3, 4, 1}, true);
  Reported error = runError(kOneHot, options);
  EXPECT_EQ(error.line, 4u);
  EXPECT_EQ(error.message, "'mtf.one_hot' op index 4 at [batch=1, seq=0] is "
                           "outside [0, 4) of dimension 'vocab'");
}

TEST_F(TrainingOpsTest, OneHotNegativeIndex) {
  Options options;
  options.inputs["ids"] =
      makeTensor({"batch", "seq"}, {2, 2}, {0, 3, 2, -1}, true);
  Reported error = runError(kOneHot, options);
  EXPECT_EQ(error.line, 4u);
  EXPECT_EQ(error.message, "'mtf.one_hot' op index -1 at [batch=1, seq=1] is "
                           "outside [0, 4) of dimension 'vocab'");
}

TEST_F(TrainingOpsTest, OneHotOfSyntheticIdsIsValid) {
  // Synthetic i32 inputs are in range for one_hot over any dimension of at
  // least the default range (2).
  auto outputs = run(kOneHot);
  ASSERT_EQ(outputs.count("o"), 1u);
  for (size_t row = 0; row < 4; ++row) {
    double sum = 0;
    for (size_t c = 0; c < 4; ++c)
      sum += outputs["o"].data[row * 4 + c];
    EXPECT_EQ(sum, 1.0) << "row " << row;
  }
}

//===----------------------------------------------------------------------===//
// argmax
//===----------------------------------------------------------------------===//

TEST_F(TrainingOpsTest, ArgmaxFirstMaximumIgnoringNaN) {
  Options options;
  options.inputs["x"] = makeTensor({"batch", "classes"}, {7, 4},
                                   {
                                       0.5,   3.0,   -1.0, 2.0,   // 1
                                       2.0,   1.0,   2.0,  2.0,   // tie: 0
                                       -5.0,  -4.0,  -3.0, -3.0,  // tie: 2
                                       kNaN,  1.0,   kNaN, 0.5,   // NaN: 1
                                       kNaN,  kNaN,  kNaN, kNaN,  // none: 0
                                       -kInf, -kInf, kNaN, -kInf, // 0
                                       kNaN,  -kInf, 1.0,  kInf,  // 3
                                   });
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[batch=7, classes=4], f32>
  %i = mtf.argmax %x over "classes" : !mtf.tensor<[batch=7, classes=4], f32> -> !mtf.tensor<[batch=7], i32>
  mtf.output "i" %i : !mtf.tensor<[batch=7], i32>
}
)mlir",
                     options);
  expectTensor(outputs["i"], {"batch"}, {7}, {1, 0, 2, 1, 0, 0, 3}, 0.0);
  EXPECT_TRUE(outputs["i"].isInteger);
}

TEST_F(TrainingOpsTest, ArgmaxOverAMiddleDimension) {
  // x[a, c, b] = values; argmax over c for each (a, b), by explicit loops.
  std::vector<double> x(2 * 5 * 3);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<double>((i * 7 + 3) % 11) - 4;
  std::vector<double> expected;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b) {
      int best = 0;
      for (int c = 1; c < 5; ++c)
        if (x[(a * 5 + c) * 3 + b] > x[(a * 5 + best) * 3 + b])
          best = c;
      expected.push_back(best);
    }
  Options options;
  options.inputs["x"] = makeTensor({"a", "c", "b"}, {2, 5, 3}, x);
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, c=5, b=3], f32>
  %i = mtf.argmax %x over "c" : !mtf.tensor<[a=2, c=5, b=3], f32> -> !mtf.tensor<[a=2, b=3], i32>
  mtf.output "i" %i : !mtf.tensor<[a=2, b=3], i32>
}
)mlir",
                     options);
  expectTensor(outputs["i"], {"a", "b"}, {2, 3}, expected, 0.0);
}

TEST_F(TrainingOpsTest, ArgmaxOfAVector) {
  Options options;
  options.inputs["x"] = makeTensor({"c"}, {5}, {1, 4, -2, 4, 3});
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[c=5], f32>
  %i = mtf.argmax %x over "c" : !mtf.tensor<[c=5], f32> -> !mtf.tensor<[], i32>
  mtf.output "i" %i : !mtf.tensor<[], i32>
}
)mlir",
                     options);
  expectTensor(outputs["i"], {}, {}, {1}, 0.0);
}

//===----------------------------------------------------------------------===//
// slots
//===----------------------------------------------------------------------===//

TEST_F(TrainingOpsTest, SlotsInitialiseLikeParameters) {
  Options options;
  options.seed = 77;
  auto outputs = run(R"mlir(
mtf.program @p {
  %m = mtf.param "w/adam_m" zeros slot : !mtf.tensor<[a=2, b=3], f32>
  %n = mtf.param "w/noise" normal(1.0, 0.5) slot : !mtf.tensor<[a=2, b=3], f32>
  mtf.output "m" %m : !mtf.tensor<[a=2, b=3], f32>
  mtf.output "n" %n : !mtf.tensor<[a=2, b=3], f32>
}
)mlir",
                     options);
  expectTensor(outputs["m"], {"a", "b"}, {2, 3}, {0, 0, 0, 0, 0, 0}, 0.0);
  std::vector<float> values(6);
  runtime::fillBlock({runtime::InitSpec::Kind::Normal, 1.0, 0.5}, 77, "w/noise",
                     {2, 3}, {0, 0}, {2, 3}, values.data());
  expectTensor(outputs["n"], {"a", "b"}, {2, 3},
               std::vector<double>(values.begin(), values.end()), 0.0);
}

} // namespace
} // namespace meshc::interp
