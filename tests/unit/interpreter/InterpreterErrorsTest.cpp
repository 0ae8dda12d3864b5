//===- InterpreterErrorsTest.cpp - every error the interpreter reports ----===//
//
// Each test pins the full text of one error and the line it points at (line
// 1 of every program text below is the empty line after `R"mlir(`).
//
//===----------------------------------------------------------------------===//

#include "InterpreterTestSupport.h"

namespace meshc::interp {
namespace {

using ErrorsTest = InterpreterTest;

constexpr const char *kCrossEntropy = R"mlir(
mtf.program @p {
  %logits = mtf.input "logits" : !mtf.tensor<[batch=3, classes=5], f32>
  %labels = mtf.input "labels" : !mtf.tensor<[batch=3], i32>
  %l = mtf.softmax_cross_entropy %logits, %labels over "classes" : !mtf.tensor<[batch=3, classes=5], f32>, !mtf.tensor<[batch=3], i32> -> !mtf.tensor<[batch=3], f32>
  mtf.output "l" %l : !mtf.tensor<[batch=3], f32>
}
)mlir";

TEST_F(ErrorsTest, LabelAboveTheClassCount) {
  Options options;
  options.inputs["labels"] = makeTensor({"batch"}, {3}, {0, 5, 1}, true);
  Reported error = runError(kCrossEntropy, options);
  EXPECT_EQ(error.line, 5u);
  EXPECT_EQ(error.message,
            "'mtf.softmax_cross_entropy' op label 5 at [batch=1] is outside "
            "[0, 5) of class dimension 'classes'");
}

TEST_F(ErrorsTest, NegativeLabel) {
  Options options;
  options.inputs["labels"] = makeTensor({"batch"}, {3}, {0, 4, -1}, true);
  Reported error = runError(kCrossEntropy, options);
  EXPECT_EQ(error.line, 5u);
  EXPECT_EQ(error.message,
            "'mtf.softmax_cross_entropy' op label -1 at [batch=2] is outside "
            "[0, 5) of class dimension 'classes'");
}

TEST_F(ErrorsTest, LabelsInRangeAreAccepted) {
  Options options;
  options.inputs["labels"] = makeTensor({"batch"}, {3}, {0, 4, 2}, true);
  EXPECT_EQ(run(kCrossEntropy, options).count("l"), 1u);
}

TEST_F(ErrorsTest, LocalProgram) {
  Reported error = runError(R"mlir(
mtf.program @p local {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  mtf.output "x" %x : !mtf.tensor<[a=2], f32>
}
)mlir");
  EXPECT_EQ(error.line, 2u);
  EXPECT_EQ(error.message,
            "'mtf.program' op is local (one device's part of an SPMD "
            "program); the reference interpreter runs global programs");
}

constexpr const char *kIdentity = R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, b=3], f32>
  mtf.output "x" %x : !mtf.tensor<[a=2, b=3], f32>
}
)mlir";

TEST_F(ErrorsTest, GivenInputWithOtherSizes) {
  Options options;
  options.inputs["x"] = makeTensor({"a", "b"}, {3, 2}, {1, 2, 3, 4, 5, 6});
  Reported error = runError(kIdentity, options);
  EXPECT_EQ(error.line, 3u);
  EXPECT_EQ(error.message, "'mtf.input' op given input 'x' has dimensions "
                           "[a=3, b=2], expected [a=2, b=3]");
}

TEST_F(ErrorsTest, GivenInputWithDimensionsInAnotherOrder) {
  Options options;
  options.inputs["x"] = makeTensor({"b", "a"}, {3, 2}, {1, 2, 3, 4, 5, 6});
  Reported error = runError(kIdentity, options);
  EXPECT_EQ(error.message, "'mtf.input' op given input 'x' has dimensions "
                           "[b=3, a=2], expected [a=2, b=3]");
}

