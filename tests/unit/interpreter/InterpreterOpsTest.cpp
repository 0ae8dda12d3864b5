//===- InterpreterOpsTest.cpp - every op against hand-computed values -----===//
//
// Each test feeds given inputs to a small program and compares its outputs
// with values written out by hand or computed by explicit loops in the test.
//
//===----------------------------------------------------------------------===//

#include "InterpreterTestSupport.h"

#include <limits>

namespace meshc::interp {
namespace {

using OpsTest = InterpreterTest;

//===----------------------------------------------------------------------===//
// einsum
//===----------------------------------------------------------------------===//

TEST_F(OpsTest, EinsumMatmul) {
  Options options;
  options.inputs["x"] = makeTensor({"a", "k"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  options.inputs["w"] = makeTensor({"k", "b"}, {3, 2}, {7, 8, 9, 10, 11, 12});
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, k=3], f32>
  %w = mtf.input "w" : !mtf.tensor<[k=3, b=2], f32>
  %y = mtf.einsum %x, %w : !mtf.tensor<[a=2, k=3], f32>, !mtf.tensor<[k=3, b=2], f32> -> !mtf.tensor<[a=2, b=2], f32>
  mtf.output "y" %y : !mtf.tensor<[a=2, b=2], f32>
}
)mlir",
                     options);
  ASSERT_EQ(outputs.count("y"), 1u);
  // [1 2 3; 4 5 6] . [7 8; 9 10; 11 12]
  expectTensor(outputs["y"], {"a", "b"}, {2, 2}, {58, 64, 139, 154});
  EXPECT_FALSE(outputs["y"].isInteger);
}

TEST_F(OpsTest, EinsumResultOrderFollowsResultType) {
  Options options;
  options.inputs["x"] = makeTensor({"a", "k"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  options.inputs["w"] = makeTensor({"k", "b"}, {3, 2}, {7, 8, 9, 10, 11, 12});
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, k=3], f32>
  %w = mtf.input "w" : !mtf.tensor<[k=3, b=2], f32>
  %y = mtf.einsum %w, %x : !mtf.tensor<[k=3, b=2], f32>, !mtf.tensor<[a=2, k=3], f32> -> !mtf.tensor<[b=2, a=2], f32>
  %t = mtf.einsum %x : !mtf.tensor<[a=2, k=3], f32> -> !mtf.tensor<[k=3, a=2], f32>
  mtf.output "y" %y : !mtf.tensor<[b=2, a=2], f32>
  mtf.output "t" %t : !mtf.tensor<[k=3, a=2], f32>
}
)mlir",
                     options);
  expectTensor(outputs["y"], {"b", "a"}, {2, 2}, {58, 139, 64, 154});
  expectTensor(outputs["t"], {"k", "a"}, {3, 2}, {1, 4, 2, 5, 3, 6});
}

TEST_F(OpsTest, EinsumBatched) {
  // y[batch, i, j] = sum_k x[batch, i, k] * w[batch, k, j]
  std::vector<double> x(2 * 2 * 3), w(2 * 3 * 2);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 0.5 * static_cast<double>(i) - 2;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<double>((i * 7) % 5) - 1;
  std::vector<double> expected(2 * 2 * 2, 0.0);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        for (int k = 0; k < 3; ++k)
          expected[(b * 2 + i) * 2 + j] +=
              x[(b * 2 + i) * 3 + k] * w[(b * 3 + k) * 2 + j];
  Options options;
  options.inputs["x"] = makeTensor({"batch", "i", "k"}, {2, 2, 3}, x);
  options.inputs["w"] = makeTensor({"batch", "k", "j"}, {2, 3, 2}, w);
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[batch=2, i=2, k=3], f32>
  %w = mtf.input "w" : !mtf.tensor<[batch=2, k=3, j=2], f32>
  %y = mtf.einsum %x, %w : !mtf.tensor<[batch=2, i=2, k=3], f32>, !mtf.tensor<[batch=2, k=3, j=2], f32> -> !mtf.tensor<[batch=2, i=2, j=2], f32>
  mtf.output "y" %y : !mtf.tensor<[batch=2, i=2, j=2], f32>
}
)mlir",
                     options);
  expectTensor(outputs["y"], {"batch", "i", "j"}, {2, 2, 2}, expected);
}

