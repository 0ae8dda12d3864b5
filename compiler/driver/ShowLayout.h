//===- ShowLayout.h - meshc --show-layout -----------------------*- C++ -*-===//
//
// Draws which block of one tensor each device holds, in the terminal (as
// JAX's visualize_array_sharding does): a grid for rank 1 and 2, a list of
// blocks for higher ranks.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_DRIVER_SHOWLAYOUT_H
#define MESHC_COMPILER_DRIVER_SHOWLAYOUT_H

#include "dialect/MtfDialect.h"
#include "llvm/Support/raw_ostream.h"

namespace meshc {

/// Draws the blocks of the tensor called `name` (an input, parameter or
/// named value) of laid-out `program` on `os`; fails after printing an error
/// on `err` that lists the tensor names when there is none.
mlir::LogicalResult showLayout(mlir::mtf::ProgramOp program,
                               llvm::StringRef name, llvm::raw_ostream &os,
                               llvm::raw_ostream &err);

} // namespace meshc

#endif // MESHC_COMPILER_DRIVER_SHOWLAYOUT_H
