//===- Compile.cpp - meshc's compile entry --------------------------------===//
//
// Resolves the mesh and layout from --spec/--mesh/--layout, reads the model,
// runs the pass pipeline (optionally dumping the IR after every pass), then
// writes IR and/or the --explain report (Compile.h).
//
//===----------------------------------------------------------------------===//

#include "compiler/driver/Compile.h"

#include "compiler/driver/AutoLayout.h"
#include "compiler/driver/Explain.h"
#include "compiler/driver/Pipeline.h"
#include "compiler/driver/ShowLayout.h"
#include "compiler/passes/LayoutBridge.h"
#include "compiler/passes/Passes.h"
#include "frontend/Frontend.h"
#include "lowering/EmitMprog.h"
#include "lowering/Passes.h"
#include "lowering/Timeline.h"
#include "runtime/core/cost/CostModel.h"
#include "runtime/core/layout/LayoutRules.h"
#include "runtime/core/layout/Spec.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

namespace meshc {
namespace {

/// Writes what `print` prints to `path` ("-": standard output). A regular
/// file (or a new one) is written as a temporary beside it, renamed over
/// `path` only once complete: a full disk or a file-size limit leaves
/// whatever was at `path` before. Anything else at `path` (a device such as
/// /dev/null, a pipe, a symbolic link) is written in place, never replaced.
/// Errors name `what` (the flag), the path and the system's reason.
LogicalResult writeOutput(StringRef path, StringRef what,
                          llvm::function_ref<void(llvm::raw_ostream &)> print,
                          llvm::raw_ostream &err) {
  auto fail = [&](const std::string &reason) {
    err << "meshc: error: " << what << ": cannot write '" << path
        << "': " << reason << "\n";
    return failure();
  };
  auto written = [&](llvm::raw_fd_ostream &os) {
    print(os);
    os.flush();
    std::error_code ec = os.error();
    os.clear_error();
    return ec;
  };
  llvm::sys::fs::file_status status;
  bool inPlace = path == "-" || (!llvm::sys::fs::status(path, status,
                                                        /*follow=*/false) &&
                                 llvm::sys::fs::exists(status) &&
                                 !llvm::sys::fs::is_regular_file(status));
  if (inPlace) {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      return fail(ec.message());
    if (std::error_code error = written(os))
      return fail(error.message());
    return success();
  }
  llvm::Expected<llvm::sys::fs::TempFile> temporary =
      llvm::sys::fs::TempFile::create(path + "-%%%%%%.tmp");
  if (!temporary)
    return fail(llvm::toString(temporary.takeError()));
  std::error_code error;
  {
    llvm::raw_fd_ostream os(temporary->FD, /*shouldClose=*/false);
    error = written(os);
  }
  if (error) {
    llvm::consumeError(temporary->discard());
    return fail(error.message());
  }
  if (llvm::Error error = temporary->keep(path))
    return fail(llvm::toString(std::move(error)));
  return success();
}

/// Writes the whole module to DIR/NN-<stage>.mlir after import and after
/// every pass, so a reader can follow the pipeline stage by stage.
class DumpIRInstrumentation : public PassInstrumentation {
public:
  DumpIRInstrumentation(std::string dir, ModuleOp module,
                        llvm::raw_ostream &err)
      : dir(std::move(dir)), module(module), err(err) {}

  LogicalResult dump(StringRef stage) {
    SmallString<128> path(dir);
    llvm::sys::path::append(
        path, llvm::formatv("{0:2}-{1}.mlir", counter++, stage).str());
    return writeOutput(
        path, "--dump-ir", [&](llvm::raw_ostream &os) { module.print(os); },
        err);
  }

