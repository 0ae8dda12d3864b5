//===- Registration.cpp - what meshc tools register -----------------------===//

#include "compiler/driver/Registration.h"

#include "compiler/passes/Passes.h"
#include "dialect/MtfDialect.h"
#include "lowering/CollectiveSteps.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace meshc {

void registerAll(mlir::DialectRegistry &registry) {
  // func is there for tests that check single ops outside a program.
  registry.insert<mlir::mtf::MtfDialect, mlir::shard::ShardDialect,
                  mlir::func::FuncDialect>();
  registerCollectiveStepModels(registry);
  static bool passesRegistered = [] {
    registerMeshcPasses();
    registerMeshcLoweringPasses();
    return true;
  }();
  (void)passesRegistered;
}

} // namespace meshc
