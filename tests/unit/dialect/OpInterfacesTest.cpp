//===- OpInterfacesTest.cpp - Every mtf op has every interface ------------===//
//
// Walks the registry of the mtf dialect: an op added without one of the
// interfaces the generic passes read (docs/architecture.md, "One home per
// op") fails here, naming the op, before any pass could meet it.
//
//===----------------------------------------------------------------------===//

#include "dialect/MtfDialect.h"

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

} // namespace
