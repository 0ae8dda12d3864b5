//===- Interpreter.h - reference interpreter of mtf programs ----*- C++ -*-===//
//
// Runs a global (unpartitioned) mtf.program on the CPU with plain loops over
// named multi-indices. It is the oracle that every SPMD execution is compared
// against, so it is written to be obviously correct rather than fast, and it
// shares nothing with the SPMD lowering or the runtime's kernels; only the
// generator of parameters and synthetic inputs (runtime/Random.h) is shared,
// so that both sides start from bit-identical values.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_INTERPRETER_INTERPRETER_H
#define MESHC_COMPILER_INTERPRETER_INTERPRETER_H

#include "dialect/MtfDialect.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace meshc::interp {

/// A dense global tensor: dimension names, sizes, row-major values. Values of
/// every element type are held as doubles (i32 values exactly).
struct Tensor {
  std::vector<std::string> dims;
  std::vector<int64_t> shape;
  std::vector<double> data;
  bool isInteger = false;
};

/// How one run is fed.
struct Options {
  /// Seed of parameter initialisation and of synthetic inputs.
  uint64_t seed = 0;
  /// Given inputs by name; every input missing here is synthetic.
  std::map<std::string, Tensor> inputs;
};

/// Runs `program` (a global, non-local mtf.program; layouts, if any, are
/// ignored) once and returns its outputs by name. On a data error (a label
/// outside [0, classes), a given input of the wrong shape, a local program,
/// ...) emits an error at the offending op and fails.
mlir::FailureOr<std::map<std::string, Tensor>>
interpret(mlir::mtf::ProgramOp program, const Options &options);

} // namespace meshc::interp

#endif // MESHC_COMPILER_INTERPRETER_INTERPRETER_H
