//===- Driver.cpp - the meshc command line --------------------------------===//
//
// meshc's flags (one per CompileOptions field, plus MLIR's printing and
// pass-manager options); then compileModel() (Compile.h) does the rest.
//
//===----------------------------------------------------------------------===//

#include "compiler/driver/Driver.h"

#include "compiler/driver/Compile.h"
#include "runtime/core/cost/CostModel.h"

#include "mlir/IR/AsmState.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

#include <csignal>

using namespace mlir;
namespace cl = llvm::cl;

namespace meshc {
namespace {

/// --explain's value.
enum class ExplainFormat { None, Text, Json };

/// meshc's own options; MLIR's printing/pass-manager options come on top.
struct Options {
  cl::OptionCategory category{"meshc options"};
  cl::opt<std::string> input{cl::Positional,
                             cl::desc("<model.mtf | ir.mlir | ->"),
                             cl::init("-"), cl::cat(category)};
  cl::opt<std::string> output{"o", cl::desc("where to write what is emitted"),
                              cl::value_desc("file"), cl::init("-"),
                              cl::cat(category)};
  cl::opt<EmitKind> emit{
      "emit",
      cl::desc("what to emit (default: mprog, or nothing with --explain)"),
      cl::init(EmitKind::Default),
      cl::values(
          clEnumValN(EmitKind::Import, "import",
                     "the mtf IR as the frontend makes it, before any pass"),
          clEnumValN(EmitKind::Mtf, "mtf",
                     "the global mtf IR after autodiff, with layouts applied"),
          clEnumValN(EmitKind::Spmd, "spmd",
                     "the per-device SPMD IR with explicit collectives"),
          clEnumValN(EmitKind::Mprog, "mprog",
                     "the compiled program for meshrun (JSON)")),
      cl::cat(category)};
  cl::opt<uint64_t> seed{"seed",
                         cl::desc("seed of parameter init and synthetic "
                                  "inputs written into the .mprog"),
                         cl::init(0), cl::cat(category)};
  cl::opt<std::string> mesh{"mesh",
                            cl::desc("device mesh, e.g. \"b:4;m:2\" (overrides "
                                     "the spec file's)"),
                            cl::cat(category)};
  cl::opt<std::string> layout{
      "layout",
      cl::desc("layout rules, e.g. \"batch:b;d_ff:m\" (overrides the spec "
               "file's), or \"auto\": the layout the cost model predicts "
               "fastest (docs/layouts.md)"),
      cl::cat(category)};
  cl::opt<std::string> spec{"spec", cl::desc("JSON file with mesh and layout"),
                            cl::value_desc("file"), cl::cat(category)};
  cl::opt<std::string> axisWeights{
      "axis-weights",
      cl::desc("device weights per mesh axis, e.g. \"b=1,1,2\": a dimension "
               "split over a weighted axis is cut in proportion (overrides "
               "the spec file's; docs/layouts.md#device-weights)"),
      cl::value_desc("weights"), cl::cat(category)};
  cl::opt<bool> uneven{
      "uneven",
      cl::desc("let mesh axes split dimensions they do not divide, into the "
               "most even blocks (docs/layouts.md#device-weights)"),
      cl::cat(category)};
  cl::opt<ExplainFormat> explain{
      "explain",
      cl::desc("print every tensor's layout, per-device slice and bytes, "
               "per-device memory, the collectives and the predicted step"),
      cl::ValueOptional,
      cl::init(ExplainFormat::None),
      cl::values(clEnumValN(ExplainFormat::Text, "", "as a readable report"),
                 clEnumValN(ExplainFormat::Text, "text",
                            "as a readable report (the default)"),
                 clEnumValN(ExplainFormat::Json, "json",
                            "as JSON (docs/explain-json.md)")),
      cl::cat(category)};
  cl::opt<bool> explainAll{
      "explain-all",
      cl::desc("--explain listing each tensor of a repeat's instances and "
               "each collective and fused step on its own line (--explain "
               "groups identical ones)"),
      cl::cat(category)};
  cl::opt<std::string> timeline{
      "timeline",
      cl::desc("write one run as the cost model predicts it, a Chrome trace "
               "like meshrun --trace's (docs/cost.md)"),
      cl::value_desc("file.json"), cl::cat(category)};
  cl::opt<std::string> machine{
      "machine",
      cl::desc("the machine --explain, --timeline and --layout auto predict "
               "step times for: a preset (h100-sxm, epyc-2core-threads, "
               "epyc-2core-mpi) or a JSON profile file (docs/cost.md)"),
      cl::value_desc("preset|file"), cl::init(cost::kDefaultMachine),
      cl::cat(category)};
  cl::opt<std::string> memoryLimit{
      "memory-limit",
      cl::desc("with --layout auto: the most memory a device may plan "
               "(e.g. 80GiB)"),
      cl::value_desc("size"), cl::cat(category)};
  cl::opt<std::string> bucketSize{
      "bucket-size",
      cl::desc("the most bytes one combined collective packs, and of a loop's "
               "stacked gradient all-reduced once after it (default 128MiB; 0: "
               "every collective on its own; docs/spmd.md)"),
      cl::value_desc("size"), cl::init("128MiB"), cl::cat(category)};
  cl::opt<std::string> overlapLimit{
      "overlap-limit",
      cl::desc("the most bytes of collectives in flight at once, each started "
               "as early as its inputs allow and waited for where its result "
               "is used (default 1GiB; 0: every collective blocks; "
               "docs/spmd.md)"),
      cl::value_desc("size"), cl::init("1GiB"), cl::cat(category)};
  cl::opt<Remat> remat{
      "remat",
      cl::desc("activation recomputation when training (docs/training.md)"),
      cl::init(Remat::Marked), choiceValues(rematChoices()), cl::cat(category)};
  cl::opt<RepeatKind> repeat{
      "repeat", cl::desc("how `repeat` is compiled (docs/language.md)"),
      cl::init(RepeatKind::Loop), choiceValues(repeatChoices()),
      cl::cat(category)};
  cl::opt<PrecisionKind> precision{
      "precision",
      cl::desc("the element type of activations (docs/training.md)"),
      cl::init(PrecisionKind::F32), choiceValues(precisionChoices()),
      cl::cat(category)};
  cl::opt<int64_t> microbatches{
      "microbatches",
      cl::desc("accumulate gradients over this many microbatches per training "
               "step: the model is built for one, its batch dim cut this many "
               "times smaller (docs/training.md#microbatches---microbatches)"),
      cl::init(1), cl::cat(category)};
  cl::opt<PipelineSchedule> schedule{
      "schedule",
      cl::desc("a pipeline's order of the microbatches' forwards and "
               "backwards (docs/pipeline.md)"),
      cl::init(PipelineSchedule::GPipe), choiceValues(scheduleChoices()),
      cl::cat(category)};
  cl::opt<int64_t> virtualStages{
      "virtual-stages",
      cl::desc("under --schedule interleaved, the rounds V of every stage: "
               "stage s holds the layer blocks s, s + P, ... (default 2; "
               "docs/pipeline.md#interleaved)"),
      cl::init(2), cl::cat(category)};
  cl::opt<std::string> microbatchDim{
      "microbatch-dim",
      cl::desc("the dim --microbatches cuts (default: batch)"),
      cl::init("batch"), cl::value_desc("dim"), cl::cat(category)};
  cl::opt<bool> shardOptimizer{
      "shard-optimizer",
      cl::desc("split optimizer state and each parameter's update over the "
               "mesh axes that replicate the parameter (ZeRO-1; "
               "docs/training.md)"),
      cl::cat(category)};
  cl::opt<bool> shardParams{
      "shard-params",
      cl::desc("also keep the parameters split so, each gathered (after its "
               "cast to bf16) where it is read, a repeat's layer in its loop "
               "(ZeRO-3, FSDP's full sharding; implies --shard-optimizer; "
               "docs/training.md)"),
      cl::cat(category)};
  cl::opt<bool> noFuse{
      "no-fuse",
      cl::desc("keep every elementwise op and reduction its own step (skip "
               "mtf-fuse)"),
      cl::cat(category)};
  cl::opt<bool> noFuseAttention{
      "no-fuse-attention",
      cl::desc("keep softmax attention as einsums and a softmax that store "
               "the scores (skip mtf-fuse-attention)"),
      cl::cat(category)};
  cl::opt<bool> noSchedule{
      "no-schedule",
      cl::desc("keep each loop body's op order (skip ordering it for "
               "overlap in mtf-overlap-collectives: less memory, less "
               "communication hidden; docs/spmd.md)"),
      cl::cat(category)};
  cl::opt<bool> noPrefetch{
      "no-prefetch",
      cl::desc("gather a loop's layer where its iteration starts, not beside "
               "the iteration before (skip mtf-prefetch-gathers: less "
               "memory, less communication hidden; docs/spmd.md)"),
      cl::cat(category)};
  cl::opt<Halves> interleaveHalves{
      "interleave-halves",
      cl::desc("run each loop body that all-reduces its activations as two "
               "interleaved halves of its batch, one half's all-reduce beside "
               "the other's compute (mtf-interleave-halves; docs/spmd.md)"),
      cl::ValueOptional,
      cl::init(Halves::Off),
      choiceValues(halvesChoices()),
      cl::values(clEnumValN(Halves::All, "", "the same as 'all'")),
      cl::cat(category)};
  cl::opt<bool> keepGathered{
      "keep-gathered",
      cl::desc("keep the parameters split between steps and each layer the "
               "forward gathers for the backward: one gather per layer and "
               "step, beside the forward (implies --shard-params; every "
               "layer's gathered weights live through the step: more memory "
               "than --shard-params; mtf-keep-gathered, docs/training.md)"),
      cl::cat(category)};
  cl::opt<std::string> dumpIR{"dump-ir",
                              cl::desc("write the IR after import and after "
                                       "every pass into this directory"),
                              cl::value_desc("dir"), cl::cat(category)};
  cl::opt<std::string> showLayout{
      "show-layout",
      cl::desc("draw which block of this tensor each device holds"),
      cl::value_desc("tensor"), cl::cat(category)};
  cl::opt<std::string> reference{
      "reference",
      cl::desc("also run the global program in the reference interpreter "
               "and write its outputs here (the format of meshrun "
               "--dump-outputs)"),
      cl::value_desc("file.json"), cl::cat(category)};
  cl::opt<bool> outputGrads{
      "output-grads",
      cl::desc("when training, also output every parameter's gradient as "
               "grad/NAME (for checking against an outside oracle)"),
      cl::cat(category)};
  cl::opt<bool> verifyDiagnostics{
      "verify-diagnostics",
      cl::desc("check emitted diagnostics against expected-* comments in the "
               "input (for tests)"),
      cl::cat(category)};

