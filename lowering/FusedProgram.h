//===- FusedProgram.h - An mtf.fused body as a .mprog program --*- C++ -*-===//
//
// The "fused" step's expression program (docs/mprog.md): the iteration
// dims, how many of them (the last) the body reduces, and one instruction
// per body op over numbered values (the operands first, then each
// instruction's result).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_LOWERING_FUSEDPROGRAM_H
#define MESHC_LOWERING_FUSEDPROGRAM_H

#include "dialect/MtfDialect.h"

#include "llvm/Support/JSON.h"

#include <optional>
#include <vector>

namespace meshc {

struct FusedProgram {
  /// "dims": the iteration dims, the reduced ones last; "reduced": how many
  /// are reduced; "body": the instructions.
  llvm::json::Object attrs;
  /// The value number of each result, in result order.
  std::vector<int64_t> resultValues;
};

/// The unary step "fn" of an elementwise unary op (its mnemonic: the
/// UnaryElementwise trait says the unary step runs it); none for others.
std::optional<llvm::StringRef> unaryFnOf(mlir::Operation &op);
/// The binary step "fn" of add, sub, mul, div, max, min, equal and less.
std::optional<llvm::StringRef> binaryFnOf(mlir::Operation &op);

/// The program of `fused`.
FusedProgram fusedProgram(mlir::mtf::FusedOp fused);

} // namespace meshc

#endif // MESHC_LOWERING_FUSEDPROGRAM_H
