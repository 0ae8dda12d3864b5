//===- Optimizer.h - parameter updates as mtf ops -----------------*- C++
//-*-===//
//
// The update step of `mtf.train`: learning-rate schedule, clipping by global
// norm, and SGD / momentum / Adam / AdamW, written as ordinary mtf ops tagged
// `mtf.phase = "update"`. Optimizer state lives in `mtf.param ... slot`
// tensors with the parameter's dims (so the layout rules lay it out like its
// parameter) and every new value is an `mtf.assign`. docs/training.md gives
// the formulas.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_PASSES_OPTIMIZER_H
#define MESHC_COMPILER_PASSES_OPTIMIZER_H

#include "dialect/OpEmitter.h"

#include "llvm/ADT/MapVector.h"

namespace meshc {

using mlir::mtf::OpEmitter;
using mlir::mtf::tensorType;

/// Appends the updates of every parameter in `grads` (param op → gradient)
/// for `train`'s optimizer; slots are created at the top of the program.
void emitOptimizer(mlir::mtf::TrainOp train,
                   const llvm::MapVector<mlir::Operation *, mlir::Value> &grads,
                   OpEmitter &emit);

/// A zero-initialised slot (mtf.param ... slot) named `name` of `type`,
/// created before `before`.
mlir::Value makeSlot(mlir::OpBuilder &builder, mlir::Operation *before,
                     llvm::StringRef name, mlir::Type type, mlir::Location loc);

/// `mtf.assign name value`, tagged with `emit`'s phase.
void assign(OpEmitter &emit, llvm::StringRef name, mlir::Value value);

/// The hyper-parameter `name` of `train`, or `fallback`.
double hyperparam(mlir::mtf::TrainOp train, llvm::StringRef name,
                  double fallback);

} // namespace meshc

#endif // MESHC_COMPILER_PASSES_OPTIMIZER_H
