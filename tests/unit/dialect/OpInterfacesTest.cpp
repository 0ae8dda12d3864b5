//===- OpInterfacesTest.cpp - Every mtf op has every interface ------------===//
//
// Walks the registry of the mtf dialect: an op added without one of the
// interfaces the generic passes read (docs/architecture.md, "One home per
// op") fails here, naming the op, before any pass could meet it.
//
//===----------------------------------------------------------------------===//

#include "dialect/MtfDialect.h"
#include "lowering/CollectiveSteps.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <algorithm>
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

/// The .mprog emitter is generic over StepOpInterface: an op that states no
/// steps would fail only when a model used it.
TEST(MtfOpRegistry, EveryOpStatesItsSteps) {
  MLIRContext context;
  std::vector<std::string> missing;
  for (RegisteredOperationName name : mtfOps(context))
    if (!name.hasInterface<mtf::StepOpInterface>())
      missing.push_back(name.getStringRef().str());
  EXPECT_TRUE(missing.empty())
      << "ops without StepOpInterface: " << ::testing::PrintToString(missing);
}

/// mtf-precision reads one Precision trait per op; none or two would leave
/// the rule to the order of a chain.
TEST(MtfOpRegistry, EveryOpHasOnePrecisionRule) {
  MLIRContext context;
  std::vector<std::string> wrong;
  for (RegisteredOperationName name : mtfOps(context))
    if (mtf::precisionRulesOf(name).size() != 1)
      wrong.push_back(name.getStringRef().str() + " (" +
                      std::to_string(mtf::precisionRulesOf(name).size()) +
                      " rules)");
  EXPECT_TRUE(wrong.empty()) << "ops without exactly one Precision trait: "
                             << ::testing::PrintToString(wrong);
}

/// A unary elementwise op's mnemonic is the unary step's "fn": the runtime
/// must have a function of that name, and the op must fuse.
TEST(MtfOpRegistry, UnaryElementwiseOpsNameARuntimeFunctionAndFuse) {
  MLIRContext context;
  std::vector<std::string> wrong;
  int unary = 0;
  for (RegisteredOperationName name : mtfOps(context)) {
    if (!name.hasTrait<mtf::UnaryElementwise>())
      continue;
    ++unary;
    StringRef fn = name.getStringRef().drop_front(4); // "mtf."
    bool known = false;
    for (size_t index = 0; index < meshc::runtime::kUnaryFnCount; ++index)
      known |= fn == meshc::runtime::unaryFnName(
                         static_cast<meshc::runtime::UnaryFn>(index));
    if (!known || !name.hasInterface<mtf::FusibleOpInterface>())
      wrong.push_back(name.getStringRef().str());
  }
  EXPECT_GE(unary, 10);
  EXPECT_TRUE(wrong.empty())
      << "unary ops the runtime cannot run by name or that do not fuse: "
      << ::testing::PrintToString(wrong);
}

/// mtf-fuse groups the reductions their elementwise producers feed.
TEST(MtfOpRegistry, ReductionsFuse) {
  MLIRContext context;
  std::vector<std::string> reductions, wrong;
  for (RegisteredOperationName name : mtfOps(context)) {
    if (!name.hasInterface<mtf::ReductionOpInterface>())
      continue;
    reductions.push_back(name.getStringRef().str());
    if (!name.hasInterface<mtf::FusibleOpInterface>())
      wrong.push_back(name.getStringRef().str());
  }
  std::sort(reductions.begin(), reductions.end());
  EXPECT_EQ(reductions,
            (std::vector<std::string>{"mtf.reduce_max", "mtf.reduce_mean",
                                      "mtf.reduce_sum"}));
  EXPECT_TRUE(wrong.empty()) << ::testing::PrintToString(wrong);
}

/// The shard collectives mtf-partition inserts state their steps through
/// external models, which only the registration gives them.
TEST(CollectiveSteps, EveryCollectiveThePartitionerInsertsStatesItsSteps) {
  DialectRegistry registry;
  registry.insert<shard::ShardDialect>();
  meshc::registerCollectiveStepModels(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  auto states = [&](StringRef op) {
    std::optional<RegisteredOperationName> name =
        RegisteredOperationName::lookup(op, &context);
    return name && name->hasInterface<mtf::StepOpInterface>();
  };
  for (StringRef op :
       {"shard.all_reduce", "shard.all_gather", "shard.all_slice",
        "shard.reduce_scatter", "shard.all_to_all"})
    EXPECT_TRUE(states(op)) << op.str();

  MLIRContext bare;
  bare.getOrLoadDialect<shard::ShardDialect>();
  std::optional<RegisteredOperationName> name =
      RegisteredOperationName::lookup("shard.all_reduce", &bare);
  ASSERT_TRUE(name);
  EXPECT_FALSE(name->hasInterface<mtf::StepOpInterface>());
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
