//===- CollectiveSteps.h - .mprog steps of the shard collectives -*- C++
//-*-===//
//
// The upstream `shard` collectives that mtf-partition inserts get
// mtf::StepOpInterface as external models: their step kinds and fields
// (docs/mprog.md), beside the mtf ops' own (dialect/MtfSteps.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_LOWERING_COLLECTIVESTEPS_H
#define MESHC_LOWERING_COLLECTIVESTEPS_H

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/DialectRegistry.h"

namespace meshc {

/// A reduction's .mprog and mtf spelling: "sum" or "max".
llvm::StringRef reductionName(mlir::shard::ReductionKind kind);

/// Attaches StepOpInterface to all_reduce, all_gather, all_slice,
/// reduce_scatter and all_to_all when the shard dialect loads.
void registerCollectiveStepModels(mlir::DialectRegistry &registry);

} // namespace meshc

#endif // MESHC_LOWERING_COLLECTIVESTEPS_H
