//===- Partition.cpp - mtf-partition --------------------------------------===//
//
// The pass: adds a shard.grid per program mesh and replaces every laid-out
// global program by its local SPMD form (see Partitioner).
//
//===----------------------------------------------------------------------===//

#include "lowering/Decompose.h"
#include "lowering/Partitioner.h"
#include "lowering/Passes.h"

using namespace mlir;

namespace meshc {
#define GEN_PASS_DEF_MTFPARTITION
#include "lowering/Passes.h.inc"
} // namespace meshc

namespace {

struct MtfPartitionPass
    : public meshc::impl::MtfPartitionBase<MtfPartitionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<mtf::ProgramOp> programs(module.getOps<mtf::ProgramOp>());
    for (mtf::ProgramOp program : programs) {
      if (program.getLocal())
        continue;
      FlatSymbolRefAttr grid;
      if (mtf::MeshAttr mesh = program.getMeshAttr()) {
        OpBuilder builder(program);
        SmallVector<int64_t> shape;
        for (const mtf::NamedDim &axis : mesh.getAxes())
          shape.push_back(axis.size);
        std::string name = (program.getSymName() + "_mesh").str();
        shard::GridOp::create(builder, program.getLoc(), name, shape);
        grid = FlatSymbolRefAttr::get(builder.getContext(), name);
      }
      if (failed(meshc::decomposeSplitOps(program)) ||
          !meshc::Partitioner(program, grid).run())
        return signalPassFailure();
      program.erase();
    }
  }
};

} // namespace
