//===- ResultTypesTest.cpp - The ops compute their result types -----------===//
//
// Every op the frontend builds is built from operands and names (and sizes
// where the op makes a new dim), the dialect computing the result type
// (dialect/MtfResultTypes.cpp, MtfOps.td's builders): each builder here
// yields the expected type and an op its verifier accepts, and the rules
// refuse (a null type) what no operand gives.
//
//===----------------------------------------------------------------------===//

#include "dialect/MtfDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir;

namespace {

class ResultTypes : public ::testing::Test {
protected:
  ResultTypes() : builder(&context) {
    context.getOrLoadDialect<mtf::MtfDialect>();
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module.getBody());
    program = mtf::ProgramOp::create(builder, builder.getUnknownLoc(), "p");
    builder.setInsertionPointToEnd(&program.getBodyBlock());
  }
  ~ResultTypes() override { module->erase(); }

  /// !mtf.tensor<[dims], type> from "batch=4,d=8".
  mtf::TensorType
  type(std::initializer_list<std::pair<const char *, int64_t>> dims,
       Type element = {}) {
    SmallVector<mtf::NamedDim> named;
    for (auto [name, size] : dims)
      named.push_back({builder.getStringAttr(name), size});
    return mtf::TensorType::get(&context, named,
                                element ? element : builder.getF32Type());
  }
  Value input(mtf::TensorType type) {
    static int count = 0;
    return mtf::InputOp::create(
               builder, loc(), type,
               builder.getStringAttr("in" + std::to_string(count++)))
        .getResult();
  }
  Location loc() { return builder.getUnknownLoc(); }
  /// The op verifies and its result has `expected`.
  void expect(Operation *op, mtf::TensorType expected) {
    ASSERT_TRUE(op);
    EXPECT_TRUE(succeeded(verify(op))) << op->getName().getStringRef().str();
    EXPECT_EQ(op->getResult(0).getType(), Type(expected))
        << op->getName().getStringRef().str();
  }

  MLIRContext context;
  OpBuilder builder;
  ModuleOp module;
  mtf::ProgramOp program;
};

TEST_F(ResultTypes, EinsumTakesTheNamedDimsFromItsOperands) {
  Value x = input(type({{"batch", 4}, {"io", 8}}));
  Value w = input(type({{"io", 8}, {"hidden", 16}}));
  StringRef dims[] = {"hidden", "batch"};
  expect(mtf::EinsumOp::create(builder, loc(), ValueRange{x, w}, dims),
         type({{"hidden", 16}, {"batch", 4}}));
  StringRef none[] = {"classes"};
  EXPECT_FALSE(mtf::EinsumOp::inferResultType(ValueRange{x, w}, none));
  Value half = input(type({{"a", 2}}, builder.getBF16Type()));
  StringRef a[] = {"a"};
  EXPECT_EQ(mtf::EinsumOp::inferResultType(ValueRange{half}, a),
            type({{"a", 2}}, builder.getBF16Type()));
}

TEST_F(ResultTypes, ReductionsDropTheDimsTheyReduce) {
  Value x = input(type({{"batch", 4}, {"d", 8}, {"e", 3}}));
  StringRef reduced[] = {"d"};
  expect(mtf::ReduceSumOp::create(builder, loc(), x, reduced),
         type({{"batch", 4}, {"e", 3}}));
  expect(mtf::ReduceMeanOp::create(builder, loc(), x, reduced),
         type({{"batch", 4}, {"e", 3}}));
  StringRef all[] = {"batch", "d", "e"};
  expect(mtf::ReduceMaxOp::create(builder, loc(), x, all), type({}));
  expect(mtf::LogSumExpOp::create(builder, loc(), x, "e"),
         type({{"batch", 4}, {"d", 8}}));
  expect(mtf::ArgmaxOp::create(builder, loc(), x, "d"),
         type({{"batch", 4}, {"e", 3}}, builder.getI32Type()));
}

TEST_F(ResultTypes, NewDimsGetTheSizeTheBuilderIsGiven) {
  Value ids = input(type({{"batch", 4}}, builder.getI32Type()));
  expect(mtf::OneHotOp::create(builder, loc(), ids, "vocab", 100),
         type({{"batch", 4}, {"vocab", 100}}));
  expect(mtf::RangeOp::create(builder, loc(), "seq", 16), type({{"seq", 16}}));
  Value x = input(type({{"b", 2}, {"seq", 8}}));
  expect(mtf::WindowOp::create(builder, loc(), x, "seq", "half", 4, 4),
         type({{"b", 2}, {"half", 4}}));
  expect(mtf::WindowOp::create(builder, loc(), x, "seq", "seq", 8, -1),
         type({{"b", 2}, {"seq", 8}}));
  EXPECT_FALSE(mtf::WindowOp::inferResultType(x, "tokens", "half", 4));
}

TEST_F(ResultTypes, RenamesCastsAndTheLoss) {
  Value x = input(type({{"seq", 8}, {"d", 4}}));
  expect(mtf::RenameOp::create(builder, loc(), x, "seq", "memory"),
         type({{"memory", 8}, {"d", 4}}));
  EXPECT_FALSE(mtf::RenameOp::inferResultType(x, "batch", "memory"));
  expect(mtf::CastOp::create(builder, loc(), x, builder.getBF16Type()),
         type({{"seq", 8}, {"d", 4}}, builder.getBF16Type()));
  Value logits = input(type({{"batch", 4}, {"classes", 10}}));
  Value labels = input(type({{"batch", 4}}, builder.getI32Type()));
  expect(mtf::SoftmaxCrossEntropyOp::create(builder, loc(), logits, labels,
                                            "classes"),
         type({{"batch", 4}}));
}

TEST_F(ResultTypes, ElementwiseOpsTakeTheirOperandsType) {
  Value x = input(type({{"batch", 4}, {"d", 8}}));
  expect(mtf::ReluOp::create(builder, loc(), x),
         type({{"batch", 4}, {"d", 8}}));
  expect(mtf::NegateOp::create(builder, loc(), x),
         type({{"batch", 4}, {"d", 8}}));
  expect(mtf::SoftmaxOp::create(builder, loc(), x, "d"),
         type({{"batch", 4}, {"d", 8}}));
  expect(mtf::CumsumOp::create(builder, loc(), x, "d", false),
         type({{"batch", 4}, {"d", 8}}));
  expect(mtf::TopKOp::create(builder, loc(), x, "d", 2),
         type({{"batch", 4}, {"d", 8}}));
  Value y = input(type({{"d", 8}}));
  expect(mtf::MulOp::create(builder, loc(), x, y),
         type({{"batch", 4}, {"d", 8}}));
}

} // namespace
