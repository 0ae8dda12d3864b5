//===- OneFOneB.h - a pipeline's 1F1B schedule ------------------*- C++ -*-===//
//
// mtf-autodiff's gradient of a pipeline's tick loop under the 1F1B schedule
// (meshc --schedule 1f1b, docs/pipeline.md#1f1b). The gradient of a loop is
// a backward loop that runs after it (Autodiff.cpp); here the backward of
// each tick runs inside the ticks instead, stage s running the backward of
// the microbatch whose forward it ran 2(P - 1 - s) ticks earlier.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_PASSES_ONEFONEB_H
#define MESHC_COMPILER_PASSES_ONEFONEB_H

#include "dialect/OpEmitter.h"

#include "llvm/ADT/SmallVector.h"

namespace meshc {

/// A loop's gradient as mtf-autodiff built it, before its backward loop.
struct LoopGradient {
  /// The forward loop: after its own `ownStacked` stacked results it stacks
  /// what the backward reads (the iterations' inputs and activations).
  mlir::mtf::LoopOp forward;
  size_t ownStacked = 0;
  /// The backward loop's body (arguments: carried, stacked slices,
  /// invariants; it yields the carried gradients, then the stacked
  /// operands' gradient slices).
  mlir::Block *body = nullptr;
  /// The backward loop's carried values (initial), stacked operands (whole)
  /// and the types of its stacked results.
  llvm::SmallVector<mlir::Value> carried, stacked;
  llvm::SmallVector<mlir::Type> stackedResultTypes;
  /// The forward's stacked operands whose gradients those results are.
  llvm::SmallVector<mlir::Value> stackedWanted;
};

/// What the backward loop would have given: its finals and stacked results.
struct LoopGradientValues {
  llvm::SmallVector<mlir::Value> finals, stackedResults;
};

/// Replaces `gradient.forward` (a tick loop with the
/// MtfDialect::kOneFOneBAttrName attribute) by three loops over its ticks
/// that run the backward beside the forward: P - 1 ticks forward only, M
/// ticks both, P - 1 backward only (P stages, M microbatches). What a
/// stage's backward reads of its forward waits in a line of 2P - 1 ticks
/// carried by the loops. Fails, with an error at the loop, where the
/// backward reads a value or gives a gradient that is not per stage in a
/// way it cannot take.
mlir::FailureOr<LoopGradientValues> scheduleOneFOneB(LoopGradient &gradient);

} // namespace meshc

#endif // MESHC_COMPILER_PASSES_ONEFONEB_H