TEST_F(OpsTest, EinsumThreeOperandsToScalar) {
  // s = sum_{a,b} x[a] * y[a, b] * z[b]
  std::vector<double> x = {1, -2}, y = {1, 2, 3, 4, 5, 6}, z = {0.5, 1, -1};
  double expected = 0;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      expected += x[a] * y[a * 3 + b] * z[b];
  Options options;
  options.inputs["x"] = makeTensor({"a"}, {2}, x);
  options.inputs["y"] = makeTensor({"a", "b"}, {2, 3}, y);
  options.inputs["z"] = makeTensor({"b"}, {3}, z);
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  %y = mtf.input "y" : !mtf.tensor<[a=2, b=3], f32>
  %z = mtf.input "z" : !mtf.tensor<[b=3], f32>
  %s = mtf.einsum %x, %y, %z : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2, b=3], f32>, !mtf.tensor<[b=3], f32> -> !mtf.tensor<[], f32>
  %t = mtf.einsum %x, %y, %z : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2, b=3], f32>, !mtf.tensor<[b=3], f32> -> !mtf.tensor<[b=3, a=2], f32>
  mtf.output "s" %s : !mtf.tensor<[], f32>
  mtf.output "t" %t : !mtf.tensor<[b=3, a=2], f32>
}
)mlir",
                     options);
  // a=0: 1 * (0.5 + 2 - 3) = -0.5; a=1: -2 * (2 + 5 - 6) = -2.
  EXPECT_DOUBLE_EQ(expected, -2.5);
  expectTensor(outputs["s"], {}, {}, {expected});
  // No dimension is summed: t[b, a] = x[a] * y[a, b] * z[b].
  std::vector<double> t;
  for (int b = 0; b < 3; ++b)
    for (int a = 0; a < 2; ++a)
      t.push_back(x[a] * y[a * 3 + b] * z[b]);
  expectTensor(outputs["t"], {"b", "a"}, {3, 2}, t);
}

TEST_F(OpsTest, EinsumOuterProduct) {
  Options options;
  options.inputs["x"] = makeTensor({"a"}, {2}, {2, 3});
  options.inputs["y"] = makeTensor({"b"}, {3}, {1, 10, 100});
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  %y = mtf.input "y" : !mtf.tensor<[b=3], f32>
  %z = mtf.einsum %x, %y : !mtf.tensor<[a=2], f32>, !mtf.tensor<[b=3], f32> -> !mtf.tensor<[a=2, b=3], f32>
  mtf.output "z" %z : !mtf.tensor<[a=2, b=3], f32>
}
)mlir",
                     options);
  expectTensor(outputs["z"], {"a", "b"}, {2, 3}, {2, 20, 200, 3, 30, 300});
}

//===----------------------------------------------------------------------===//
// Binary ops and broadcasting
//===----------------------------------------------------------------------===//

