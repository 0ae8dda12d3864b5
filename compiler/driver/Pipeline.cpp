//===- Pipeline.cpp - the compiler pipeline as one call -------------------===//

#include "compiler/driver/Pipeline.h"

#include "compiler/passes/Passes.h"
#include "lowering/Passes.h"

#include "mlir/Pass/PassManager.h"

using namespace mlir;

namespace meshc {

LogicalResult layoutAndPartition(ModuleOp module, const layout::Mesh &mesh,
                                 const layout::LayoutRules &rules,
                                 const PartitionOptions &options) {
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  pm.enableVerifier(options.verifyEachPass);
  MtfApplyLayoutOptions layoutOptions;
  layoutOptions.mesh = mesh.rank() ? mesh.str() : std::string();
  layoutOptions.layout = rules.str();
  layoutOptions.shardOptimizer = options.shardOptimizer;
  layoutOptions.shardParams = options.shardParams;
  layoutOptions.axisWeights = options.axisWeights;
  layoutOptions.uneven = options.uneven;
  pm.nest<mtf::ProgramOp>().addPass(createMtfApplyLayout(layoutOptions));
  addPartitionPasses(pm, module, options);
  return pm.run(module);
}

void addPartitionPasses(OpPassManager &pm, ModuleOp module,
                        const PartitionOptions &options) {
  pm.addPass(createMtfPartition());
  if (accumulatesGradients(module))
    pm.addPass(createMtfDeferAccumulatedReductions());
  if (options.bucketBytes > 0)
    pm.addPass(createMtfHoistLoopReductions({options.bucketBytes}));
  if (options.overlapBytes > 0 && options.interleaveHalves != Halves::Off)
    pm.addPass(createMtfInterleaveHalves(
        {options.interleaveHalves == Halves::Forward}));
  if (options.fuse)
    pm.addPass(createMtfFuse());
  if (options.bucketBytes > 0)
    pm.addPass(createMtfCombineCollectives({options.bucketBytes}));
  if (options.keepGathered)
    pm.addPass(createMtfKeepGathered());
  if (options.overlapBytes > 0 && options.prefetch)
    pm.addPass(createMtfPrefetchGathers());
  if (options.overlapBytes > 0)
    pm.addPass(
        createMtfOverlapCollectives({options.overlapBytes, options.schedule}));
}

bool accumulatesGradients(ModuleOp module) {
  for (auto program : module.getOps<mtf::ProgramOp>())
    if (auto training = program->getAttrOfType<DictionaryAttr>(
            mtf::MtfDialect::kTrainingAttrName))
      if (training.get("accumulators"))
        return true;
  return false;
}

bool needsRemat(ModuleOp module, Remat remat) {
  if (remat != Remat::Marked)
    return remat == Remat::Repeat;
  return module
      ->walk([](Operation *op) {
        return op->hasAttr(mtf::MtfDialect::kCheckpointAttrName)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

void addRemat(OpPassManager &pm, ModuleOp module, Remat remat) {
  if (!needsRemat(module, remat))
    return;
  MtfRematOptions options;
  options.repeat = remat == Remat::Repeat;
  pm.nest<mtf::ProgramOp>().addPass(createMtfRemat(options));
}

LogicalResult differentiate(ModuleOp module, bool outputGrads, Remat remat,
                            bool bf16, bool fuseAttention) {
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  if (bf16)
    pm.nest<mtf::ProgramOp>().addPass(createMtfPrecision());
  if (fuseAttention)
    pm.nest<mtf::ProgramOp>().addPass(createMtfFuseAttention());
  MtfAutodiffOptions options;
  options.outputGrads = outputGrads;
  options.loopRemat = remat;
  pm.nest<mtf::ProgramOp>().addPass(createMtfAutodiff(options));
  addRemat(pm, module, remat);
  return pm.run(module);
}

bool pipelines(ModuleOp module, const layout::LayoutRules &rules) {
  for (auto program : module.getOps<mtf::ProgramOp>())
    for (auto loop : program.getBody().getOps<mtf::LoopOp>())
      if (const std::vector<std::string> *axes =
              rules.axesFor(loop.getDim().str());
          axes && !axes->empty())
        return true;
  return false;
}

void addPipelineStages(OpPassManager &pm, const layout::Mesh &mesh,
                       const layout::LayoutRules &rules,
                       const layout::AxisWeights &weights, int64_t microbatches,
                       llvm::StringRef batchDim, PipelineSchedule schedule,
                       int64_t virtualStages) {
  MtfPipelineStagesOptions options;
  options.mesh = mesh.str();
  options.layout = rules.str();
  options.axisWeights = weights.str(mesh);
  options.uneven = weights.allowsIndivisible();
  options.microbatches = microbatches;
  options.batchDim = batchDim.str();
  options.schedule = schedule;
  options.virtualStages =
      schedule == PipelineSchedule::Interleaved ? virtualStages : 1;
  pm.nest<mtf::ProgramOp>().addPass(createMtfPipelineStages(options));
}

llvm::json::Value
outputsToJson(const std::map<std::string, interp::Tensor> &outputs) {
  llvm::json::Object all;
  for (const auto &[name, tensor] : outputs) {
    llvm::json::Array dims, shape, data;
    for (const std::string &dim : tensor.dims)
      dims.push_back(dim);
    for (int64_t size : tensor.shape)
      shape.push_back(size);
    for (double value : tensor.data)
      data.push_back(value);
    all[name] = llvm::json::Object{{"dims", std::move(dims)},
                                   {"shape", std::move(shape)},
                                   {"data", std::move(data)}};
  }
  return llvm::json::Object{{"outputs", std::move(all)}};
}

} // namespace meshc
