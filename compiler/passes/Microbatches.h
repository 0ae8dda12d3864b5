//===- Microbatches.h - gradient accumulation over microbatches -*- C++ -*-===//
//
// meshc --microbatches M builds the model for one microbatch (the frontend
// cuts the batch dim M times smaller and marks the program with
// `mtf.microbatches`). A training step then runs the forward and backward
// passes once per microbatch, adding each gradient into an accumulator slot
// `NAME/grad_sum`, and the update once, from the sum scaled by 1/M: with a
// loss that is a mean over the batch, that is the whole batch's gradient.
// The runtime runs the phases so (docs/training.md#microbatches---microbatches)
// and zeroes the accumulators after each update.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_PASSES_MICROBATCHES_H
#define MESHC_COMPILER_PASSES_MICROBATCHES_H

#include "dialect/OpEmitter.h"

#include "llvm/ADT/MapVector.h"

#include <string>
#include <vector>

namespace meshc {

/// What `mtf.microbatches` says: count 1 when the program has none.
struct MicrobatchSpec {
  int64_t count = 1;
  std::string dim;
};

/// The microbatches of `program`.
MicrobatchSpec microbatchesOf(mlir::mtf::ProgramOp program);

/// Checks that cutting `spec.dim` into microbatches keeps the meaning of
/// `program`'s forward pass: every input has the dim first, only inputs
/// (and constants, dropout masks) make tensors with it, nothing mixes
/// examples (no op reduces over, runs along or ranges over the dim) but
/// means over it that only outputs and the trained loss read, and every
/// output and the loss is such a mean, a scalar (then the mean of the
/// microbatches' values is the batch's). Reports the first op that breaks
/// it.
mlir::LogicalResult checkMicrobatchable(mlir::mtf::ProgramOp program,
                                        mlir::mtf::TrainOp train,
                                        const MicrobatchSpec &spec);

/// Replaces every gradient in `grads` by the sum over the microbatches
/// scaled by 1/count: an accumulator slot NAME/grad_sum per parameter, the
/// sum and its assign emitted by `backward`, the scale by `update`. Returns
/// the accumulators' names, in `grads`' order.
std::vector<std::string>
accumulateGradients(llvm::MapVector<mlir::Operation *, mlir::Value> &grads,
                    const MicrobatchSpec &spec, mlir::mtf::OpEmitter &backward,
                    mlir::mtf::OpEmitter &update);

} // namespace meshc

#endif // MESHC_COMPILER_PASSES_MICROBATCHES_H