TEST_F(OpsTest, AddBroadcastsByName) {
  Options options;
  options.inputs["m"] = makeTensor({"a", "b"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  options.inputs["v"] = makeTensor({"b"}, {3}, {10, 20, 30});
  options.inputs["u"] = makeTensor({"a"}, {2}, {100, 200});
  auto outputs = run(R"mlir(
mtf.program @p {
  %m = mtf.input "m" : !mtf.tensor<[a=2, b=3], f32>
  %v = mtf.input "v" : !mtf.tensor<[b=3], f32>
  %u = mtf.input "u" : !mtf.tensor<[a=2], f32>
  %mv = mtf.add %m, %v : !mtf.tensor<[a=2, b=3], f32>, !mtf.tensor<[b=3], f32> -> !mtf.tensor<[a=2, b=3], f32>
  %vm = mtf.add %v, %m : !mtf.tensor<[b=3], f32>, !mtf.tensor<[a=2, b=3], f32> -> !mtf.tensor<[b=3, a=2], f32>
  %uv = mtf.add %u, %v : !mtf.tensor<[a=2], f32>, !mtf.tensor<[b=3], f32> -> !mtf.tensor<[a=2, b=3], f32>
  mtf.output "mv" %mv : !mtf.tensor<[a=2, b=3], f32>
  mtf.output "vm" %vm : !mtf.tensor<[b=3, a=2], f32>
  mtf.output "uv" %uv : !mtf.tensor<[a=2, b=3], f32>
}
)mlir",
                     options);
  expectTensor(outputs["mv"], {"a", "b"}, {2, 3}, {11, 22, 33, 14, 25, 36});
  expectTensor(outputs["vm"], {"b", "a"}, {3, 2}, {11, 14, 22, 25, 33, 36});
  expectTensor(outputs["uv"], {"a", "b"}, {2, 3},
               {110, 120, 130, 210, 220, 230});
}

TEST_F(OpsTest, BinaryOpsWithScalar) {
  Options options;
  options.inputs["x"] = makeTensor({"a"}, {4}, {-3, 0.5, 2, 8});
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=4], f32>
  %c = mtf.constant 2.000000e+00 : !mtf.tensor<[], f32>
  %sub = mtf.sub %x, %c : !mtf.tensor<[a=4], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[a=4], f32>
  %rsub = mtf.sub %c, %x : !mtf.tensor<[], f32>, !mtf.tensor<[a=4], f32> -> !mtf.tensor<[a=4], f32>
  %mul = mtf.mul %x, %c : !mtf.tensor<[a=4], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[a=4], f32>
  %div = mtf.div %c, %x : !mtf.tensor<[], f32>, !mtf.tensor<[a=4], f32> -> !mtf.tensor<[a=4], f32>
  %max = mtf.max %x, %c : !mtf.tensor<[a=4], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[a=4], f32>
  %min = mtf.min %c, %x : !mtf.tensor<[], f32>, !mtf.tensor<[a=4], f32> -> !mtf.tensor<[a=4], f32>
  mtf.output "sub" %sub : !mtf.tensor<[a=4], f32>
  mtf.output "rsub" %rsub : !mtf.tensor<[a=4], f32>
  mtf.output "mul" %mul : !mtf.tensor<[a=4], f32>
  mtf.output "div" %div : !mtf.tensor<[a=4], f32>
  mtf.output "max" %max : !mtf.tensor<[a=4], f32>
  mtf.output "min" %min : !mtf.tensor<[a=4], f32>
}
)mlir",
                     options);
  expectTensor(outputs["sub"], {"a"}, {4}, {-5, -1.5, 0, 6});
  expectTensor(outputs["rsub"], {"a"}, {4}, {5, 1.5, 0, -6});
  expectTensor(outputs["mul"], {"a"}, {4}, {-6, 1, 4, 16});
  expectTensor(outputs["div"], {"a"}, {4}, {-2.0 / 3, 4, 1, 0.25});
  expectTensor(outputs["max"], {"a"}, {4}, {2, 2, 2, 8});
  expectTensor(outputs["min"], {"a"}, {4}, {-3, 0.5, 2, 2});
}

TEST_F(OpsTest, FloatDivisionByZeroIsInfinite) {
  Options options;
  options.inputs["x"] = makeTensor({"a"}, {2}, {1, -1});
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  %z = mtf.constant 0.000000e+00 : !mtf.tensor<[], f32>
  %d = mtf.div %x, %z : !mtf.tensor<[a=2], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[a=2], f32>
  mtf.output "d" %d : !mtf.tensor<[a=2], f32>
}
)mlir",
                     options);
  ASSERT_EQ(outputs["d"].data.size(), 2u);
  EXPECT_EQ(outputs["d"].data[0], std::numeric_limits<double>::infinity());
  EXPECT_EQ(outputs["d"].data[1], -std::numeric_limits<double>::infinity());
}

TEST_F(OpsTest, IntegerArithmeticIsExactAndDivisionTruncates) {
  Options options;
  options.inputs["n"] = makeTensor({"a"}, {4}, {7, -7, 9, 2147483000}, true);
  auto outputs = run(R"mlir(
mtf.program @p {
  %n = mtf.input "n" : !mtf.tensor<[a=4], i32>
  %two = mtf.constant 2.000000e+00 : !mtf.tensor<[], i32>
  %q = mtf.div %n, %two : !mtf.tensor<[a=4], i32>, !mtf.tensor<[], i32> -> !mtf.tensor<[a=4], i32>
  %s = mtf.add %n, %two : !mtf.tensor<[a=4], i32>, !mtf.tensor<[], i32> -> !mtf.tensor<[a=4], i32>
  mtf.output "q" %q : !mtf.tensor<[a=4], i32>
  mtf.output "s" %s : !mtf.tensor<[a=4], i32>
}
)mlir",
                     options);
  expectTensor(outputs["q"], {"a"}, {4}, {3, -3, 4, 1073741500}, 0);
  expectTensor(outputs["s"], {"a"}, {4}, {9, -5, 11, 2147483002}, 0);
  EXPECT_TRUE(outputs["q"].isInteger);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