  void runAfterPass(Pass *pass, Operation *) override {
    // Pass-manager adaptors (nesting) have no argument: nothing to show.
    if (!pass->getArgument().empty())
      (void)dump(pass->getArgument());
  }

private:
  std::string dir;
  ModuleOp module;
  llvm::raw_ostream &err;
  unsigned counter = 0;
};

/// Prints a mesh/layout/spec problem the way compilers print flag errors.
int reportFlagError(const layout::Error &error, StringRef flag, StringRef text,
                    llvm::raw_ostream &err) {
  err << "meshc: " << layout::formatFlagError(error, flag, text) << "\n";
  return 1;
}

/// Reports a failed check of the layout rules: against --layout's text when
/// the rules came from the flag, else as the spec file's error.
bool checkRules(const CompileOptions &options, const layout::Status &status,
                llvm::raw_ostream &err) {
  if (status.ok())
    return true;
  if (options.layout.has_value())
    reportFlagError(status.error(), "--layout", *options.layout, err);
  else
    err << "meshc: " << status.error().str() << "\n";
  return false;
}

/// Whether --layout asks for the search (AutoLayout.h).
bool autoLayoutFlag(const CompileOptions &options) {
  return options.layout.has_value() &&
         StringRef(*options.layout).trim() == "auto";
}

/// The device weights from --axis-weights, else the spec's, checked against
/// the final `mesh`, and --uneven or the spec's "uneven". Returns false after
/// reporting an error.
bool resolveWeights(const CompileOptions &options, const layout::Spec *spec,
                    const layout::Mesh &mesh, layout::AxisWeights &weights,
                    llvm::raw_ostream &err) {
  weights = layout::AxisWeights::even(mesh);
  bool fromFlag = options.axisWeights.has_value();
  if ((fromFlag || options.uneven) && !spec && !options.mesh.has_value()) {
    err << "meshc: error: " << (fromFlag ? "--axis-weights" : "--uneven")
        << " weighs the devices of the mesh given with it\nhint: "
           "give --mesh or --spec too, e.g. --mesh \"b:3\"\n";
    return false;
  }
  std::string text = fromFlag ? *options.axisWeights
                     : spec   ? spec->axisWeights
                              : std::string();
  if (fromFlag || !text.empty()) {
    layout::Result<layout::AxisWeights> parsed =
        layout::AxisWeights::parse(text, mesh);
    if (!parsed.ok() && fromFlag)
      return reportFlagError(parsed.error(), "--axis-weights", text, err),
             false;
    if (!parsed.ok()) {
      // The spec's weights fit the spec's mesh, so --mesh replaced it.
      err << "meshc: error: the spec's \"axis_weights\" \"" << text
          << "\" do not fit the mesh " << mesh.str() << ": "
          << parsed.error().message
          << "\nhint: give --axis-weights for this mesh ("
          << parsed.error().hint << ")\n";
      return false;
    }
    weights = *parsed;
  }
  if (options.uneven || (spec && spec->uneven))
    weights.allowIndivisible();
  return true;
}

/// The mesh and layout rules from --spec, then --mesh/--layout on top, and
/// the device weights (resolveWeights); `search` says whether the layout is
/// "auto" (the search chooses the rules). Returns false after reporting an
/// error.
bool resolveLayout(const CompileOptions &options, layout::Mesh &mesh,
                   layout::LayoutRules &rules, layout::AxisWeights &weights,
                   bool &search, llvm::raw_ostream &err) {
  search = false;
  std::optional<layout::Spec> specFile;
  if (!options.spec.empty()) {
    layout::Result<layout::Spec> spec = layout::loadSpecFile(options.spec);
    if (!spec.ok()) {
      err << "meshc: " << spec.error().str() << "\n";
      return false;
    }
    mesh = spec->mesh;
    rules = spec->rules;
    search = spec->autoLayout;
    specFile = *spec;
  }
  if (options.mesh.has_value()) {
    layout::Result<layout::Mesh> parsed = layout::Mesh::parse(*options.mesh);
    if (!parsed.ok())
      return reportFlagError(parsed.error(), "--mesh", *options.mesh, err),
             false;
    mesh = *parsed;
  }
  if (autoLayoutFlag(options)) {
    rules = layout::LayoutRules();
    search = true;
  } else if (options.layout.has_value()) {
    layout::Result<layout::LayoutRules> parsed =
        layout::LayoutRules::parse(*options.layout);
    if (!parsed.ok())
      return reportFlagError(parsed.error(), "--layout", *options.layout, err),
             false;
    rules = *parsed;
    search = false;
  }
  if (!resolveWeights(options, specFile ? &*specFile : nullptr, mesh, weights,
                      err))
    return false;
  return checkRules(options, rules.checkAgainstMesh(mesh), err);
}

/// Whether a mesh or layout was asked for on the command line.
bool layoutGiven(const CompileOptions &options) {
  return !options.spec.empty() || options.mesh.has_value() ||
         options.layout.has_value();
}

/// meshc compiles one program; IR input must hold exactly that (mtf ops
/// live inside it), and an already partitioned program takes no new layout.
LogicalResult checkInput(const CompileOptions &options, ModuleOp module) {
  SmallVector<mtf::ProgramOp> programs(module.getOps<mtf::ProgramOp>());
  for (Operation &op : module.getBody()->getOperations())
    if (llvm::isa<mtf::MtfDialect>(op.getDialect()) &&
        !llvm::isa<mtf::ProgramOp>(op))
      return op.emitError()
             << "'" << op.getName() << "' must be inside an mtf.program";
  if (programs.size() != 1)
    return emitError(programs.size() > 1 ? programs[1].getLoc()
                                         : module.getLoc())
           << "meshc compiles one mtf.program per input, found "
           << programs.size();
  if (programs.front().getLocal() && layoutGiven(options))
    return programs.front().emitError()
           << "this program is already partitioned (local): --mesh, "
              "--layout and --spec apply to global programs";
  return success();
}

/// Runs the global program in the reference interpreter with --seed and
/// writes its outputs to --reference.
LogicalResult writeReference(const CompileOptions &options, ModuleOp module,
                             llvm::raw_ostream &err) {
  interp::Options interpOptions;
  interpOptions.seed = options.seed;
  for (auto program : module.getOps<mtf::ProgramOp>()) {
    FailureOr<std::map<std::string, interp::Tensor>> outputs =
        interp::interpret(program, interpOptions);
    if (failed(outputs))
      return failure();
    if (failed(writeOutput(
            options.reference, "--reference",
            [&](llvm::raw_ostream &os) {
              os << llvm::formatv("{0}", outputsToJson(*outputs)) << "\n";
            },
            err)))
      return failure();
  }
  return success();
}

/// Reads the input as a .mtf model, or as IR when it ends in .mlir.
OwningOpRef<ModuleOp>
importInput(const CompileOptions &options, llvm::SourceMgr &sourceMgr,
            MLIRContext &context,
            const frontend::ImportOptions &importOptions = {}) {
  if (StringRef(options.input).ends_with(".mlir"))
    return parseSourceFile<ModuleOp>(sourceMgr, &context);
  return frontend::importMtf(sourceMgr, context, importOptions);
}

/// Whether `options` ask to differentiate `module` (it trains, or gradients
/// are asked for).
/// The bytes of size flag `flag` (`text`, "0" for none); an error naming the
/// flag, and what 0 would do (`zeroDoes` none), where it is no size.
std::optional<int64_t> sizeOrZero(StringRef flag, StringRef text,
                                  StringRef zeroDoes, llvm::raw_ostream &err) {
  if (text.trim() == "0")
    return 0;
  layout::Result<int64_t> size = cost::parseMemorySize(text.str());
  if (!size.ok()) {
    err << "meshc: error: " << flag << ": " << size.error().message
        << " (or 0 to " << zeroDoes << " none)\n";
    return std::nullopt;
  }
  return *size;
}

bool needsAutodiff(const CompileOptions &options, ModuleOp module) {
  bool trains = false;
  module->walk([&](mtf::TrainOp) { trains = true; });
  return trains || options.outputGrads;
}

/// `value` with every string its own: the emitter's JSON refers to strings
/// the module and context own (llvm::json keeps StringRefs), which a
/// CompileResult outlives.
llvm::json::Value owned(const llvm::json::Value &value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << value;
  llvm::Expected<llvm::json::Value> copy = llvm::json::parse(text);
  if (!copy)
    llvm::report_fatal_error(
        llvm::Twine("meshc: internal: JSON written could not be read back: ") +
        llvm::toString(copy.takeError()));
  return std::move(*copy);
}

} // namespace

LogicalResult compile(const CompileOptions &options, llvm::SourceMgr &sourceMgr,
                      MLIRContext &context, PassManagerSetup setup,
                      CompileResult *result) {
  // With `result`, errors go into it instead of standard error.
  std::optional<llvm::raw_string_ostream> errorStream;
  if (result)
    errorStream.emplace(result->errors);
  llvm::raw_ostream &err =
      result ? static_cast<llvm::raw_ostream &>(*errorStream) : llvm::errs();
  const std::string output = options.output.value_or("-");
  const std::string microbatchDim = options.microbatchDim.value_or("batch");
  const bool explain =
      options.explain || options.explainAll || options.explainJson;
  layout::Mesh mesh;
  layout::LayoutRules rules;
  layout::AxisWeights weights;
  bool search = false;
  if (!resolveLayout(options, mesh, rules, weights, search, err))
    return failure();
  cost::MachineProfile machine;
  bool predicts = explain || !options.timeline.empty();
  if (options.machine.has_value() && !predicts && !search) {
    err << "meshc: error: --machine is for --explain's and "
           "--timeline's predicted times and --layout auto; add one "
           "of them\n";
    return failure();
  }
  if (search && mesh.numDevices() <= 1) {
    err << "meshc: error: --layout auto needs a mesh of several "
           "devices to search layouts on; got "
        << (mesh.rank() ? "mesh " + mesh.str() : std::string("none"))
        << "\nhint: give --mesh, e.g. --mesh \"b:2;m:4\"\n";
    return failure();
  }
  if (!options.timeline.empty() && options.emit == EmitKind::Import) {
    err << "meshc: error: --timeline predicts the partitioned "
           "program, but --emit=import stops before it\n";
    return failure();
  }
  if (search && options.emit == EmitKind::Import) {
    err << "meshc: error: --layout auto chooses a layout after "
           "autodiff, but --emit=import stops before it\n";
    return failure();
  }
  AutoLayoutOptions searchOptions;
  if (options.memoryLimit.has_value()) {
    if (!search) {
      err << "meshc: error: --memory-limit is for --layout auto\n";
      return failure();
    }
    layout::Result<int64_t> limit = cost::parseMemorySize(*options.memoryLimit);
    if (!limit.ok()) {
      err << "meshc: error: --memory-limit: " << limit.error().message << "\n";
      if (!limit.error().hint.empty())
        err << "hint: " << limit.error().hint << "\n";
      return failure();
    }
    searchOptions.memoryLimit = *limit;
  }
  std::optional<int64_t> bucketBytes =
      sizeOrZero("--bucket-size", options.bucketSize, "combine", err);
  if (!bucketBytes)
    return failure();
  std::optional<int64_t> overlapBytes =
      sizeOrZero("--overlap-limit", options.overlapLimit, "overlap", err);
  if (!overlapBytes)
    return failure();
  PartitionOptions partitionOptions;
  partitionOptions.fuse = !options.noFuse;
  partitionOptions.bucketBytes = *bucketBytes;
  partitionOptions.overlapBytes = *overlapBytes;
  partitionOptions.schedule = !options.noSchedule;
  partitionOptions.prefetch = !options.noPrefetch;
  partitionOptions.interleaveHalves = options.interleaveHalves;
  partitionOptions.keepGathered = options.keepGathered;
  if (predicts || search) {
    layout::Result<cost::MachineProfile> loaded = cost::loadMachineProfile(
        options.machine.value_or(cost::kDefaultMachine));
    if (!loaded.ok()) {
      err << "meshc: --machine: " << loaded.error().str() << "\n";
      return failure();
    }
    machine = *loaded;
  }

  if (options.microbatches < 1) {
    err << "meshc: error: --microbatches must be at least 1, got "
        << options.microbatches << "\n";
    return failure();
  }
  if (options.microbatchDim.has_value() && options.microbatches == 1) {
    err << "meshc: error: --microbatch-dim names the dim "
           "--microbatches cuts; give --microbatches too\n";
    return failure();
  }
  // (Where the layout makes a pipeline, the microbatches are the
  // pipeline's, cut inside the program: checked once the model is read.)
  auto checkAccumulated = [&]() -> LogicalResult {
    if (options.microbatches == 1)
      return success();
    if (StringRef(options.input).ends_with(".mlir")) {
      err << "meshc: error: --microbatches cuts a .mtf model's batch "
             "dim as it is read; IR input carries its own "
             "mtf.microbatches\n";
      return failure();
    }
    if (!options.reference.empty()) {
      err << "meshc: error: --reference runs one step of the global "
             "program, which --microbatches splits into runs of the "
             "phases; compile without --microbatches for the "
             "reference (the result is the same step)\n";
      return failure();
    }
    return success();
  };

  std::vector<frontend::RepeatSite> repeats;
  frontend::ImportOptions importOptions;
  importOptions.microbatches = options.microbatches;
  importOptions.microbatchDim = microbatchDim;
  importOptions.repeats = &repeats;
  importOptions.loops =
      options.repeat.value_or(RepeatKind::Loop) == RepeatKind::Loop;
  OwningOpRef<ModuleOp> module =
      importInput(options, sourceMgr, context, importOptions);
  if (!module)
    return failure();
  // A layout that splits a repeat's layer dim makes a pipeline, whose
  // microbatches are cut inside the program: the model is read whole.
  bool pipelined = !search && pipelines(*module, rules);
  if (options.schedule != PipelineSchedule::GPipe && !search && !pipelined) {
    err << "meshc: error: --schedule "
        << choiceName(scheduleChoices(), options.schedule)
        << " orders a pipeline's microbatches, but the layout '" << rules.str()
        << "' splits no repeat's layer dim (docs/pipeline.md)\n";
    return failure();
  }
  if (options.virtualStages &&
      options.schedule != PipelineSchedule::Interleaved) {
    err << "meshc: error: --virtual-stages " << *options.virtualStages
        << " is the number of rounds of the interleaved schedule; it needs "
           "--schedule interleaved (docs/pipeline.md#interleaved)\n";
    return failure();
  }
  if (options.virtualStages && *options.virtualStages < 2) {
    err << "meshc: error: --virtual-stages must be at least 2, got "
        << *options.virtualStages << " (one round is --schedule gpipe)\n";
    return failure();
  }
  // Loops do not take unequal blocks yet: under device weights the default
  // unrolls and an explicit --repeat=loop is refused, but for a pipeline,
  // whose tick loop holds equal blocks (its stages may hold unequal numbers
  // of layers: docs/pipeline.md#uneven-stages).
  if (importOptions.loops && !weights.isPlain() && !pipelined) {
    if (options.repeat.has_value()) {
      err << "meshc: error: --repeat=loop does not take device "
             "weights (--axis-weights, --uneven or the layout's "
             "weights) yet, but for a pipeline's repeat; use "
             "--repeat=unroll, which they default to\n";
      return failure();
    }
    importOptions.loops = false;
    module = importInput(options, sourceMgr, context, importOptions);
    if (!module)
      return failure();
  }
  if (failed(checkInput(options, *module)))
    return failure();
  if (!checkRules(options, rules.checkAgainstDims(collectModelDims(*module)),
                  err))
    return failure();
  if (pipelined && importOptions.microbatches > 1) {
    importOptions.microbatches = 1;
    module = importInput(options, sourceMgr, context, importOptions);
    if (!module)
      return failure();
  }
  if (!pipelined && failed(checkAccumulated()))
    return failure();

  // --explain=json is one JSON object on standard output: nothing else may
  // print there.
  if (options.explainJson && !result) {
    const char *clash =
        options.emit == EmitKind::Import
            ? "--emit=import stops before the partitioned program it reports"
        : !options.showLayout.empty()
            ? "--show-layout draws on standard output too; run it apart"
        : output == "-" && (options.emit != EmitKind::Default ||
                            options.output.has_value())
            ? "the program would go to standard output too; write it with "
              "-o FILE"
            : nullptr;
    if (clash) {
      err << "meshc: error: --explain=json prints one JSON object on "
             "standard output, but "
          << clash << "\n";
      return failure();
    }
  }

  // The module as IR text, into `result` or to -o.
  auto writeIR = [&]() -> LogicalResult {
    if (result) {
      std::string text;
      llvm::raw_string_ostream os(text);
      module->print(os);
      os << "\n";
      result->ir = std::move(text);
      return success();
    }
    return writeOutput(
        output, "-o",
        [&](llvm::raw_ostream &os) {
          module->print(os);
          os << "\n";
        },
        err);
  };
  EmitKind emit = options.emit;
  if (emit == EmitKind::Import)
    return writeIR();
  if (emit == EmitKind::Default)
    emit =
        (explain || !options.showLayout.empty() || !options.timeline.empty()) &&
                !options.output.has_value() && !result
            ? EmitKind::Default
            : EmitKind::Mprog;
  bool partition = emit == EmitKind::Spmd || emit == EmitKind::Mprog ||
                   explain || !options.timeline.empty();

  std::unique_ptr<DumpIRInstrumentation> dumper;
  if (!options.dumpIR.empty()) {
    if (std::error_code ec =
            llvm::sys::fs::create_directories(options.dumpIR)) {
      err << "meshc: error: --dump-ir: cannot create '" << options.dumpIR
          << "': " << ec.message() << "\n";
      return failure();
    }
    context.disableMultithreading();
    dumper =
        std::make_unique<DumpIRInstrumentation>(options.dumpIR, *module, err);
    if (failed(dumper->dump("import")))
      return failure();
  }

  PassManager pm(&context, ModuleOp::getOperationName());
  if (setup && failed(setup(pm)))
    return failure();
  if (dumper)
    pm.addInstrumentation(std::move(dumper));

  // The pipeline first, so that everything after sees its stages; mixed
  // precision on the forward program, so the backward pass follows; then
  // attention is fused in its final types, before autodiff.
  if (pipelined)
    addPipelineStages(pm, mesh, rules, weights, options.microbatches,
                      microbatchDim, options.schedule,
                      options.virtualStages.value_or(2));
  if (options.precision == PrecisionKind::BF16)
    pm.nest<mtf::ProgramOp>().addPass(createMtfPrecision());
  if (!options.noFuseAttention)
    pm.nest<mtf::ProgramOp>().addPass(createMtfFuseAttention());
  if (pm.size()) {
    if (failed(pm.run(*module)))
      return failure();
    pm.clear();
  }
  // Training: the backward pass and the optimizer update become ordinary
  // ops of the global program, before any layout is applied.
  bool trains = needsAutodiff(options, *module);
  if (options.microbatches > 1 && !trains && !pipelined) {
    err << "meshc: error: --microbatches " << options.microbatches
        << " accumulates gradients over microbatches, but the model "
           "has no train statement\n";
    return failure();
  }
  if (trains) {
    MtfAutodiffOptions autodiffOptions;
    autodiffOptions.outputGrads = options.outputGrads;
    autodiffOptions.loopRemat = options.remat;
    pm.nest<mtf::ProgramOp>().addPass(createMtfAutodiff(autodiffOptions));
    if (failed(pm.run(*module)))
      return failure();
    pm.clear();
  }
  if (!options.reference.empty() &&
      failed(writeReference(options, *module, err)))
    return failure();
  if (options.remat == Remat::Repeat && !trains) {
    err << "meshc: error: --remat=repeat recomputes activations "
           "for the backward pass, but the model does not train\n";
    return failure();
  }
  // A checkpoint(...) in a model that does not train has nothing to be
  // recomputed for: it keeps nothing anyway.
  if (trains)
    addRemat(pm, *module, options.remat);
  if (pm.size()) {
    if (failed(pm.run(*module)))
      return failure();
    pm.clear();
  }

  // --layout auto: the search picks the rules (its report goes to stderr
  // when the emitted program goes to stdout).
  // With microbatches, a model of loops is also searched pipelined: each
  // layout that splits a layer dim on the model read whole, the pipeline
  // cutting the microbatches inside it.
  std::function<OwningOpRef<ModuleOp>(const layout::LayoutRules &)>
      buildPipelined;
  if (search && !StringRef(options.input).ends_with(".mlir") &&
      importOptions.loops && options.microbatches > 1)
    buildPipelined = [&](const layout::LayoutRules &candidate) {
      frontend::ImportOptions whole = importOptions;
      whole.microbatches = 1;
      whole.repeats = nullptr;
      OwningOpRef<ModuleOp> copy =
          frontend::importMtf(sourceMgr, context, whole);
      if (!copy)
        return OwningOpRef<ModuleOp>();
      PassManager stages(&context, ModuleOp::getOperationName());
      stages.enableVerifier(false);
      addPipelineStages(stages, mesh, candidate, weights, options.microbatches,
                        microbatchDim, options.schedule,
                        options.virtualStages.value_or(2));
      if (failed(stages.run(*copy)) ||
          failed(differentiate(*copy, options.outputGrads, options.remat,
                               options.precision == PrecisionKind::BF16,
                               !options.noFuseAttention)))
        return OwningOpRef<ModuleOp>();
      return copy;
    };
  if (search) {
    bool toStdout = output == "-" && emit != EmitKind::Default;
    SearchModel model;
    model.full = *module;
    model.file = llvm::sys::path::filename(options.input).str();
    model.repeats = repeats;
    // A model of loops is measured as written: it does not grow with depth.
    if (!StringRef(options.input).ends_with(".mlir") && !importOptions.loops)
      model.reimport = [&](const frontend::ImportOptions &counts) {
        // The main import already gave the warnings; errors still go out.
        ScopedDiagnosticHandler quiet(&context, [](Diagnostic &diag) {
          return success(diag.getSeverity() != DiagnosticSeverity::Error);
        });
        frontend::ImportOptions withCounts = counts;
        withCounts.microbatches = importOptions.microbatches;
        withCounts.microbatchDim = importOptions.microbatchDim;
        OwningOpRef<ModuleOp> copy =
            frontend::importMtf(sourceMgr, context, withCounts);
        if (copy &&
            (needsAutodiff(options, *copy) ||
             options.precision == PrecisionKind::BF16 ||
             !options.noFuseAttention) &&
            failed(differentiate(*copy, options.outputGrads, options.remat,
                                 options.precision == PrecisionKind::BF16,
                                 !options.noFuseAttention)))
          return OwningOpRef<ModuleOp>();
        return copy;
      };
    model.pipelined = buildPipelined;
    searchOptions.partition = partitionOptions;
    searchOptions.partition.shardOptimizer = options.shardOptimizer;
    searchOptions.partition.shardParams = shardsParams(options);
    searchOptions.partition.axisWeights = weights.str(mesh);
    searchOptions.partition.uneven = weights.allowsIndivisible();
    searchOptions.errors = &err;
    std::optional<llvm::raw_string_ostream> searchReport;
    if (result)
      searchReport.emplace(result->searchReport);
    FailureOr<layout::LayoutRules> chosen =
        chooseLayout(model, mesh, machine, searchOptions,
                     result                            ? *searchReport
                     : toStdout || options.explainJson ? err
                                                       : llvm::outs());
    if (failed(chosen))
      return failure();
    rules = *chosen;
    // A pipeline chosen: the model is compiled pipelined from here on.
    if (buildPipelined && pipelines(*module, rules)) {
      OwningOpRef<ModuleOp> pipelinedModule = buildPipelined(rules);
      if (!pipelinedModule)
        return failure();
      module = std::move(pipelinedModule);
    }
  }

  // IR that already carries layouts keeps them unless a flag asks otherwise.
  bool laidOut = false;
  module->walk([&](Operation *op) {
    laidOut |= op->hasAttr(mtf::MtfDialect::kLayoutAttrName);
  });
  if (!laidOut || layoutGiven(options)) {
    MtfApplyLayoutOptions layoutOptions;
    layoutOptions.mesh = mesh.rank() ? mesh.str() : std::string();
    layoutOptions.layout = rules.str();
    layoutOptions.shardOptimizer = options.shardOptimizer;
    layoutOptions.shardParams = shardsParams(options);
    layoutOptions.axisWeights = weights.str(mesh);
    layoutOptions.uneven = weights.allowsIndivisible();
    pm.nest<mtf::ProgramOp>().addPass(createMtfApplyLayout(layoutOptions));
  }
  if (failed(pm.run(*module)))
    return failure();
  if (!options.showLayout.empty())
    for (auto program : module->getOps<mtf::ProgramOp>())
      if (failed(meshc::showLayout(program, options.showLayout, llvm::outs(),
                                   err)))
        return failure();

  // The laid-out global program, kept for --explain's tensor table.
  OwningOpRef<ModuleOp> global;
  if (explain && partition)
    global = module->clone();
  if (partition) {
    pm.clear();
    addPartitionPasses(pm, *module, partitionOptions);
    if (failed(pm.run(*module)))
      return failure();
  }

  if (explain) {
    MemoryPlanStats stats;
    FailureOr<llvm::json::Value> mprog = failure();
    {
      // The plan is only reported here; its errors come with -o/--emit.
      ScopedDiagnosticHandler silence(&context,
                                      [](Diagnostic &) { return success(); });
      mprog = emitMprog(*module, MprogOptions(), &stats);
    }
    std::optional<ScratchPlan> scratch;
    if (succeeded(mprog))
      scratch = planScratch(*mprog);
    ModuleOp laidOut = global ? *global : *module;
    for (auto program : laidOut.getOps<mtf::ProgramOp>()) {
      if (result)
        result->explanation =
            owned(explanationJson(program, partition ? *module : ModuleOp(),
                                  succeeded(mprog) ? &stats : nullptr,
                                  scratch ? &*scratch : nullptr, machine));
      else if (options.explainJson)
        llvm::outs() << llvm::formatv(
                            "{0:2}",
                            explanationJson(
                                program, partition ? *module : ModuleOp(),
                                succeeded(mprog) ? &stats : nullptr,
                                scratch ? &*scratch : nullptr, machine))
                     << "\n";
      else
        explainProgram(program, partition ? *module : ModuleOp(),
                       succeeded(mprog) ? &stats : nullptr,
                       scratch ? &*scratch : nullptr, machine,
                       !options.explainAll, llvm::outs());
    }
  }

  if (!options.timeline.empty() && failed(writeOutput(
                                       options.timeline, "--timeline",
                                       [&](llvm::raw_ostream &os) {
                                         writePredictedTimeline(*module, mesh,
                                                                machine, os);
                                       },
                                       err)))
    return failure();

  if (emit == EmitKind::Default)
    return success();
  if (emit == EmitKind::Mprog) {
    MprogOptions mprogOptions;
    mprogOptions.seed = options.seed;
    FailureOr<llvm::json::Value> mprog = emitMprog(*module, mprogOptions);
    if (failed(mprog))
      return failure();
    // A started collective's span is the compiler's promise that nothing
    // in it touches the collective's buffers: the runtime's loader checks
    // it byte by byte, here before meshrun would.
    bool starts =
        module->walk([](mtf::WaitOp) { return WalkResult::interrupt(); })
            .wasInterrupted();
    if (starts)
      if (ScratchPlan loaded = planScratch(*mprog); !loaded.error.empty()) {
        err << "meshc: error: internal: the runtime's loader refuses "
               "the program meshc wrote (overlapped collectives; "
               "--overlap-limit 0 compiles without them): "
            << loaded.error << "\n";
        return failure();
      }
    if (result) {
      result->program = owned(*mprog);
      return success();
    }
    return writeOutput(
        output, "-o",
        [&](llvm::raw_ostream &os) {
          os << llvm::formatv("{0:2}", *mprog) << "\n";
        },
        err);
  }
  return writeIR();
}

} // namespace meshc
