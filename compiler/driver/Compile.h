//===- Compile.h - meshc's compile entry ------------------------*- C++ -*-===//
//
// What `meshc` does after reading its command line, as a function of plain
// options: read the model (a .mtf file, or mtf IR in a .mlir file), resolve
// the mesh and layout (--spec, --mesh, --layout, auto), run the pass
// pipeline and write what is asked (the program, IR, --explain's report,
// --timeline, --reference, --dump-ir). The `meshc` tool (Driver.h) only
// turns its flags into CompileOptions; other programs call compile()
// directly. Each field is the flag of the same name (docs/architecture.md's
// table, `meshc --help`); an unset optional is a flag not given, which some
// checks distinguish from its default.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_DRIVER_COMPILE_H
#define MESHC_COMPILER_DRIVER_COMPILE_H

#include "compiler/passes/Choices.h"
#include "compiler/passes/Remat.h"
#include "compiler/passes/Schedule.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace meshc {

enum class EmitKind { Default, Import, Mtf, Spmd, Mprog };
enum class PrecisionKind { F32, BF16 };
enum class RepeatKind { Unroll, Loop };

/// The spellings of --precision (meshc's flag, the Python package's keyword).
inline llvm::ArrayRef<Choice<PrecisionKind>> precisionChoices() {
  static constexpr Choice<PrecisionKind> choices[] = {
      {PrecisionKind::F32, "f32", "everything in f32"},
      {PrecisionKind::BF16, "bf16",
       "activations and GEMM inputs in bf16; parameters, optimizer state, "
       "statistics and the loss in f32"},
  };
  return choices;
}

/// Which loops run in interleaved halves (mtf-interleave-halves).
enum class Halves {
  Off,
  /// Every loop that can, each half's all-reduces its own.
  All,
  /// Every loop that can; a reverse loop (the backward) all-reduces both
  /// halves at once (the pass's join-reverse).
  Forward,
};

/// The spellings of --interleave-halves (meshc's flag, the Python package's
/// keyword).
inline llvm::ArrayRef<Choice<Halves>> halvesChoices() {
  static constexpr Choice<Halves> choices[] = {
      {Halves::Off, "off", "every loop whole (the default)"},
      {Halves::All, "all",
       "each half's all-reduce beside the other half's compute, in every "
       "loop (the flag without a value)"},
      {Halves::Forward, "forward",
       "so in forward loops; a backward loop all-reduces both halves at once "
       "(as many collectives as whole)"},
  };
  return choices;
}

/// The spellings of --repeat.
inline llvm::ArrayRef<Choice<RepeatKind>> repeatChoices() {
  static constexpr Choice<RepeatKind> choices[] = {
      {RepeatKind::Loop, "loop",
       "one mtf.loop over the layer dim, parameters stacked along it (the "
       "default; unrolled under device weights)"},
      {RepeatKind::Unroll, "unroll",
       "one instance per layer, each with its own parameters"},
  };
  return choices;
}

/// meshc's options, one field per flag.
struct CompileOptions {
  /// The model's path ("-": standard input); a path ending in .mlir is IR.
  std::string input = "-";
  /// -o (default "-": standard output).
  std::optional<std::string> output;
  EmitKind emit = EmitKind::Default;
  uint64_t seed = 0;
  std::optional<std::string> mesh;
  /// The layout rules, or "auto".
  std::optional<std::string> layout;
  std::string spec;
  std::optional<std::string> axisWeights;
  bool uneven = false;
  bool explain = false;
  /// --explain=json: the report as JSON (docs/explain-json.md), alone on
  /// standard output (implies explain).
  bool explainJson = false;
  /// --explain listing each tensor, collective and fused step on its own
  /// line (implies explain).
  bool explainAll = false;
  std::string timeline;
  /// A machine preset or profile file (default cost::kDefaultMachine).
  std::optional<std::string> machine;
  std::optional<std::string> memoryLimit;
  std::string bucketSize = "128MiB";
  std::string overlapLimit = "1GiB";
  Remat remat = Remat::Marked;
  /// (default: Loop)
  std::optional<RepeatKind> repeat;
  PrecisionKind precision = PrecisionKind::F32;
  int64_t microbatches = 1;
  /// A pipeline's order of forwards and backwards (--schedule).
  PipelineSchedule schedule = PipelineSchedule::GPipe;
  /// Under the interleaved schedule, the rounds V each stage runs (stage s
  /// holds the layer blocks s, s + P, ...); absent: 2 (--virtual-stages).
  std::optional<int64_t> virtualStages;
  /// (default: "batch")
  std::optional<std::string> microbatchDim;
  bool shardOptimizer = false;
  /// ZeRO-3: parameters kept sharded too (implies shardOptimizer).
  bool shardParams = false;
  bool noFuse = false;
  bool noFuseAttention = false;
  bool noSchedule = false;
  bool noPrefetch = false;
  Halves interleaveHalves = Halves::Off;
  /// ZeRO-3's parameters, each layer gathered once per step (implies
  /// shardParams).
  bool keepGathered = false;
  std::string dumpIR;
  std::string showLayout;
  std::string reference;
  bool outputGrads = false;
};