TEST_F(OpsTest, Reductions) {
  Options options;
  // [[1, 5, -2], [4, 0, 3]]
  options.inputs["x"] = makeTensor({"a", "b"}, {2, 3}, {1, 5, -2, 4, 0, 3});
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, b=3], f32>
  %sum_b = mtf.reduce_sum %x : !mtf.tensor<[a=2, b=3], f32> -> !mtf.tensor<[a=2], f32>
  %sum_a = mtf.reduce_sum %x : !mtf.tensor<[a=2, b=3], f32> -> !mtf.tensor<[b=3], f32>
  %sum = mtf.reduce_sum %x : !mtf.tensor<[a=2, b=3], f32> -> !mtf.tensor<[], f32>
  %mean_b = mtf.reduce_mean %x : !mtf.tensor<[a=2, b=3], f32> -> !mtf.tensor<[a=2], f32>
  %mean_a = mtf.reduce_mean %x : !mtf.tensor<[a=2, b=3], f32> -> !mtf.tensor<[b=3], f32>
  %mean = mtf.reduce_mean %x : !mtf.tensor<[a=2, b=3], f32> -> !mtf.tensor<[], f32>
  %max_b = mtf.reduce_max %x : !mtf.tensor<[a=2, b=3], f32> -> !mtf.tensor<[a=2], f32>
  %max_a = mtf.reduce_max %x : !mtf.tensor<[a=2, b=3], f32> -> !mtf.tensor<[b=3], f32>
  %none = mtf.reduce_sum %x : !mtf.tensor<[a=2, b=3], f32> -> !mtf.tensor<[a=2, b=3], f32>
  mtf.output "sum_b" %sum_b : !mtf.tensor<[a=2], f32>
  mtf.output "sum_a" %sum_a : !mtf.tensor<[b=3], f32>
  mtf.output "sum" %sum : !mtf.tensor<[], f32>
  mtf.output "mean_b" %mean_b : !mtf.tensor<[a=2], f32>
  mtf.output "mean_a" %mean_a : !mtf.tensor<[b=3], f32>
  mtf.output "mean" %mean : !mtf.tensor<[], f32>
  mtf.output "max_b" %max_b : !mtf.tensor<[a=2], f32>
  mtf.output "max_a" %max_a : !mtf.tensor<[b=3], f32>
  mtf.output "none" %none : !mtf.tensor<[a=2, b=3], f32>
}
)mlir",
                     options);
  expectTensor(outputs["sum_b"], {"a"}, {2}, {4, 7});
  expectTensor(outputs["sum_a"], {"b"}, {3}, {5, 5, 1});
  expectTensor(outputs["sum"], {}, {}, {11});
  expectTensor(outputs["mean_b"], {"a"}, {2}, {4.0 / 3, 7.0 / 3});
  expectTensor(outputs["mean_a"], {"b"}, {3}, {2.5, 2.5, 0.5});
  expectTensor(outputs["mean"], {}, {}, {11.0 / 6});
  expectTensor(outputs["max_b"], {"a"}, {2}, {5, 4});
  expectTensor(outputs["max_a"], {"b"}, {3}, {4, 5, 3});
  expectTensor(outputs["none"], {"a", "b"}, {2, 3}, {1, 5, -2, 4, 0, 3});
}

TEST_F(OpsTest, ReduceMaxOfAllNegativeValues) {
  Options options;
  options.inputs["x"] = makeTensor({"a"}, {3}, {-7, -3, -5});
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=3], f32>
  %m = mtf.reduce_max %x : !mtf.tensor<[a=3], f32> -> !mtf.tensor<[], f32>
  mtf.output "m" %m : !mtf.tensor<[], f32>
}
)mlir",
                     options);
  expectTensor(outputs["m"], {}, {}, {-3});
}