TEST_F(ErrorsTest, GivenInputWithOtherNames) {
  Options options;
  options.inputs["x"] = makeTensor({"a", "c"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  Reported error = runError(kIdentity, options);
  EXPECT_EQ(error.message, "'mtf.input' op given input 'x' has dimensions "
                           "[a=2, c=3], expected [a=2, b=3]");
}

TEST_F(ErrorsTest, GivenSquareInputTransposed) {
  // Same sizes, other order: taking it would silently transpose the data.
  Options options;
  options.inputs["x"] = makeTensor({"b", "a"}, {2, 2}, {1, 2, 3, 4});
  Reported error = runError(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, b=2], f32>
  mtf.output "x" %x : !mtf.tensor<[a=2, b=2], f32>
}
)mlir",
                            options);
  EXPECT_EQ(error.message, "'mtf.input' op given input 'x' has dimensions "
                           "[b=2, a=2], expected [a=2, b=2]");
}

TEST_F(ErrorsTest, GivenInputWithFewerSizesThanNames) {
  Options options;
  options.inputs["x"] = makeTensor({"a", "b"}, {6}, {1, 2, 3, 4, 5, 6});
  Reported error = runError(kIdentity, options);
  EXPECT_EQ(error.message, "'mtf.input' op given input 'x' has dimensions "
                           "of 2 names and 1 sizes, expected [a=2, b=3]");
}

TEST_F(ErrorsTest, GivenInputWithTooFewValues) {
  Options options;
  options.inputs["x"] = makeTensor({"a", "b"}, {2, 3}, {1, 2, 3, 4, 5});
  Reported error = runError(kIdentity, options);
  EXPECT_EQ(error.line, 3u);
  EXPECT_EQ(error.message,
            "'mtf.input' op given input 'x' holds 5 values, expected 6");
}

TEST_F(ErrorsTest, GivenIntegersForAFloatInput) {
  Options options;
  options.inputs["x"] =
      makeTensor({"a", "b"}, {2, 3}, {1, 2, 3, 4, 5, 6}, true);
  Reported error = runError(kIdentity, options);
  EXPECT_EQ(error.message, "'mtf.input' op given input 'x' holds integers but "
                           "the input is 'f32'");
}

TEST_F(ErrorsTest, GivenFloatsForAnIntegerInput) {
  Options options;
  options.inputs["labels"] = makeTensor({"batch"}, {3}, {0, 1, 2});
  Reported error = runError(kCrossEntropy, options);
  EXPECT_EQ(error.line, 4u);
  EXPECT_EQ(error.message, "'mtf.input' op given input 'labels' holds "
                           "floating-point values but the input is 'i32'");
}

TEST_F(ErrorsTest, GivenIntegerInputWithAFraction) {
  Options options;
  options.inputs["labels"] = makeTensor({"batch"}, {3}, {0, 1.5, 2}, true);
  Reported error = runError(kCrossEntropy, options);
  EXPECT_EQ(error.line, 4u);
  EXPECT_EQ(error.message, "'mtf.input' op given input 'labels' holds 1.5 at "
                           "[batch=1], which is not an i32");
}

TEST_F(ErrorsTest, GivenIntegerInputBeyondI32) {
  Options options;
  options.inputs["labels"] =
      makeTensor({"batch"}, {3}, {0, 1, 2147483648.0}, true);
  Reported error = runError(kCrossEntropy, options);
  EXPECT_EQ(error.message, "'mtf.input' op given input 'labels' holds "
                           "2147483648 at [batch=2], which is not an i32");
}

TEST_F(ErrorsTest, GivenInputTheProgramDoesNotHave) {
  Options options;
  options.inputs["y"] = makeTensor({"a", "b"}, {2, 3}, {1, 2, 3, 4, 5, 6});
  Reported error = runError(kIdentity, options);
  EXPECT_EQ(error.line, 2u);
  EXPECT_EQ(error.message, "given input 'y' is not an input of the program");
}

