//===- Interpreter.h - reference interpreter of mtf programs ----*- C++ -*-===//
//
// Runs a global (unpartitioned) mtf.program on the CPU with plain loops over
// named multi-indices. It is the oracle that every SPMD execution is compared
// against, so it is written to be obviously correct rather than fast, and it
// shares nothing with the SPMD lowering or the runtime's kernels; only the
// generator of parameters and synthetic inputs (runtime/core/Random.h) is
// shared, so that both sides start from bit-identical values.
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

/// How the runs are fed.
struct Options {
  /// Seed of parameter initialisation, of synthetic inputs and of dropout
  /// masks.
  uint64_t seed = 0;
  /// Given inputs by name; every input missing here is synthetic. Every run
  /// is fed the same inputs.
  std::map<std::string, Tensor> inputs;
  /// Number of runs (at least 1).
  int64_t steps = 1;
  /// Index of the first run: run k of this call draws the dropout masks of
  /// training run firstRun + k.
  uint64_t firstRun = 0;
  /// Evaluation runs: only forward ops run, i.e. every op carrying
  /// `mtf.phase` (backward and update ops) is skipped, nothing is assigned,
  /// and dropout masks are all ones.
  bool eval = false;
  /// Given initial values of parameters and slots by name; every one missing
  /// here starts from its initializer.
  std::map<std::string, Tensor> params;
};

/// What a sequence of runs leaves.
struct Result {
  /// The outputs of the last run, by name.
  std::map<std::string, Tensor> outputs;
  /// The value of every parameter and slot after the last run (after its
  /// `mtf.assign`s), by name.
  std::map<std::string, Tensor> params;
};

/// Runs `program` (a global, non-local mtf.program; layouts, if any, are
/// ignored) `options.steps` times. Within a run every read of a parameter
/// sees its value at the start of the run; after the run, each
/// `mtf.assign "p" %v` makes `%v` the value of `p` for the next run. Ops with
/// `mtf.phase` run like any other in training runs; `mtf.train` itself is
/// ignored (the autodiff pass replaces it). On a data error (a label or
/// one-hot index out of range, a given input or parameter of the wrong
/// shape, a local program, ...) emits an error at the offending op and
/// fails.
mlir::FailureOr<Result> interpretRuns(mlir::mtf::ProgramOp program,
                                      const Options &options);

/// interpretRuns(program, options)'s outputs: by default, the outputs of one
/// training run (run `options.firstRun`) from the initial parameters.
mlir::FailureOr<std::map<std::string, Tensor>>
interpret(mlir::mtf::ProgramOp program, const Options &options);

} // namespace meshc::interp

#endif // MESHC_COMPILER_INTERPRETER_INTERPRETER_H