//===----------------------------------------------------------------------===//
// softmax and cross-entropy
//===----------------------------------------------------------------------===//

TEST_F(OpsTest, SoftmaxKnownValuesAndRowSums) {
  Options options;
  // Rows over c: [0, ln 2, ln 5] -> [1, 2, 5] / 8; [3, 3, 3] -> 1/3 each.
  options.inputs["x"] = makeTensor({"r", "c"}, {2, 3},
                                   {0, std::log(2.0), std::log(5.0), 3, 3, 3});
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[r=2, c=3], f32>
  %p = mtf.softmax %x over "c" : !mtf.tensor<[r=2, c=3], f32>
  %q = mtf.softmax %x over "r" : !mtf.tensor<[r=2, c=3], f32>
  mtf.output "p" %p : !mtf.tensor<[r=2, c=3], f32>
  mtf.output "q" %q : !mtf.tensor<[r=2, c=3], f32>
}
)mlir",
                     options);
  const Tensor &p = outputs["p"];
  expectTensor(p, {"r", "c"}, {2, 3},
               {1.0 / 8, 2.0 / 8, 5.0 / 8, 1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-15);
  for (int r = 0; r < 2; ++r)
    EXPECT_NEAR(p.data[r * 3] + p.data[r * 3 + 1] + p.data[r * 3 + 2], 1.0,
                1e-15);
  // Over r, each column is a softmax of two values: e^u / (e^u + e^v).
  const Tensor &q = outputs["q"];
  ASSERT_EQ(q.data.size(), 6u);
  double column[3][2] = {{0, 3}, {std::log(2.0), 3}, {std::log(5.0), 3}};
  for (int c = 0; c < 3; ++c) {
    double total = std::exp(column[c][0]) + std::exp(column[c][1]);
    EXPECT_NEAR(q.data[c], std::exp(column[c][0]) / total, 1e-15);
    EXPECT_NEAR(q.data[3 + c], std::exp(column[c][1]) / total, 1e-15);
  }
}

TEST_F(OpsTest, SoftmaxIsStableForLargeValues) {
  Options options;
  options.inputs["x"] = makeTensor({"c"}, {2}, {1000, 1000 + std::log(3.0)});
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[c=2], f32>
  %p = mtf.softmax %x over "c" : !mtf.tensor<[c=2], f32>
  mtf.output "p" %p : !mtf.tensor<[c=2], f32>
}
)mlir",
                     options);
  expectTensor(outputs["p"], {"c"}, {2}, {0.25, 0.75}, 1e-12);
}

TEST_F(OpsTest, CrossEntropyMatchesHandFormula) {
  std::vector<double> logits = {1, 2, 3, -1, 0.5, 4, 1000, 1001, 999};
  std::vector<double> labels = {2, 0, 1};
  Options options;
  options.inputs["logits"] = makeTensor({"batch", "classes"}, {3, 3}, logits);
  options.inputs["labels"] = makeTensor({"batch"}, {3}, labels, true);
  auto outputs = run(R"mlir(
mtf.program @p {
  %logits = mtf.input "logits" : !mtf.tensor<[batch=3, classes=3], f32>
  %labels = mtf.input "labels" : !mtf.tensor<[batch=3], i32>
  %l = mtf.softmax_cross_entropy %logits, %labels over "classes" : !mtf.tensor<[batch=3, classes=3], f32>, !mtf.tensor<[batch=3], i32> -> !mtf.tensor<[batch=3], f32>
  %loss = mtf.reduce_mean %l : !mtf.tensor<[batch=3], f32> -> !mtf.tensor<[], f32>
  mtf.output "l" %l : !mtf.tensor<[batch=3], f32>
  mtf.output "loss" %loss : !mtf.tensor<[], f32>
}
)mlir",
                     options);
  // -log softmax(row)[label]; the last row is shifted by 1000 by hand.
  double row0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3;
  double row1 = std::log(std::exp(-1.0) + std::exp(0.5) + std::exp(4.0)) + 1;
  double row2 = std::log(std::exp(0.0) + std::exp(1.0) + std::exp(-1.0)) - 1;
  expectTensor(outputs["l"], {"batch"}, {3}, {row0, row1, row2}, 1e-12);
  expectTensor(outputs["loss"], {}, {}, {(row0 + row1 + row2) / 3}, 1e-12);
}

