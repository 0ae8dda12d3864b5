//===- OpInterfacesTest.cpp - Every mtf op has every interface ------------===//
//
// Walks the registry of the mtf dialect: an op added without one of the
// interfaces the generic passes read (docs/architecture.md, "One home per
// op") fails here, naming the op, before any pass could meet it.
//
//===----------------------------------------------------------------------===//

#include "dialect/MtfDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace mlir;

namespace {

std::vector<RegisteredOperationName> mtfOps(MLIRContext &context) {
  context.getOrLoadDialect<mtf::MtfDialect>();
  std::vector<RegisteredOperationName> ops;
  for (RegisteredOperationName name : context.getRegisteredOperations())
    if (name.getDialectNamespace() == "mtf")
      ops.push_back(name);
  return ops;
}

TEST(MtfOpRegistry, HoldsTheDialectsOps) {
  MLIRContext context;
  std::vector<RegisteredOperationName> ops = mtfOps(context);
  // A sanity floor: the walk below must see the dialect, not an empty list.
  EXPECT_GE(ops.size(), 40u);
}

TEST(MtfOpRegistry, EveryOpHasAPartitionRule) {
  MLIRContext context;
  std::vector<std::string> missing;
  for (RegisteredOperationName name : mtfOps(context))
    if (!name.hasInterface<mtf::PartitionRuleOpInterface>())
      missing.push_back(name.getStringRef().str());
  EXPECT_TRUE(missing.empty()) << "ops without PartitionRuleOpInterface: "
                               << ::testing::PrintToString(missing);
}

TEST(MtfOpRegistry, EveryOpHasAGradientRule) {
  MLIRContext context;
  std::vector<std::string> missing;
  for (RegisteredOperationName name : mtfOps(context))
    if (!name.hasInterface<mtf::GradientOpInterface>())
      missing.push_back(name.getStringRef().str());
  EXPECT_TRUE(missing.empty()) << "ops without GradientOpInterface: "
                               << ::testing::PrintToString(missing);
}

/// The frontend and the gradient builder take a broadcasting op's result
/// type from the op's own inference: the lhs dims, then the rhs dims it
/// lacks; equal and less give f32 whatever they compare.
TEST(MtfResultTypes, BroadcastingOpsInferTheirResultType) {
  MLIRContext context;
  context.getOrLoadDialect<mtf::MtfDialect>();
  OpBuilder builder(&context);
  Location loc = builder.getUnknownLoc();
  auto module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module.getBody());
  auto dim = [&](StringRef name, int64_t size) {
    return mtf::NamedDim{builder.getStringAttr(name), size};
  };
  auto ab = mtf::TensorType::get(&context, {dim("a", 2), dim("b", 3)},
                                 builder.getI32Type());
  auto cb = mtf::TensorType::get(&context, {dim("c", 4), dim("b", 3)},
                                 builder.getI32Type());
  Value x = mtf::InputOp::create(builder, loc, ab, "x");
  Value y = mtf::InputOp::create(builder, loc, cb, "y");
  auto sum = mtf::AddOp::create(builder, loc, x, y);
  EXPECT_EQ(sum.getType(),
            mtf::TensorType::get(&context,
                                 {dim("a", 2), dim("b", 3), dim("c", 4)},
                                 builder.getI32Type()));
  auto less = mtf::LessOp::create(builder, loc, y, x);
  EXPECT_EQ(less.getType(),
            mtf::TensorType::get(&context,
                                 {dim("c", 4), dim("b", 3), dim("a", 2)},
                                 builder.getF32Type()));
  // Broadcasting fixes the dims, not their order.
  EXPECT_TRUE(mtf::AddOp::isCompatibleReturnTypes(
      TypeRange{sum.getType()},
      TypeRange{mtf::TensorType::get(&context,
                                     {dim("c", 4), dim("a", 2), dim("b", 3)},
                                     builder.getI32Type())}));
  EXPECT_FALSE(mtf::AddOp::isCompatibleReturnTypes(
      TypeRange{sum.getType()},
      TypeRange{mtf::TensorType::get(&context, {dim("a", 2), dim("b", 3)},
                                     builder.getI32Type())}));
  module->erase();
}

} // namespace
