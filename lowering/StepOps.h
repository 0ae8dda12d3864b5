//===- StepOps.h - What the overlap passes ask of a local program's ops -*- C++
//-*-===//
//
// Shared by mtf-overlap-collectives and its scheduler: which ops are
// collectives that communicate, and which values share a buffer.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_LOWERING_STEPOPS_H
#define MESHC_LOWERING_STEPOPS_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseSet.h"

namespace meshc {

/// Whether `op` is a step that communicates over a device group (a slice
/// takes the device's block without communicating: it is not).
bool communicates(mlir::Operation *op);

/// The values that share a buffer with `roots`: those, and the views of
/// them (both ways, through any chain of views).
llvm::DenseSet<mlir::Value> buffersOf(llvm::ArrayRef<mlir::Value> roots);

} // namespace meshc

#endif // MESHC_LOWERING_STEPOPS_H