TEST_F(OpsTest, CrossEntropyWithClassDimFirst) {
  // Logits [classes, batch]: the class dimension need not be the last.
  Options options;
  options.inputs["logits"] =
      makeTensor({"classes", "batch"}, {2, 2}, {0, 5, std::log(3.0), 5});
  options.inputs["labels"] = makeTensor({"batch"}, {2}, {1, 0}, true);
  auto outputs = run(R"mlir(
mtf.program @p {
  %logits = mtf.input "logits" : !mtf.tensor<[classes=2, batch=2], f32>
  %labels = mtf.input "labels" : !mtf.tensor<[batch=2], i32>
  %l = mtf.softmax_cross_entropy %logits, %labels over "classes" : !mtf.tensor<[classes=2, batch=2], f32>, !mtf.tensor<[batch=2], i32> -> !mtf.tensor<[batch=2], f32>
  mtf.output "l" %l : !mtf.tensor<[batch=2], f32>
}
)mlir",
                     options);
  // batch 0: logits [0, ln 3], label 1 -> -ln(3/4); batch 1: [5, 5] -> ln 2.
  expectTensor(outputs["l"], {"batch"}, {2}, {-std::log(0.75), std::log(2.0)},
               1e-12);
}

//===----------------------------------------------------------------------===//
// Unary ops, cast, constant, rename, constrain
//===----------------------------------------------------------------------===//

TEST_F(OpsTest, UnaryOpsAtKnownPoints) {
  Options options;
  options.inputs["x"] = makeTensor({"a"}, {3}, {-1, 0.25, 4});
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=3], f32>
  %relu = mtf.relu %x : !mtf.tensor<[a=3], f32>
  %gelu = mtf.gelu %x : !mtf.tensor<[a=3], f32>
  %exp = mtf.exp %x : !mtf.tensor<[a=3], f32>
  %log = mtf.log %x : !mtf.tensor<[a=3], f32>
  %tanh = mtf.tanh %x : !mtf.tensor<[a=3], f32>
  %sqrt = mtf.sqrt %x : !mtf.tensor<[a=3], f32>
  %rsqrt = mtf.rsqrt %x : !mtf.tensor<[a=3], f32>
  %negate = mtf.negate %x : !mtf.tensor<[a=3], f32>
  mtf.output "relu" %relu : !mtf.tensor<[a=3], f32>
  mtf.output "gelu" %gelu : !mtf.tensor<[a=3], f32>
  mtf.output "exp" %exp : !mtf.tensor<[a=3], f32>
  mtf.output "log" %log : !mtf.tensor<[a=3], f32>
  mtf.output "tanh" %tanh : !mtf.tensor<[a=3], f32>
  mtf.output "sqrt" %sqrt : !mtf.tensor<[a=3], f32>
  mtf.output "rsqrt" %rsqrt : !mtf.tensor<[a=3], f32>
  mtf.output "negate" %negate : !mtf.tensor<[a=3], f32>
}
)mlir",
                     options);
  double nan = std::numeric_limits<double>::quiet_NaN();
  expectTensor(outputs["relu"], {"a"}, {3}, {0, 0.25, 4});
  // Reference values from Python's math module; gelu is
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  expectTensor(outputs["gelu"], {"a"}, {3},
               {-0.15880800939172324, 0.149675350701685, 3.9999297540518075},
               1e-15);
  expectTensor(outputs["exp"], {"a"}, {3},
               {0.36787944117144233, 1.2840254166877414, 54.598150033144236},
               1e-13);
  expectTensor(outputs["log"], {"a"}, {3},
               {nan, -1.3862943611198906, 1.3862943611198906}, 1e-15);
  expectTensor(outputs["tanh"], {"a"}, {3},
               {-0.7615941559557649, 0.24491866240370913, 0.999329299739067},
               1e-15);
  expectTensor(outputs["sqrt"], {"a"}, {3}, {nan, 0.5, 2});
  expectTensor(outputs["rsqrt"], {"a"}, {3}, {nan, 2, 0.5});
  expectTensor(outputs["negate"], {"a"}, {3}, {1, -0.25, -4});
}