  /// The options as compile() takes them.
  CompileOptions compileOptions() const {
    CompileOptions o;
    auto given = [](const auto &flag) -> bool {
      return flag.getNumOccurrences();
    };
    o.input = input;
    if (given(output))
      o.output = output;
    o.emit = emit;
    o.seed = seed;
    if (given(mesh))
      o.mesh = mesh;
    if (given(layout))
      o.layout = layout;
    o.spec = spec;
    if (given(axisWeights))
      o.axisWeights = axisWeights;
    o.uneven = uneven;
    o.explain = explain != ExplainFormat::None;
    o.explainJson = explain == ExplainFormat::Json;
    o.explainAll = explainAll;
    o.timeline = timeline;
    if (given(machine))
      o.machine = machine;
    if (given(memoryLimit))
      o.memoryLimit = memoryLimit;
    o.bucketSize = bucketSize;
    o.overlapLimit = overlapLimit;
    o.remat = remat;
    if (given(repeat))
      o.repeat = repeat;
    o.precision = precision;
    o.microbatches = microbatches;
    o.schedule = schedule;
    if (given(virtualStages))
      o.virtualStages = virtualStages;
    if (given(microbatchDim))
      o.microbatchDim = microbatchDim;
    o.shardOptimizer = shardOptimizer;
    o.shardParams = shardParams;
    o.noFuse = noFuse;
    o.noFuseAttention = noFuseAttention;
    o.noSchedule = noSchedule;
    o.noPrefetch = noPrefetch;
    o.interleaveHalves = interleaveHalves;
    o.keepGathered = keepGathered;
    o.dumpIR = dumpIR;
    o.showLayout = showLayout;
    o.reference = reference;
    o.outputGrads = outputGrads;
    return o;
  }
};

} // namespace

int meshcMain(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // A write past the file-size limit fails with EFBIG and is reported like a
  // full disk (writeOutput) instead of killing meshc with SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  Options options;
  cl::HideUnrelatedOptions({&options.category, &llvm::getColorCategory()});
  cl::ParseCommandLineOptions(
      argc, argv,
      "meshc: compiles a named-dimension model for a device mesh\n\n"
      "  meshc model.mtf --mesh \"b:4;m:2\" --layout \"batch:b;hidden:m\" "
      "--explain\n");
  ModelHooks hooks;
  hooks.verifyDiagnostics = options.verifyDiagnostics;
  hooks.setup = applyPassManagerCLOptions;
  return failed(compileModel(options.compileOptions(), nullptr, hooks)) ? 1 : 0;
}

} // namespace meshc
