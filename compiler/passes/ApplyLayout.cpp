//===- ApplyLayout.cpp - mtf-apply-layout ---------------------------------===//
//
// Gives every tensor of a program a layout: the mesh and layout rules come
// from the pass options (or the program's own mesh), constraints from
// mtf.constrain; the layout algebra library does the checking.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LayoutBridge.h"
#include "compiler/passes/Passes.h"
#include "runtime/core/layout/LayoutRules.h"

using namespace mlir;

namespace meshc {
#define GEN_PASS_DEF_MTFAPPLYLAYOUT
#include "compiler/passes/Passes.h.inc"
} // namespace meshc

namespace {

struct MtfApplyLayoutPass
    : public meshc::impl::MtfApplyLayoutBase<MtfApplyLayoutPass> {
  using MtfApplyLayoutBase::MtfApplyLayoutBase;

  void runOnOperation() override {
    mtf::ProgramOp program = getOperation();
    if (program.getLocal()) {
      program.emitError() << "cannot lay out a partitioned (local) program: "
                             "its types are per-device blocks";
      return signalPassFailure();
    }
    std::optional<meshc::layout::Mesh> mesh = resolveMesh(program);
    if (!mesh)
      return signalPassFailure();
    meshc::layout::Result<meshc::layout::LayoutRules> rules =
        meshc::layout::LayoutRules::parse(layout);
    if (!rules.ok()) {
      meshc::emitLayoutError(
          program.getLoc(), meshc::withOption(rules.error(), "layout", layout));
      return signalPassFailure();
    }
    // A dim a pipeline made takes the rule of the model dim it stands for.
    *rules = meshc::withLayoutAliases(program, *rules);
    if (failed(checkRules(program, *rules, *mesh)))
      return signalPassFailure();
    FailureOr<meshc::layout::AxisWeights> optioned =
        meshc::optionWeights(program, *mesh, axisWeights, uneven);
    if (failed(optioned))
      return signalPassFailure();
    meshc::layout::AxisWeights weights = *optioned;

    MLIRContext *context = &getContext();
    // --shard-params keeps a repeat's layer dim whole (its loop slices it)
    // and shards over the data-parallel axes, those that split an input: a
    // layer norm's scale, replicated over the tensor-parallel axes too,
    // joins its layer's gather instead of one over every device.
    // (In a pipeline the stacked parameters keep the repeat's own layer dim,
    // which the pipeline's dims alias.)
    std::vector<std::string> layerDims = meshc::wholeLayerDims(program);
    std::vector<size_t> dataAxes =
        meshc::dataParallelAxes(program, *rules, *mesh, &weights);
    if (shardParams && dataAxes.empty() && mesh->numDevices() > 1)
      program.emitWarning()
          << "--shard-params (or --keep-gathered): no mesh axis splits an "
             "input, so no axis is "
             "data-parallel and the parameters stay as the layout has them "
             "(the optimizer state is still sharded, as --shard-optimizer "
             "does)";
    // A loop's layer dim stays whole: mtf-pipeline-stages, before
    // autodiff, makes a pipeline of a repeat whose layer dim the layout
    // splits (meshc does where --layout names it).
    WalkResult loops = program.walk([&](mtf::LoopOp loop) {
      const std::vector<std::string> *axes =
          rules->axesFor(loop.getDim().str());
      if (!axes || axes->empty())
        return WalkResult::advance();
      loop.emitError() << "the layout splits the layer dim '" << loop.getDim()
                       << "' of this repeat: a pipeline, which "
                          "mtf-pipeline-stages builds before autodiff (meshc "
                          "does for --layout, and --layout auto with "
                          "--microbatches above 1)";
      return WalkResult::interrupt();
    });
    if (loops.wasInterrupted())
      return signalPassFailure();
    // An op with several tensor results (fused attention) gets each its
    // layout by the rules, for --explain (its partitioning rule derives
    // them from its operands).
    WalkResult several = program.getBody().walk([&](Operation *op) {
      if (op->getNumResults() < 2 || llvm::isa<mtf::LoopOp>(op) ||
          !llvm::all_of(op->getResultTypes(), [](Type type) {
            return llvm::isa<mtf::TensorType>(type);
          }))
        return WalkResult::advance();
      SmallVector<Attribute> layouts;
      for (Value result : op->getResults()) {
        auto type = llvm::cast<mtf::TensorType>(result.getType());
        meshc::layout::Result<meshc::layout::TensorLayout> tensorLayout =
            meshc::layout::TensorLayout::compute(meshc::tensorName(op),
                                                 meshc::toDims(type), *rules,
                                                 *mesh, &weights);
        if (!tensorLayout.ok()) {
          meshc::emitLayoutError(op->getLoc(), tensorLayout.error());
          return WalkResult::interrupt();
        }
        layouts.push_back(meshc::toLayoutAttr(type, *tensorLayout, *mesh));
      }
      op->setAttr(mtf::MtfDialect::kLayoutsAttrName,
                  ArrayAttr::get(op->getContext(), layouts));
      return WalkResult::advance();
    });
    if (several.wasInterrupted())
      return signalPassFailure();
    // Every op with one tensor result, loop bodies' included.
    WalkResult laid = program.getBody().walk([&](Operation *each) {
      Operation &op = *each;
      if (op.getNumResults() != 1)
        return WalkResult::advance();
      auto type = llvm::dyn_cast<mtf::TensorType>(op.getResult(0).getType());
      if (!type)
        return WalkResult::advance();
      std::string name = meshc::tensorName(&op);
      meshc::layout::Result<meshc::layout::TensorLayout> tensorLayout = [&]() {
        if (auto constrain = llvm::dyn_cast<mtf::ConstrainOp>(op))
          return meshc::fromLayoutAttr(name, type, constrain.getLayout(), *mesh,
                                       &weights);
        return meshc::layout::TensorLayout::compute(name, meshc::toDims(type),
                                                    *rules, *mesh, &weights);
      }();
      if (!tensorLayout.ok()) {
        meshc::emitLayoutError(op.getLoc(), tensorLayout.error());
        return WalkResult::interrupt();
      }
      meshc::layout::TensorLayout chosen = *tensorLayout;
      // ZeRO-3 over the data-parallel axes, then (slots and updates) ZeRO-1
      // over the axes that still replicate them.
      if (shardParams && (holdsOptimizerState(op) || holdsParameter(op)))
        chosen = meshc::layout::shardOverReplicatedAxes(
            chosen, meshc::toDims(type), *mesh, &weights, layerDims, &dataAxes);
      if ((shardOptimizer || shardParams) && holdsOptimizerState(op))
        chosen = meshc::layout::shardOverReplicatedAxes(
            chosen, meshc::toDims(type), *mesh, &weights,
            shardParams ? layerDims : std::vector<std::string>());
      op.setAttr(mtf::MtfDialect::kLayoutAttrName,
                 meshc::toLayoutAttr(type, chosen, *mesh));
      return WalkResult::advance();
    });
    if (laid.wasInterrupted())
      return signalPassFailure();
    program.setMeshAttr(meshc::toMeshAttr(context, *mesh));
    meshc::setAxisWeights(program, weights, *mesh);
  }

private:
  /// Optimizer slots and the ops of the update phase: what shard-optimizer
  /// splits over the axes that replicate them (constraints keep theirs).
  static bool holdsOptimizerState(Operation &op) {
    if (llvm::isa<mtf::ConstrainOp>(op))
      return false;
    if (auto param = llvm::dyn_cast<mtf::ParamOp>(op))
      return param.getSlot();
    auto phase = op.getAttrOfType<StringAttr>(mtf::MtfDialect::kPhaseAttrName);
    return phase && phase.getValue() == "update";
  }

  /// A parameter (not a slot) or a cast of one, directly or of its slice
  /// (or whole value) inside a loop: what shard-params keeps split, so that
  /// the parameter is gathered after its cast (in bf16).
  static bool holdsParameter(Operation &op) {
    if (auto param = llvm::dyn_cast<mtf::ParamOp>(op))
      return !param.getSlot();
    if (!llvm::isa<mtf::CastOp>(op))
      return false;
    Value value = op.getOperand(0);
    while (auto arg = llvm::dyn_cast<BlockArgument>(value)) {
      auto loop = llvm::dyn_cast<mtf::LoopOp>(arg.getOwner()->getParentOp());
      // A carried value changes from one iteration to the next.
      if (!loop || arg.getArgNumber() < loop.getCarried().size())
        return false;
      value = loop->getOperand(arg.getArgNumber());
    }
    auto param = value.getDefiningOp<mtf::ParamOp>();
    return param && !param.getSlot();
  }

  /// The mesh from the `mesh` option, else the program's own; the
  /// single-device mesh when there is neither.
  std::optional<meshc::layout::Mesh> resolveMesh(mtf::ProgramOp program) {
    if (mesh.empty())
      return meshc::toMesh(program.getMeshAttr());
    meshc::layout::Result<meshc::layout::Mesh> parsed =
        meshc::layout::Mesh::parse(mesh);
    if (!parsed.ok()) {
      meshc::emitLayoutError(program.getLoc(),
                             meshc::withOption(parsed.error(), "mesh", mesh));
      return std::nullopt;
    }
    return parsed.value();
  }

  /// Rules must name mesh axes that exist and dimensions the model has.
  LogicalResult checkRules(mtf::ProgramOp program,
                           const meshc::layout::LayoutRules &rules,
                           const meshc::layout::Mesh &mesh) {
    std::map<std::string, int64_t> dims = meshc::collectModelDims(program);
    // A pipelined layer dim may be gone, cut into others (the interleaved
    // schedule's params): its rule is the stages'.
    if (auto pipelines = program->getAttrOfType<DictionaryAttr>(
            mtf::MtfDialect::kPipelinesAttrName))
      for (NamedAttribute pipeline : pipelines)
        dims.emplace(pipeline.getName().str(), 0);
    for (meshc::layout::Status status :
         {rules.checkAgainstMesh(mesh), rules.checkAgainstDims(dims)}) {
      if (!status.ok()) {
        meshc::emitLayoutError(program.getLoc(), status.error());
        return failure();
      }
    }
    return success();
  }
};

} // namespace
