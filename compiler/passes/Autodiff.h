//===- Autodiff.h - reverse-mode differentiation of mtf programs -*- C++
//-*-===//
//
// The gradient of a scalar loss with respect to every trainable parameter
// (mtf.param without `slot`), as ordinary mtf ops appended to the program
// and tagged `mtf.phase = "backward"`. The gradient of an einsum is an
// einsum, of a rename a rename, of a constrain the same constrain, so the
// backward pass goes through layout and SPMD partitioning like the forward
// one. Each op's rule is its GradientOpInterface (dialect/MtfGradients.cpp);
// docs/training.md tables them.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_PASSES_AUTODIFF_H
#define MESHC_COMPILER_PASSES_AUTODIFF_H

#include "compiler/passes/Remat.h"
#include "dialect/OpEmitter.h"

#include "llvm/ADT/MapVector.h"

namespace meshc {

using mlir::mtf::OpEmitter;
using mlir::mtf::tensorType;

/// dLoss/dParam for every trainable parameter of `program`, in program
/// order. `remat` says how the backward loop of an mtf.loop gets the
/// forward layer's activations: stacked by the forward loop (None; Marked,
/// but for `checkpoint(...)` ops, recomputed) or each layer recomputed from
/// its input (Repeat). A parameter the loss does not depend on gets a zero
/// gradient and a warning. Fails (with an error at the op) on an op on the path
/// from a parameter to the loss that has no gradient.
mlir::FailureOr<llvm::MapVector<mlir::Operation *, mlir::Value>>
differentiate(mlir::mtf::ProgramOp program, mlir::Value loss, OpEmitter &emit,
              Remat remat = Remat::Marked);

} // namespace meshc

#endif // MESHC_COMPILER_PASSES_AUTODIFF_H
