//===- FusedProgram.h - An mtf.fused body as a .mprog program --*- C++ -*-===//
//
// The "fused" step's expression program (docs/mprog.md): the iteration
// dims, how many of them (the last) the body reduces, and one or more
// instructions per body op over numbered values (the operands first, then
// each instruction's result). Each body op writes its own instructions
// (FusibleOpInterface); this file numbers the values and orders the dims.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_DIALECT_FUSEDPROGRAM_H
#define MESHC_DIALECT_FUSEDPROGRAM_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/JSON.h"

#include <vector>

namespace mlir {
namespace mtf {

class FusedOp;
struct FusedProgram;

/// Numbers the values of a fused body and collects its instructions.
class FusedProgramBuilder {
public:
  /// The number of a body argument or of a value an instruction made.
  int64_t valueOf(Value value) const { return numbers.lookup(value); }
  /// Appends `instruction` and returns the number of its value.
  int64_t add(llvm::json::Object instruction);
  /// Appends {"fn": fn, "args": [op's operands]} and returns its number.
  int64_t add(Operation *op, StringRef fn);
  /// Marks value `value` (an instruction's) "round" to `element` when that
  /// is bf16 or f16: rounded as an unfused step storing it would.
  void roundTo(int64_t value, Type element);

private:
  friend FusedProgram fusedProgram(FusedOp fused);
  llvm::DenseMap<Value, int64_t> numbers;
  int64_t next = 0;
  /// The body's arguments: values below this are not instructions'.
  int64_t arguments = 0;
  llvm::json::Array instructions;
};

struct FusedProgram {
  /// "dims": the iteration dims, the reduced ones last; "reduced": how many
  /// are reduced; "body": the instructions.
  llvm::json::Object attrs;
  /// The value number of each result, in result order.
  std::vector<int64_t> resultValues;
};

/// The program of `fused`.
FusedProgram fusedProgram(FusedOp fused);

/// The instructions of a ReductionOpInterface op: reduce_sum or reduce_max
/// (a mean is a sum and a scale by 1 / the reduced count).
int64_t writeReduceInstructions(Operation *op, FusedProgramBuilder &program);

} // namespace mtf
} // namespace mlir

#endif // MESHC_DIALECT_FUSEDPROGRAM_H
