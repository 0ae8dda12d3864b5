//===- LayoutSweepTest.cpp - every layout equals the reference ------------===//
//
// The heart of the test suite. For each example model and each mesh (1, 2, 4,
// 2x2, 2x4, 2x2x2 devices) it enumerates every layout (each mesh axis unused
// or splitting one dimension, in every order), keeps those valid for the
// model, compiles each one in-process (apply layout, partition, .mprog), runs
// it on CPU virtual devices (one thread per device, real collectives) and
// compares every named tensor of the model -- not just the outputs -- with
// the reference interpreter's global execution. A model that trains runs two
// whole training steps (forward, backward, optimizer update); then every
// gradient, every parameter and every optimizer slot is compared as well.
// The language models (charlm, moe, llama) run at small dim sizes, and on 2x2x2
// they and the models of the mask, routing and window ops run every 7th of
// their valid layouts (a fixed sample; the count is printed).
// On 2x2, the MLP, the block, charlm and llama also run every layout that only
// --layout auto considers: one mesh axis over several dims that share no
// tensor (Megatron's heads and d_ff over one axis).
// With device weights (--axis-weights) and --uneven, the MLP, the block,
// charlm and llama run every layout on meshes of 3 and 7 devices with dims
// cut into unequal blocks; the layouts whose collectives move unequal blocks
// (variable-count all-gather, reduce-scatter, all-to-all, slice) are counted
// and each case must have some.
// charlm as a loop on 2, 2x2 and 2x2x2 (every 7th) also runs the layouts
// that split its layer dim: each a pipeline (mtf-pipeline-stages, 2
// microbatches) compiled from the forward program again and held to the
// reference of the unpipelined program, every named tensor included.
// The models that repeat a block (the block, charlm, llama) also run each
// layout on 2x2 with every instance recomputed in the backward pass
// (--remat=repeat): every tensor must be bit-identical to the run without.
//
// Tolerance: |spmd - reference| <= 1e-5 * max|reference| per tensor. The
// reference computes in double; the SPMD run in f32 with partial sums added
// in a different order, so the error is a few f32 roundings of the largest
// magnitudes involved (measured below 1e-6 relative; see docs/testing.md).
// The MLP, the block, charlm and llama also run every layout on 2x2 with
// --precision=bf16 against the reference of the same bf16 program, by the
// relative L2 error of each tensor (kBf16Tolerance).
//
//===----------------------------------------------------------------------===//

#include "compiler/driver/Pipeline.h"
#include "compiler/driver/Registration.h"
#include "compiler/interpreter/Interpreter.h"
#include "compiler/passes/LayoutBridge.h"
#include "dialect/MtfDialect.h"
#include "frontend/Frontend.h"
#include "lowering/EmitMprog.h"
#include "runtime/Loader.h"
#include "runtime/Session.h"
#include "runtime/core/layout/LayoutRules.h"
#include "runtime/core/layout/LayoutSpace.h"
#include "runtime/core/layout/TensorLayout.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>

using namespace mlir;
namespace layout = meshc::layout;

