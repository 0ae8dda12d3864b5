//===- Pipeline.h - the compiler pipeline as one call -----------*- C++ -*-===//
//
// mtf-autodiff, and mtf-apply-layout, mtf-partition and mtf-fuse, on a module,
// for callers that compile many layouts in-process (the layout sweep,
// benchmarks); the meshc driver builds the same pipeline with its own
// instrumentation. Also the JSON form of reference outputs that `meshc
// --reference` writes.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_DRIVER_PIPELINE_H
#define MESHC_COMPILER_DRIVER_PIPELINE_H

#include "compiler/driver/Compile.h"
#include "compiler/interpreter/Interpreter.h"
#include "compiler/passes/Remat.h"
#include "runtime/core/layout/AxisWeights.h"
#include "runtime/core/layout/LayoutRules.h"
#include "runtime/core/layout/Mesh.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <string>

namespace meshc {

/// How layoutAndPartition compiles.
struct PartitionOptions {
  /// Fuse elementwise ops (mtf-fuse).
  bool fuse = true;
  /// Verify the IR between the passes (the layout search's compiles, which
  /// the final compile repeats with verification, skip it).
  bool verifyEachPass = true;
  /// Shard optimizer state and updates over the axes that replicate each
  /// parameter (mtf-apply-layout's shard-optimizer).
  bool shardOptimizer = false;
  /// Keep the parameters and their casts so sharded too (mtf-apply-layout's
  /// shard-params, ZeRO-3).
  bool shardParams = false;
  /// Device weights in the text of meshc --axis-weights ("b=1,1,2"; empty:
  /// even) and --uneven (mtf-apply-layout's axis-weights and uneven).
  std::string axisWeights;
  bool uneven = false;
  /// The most bytes one combined collective packs (mtf-combine-collectives;
  /// 0: none combined).
  int64_t bucketBytes = 128 << 20;
  /// The most bytes of collectives in flight at once
  /// (mtf-overlap-collectives; 0: every collective blocks).
  int64_t overlapBytes = int64_t(1) << 30;
  /// Order each loop body's ops for overlap first (mtf-overlap-collectives'
  /// schedule).
  bool schedule = true;
  /// Gather a loop's next layer beside each iteration (mtf-prefetch-gathers;
  /// only where collectives overlap).
  bool prefetch = true;
  /// Read the weights an earlier loop gathered instead of gathering them
  /// again (mtf-keep-gathered).
  bool keepGathered = false;
  /// Run a loop body that all-reduces its activations as two halves of its
  /// batch (mtf-interleave-halves; only where collectives overlap).
  Halves interleaveHalves = Halves::Off;
};

/// Adds the passes that turn the laid-out `module` into its local SPMD
/// form to `pm`: mtf-partition, then (as `options` say) the deferred and
/// hoisted reductions, fusion, combining and overlap.
void addPartitionPasses(mlir::OpPassManager &pm, mlir::ModuleOp module,
                        const PartitionOptions &options);

/// Lays out every program of `module` by `rules` on `mesh`, then partitions
/// it into its local SPMD form and fuses its elementwise ops as `options`
/// say. Errors are reported through the context.
mlir::LogicalResult layoutAndPartition(mlir::ModuleOp module,
                                       const layout::Mesh &mesh,
                                       const layout::LayoutRules &rules,
                                       const PartitionOptions &options = {});

/// Whether a program of `module` accumulates gradients over microbatches
/// (its mtf.training lists accumulators): then mtf-partition is followed by
/// mtf-defer-accumulated-reductions.
bool accumulatesGradients(mlir::ModuleOp module);

/// Whether mtf-remat has anything to do in `module` under `remat`: with
/// `Marked`, only when some op carries a checkpoint tag (so the pass, and
/// its IR dump, appear only where the model asked for them).
bool needsRemat(mlir::ModuleOp module, Remat remat);

/// Adds mtf-remat for `remat` to `pm` (on every program) when needsRemat.
void addRemat(mlir::OpPassManager &pm, mlir::ModuleOp module, Remat remat);

/// Runs mtf-autodiff on every program of `module` that trains (a no-op for
/// the others): the backward pass and the optimizer update become ordinary
/// ops, before any layout. With `bf16`, mtf-precision first gives the
/// forward program bf16 activations (meshc --precision=bf16); with
/// `fuseAttention`, mtf-fuse-attention then fuses softmax attention (every
/// program, training or not). With `outputGrads`, every gradient is an
/// output; mtf-remat then recomputes what `remat` says in the backward pass.
mlir::LogicalResult differentiate(mlir::ModuleOp module,
                                  bool outputGrads = false,
                                  Remat remat = Remat::Marked,
                                  bool bf16 = false, bool fuseAttention = true);

/// Whether `rules` split the layer dim of an outermost repeat (a loop) of a
/// program of `module`: the layout makes a pipeline (docs/pipeline.md).
bool pipelines(mlir::ModuleOp module, const layout::LayoutRules &rules);

/// Adds mtf-pipeline-stages to `pm` (on every program): the pipelines
/// `rules` make on `mesh`, with `microbatches` microbatches of `batchDim`,
/// stages cut as `weights` cut the layer dims (uneven under --uneven or
/// weights), run in `schedule`'s order. It runs on the forward program,
/// before differentiate's passes.
void addPipelineStages(mlir::OpPassManager &pm, const layout::Mesh &mesh,
                       const layout::LayoutRules &rules,
                       const layout::AxisWeights &weights, int64_t microbatches,
                       llvm::StringRef batchDim, PipelineSchedule schedule,
                       int64_t virtualStages);

/// Outputs in the format of `meshrun --dump-outputs`:
/// {"outputs": {name: {"dims": [...], "shape": [...], "data": [...]}}}.
llvm::json::Value
outputsToJson(const std::map<std::string, interp::Tensor> &outputs);

} // namespace meshc

#endif // MESHC_COMPILER_DRIVER_PIPELINE_H