TEST_F(OpsTest, CastToI32TruncatesTowardZero) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  Options options;
  options.inputs["x"] =
      makeTensor({"a"}, {7}, {2.7, -2.7, 0.5, -0.5, 3e9, -3e9, nan});
  options.inputs["n"] =
      makeTensor({"a"}, {7}, {-3, 0, 1, 2, 16777217, 5, 6}, true);
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=7], f32>
  %n = mtf.input "n" : !mtf.tensor<[a=7], i32>
  %i = mtf.cast %x : !mtf.tensor<[a=7], f32> -> !mtf.tensor<[a=7], i32>
  %f = mtf.cast %n : !mtf.tensor<[a=7], i32> -> !mtf.tensor<[a=7], f32>
  mtf.output "i" %i : !mtf.tensor<[a=7], i32>
  mtf.output "f" %f : !mtf.tensor<[a=7], f32>
}
)mlir",
                     options);
  // Out-of-range values saturate and NaN becomes 0, as in the runtime.
  expectTensor(outputs["i"], {"a"}, {7},
               {2, -2, 0, 0, 2147483647, -2147483648.0, 0}, 0);
  EXPECT_TRUE(outputs["i"].isInteger);
  // From i32 exactly (16777217 is not a float; the interpreter keeps it).
  expectTensor(outputs["f"], {"a"}, {7}, {-3, 0, 1, 2, 16777217, 5, 6}, 0);
  EXPECT_FALSE(outputs["f"].isInteger);
}

// A bf16 or f16 value holds what the runtime stores: the f32 value rounded
// to the type, ties to even (1/3 -> 0.333984375 in bf16, exact in f16).
TEST_F(OpsTest, LowPrecisionFloatsAreRoundedAsStored) {
  Options options;
  options.inputs["x"] = makeTensor({"a"}, {1}, {1.0 / 3});
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=1], f32>
  %b = mtf.cast %x : !mtf.tensor<[a=1], f32> -> !mtf.tensor<[a=1], bf16>
  %h = mtf.cast %b : !mtf.tensor<[a=1], bf16> -> !mtf.tensor<[a=1], f16>
  mtf.output "h" %h : !mtf.tensor<[a=1], f16>
}
)mlir",
                     options);
  expectTensor(outputs["h"], {"a"}, {1}, {0.333984375}, 0);
}

TEST_F(OpsTest, ConstantsSplat) {
  auto outputs = run(R"mlir(
mtf.program @p {
  %c = mtf.constant -1.250000e+00 : !mtf.tensor<[a=2, b=2], f32>
  %n = mtf.constant 7.000000e+00 : !mtf.tensor<[a=2], i32>
  %s = mtf.constant 3.000000e+00 : !mtf.tensor<[], f32>
  mtf.output "c" %c : !mtf.tensor<[a=2, b=2], f32>
  mtf.output "n" %n : !mtf.tensor<[a=2], i32>
  mtf.output "s" %s : !mtf.tensor<[], f32>
}
)mlir");
  expectTensor(outputs["c"], {"a", "b"}, {2, 2}, {-1.25, -1.25, -1.25, -1.25});
  expectTensor(outputs["n"], {"a"}, {2}, {7, 7});
  EXPECT_TRUE(outputs["n"].isInteger);
  expectTensor(outputs["s"], {}, {}, {3});
}

TEST_F(OpsTest, RenameAndConstrainKeepData) {
  Options options;
  options.inputs["x"] = makeTensor({"seq", "d"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto outputs = run(R"mlir(
mtf.program @p mesh #mtf.mesh<b=2> {
  %x = mtf.input "x" : !mtf.tensor<[seq=2, d=3], f32>
  %r = mtf.rename %x "seq" to "memory" : !mtf.tensor<[seq=2, d=3], f32> -> !mtf.tensor<[memory=2, d=3], f32>
  %c = mtf.constrain %r to <memory: b> : !mtf.tensor<[memory=2, d=3], f32>
  %s = mtf.reduce_sum %c : !mtf.tensor<[memory=2, d=3], f32> -> !mtf.tensor<[d=3], f32>
  mtf.output "r" %r : !mtf.tensor<[memory=2, d=3], f32>
  mtf.output "c" %c : !mtf.tensor<[memory=2, d=3], f32>
  mtf.output "s" %s : !mtf.tensor<[d=3], f32>
}
)mlir",
                     options);
  expectTensor(outputs["r"], {"memory", "d"}, {2, 3}, {1, 2, 3, 4, 5, 6}, 0);
  expectTensor(outputs["c"], {"memory", "d"}, {2, 3}, {1, 2, 3, 4, 5, 6}, 0);
  expectTensor(outputs["s"], {"d"}, {3}, {5, 7, 9});
}