namespace {

/// The tolerance of --precision=bf16 runs: the relative L2 error of each
/// tensor, |spmd - reference| / |reference| (docs/testing.md derives it).
/// SPMD and reference compute each bf16 value in f32 up to the order of
/// partial sums (~1e-6 relative) and round it the same way, except where the
/// two f32 values fall on either side of a rounding boundary: there they
/// differ by one bf16 ulp (2^-7 of the value) and later ops carry that on.
/// Where a gradient is a sum that cancels (a bias), such a flip can turn the
/// sign of an element's Adam step: an error of one learning rate in a
/// parameter that has moved two. Measured worst over the bf16 sweep: 7.0%
/// (the MLP's b1 on 2x2). A partitioning error (a missing all-reduce, a
/// wrong block) moves whole blocks: 50% and more.
constexpr double kBf16Tolerance = 0.125;

/// Training steps each layout runs (and the reference with it).
constexpr int kTrainingSteps = 2;
/// One run in this many also runs unfused (meshc --no-fuse).
constexpr int kUnfusedEvery = 5;

struct SweepCase {
  const char *example;
  const char *mesh; // "" = one device
  /// Dim sizes that replace the example's ("seq=4 d_model=8"), so that the
  /// language models sweep at a size where thousands of layouts run in
  /// seconds; "" keeps the example's sizes.
  const char *sizes = "";
  /// Run every `every`-th valid layout (1: all of them); the language models
  /// on 2x2x2 have too many layouts for CI otherwise. The sample is fixed.
  int every = 1;
  /// Sweep the layouts only --layout auto considers instead: those of
  /// layout::enumerateSearchLayouts where an axis splits several dims (the
  /// rest are the ordinary sweep's).
  bool searchOnly = false;
  /// Also compile each layout with mtf-remat (meshc --remat=repeat) and
  /// require its run to be bit-identical to the run without.
  bool remat = false;
  /// Compile with optimizer state sharded (meshc --shard-optimizer); the
  /// reference is the same as without.
  bool shardOptimizer = false;
  /// Mixed precision (meshc --precision=bf16): the reference interprets the
  /// same bf16 program, rounding each bf16 value as the runtime stores it,
  /// and the tolerance is kBf16Tolerance.
  bool bf16 = false;
  /// Device weights (meshc --axis-weights) and --uneven: dims are cut into
  /// unequal blocks; the sweep counts the layouts whose collectives move
  /// them.
  const char *axisWeights = "";
  bool uneven = false;
  /// Import each outermost repeat as one loop (meshc --repeat=loop): the
  /// body is partitioned once and runs as a .mprog loop step.
  bool loops = false;
  /// With loops: also run the layouts that split a loop's layer dim, each a
  /// pipeline (mtf-pipeline-stages) with this many microbatches of the
  /// batch, against the reference of the unpipelined program; 0: those
  /// layouts are not valid (mtf-apply-layout refuses them).
  int microbatches = 0;
  /// Parameters kept sharded too (meshc --shard-params, ZeRO-3), gathered
  /// where read; the reference is the same as without.
  bool shardParams = false;
  /// Loop bodies that all-reduce their activations run as two interleaved
  /// halves of the batch (meshc --interleave-halves); the reference is the
  /// same as without, and the sweep counts the layouts that halved a loop.
  meshc::Halves halves = meshc::Halves::Off;
  /// A loop reads what an earlier loop gathered (meshc --keep-gathered:
  /// the backward the forward's layers, under --shard-params).
  bool keepGathered = false;
  /// The pipelines' schedule (meshc --schedule); the reference is the same.
  meshc::PipelineSchedule schedule = meshc::PipelineSchedule::GPipe;
};

/// `source` with each `dim NAME = N` of `sizes` ("NAME=N NAME=N") given the
/// new size; fails the test when a dim is not declared.
std::string resize(std::string source, const std::string &sizes) {
  std::istringstream items(sizes);
  std::string item;
  while (items >> item) {
    size_t eq = item.find('=');
    std::regex declaration("(^|\\n)dim\\s+" + item.substr(0, eq) +
                           "\\s*=\\s*([0-9]+)");
    std::smatch match;
    if (!std::regex_search(source, match, declaration)) {
      ADD_FAILURE() << "no 'dim " << item.substr(0, eq) << "'";
      continue;
    }
    source.replace(match.position(2), match.length(2), item.substr(eq + 1));
  }
  return source;
}

void PrintTo(const SweepCase &c, std::ostream *os) {
  *os << c.example << " on " << (*c.mesh ? c.mesh : "1 device");
}

std::string caseName(const ::testing::TestParamInfo<SweepCase> &info) {
  std::string name =
      std::string(info.param.example) + "_" +
      (*info.param.mesh ? info.param.mesh : "single") +
      (info.param.searchOnly ? "_search" : "") +
      (info.param.remat ? "_remat" : "") +
      (info.param.shardOptimizer ? "_zero" : "") +
      (info.param.shardParams ? "_zero3" : "") +
      (info.param.halves == meshc::Halves::All       ? "_halves"
       : info.param.halves == meshc::Halves::Forward ? "_halvesforward"
                                                     : "") +
      (info.param.keepGathered ? "_keep" : "") +
      (info.param.bf16 ? "_bf16" : "") + (info.param.loops ? "_loop" : "") +
      (info.param.microbatches ? "_pipeline" : "") +
      (info.param.schedule == meshc::PipelineSchedule::OneFOneB ? "_1f1b"
       : info.param.schedule == meshc::PipelineSchedule::Interleaved
           ? "_interleaved"
           : "") +
      (*info.param.axisWeights ? "_weights_" : "") + info.param.axisWeights +
      (info.param.uneven ? "_uneven" : "");
  for (char &c : name)
    if (!isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return name;
}

/// Whether every tensor of `program` can take `rules` on `mesh` under
/// `weights`.
bool validFor(mtf::ProgramOp program, const layout::LayoutRules &rules,
              const layout::Mesh &mesh, const layout::AxisWeights &weights,
              bool pipelines = false) {
  bool valid = true;
  // A loop's layer dim is split only by a pipeline (mtf-apply-layout
  // refuses it otherwise).
  program.walk([&](mtf::LoopOp loop) {
    const std::vector<std::string> *axes = rules.axesFor(loop.getDim().str());
    valid &= pipelines || !axes || axes->empty();
    // Nor may weights or --uneven cut a loop's values unequally (its body
    // runs one block size on every device: mtf-partition refuses it),
    // unless it is to be a pipeline (its ticks' values are equal blocks).
    if (weights.isPlain() || (axes && !axes->empty()))
      return;
    auto equal = [&](Value value) {
      auto tensor = llvm::dyn_cast<mtf::TensorType>(value.getType());
      if (!tensor)
        return true;
      std::vector<layout::Dim> dims = meshc::toDims(tensor);
      layout::Result<layout::TensorLayout> cut =
          layout::TensorLayout::compute("t", dims, rules, mesh, &weights);
      return !cut.ok() || cut->hasEqualBlocks(dims, mesh, weights);
    };
    valid &= llvm::all_of(loop->getOperands(), equal);
    loop.getBodyBlock().walk(
        [&](Operation *op) { valid &= llvm::all_of(op->getResults(), equal); });
  });
  program.walk([&](Operation *op) {
    for (Type type : op->getResultTypes())
      if (auto tensor = llvm::dyn_cast<mtf::TensorType>(type))
        valid &= layout::TensorLayout::compute("t", meshc::toDims(tensor),
                                               rules, mesh, &weights)
                     .ok();
  });
  return valid;
}

/// Makes every tensor the model names (NameLoc) an output too, so the sweep
/// compares intermediates, not just the loss.
void exposeNamedTensors(mtf::ProgramOp program) {
  OpBuilder builder(program.getContext());
  builder.setInsertionPointToEnd(&program.getBodyBlock());
  int index = 0;
  SmallVector<Operation *> named;
  for (Operation &op : program.getBodyBlock())
    if (op.getNumResults() == 1 &&
        llvm::isa<mtf::TensorType>(op.getResult(0).getType()) &&
        (llvm::isa<NameLoc>(op.getLoc()) || llvm::isa<mtf::ParamOp>(op)))
      named.push_back(&op);
  for (Operation *op : named)
    mtf::OutputOp::create(builder, op->getLoc(),
                          "sweep." + meshc::tensorName(op) + "." +
                              std::to_string(index++),
                          op->getResult(0));
}

/// Adam's step m/(sqrt(v) + eps) has derivative ~1/eps in a tiny gradient:
/// with the default eps = 1e-8 the f32 rounding of a near-zero gradient sum
/// (1e-8 of the largest gradient) moves a parameter by up to a whole step,
/// whatever the layout. The sweep runs Adam with eps = 1e-3, which keeps the
/// comparison well-conditioned and still exercises every op of the update.
void wellConditioned(mtf::TrainOp train) {
  if (!train.getOptimizer().starts_with("adam"))
    return;
  NamedAttrList hyper(train.getHyperparams());
  hyper.set("eps", FloatAttr::get(Float64Type::get(train.getContext()), 1e-3));
  train.setHyperparamsAttr(hyper.getDictionary(train.getContext()));
}

class LayoutSweep : public ::testing::TestWithParam<SweepCase> {};

/// Whether sharding splits some parameter of `program` under `rules` on
/// `mesh`: with `slots`, an optimizer slot over an axis that replicates it
/// and divides one of its dims (--shard-optimizer); else a parameter over a
/// data-parallel axis, its layer dims kept whole (--shard-params).
bool shardsAParam(mtf::ProgramOp program, const layout::LayoutRules &rules,
                  const layout::Mesh &mesh, bool slots) {
  std::vector<size_t> dataAxes =
      meshc::dataParallelAxes(program, rules, mesh, nullptr);
  std::vector<std::string> layerDims =
      slots ? std::vector<std::string>() : meshc::wholeLayerDims(program);
  for (auto param : program.getBodyBlock().getOps<mtf::ParamOp>()) {
    if (bool(param.getSlot()) != slots)
      continue;
    auto type = llvm::cast<mtf::TensorType>(param.getResult().getType());
    std::vector<layout::Dim> dims = meshc::toDims(type);
    layout::Result<layout::TensorLayout> plain =
        layout::TensorLayout::compute("", dims, rules, mesh);
    if (plain.ok() && !(layout::shardOverReplicatedAxes(
                            *plain, dims, mesh, nullptr, layerDims,
                            slots ? nullptr : &dataAxes) == *plain))
      return true;
  }
  return false;
}

/// How runLayout went, besides the test's assertions.
struct LayoutRun {
  /// Some dim was cut into unequal blocks (the .mprog lists them).
  bool unequal = false;
  /// Some loop ran as two halves of its batch (mtf-interleave-halves: the
  /// windows that cut its operands name the half dim).
  bool halved = false;
  /// A forward loop gathers and a backward (reverse) loop gathers nothing
  /// (mtf-keep-gathered: it reads the forward's).
  bool kept = false;
  /// The collectives that cut or joined unequal blocks (their steps list
  /// each member's), by step kind.
  std::map<std::string, int> unequalMoves;
};

/// Compiles `source` with `rules` on `mesh`, runs `steps` steps on CPU
/// virtual devices and gathers every tensor but the inputs into `got`
/// (`isParam` says which are parameters). Fails the test on any error.
void runLayout(ModuleOp source, const layout::Mesh &mesh,
               const layout::LayoutRules &rules,
               const meshc::PartitionOptions &options, int steps,
               std::map<std::string, meshc::runtime::HostTensor> &got,
               std::map<std::string, bool> &isParam, std::string &diagnostics,
               LayoutRun &outcome) {
  OwningOpRef<ModuleOp> compiled = source.clone();
  diagnostics.clear();
  outcome = LayoutRun();
  ASSERT_TRUE(
      succeeded(meshc::layoutAndPartition(*compiled, mesh, rules, options)))
      << diagnostics;
  FailureOr<llvm::json::Value> mprog =
      meshc::emitMprog(*compiled, meshc::MprogOptions());
  ASSERT_TRUE(succeeded(mprog)) << diagnostics;
  std::string text = llvm::formatv("{0}", *mprog).str();
  outcome.unequal = text.find("\"blocks\"") != std::string::npos;
  outcome.halved = text.find("_half\"") != std::string::npos;
  bool forwardGathers = false, backwardGathers = false, backward = false;
  compiled->walk([&](mlir::mtf::LoopOp loop) {
    bool gathers = false;
    for (Operation &op : loop.getBodyBlock())
      gathers =
          gathers ||
          llvm::isa<mlir::shard::AllGatherOp, mlir::mtf::CombinedAllGatherOp>(
              op);
    (loop.getReverse() ? backwardGathers : forwardGathers) |= gathers;
    backward = backward || loop.getReverse();
  });
  outcome.kept = forwardGathers && backward && !backwardGathers;
  for (const llvm::json::Value &step : *mprog->getAsObject()->getArray("steps"))
    for (const char *key : {"blocks", "split_blocks", "concat_blocks"})
      if (step.getAsObject()->get(key)) {
        ++outcome.unequalMoves[step.getAsObject()->getString("op")->str()];
        break;
      }
  try {
    meshc::runtime::Program loaded =
        meshc::runtime::parseProgram(text, "sweep.mprog");
    meshc::runtime::SessionOptions options;
    meshc::runtime::Session session(loaded, options);
    for (int step = 0; step < steps; ++step)
      session.runStep();
    for (const meshc::runtime::Tensor &tensor : loaded.tensors) {
      if (tensor.role == meshc::runtime::Role::Input)
        continue;
      isParam[tensor.name] = tensor.role == meshc::runtime::Role::Param;
      got.emplace(tensor.name, session.gather(tensor));
    }
  } catch (const std::exception &error) {
    FAIL() << "runtime: " << error.what();
  }
}

TEST_P(LayoutSweep, EveryValidLayoutEqualsTheReference) {
  const SweepCase &param = GetParam();
  DialectRegistry registry;
  meshc::registerAll(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      diagnostics += diag.str() + "\n";
    return success();
  });

  std::string path = std::string(MESHC_SOURCE_DIR) + "/" + param.example;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(static_cast<bool>(buffer)) << path;
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          resize((*buffer)->getBuffer().str(), param.sizes), path),
      llvm::SMLoc());
  meshc::frontend::ImportOptions import;
  import.loops = param.loops;
  OwningOpRef<ModuleOp> module =
      meshc::frontend::importMtf(sourceMgr, context, import);
  ASSERT_TRUE(module) << diagnostics;
  auto program = *module->getOps<mtf::ProgramOp>().begin();
  exposeNamedTensors(program);
  // A model that trains runs whole training steps: forward, backward and
  // update, with every gradient an output too.
  bool trains = !program.getBodyBlock().getOps<mtf::TrainOp>().empty();
  for (auto train : program.getBodyBlock().getOps<mtf::TrainOp>())
    wellConditioned(train);
  ASSERT_TRUE(succeeded(
      meshc::differentiate(*module, trains, meshc::Remat::None, param.bf16)))
      << diagnostics;
  program = *module->getOps<mtf::ProgramOp>().begin();
  // The same model with each repeat instance recomputed in the backward pass.
  OwningOpRef<ModuleOp> recomputed;
  if (param.remat) {
    recomputed = meshc::frontend::importMtf(sourceMgr, context);
    ASSERT_TRUE(recomputed) << diagnostics;
    auto other = *recomputed->getOps<mtf::ProgramOp>().begin();
    exposeNamedTensors(other);
    for (auto train : other.getBodyBlock().getOps<mtf::TrainOp>())
      wellConditioned(train);
    ASSERT_TRUE(succeeded(meshc::differentiate(
        *recomputed, trains, meshc::Remat::Repeat, param.bf16)))
        << diagnostics;
  }

  double tolerance = param.bf16 ? kBf16Tolerance : 1e-5;
  // Two steps: the second one's outputs see the first one's update, and the
  // parameters and optimizer state end after two updates.
  meshc::interp::Options referenceOptions;
  referenceOptions.steps = trains ? kTrainingSteps : 1;
  FailureOr<meshc::interp::Result> reference =
      meshc::interp::interpretRuns(program, referenceOptions);
  ASSERT_TRUE(succeeded(reference)) << diagnostics;

  layout::Mesh mesh;
  if (*param.mesh) {
    layout::Result<layout::Mesh> parsed = layout::Mesh::parse(param.mesh);
    ASSERT_TRUE(parsed.ok());
    mesh = *parsed;
  }
  layout::AxisWeights weights = layout::AxisWeights::even(mesh);
  if (*param.axisWeights) {
    layout::Result<layout::AxisWeights> parsed =
        layout::AxisWeights::parse(param.axisWeights, mesh);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    weights = *parsed;
  }
  if (param.uneven)
    weights.allowIndivisible();
  std::map<std::string, int64_t> dimSizes = meshc::collectModelDims(program);
  std::vector<std::string> dims;
  for (auto &[name, size] : dimSizes)
    dims.push_back(name);
  std::vector<std::string> texts = layout::enumerateLayouts(dims, mesh);
  if (param.searchOnly) {
    std::set<std::string> ordinary(texts.begin(), texts.end());
    texts.clear();
    for (const std::string &text : layout::enumerateSearchLayouts(
             dimSizes, meshc::collectTensorDims(program), mesh))
      if (!ordinary.count(text))
        texts.push_back(text);
  }

  int valid = 0, total = 0, run = 0, unfused = 0, recomputedRuns = 0,
      pipelinedRuns = 0, shardedRuns = 0, unequalRuns = 0, unequalMoves = 0,
      halvedRuns = 0, keptRuns = 0;
  std::map<std::string, int> movesByKind;
  double worst = 0;
  std::string worstTensor = "-";
  for (const std::string &text : texts) {
    ++total;
    layout::Result<layout::LayoutRules> rules =
        layout::LayoutRules::parse(text);
    ASSERT_TRUE(rules.ok()) << text;
    if (!validFor(program, *rules, mesh, weights, param.microbatches > 0))
      continue;
    // A layout that splits a loop's layer dim is a pipeline: the forward
    // program again, pipelined, then differentiated; valid where its own
    // tensors (microbatches, stages) take the layout.
    OwningOpRef<ModuleOp> pipelined;
    if (meshc::pipelines(*module, *rules)) {
      pipelined = meshc::frontend::importMtf(sourceMgr, context, import);
      ASSERT_TRUE(pipelined) << diagnostics;
      auto forward = *pipelined->getOps<mtf::ProgramOp>().begin();
      exposeNamedTensors(forward);
      for (auto train : forward.getBodyBlock().getOps<mtf::TrainOp>())
        wellConditioned(train);
      PassManager pm(&context, ModuleOp::getOperationName());
      meshc::addPipelineStages(pm, mesh, *rules, weights, param.microbatches,
                               "batch", param.schedule, /*virtualStages=*/2);
      ASSERT_TRUE(succeeded(pm.run(*pipelined))) << text << diagnostics;
      ASSERT_TRUE(succeeded(meshc::differentiate(
          *pipelined, trains, meshc::Remat::None, param.bf16)))
          << diagnostics;
      auto stages = *pipelined->getOps<mtf::ProgramOp>().begin();
      if (!validFor(stages, meshc::withLayoutAliases(stages, *rules), mesh,
                    weights))
        continue;
    }
    if (valid++ % param.every != 0)
      continue;
    ++run;
    pipelinedRuns += pipelined ? 1 : 0;
    SCOPED_TRACE("layout \"" + text + "\" on mesh \"" + param.mesh + "\"");

    // Fused (as meshc compiles) always; every kUnfusedEvery-th run also
    // unfused, so both forms are held to the reference.
    for (bool fuse : {true, false}) {
      if (!fuse && run % kUnfusedEvery != 1)
        continue;
      SCOPED_TRACE(fuse ? "fused" : "unfused (--no-fuse)");
      unfused += fuse ? 0 : 1;
      std::map<std::string, meshc::runtime::HostTensor> got;
      std::map<std::string, bool> isParam;
      meshc::PartitionOptions options;
      options.fuse = fuse;
      options.shardOptimizer = param.shardOptimizer;
      options.shardParams = param.shardParams;
      options.interleaveHalves = param.halves;
      options.keepGathered = param.keepGathered;
      options.axisWeights = param.axisWeights;
      options.uneven = param.uneven;
      // Combined all-reduces pack each value at a place that depends on
      // its neighbours, and a ring adds an element's members in an order
      // that depends on its place: the --remat=repeat program, whose
      // recomputed all-reduces combine with the backward pass's, is
      // bit-identical to the plain one only with none combined (every
      // other sweep runs combined, as meshc compiles).
      if (recomputed)
        options.bucketBytes = 0;
      if (fuse && (param.shardParams || param.shardOptimizer) &&
          shardsAParam(program, *rules, mesh, !param.shardParams))
        ++shardedRuns;
      LayoutRun outcome;
      runLayout(pipelined ? *pipelined : *module, mesh, *rules, options,
                referenceOptions.steps, got, isParam, diagnostics, outcome);
      if (HasFatalFailure())
        return;
      unequalRuns += fuse && outcome.unequal ? 1 : 0;
      halvedRuns += fuse && outcome.halved ? 1 : 0;
      keptRuns += fuse && outcome.kept ? 1 : 0;
      if (fuse && !outcome.unequalMoves.empty()) {
        ++unequalMoves;
        for (const auto &[kind, count] : outcome.unequalMoves)
          movesByKind[kind] += count;
      }
      for (const auto &[name, tensor] : got) {
        const meshc::interp::Tensor &want = isParam[name]
                                                ? reference->params.at(name)
                                                : reference->outputs.at(name);
        ASSERT_EQ(tensor.shape, want.shape) << name;
        double scale = 0;
        for (double v : want.data)
          scale = std::max(scale, std::fabs(v));
        if (param.bf16) {
          // Rounding flips touch single elements: the whole tensor's error
          // is what a partitioning bug would move (kBf16Tolerance).
          double error2 = 0, norm2 = 0;
          for (int64_t i = 0; i < tensor.elements(); ++i) {
            double d = tensor.at(i) - want.data[i];
            error2 += d * d;
            norm2 += want.data[i] * want.data[i];
          }
          double relative = std::sqrt(error2 / std::max(norm2, 1e-60));
          if (norm2 == 0)
            relative = std::sqrt(error2) > 0 ? 1 : 0;
          if (relative > worst) {
            worst = relative;
            worstTensor = name;
          }
          ASSERT_LE(relative, tolerance)
              << name << ": relative L2 error " << relative;
          continue;
        }
        for (int64_t i = 0; i < tensor.elements(); ++i) {
          double error = std::fabs(tensor.at(i) - want.data[i]);
          double relative = error / std::max(scale, 1e-30);
          if (relative > worst) {
            worst = relative;
            worstTensor = name;
          }
          ASSERT_LE(error, tolerance * scale)
              << name << "[" << i << "]: spmd " << tensor.at(i)
              << ", reference " << want.data[i];
        }
      }
      if (!recomputed)
        continue;
      std::map<std::string, meshc::runtime::HostTensor> again;
      runLayout(*recomputed, mesh, *rules, options, referenceOptions.steps,
                again, isParam, diagnostics, outcome);
      if (HasFatalFailure())
        return;
      ASSERT_EQ(again.size(), got.size());
      for (const auto &[name, tensor] : got)
        ASSERT_TRUE(again.at(name).data == tensor.data)
            << name << ": with --remat=repeat, not bit-identical";
      ++recomputedRuns;
    }
  }
  EXPECT_GT(valid, 0);
  std::printf("[ sweep    ] %s on %s%s: %d valid layouts of %d enumerated, "
              "%d run (%d also unfused), worst relative error %.2e (%s)\n",
              param.example, *param.mesh ? param.mesh : "1 device",
              param.searchOnly ? " (search layouts)" : "", valid, total, run,
              unfused, worst, worstTensor.c_str());
  if (param.shardOptimizer || param.shardParams) {
    std::printf("[ sweep    ] %d layouts with %s sharded (%s)\n", shardedRuns,
                param.shardParams ? "parameters" : "optimizer state",
                param.shardParams ? "--shard-params" : "--shard-optimizer");
    EXPECT_GT(shardedRuns, 0);
  }
  if (param.halves != meshc::Halves::Off) {
    std::printf("[ sweep    ] %d layouts with loops in halves "
                "(--interleave-halves)\n",
                halvedRuns);
    EXPECT_GT(halvedRuns, 0);
  }
  if (param.keepGathered) {
    std::printf("[ sweep    ] %d layouts whose backward reads the forward's "
                "gathered layers (--keep-gathered)\n",
                keptRuns);
    EXPECT_GT(keptRuns, 0);
  }
  if (param.remat)
    std::printf("[ sweep    ] %d runs with --remat=repeat bit-identical\n",
                recomputedRuns);
  if (param.microbatches) {
    std::printf("[ sweep    ] %d pipelined layouts (%d microbatches) equal "
                "the unpipelined reference\n",
                pipelinedRuns, param.microbatches);
    EXPECT_GT(pipelinedRuns, 0);
  }
  if (*param.axisWeights || param.uneven) {
    std::printf("[ sweep    ] %s%s%s: %d layouts with unequal blocks equal "
                "the reference, %d of them moving unequal blocks through a "
                "collective\n",
                param.axisWeights,
                *param.axisWeights && param.uneven ? " " : "",
                param.uneven ? "--uneven" : "", unequalRuns, unequalMoves);
    std::string kinds;
    for (const auto &[kind, count] : movesByKind)
      kinds += (kinds.empty() ? "" : ", ") + kind + " " + std::to_string(count);
    std::printf("[ sweep    ] collectives moving unequal blocks: %s\n",
                kinds.empty() ? "none" : kinds.c_str());
    EXPECT_GT(unequalRuns, 0);
    EXPECT_GT(unequalMoves, 0);
  }
}