TEST_F(ErrorsTest, EinsumBeyondTheWorkLimit) {
  // 1000 * 1000 * 1001 points times 2 operands, just over 2e9; the result
  // itself is small.
  Reported error = runError(R"mlir(
mtf.program @p {
  %x = mtf.constant 1.000000e+00 : !mtf.tensor<[a=1000, b=1000], f32>
  %y = mtf.constant 1.000000e+00 : !mtf.tensor<[b=1000, c=1001], f32>
  %z = mtf.einsum %x, %y : !mtf.tensor<[a=1000, b=1000], f32>, !mtf.tensor<[b=1000, c=1001], f32> -> !mtf.tensor<[a=1000], f32>
  mtf.output "z" %z : !mtf.tensor<[a=1000], f32>
}
)mlir");
  EXPECT_EQ(error.line, 5u);
  EXPECT_EQ(error.message,
            "'mtf.einsum' op needs 2002000000 multiply-adds, more than the "
            "reference interpreter's limit of 2000000000");
}

TEST_F(ErrorsTest, TensorBeyondTheSizeLimit) {
  Reported error = runError(R"mlir(
mtf.program @p {
  %x = mtf.constant 1.000000e+00 : !mtf.tensor<[a=100000, b=100000], f32>
  mtf.output "x" %x : !mtf.tensor<[a=100000, b=100000], f32>
}
)mlir");
  EXPECT_EQ(error.line, 3u);
  EXPECT_EQ(error.message,
            "'mtf.constant' op result has 10000000000 elements, more than the "
            "reference interpreter's limit of 268435456");
}

TEST_F(ErrorsTest, IntegerDivisionByZero) {
  Options options;
  options.inputs["n"] = makeTensor({"a"}, {2}, {4, 0}, true);
  Reported error = runError(R"mlir(
mtf.program @p {
  %n = mtf.input "n" : !mtf.tensor<[a=2], i32>
  %one = mtf.constant 1.000000e+00 : !mtf.tensor<[], i32>
  %q = mtf.div %one, %n : !mtf.tensor<[], i32>, !mtf.tensor<[a=2], i32> -> !mtf.tensor<[a=2], i32>
  mtf.output "q" %q : !mtf.tensor<[a=2], i32>
}
)mlir",
                            options);
  EXPECT_EQ(error.line, 5u);
  EXPECT_EQ(error.message,
            "'mtf.div' op divides an i32 by zero at [a=1] of the divisor");
}

TEST_F(ErrorsTest, IntegerResultBeyondI32) {
  Options options;
  options.inputs["n"] = makeTensor({"a"}, {2}, {0, 2147483000}, true);
  Reported error = runError(R"mlir(
mtf.program @p {
  %n = mtf.input "n" : !mtf.tensor<[a=2], i32>
  %k = mtf.constant 1.000000e+03 : !mtf.tensor<[], i32>
  %s = mtf.add %n, %k : !mtf.tensor<[a=2], i32>, !mtf.tensor<[], i32> -> !mtf.tensor<[a=2], i32>
  mtf.output "s" %s : !mtf.tensor<[a=2], i32>
}
)mlir",
                            options);
  EXPECT_EQ(error.line, 5u);
  EXPECT_EQ(error.message,
            "'mtf.add' op i32 result 2147484000 at [a=1] is outside the i32 "
            "range");
}

TEST_F(ErrorsTest, OpOfLocalPrograms) {
  Reported error = runError(R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  %t = mtf.to_tensor %x : !mtf.tensor<[a=2], f32> -> tensor<2xf32>
}
)mlir");
  EXPECT_EQ(error.line, 4u);
  EXPECT_EQ(error.message,
            "'mtf.to_tensor' op is not supported by the reference interpreter");
}

TEST_F(ErrorsTest, ProgramIsVerifiedFirst) {
  mlir::mtf::ProgramOp program = parse(kIdentity);
  ASSERT_TRUE(program);
  // Break the program behind the parser's back: the output now names a value
  // defined after it.
  mlir::Operation &input = program.getBodyBlock().front();
  input.moveAfter(&program.getBodyBlock().back());
  diagnostics.clear();
  EXPECT_TRUE(mlir::failed(interpret(program, {})));
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].message, "operand #0 does not dominate this use");
}

} // namespace
} // namespace meshc::interp