TEST_F(OpsTest, SplitAndMergeWithBlocksPadAndDrop) {
  // 4 rows of x over 3 stages of up to 2: [2, 1, 1] and [1, 0, 3] at d
  // inside, each block followed by zeros; merged back they drop them.
  Options options;
  options.inputs["x"] =
      makeTensor({"r", "a", "d"}, {1, 4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[r=1, a=4, d=2], f32>
  %s = mtf.split_dim %x "a" blocks [2, 1, 1] : !mtf.tensor<[r=1, a=4, d=2], f32> -> !mtf.tensor<[r=1, s=3, i=2, d=2], f32>
  %t = mtf.split_dim %x "a" blocks [1, 0, 3] : !mtf.tensor<[r=1, a=4, d=2], f32> -> !mtf.tensor<[r=1, t=3, j=3, d=2], f32>
  %m = mtf.merge_dims %t "t" blocks [1, 0, 3] : !mtf.tensor<[r=1, t=3, j=3, d=2], f32> -> !mtf.tensor<[r=1, k=4, d=2], f32>
  mtf.output "s" %s : !mtf.tensor<[r=1, s=3, i=2, d=2], f32>
  mtf.output "t" %t : !mtf.tensor<[r=1, t=3, j=3, d=2], f32>
  mtf.output "m" %m : !mtf.tensor<[r=1, k=4, d=2], f32>
}
)mlir",
                     options);
  expectTensor(outputs["s"], {"r", "s", "i", "d"}, {1, 3, 2, 2},
               {1, 2, 3, 4, 5, 6, 0, 0, 7, 8, 0, 0}, 0);
  expectTensor(outputs["t"], {"r", "t", "j", "d"}, {1, 3, 3, 2},
               {1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 4, 5, 6, 7, 8}, 0);
  expectTensor(outputs["m"], {"r", "k", "d"}, {1, 4, 2},
               {1, 2, 3, 4, 5, 6, 7, 8}, 0);
}

TEST_F(OpsTest, LayoutsAndTrainAreIgnored) {
  Options options;
  options.inputs["x"] = makeTensor({"batch", "d"}, {2, 2}, {1, 2, 3, 4});
  auto outputs = run(R"mlir(
mtf.program @p mesh #mtf.mesh<b=2, m=2> {
  %x = mtf.input "x" {mtf.layout = #mtf.layout<batch: b, d: m>} : !mtf.tensor<[batch=2, d=2], f32>
  %w = mtf.param "w" ones {mtf.layout = #mtf.layout<d: m>} : !mtf.tensor<[d=2], f32>
  %y = mtf.einsum %x, %w {mtf.layout = #mtf.layout<>} : !mtf.tensor<[batch=2, d=2], f32>, !mtf.tensor<[d=2], f32> -> !mtf.tensor<[], f32>
  mtf.output "y" %y : !mtf.tensor<[], f32>
  mtf.train %y with "sgd" {lr = 1.000000e-01 : f64} : !mtf.tensor<[], f32>
}
)mlir",
                     options);
  expectTensor(outputs["y"], {}, {}, {10});
}

TEST_F(OpsTest, OneValueMayBeSeveralOutputs) {
  Options options;
  options.inputs["x"] = makeTensor({"a"}, {2}, {1, 2});
  auto outputs = run(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  mtf.output "first" %x : !mtf.tensor<[a=2], f32>
  mtf.output "second" %x : !mtf.tensor<[a=2], f32>
}
)mlir",
                     options);
  EXPECT_EQ(outputs.size(), 2u);
  expectTensor(outputs["first"], {"a"}, {2}, {1, 2}, 0);
  expectTensor(outputs["second"], {"a"}, {2}, {1, 2}, 0);
}

} // namespace
} // namespace meshc::interp