/// Every model on every mesh of the sweep.
#define EVERY_MESH(model)                                                      \
  {model, ""}, {model, "a:2"}, {model, "a:4"}, {model, "a:2;b:2"},             \
      {model, "a:2;b:4"}, {                                                    \
    model, "a:2;b:2;c:2"                                                       \
  }

/// The language models at sweep size, on meshes up to 2x2x2.
constexpr const char *kCharLmSizes =
    "batch=2 seq=4 memory=4 vocab=4 d_model=4 heads=2 d_k=2 d_ff=4";
/// charlm at the sweep's size with a batch that cuts into microbatches (and
/// then over a data-parallel axis).
constexpr const char *kPipelineSizes =
    "batch=4 seq=4 memory=4 vocab=4 d_model=4 heads=2 d_k=2 d_ff=4";
constexpr const char *kInterleavedSizes =
    "batch=8 seq=4 memory=4 vocab=4 d_model=4 heads=2 d_k=2 d_ff=4 layers=8";
/// ... with a batch of 12 cut into 6 microbatches (whole groups for 2, 3
/// and 6 stages).
constexpr const char *kInterleavedUnevenSizes =
    "batch=12 seq=4 memory=4 vocab=4 d_model=4 heads=2 d_k=2 d_ff=4 layers=8";
