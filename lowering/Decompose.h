//===- Decompose.h - ops over a split dimension, rewritten ------*- C++ -*-===//
//
// Before partitioning: an op that needs a dimension whole (softmax,
// logsumexp, softmax-cross-entropy, argmax) whose layout splits that
// dimension is replaced by its DecomposeOpInterface form, so the partitioner
// all-reduces row statistics instead of all-gathering the dimension.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_LOWERING_DECOMPOSE_H
#define MESHC_LOWERING_DECOMPOSE_H

#include "dialect/MtfDialect.h"

namespace meshc {

/// Rewrites every decomposable op of laid-out `program`, in its loops'
/// bodies too, whose whole dimension some of its tensors split over more
/// than one device; the new ops get layouts from the op's operands and
/// result. Fails (with an error at the op) only on an internal
/// inconsistency.
mlir::LogicalResult decomposeSplitOps(mlir::mtf::ProgramOp program);

} // namespace meshc

#endif // MESHC_LOWERING_DECOMPOSE_H