/// Whether the compile keeps the parameters sharded (--shard-params, or
/// --keep-gathered, which implies it).
inline bool shardsParams(const CompileOptions &options) {
  return options.shardParams || options.keepGathered;
}

/// Sets up the pass manager of the compile's pipeline before it runs:
/// `meshc` applies MLIR's pass-manager flags here (applyPassManagerCLOptions:
/// timing, IR printing, crash reproducers), which exist only where they were
/// registered on a command line.
using PassManagerSetup =
    llvm::function_ref<mlir::LogicalResult(mlir::PassManager &)>;

/// What compile() returns in memory instead of writing it.
struct CompileResult {
  /// The .mprog (JSON), where the options emit one: --emit=mprog, or by
  /// default.
  std::optional<llvm::json::Value> program;
  /// The IR text, for --emit=import, mtf or spmd.
  std::optional<std::string> ir;
  /// --explain's report as data (explanationJson, docs/explain-json.md),
  /// where options.explain (or explainAll, explainJson) asks for it.
  std::optional<llvm::json::Value> explanation;
  /// The errors `meshc` would print on standard error for the flags, files
  /// and --layout auto, as it prints them ("meshc: error: ...", a caret
  /// line under the flag's text, "hint: ..."). The model's errors go to the
  /// context's diagnostic handler, with their locations.
  std::string errors;
  /// --layout auto's report (the search's summary and best layouts).
  std::string searchReport;
};

/// Compiles the model in `sourceMgr`'s main buffer (read from
/// `options.input`) as `options` ask, in `context` (meshc's dialects
/// loaded: registerAll). Errors go to the context's diagnostic handler (the
/// model's) or to llvm::errs() (flags, files), as `meshc` prints them;
/// reports to llvm::outs() (--explain, --show-layout; --layout auto's
/// search too, unless the program or --explain=json goes there: then to
/// llvm::errs()). Returns failure after any error.
///
/// With `result`, the program (emitted by default even with --explain) or
/// IR, the report, the search's report and the errors meshc prints on
/// standard error go into it, and nothing is written to options.output or
/// printed as the report; --timeline, --reference, --dump-ir and
/// --show-layout write as asked.
mlir::LogicalResult compile(const CompileOptions &options,
                            llvm::SourceMgr &sourceMgr,
                            mlir::MLIRContext &context,
                            PassManagerSetup setup = nullptr,
                            CompileResult *result = nullptr);

/// How compileModel reads the model and reports what is wrong with it.
struct ModelHooks {
  /// The model's text, named options.input in diagnostics (a name ending
  /// in .mlir is IR); unset: the file options.input ("-": standard input).
  std::optional<std::string> text;
  /// Where the model's diagnostics (errors, warnings and notes at places in
  /// the model) are printed as meshc prints them; null: llvm::errs().
  llvm::raw_ostream *diagnostics = nullptr;
  /// Called with each of those diagnostics before it is printed (not with
  /// verifyDiagnostics).
  std::function<void(mlir::Diagnostic &)> observe;
  /// Check the diagnostics against the model's expected-* comments instead
  /// of printing them (meshc --verify-diagnostics): the result is whether
  /// they match.
  bool verifyDiagnostics = false;
  /// As compile()'s.
  std::function<mlir::LogicalResult(mlir::PassManager &)> setup;
};

/// compile() with its model read and its context made: meshc's dialects
/// (registerAll), diagnostics at the model's places without the op's IR. A
/// file that cannot be read is an error "meshc: error: ..." as compile()'s
/// other file errors (into result->errors, with a result). What the `meshc`
/// tool, the Python package and other programs call.
mlir::LogicalResult compileModel(const CompileOptions &options,
                                 CompileResult *result = nullptr,
                                 const ModelHooks &hooks = {});

} // namespace meshc

#endif // MESHC_COMPILER_DRIVER_COMPILE_H