constexpr const char *kLlamaSizes =
    "batch=2 seq=4 memory=4 vocab=4 d_model=4 heads=2 d_k=2 d_ff=4";
constexpr const char *kMoeSizes = "batch=2 seq=4 memory=4 vocab=4 d_model=4 "
                                  "heads=2 d_k=2 experts=2 capacity=2 d_ff=4";
#define LM_MESHES(model, sizes)                                                \
  {model, "", sizes}, {model, "a:2", sizes}, {model, "a:2;b:2", sizes}, {      \
    model, "a:2;b:2;c:2", sizes, 7                                             \
  }

const SweepCase kCases[] = {
    EVERY_MESH("examples/mlp/mlp.mtf"),
    EVERY_MESH("examples/transformer/block.mtf"),
    EVERY_MESH("tests/sweep/Inputs/partial-sums.mtf"),
    LM_MESHES("examples/transformer/charlm.mtf", kCharLmSizes),
    LM_MESHES("examples/moe/moe.mtf", kMoeSizes),
    LM_MESHES("examples/llama/llama.mtf", kLlamaSizes),
    LM_MESHES("tests/training/Inputs/routing-ops.mtf", ""),
    LM_MESHES("tests/training/Inputs/window-ops.mtf", ""),
    // What --layout auto adds: one axis over several dims (Megatron's).
    {"examples/mlp/mlp.mtf", "a:2;b:2", "", 1, true},
    {"examples/transformer/block.mtf", "a:2;b:2", "", 1, true},
    {"examples/transformer/charlm.mtf", "a:2;b:2", kCharLmSizes, 1, true},
    {"examples/llama/llama.mtf", "a:2;b:2", kLlamaSizes, 1, true},
    // --remat=repeat: bit-identical to keeping the activations.
    {"examples/transformer/block.mtf", "a:2;b:2", "", 1, false, true},
    {"examples/transformer/charlm.mtf", "a:2;b:2", kCharLmSizes, 1, false,
     true},
    {"examples/llama/llama.mtf", "a:2;b:2", kLlamaSizes, 1, false, true},
    // --shard-optimizer: Adam's slots and updates split over the axes that
    // replicate each parameter.
    {"examples/mlp/mlp.mtf", "a:2;b:2", "", 1, false, false, true},
    {"examples/transformer/block.mtf", "a:2;b:2", "", 1, false, false, true},
    {"examples/transformer/charlm.mtf", "a:2;b:2", kCharLmSizes, 1, false,
     false, true},
    {"examples/llama/llama.mtf", "a:2;b:2", kLlamaSizes, 1, false, false, true},
    // Mixed precision (--precision=bf16): every layout on 2 and 2x2.
    {"examples/mlp/mlp.mtf", "a:2", "", 1, false, false, false, true},
    {"examples/mlp/mlp.mtf", "a:2;b:2", "", 1, false, false, false, true},
    {"examples/transformer/block.mtf", "a:2;b:2", "", 1, false, false, false,
     true},
    {"examples/transformer/charlm.mtf", "a:2;b:2", kCharLmSizes, 1, false,
     false, false, true},
    {"examples/llama/llama.mtf", "a:2;b:2", kLlamaSizes, 1, false, false, false,
     true},
    // ... and with --remat=repeat, bit-identical to keeping the activations.
    {"examples/transformer/charlm.mtf", "a:2;b:2", kCharLmSizes, 1, false, true,
     false, true},
    // Device weights and --uneven: unequal blocks (HetSeq).
    {"examples/mlp/mlp.mtf", "a:3", "", 1, false, false, false, false,
     "a=1,1,2"},
    {"examples/mlp/mlp.mtf", "a:7", "", 1, false, false, false, false, "",
     true},
    {"examples/mlp/mlp.mtf", "a:3;b:2", "", 1, false, false, false, false,
     "a=1,2,3;b=1,3"},
    {"examples/transformer/block.mtf", "a:3;b:2", "", 1, false, false, false,
     false, "a=1,2,3"},
    {"examples/transformer/block.mtf", "a:3", "", 1, false, false, false, false,
     "", true},
    {"examples/transformer/charlm.mtf", "a:3;b:2", kCharLmSizes, 1, false,
     false, false, false, "a=1,2,3"},
    {"examples/llama/llama.mtf", "a:3", kLlamaSizes, 1, false, false, false,
     false, "a=2,1,1"},
    // --repeat=loop: the blocks as one loop, its body partitioned once.
    {"tests/sweep/Inputs/loop-lm.mtf", "", "", 1, false, false, false, false,
     "", false, true},
    {"tests/sweep/Inputs/loop-lm.mtf", "a:2", "", 1, false, false, false, false,
     "", false, true},
    {"tests/sweep/Inputs/loop-lm.mtf", "a:2;b:2", "", 1, false, false, false,
     false, "", false, true},
    {"tests/sweep/Inputs/loop-lm.mtf", "a:2;b:2;c:2", "", 7, false, false,
     false, false, "", false, true},
    // ... and training through loops: the backward loop's gradients.
    {"examples/transformer/block.mtf", "a:2;b:2", "", 1, false, false, false,
     false, "", false, true},
    {"examples/transformer/charlm.mtf", "a:2;b:2", kCharLmSizes, 1, false,
     false, false, false, "", false, true},
    {"examples/transformer/charlm.mtf", "a:2;b:2;c:2", kCharLmSizes, 7, false,
     false, false, false, "", false, true},
    {"examples/llama/llama.mtf", "a:2;b:2", kLlamaSizes, 1, false, false, false,
     false, "", false, true},
    {"examples/transformer/charlm.mtf", "a:2;b:2", kCharLmSizes, 1, false,
     false, true, false, "", false, true},
    {"examples/transformer/charlm.mtf", "a:2;b:2", kCharLmSizes, 1, false,
     false, false, true, "", false, true},
    // Pipelines: every layout that splits the layer dim, with microbatches
    // (docs/pipeline.md), beside the others on the same mesh.
    {"examples/transformer/charlm.mtf", "a:2", kPipelineSizes, 1, false, false,
     false, false, "", false, true, 2},
    {"examples/transformer/charlm.mtf", "a:2;b:2", kPipelineSizes, 1, false,
     false, false, false, "", false, true, 2},
    {"examples/transformer/charlm.mtf", "a:2;b:2;c:2", kPipelineSizes, 7, false,
     false, false, false, "", false, true, 2},
    // ... under the 1F1B schedule (each stage's backward beside a later
    // microbatch's forward).
    {"examples/transformer/charlm.mtf", "a:2;b:2", kPipelineSizes, 1, false,
     false, false, false, "", false, true, 2, false, meshc::Halves::Off, false,
     meshc::PipelineSchedule::OneFOneB},
    {"examples/transformer/charlm.mtf", "a:2;b:2", kPipelineSizes, 1, false,
     false, false, true, "", false, true, 2, false, meshc::Halves::Off, false,
     meshc::PipelineSchedule::OneFOneB},
    // ... under the interleaved schedule (2 rounds: stage s holds the layer
    // blocks s and s + P), on the pipeline tests' model of 8 layers (blocks
    // for 2 and 4 stages) and 4 microbatches (groups of either).
    {"tests/training/Inputs/pipeline-lm.mtf", "a:2;b:2", kInterleavedSizes, 1,
     false, false, false, false, "", false, true, 4, false, meshc::Halves::Off,
     false, meshc::PipelineSchedule::Interleaved},
    {"tests/training/Inputs/pipeline-lm.mtf", "a:2;b:2", kInterleavedSizes, 1,
     false, false, false, true, "", false, true, 4, false, meshc::Halves::Off,
     false, meshc::PipelineSchedule::Interleaved},
    // ... under --uneven on 2, 3 and 6 stages (each round's 4 layers as
    // blocks of 2 and 2; 2, 1 and 1; 1, 1, 1, 1, 0 and 0), the other dims
    // 3 does not divide cut unevenly too where no loop holds them.
    {"tests/training/Inputs/pipeline-lm.mtf", "a:3;b:2",
     kInterleavedUnevenSizes, 1, false, false, false, false, "", true, true, 6,
     false, meshc::Halves::Off, false, meshc::PipelineSchedule::Interleaved},
    // --shard-params (ZeRO-3): parameters sharded too, gathered where read,
    // a loop's layer slice in its body (after its cast under bf16).
    {"examples/mlp/mlp.mtf", "a:2;b:2", "", 1, false, false, false, false, "",
     false, false, 0, true},
    {"examples/transformer/charlm.mtf", "a:2;b:2", kCharLmSizes, 1, false,
     false, false, false, "", false, true, 0, true},
    {"examples/transformer/charlm.mtf", "a:2;b:2", kCharLmSizes, 1, false,
     false, false, true, "", false, true, 0, true},
    {"examples/llama/llama.mtf", "a:2;b:2", kLlamaSizes, 1, false, false, false,
     false, "", false, true, 0, true},
    {"examples/transformer/charlm.mtf", "a:2;b:2", kPipelineSizes, 1, false,
     false, false, false, "", false, true, 2, true},
    // --interleave-halves: the loops that all-reduce their activations run
    // as two halves of the batch, f32 and bf16, with ZeRO-3's prefetched
    // gathers.
    {"examples/transformer/charlm.mtf", "a:2;b:2", kCharLmSizes, 1, false,
     false, false, false, "", false, true, 0, false, meshc::Halves::All},
    {"examples/transformer/charlm.mtf", "a:2;b:2", kCharLmSizes, 1, false,
     false, false, true, "", false, true, 0, false, meshc::Halves::All},
    {"examples/transformer/charlm.mtf", "a:2;b:2", kCharLmSizes, 1, false,
     false, false, true, "", false, true, 0, true, meshc::Halves::All},
    {"examples/llama/llama.mtf", "a:2;b:2", kLlamaSizes, 1, false, false, false,
     false, "", false, true, 0, false, meshc::Halves::All},
    // --keep-gathered: the backward reads the layers the forward gathered
    // (ZeRO-3), alone and with the forward's halves apart, the backward's
    // all-reduced at once.
    {"examples/transformer/charlm.mtf", "a:2;b:2", kCharLmSizes, 1, false,
     false, false, false, "", false, true, 0, true, meshc::Halves::Off, true},
    {"examples/transformer/charlm.mtf", "a:2;b:2", kCharLmSizes, 1, false,
     false, false, true, "", false, true, 0, true, meshc::Halves::Forward,
     true},
};

INSTANTIATE_TEST_SUITE_P(Examples, LayoutSweep, ::testing::ValuesIn(kCases),
                         caseName);

} // namespace
