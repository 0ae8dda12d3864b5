//===- MtfBase.td - the mtf dialect ------------------------*- tablegen -*-===//
//
// The `mtf` dialect: a global (unpartitioned) view of a model written with
// named tensor dimensions. Layouts are attached by `mtf-apply-layout`.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_DIALECT_MTFBASE_TD
#define MESHC_DIALECT_MTFBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "dialect/MtfInterfaces.td"

def Mtf_Dialect : Dialect {
  let name = "mtf";
  let cppNamespace = "::mlir::mtf";
  let summary = "Named-dimension tensor programs in the style of Mesh-TensorFlow";
  let description = [{
    Programs whose tensors carry named dimensions (`batch`, `d_model`, ...)
    instead of positional ones. Operations match dimensions by name: an
    einsum sums the dimensions its result does not name, binary elementwise
    operations broadcast by name. A mesh and per-tensor layouts (which
    dimension is split over which mesh axis) are attributes, so the same
    program can be partitioned for any mesh.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The discardable attribute holding the layout of an op's result.
    static constexpr ::llvm::StringLiteral kLayoutAttrName = "mtf.layout";
    /// The discardable attribute holding the layouts of an op's several
    /// results, in order (fused attention): an array of #mtf.layout.
    static constexpr ::llvm::StringLiteral kLayoutsAttrName = "mtf.layouts";
    /// The discardable attribute saying why the partitioner inserted a
    /// collective (read by `meshc --explain`).
    static constexpr ::llvm::StringLiteral kReasonAttrName = "mtf.reason";
    /// The training phase of an op that autodiff made: "backward" for
    /// gradients, "update" for the optimizer. Ops without it are forward ops,
    /// the only ones an evaluation run executes.
    static constexpr ::llvm::StringLiteral kPhaseAttrName = "mtf.phase";
    /// The instance of an outermost `repeat` an op belongs to ("block_3"):
    /// set by the frontend; mtf-remat recomputes each instance's activations
    /// for the backward pass.
    static constexpr ::llvm::StringLiteral kInstanceAttrName = "mtf.instance";
    /// The `checkpoint(...)` expression an op was emitted by (the frontend;
    /// mtf-remat recomputes its ops in the backward pass).
    static constexpr ::llvm::StringLiteral kCheckpointAttrName =
        "mtf.checkpoint";
    /// The tags that put an op in a recomputation group: ops made from it
    /// (gradients aside) carry them too.
    static constexpr ::llvm::StringLiteral kGroupAttrNames[] = {
        kInstanceAttrName, kCheckpointAttrName};
    /// On a program that trains: {optimizer, hyperparams, loss}.
    static constexpr ::llvm::StringLiteral kTrainingAttrName = "mtf.training";
    /// On a program whose training step accumulates gradients over
    /// microbatches (meshc --microbatches): {count = M : i64, dim = "batch"},
    /// the program written for one microbatch (`dim` cut M times smaller).
    /// mtf-autodiff reads it (docs/training.md#microbatches---microbatches).
    static constexpr ::llvm::StringLiteral kMicrobatchesAttrName =
        "mtf.microbatches";
    /// On a program a pipeline was built in (mtf-pipeline-stages): for each
    /// dim the pipeline made, the model dim whose layout rule it takes, or a
    /// list whose first dim's axes it takes less the others' axes,
    /// {layers_stage = "layers", batch_mb = ["batch", "layers"]}
    /// (mtf-apply-layout reads it through withLayoutAliases; docs/pipeline.md).
    static constexpr ::llvm::StringLiteral kLayoutAliasesAttrName =
        "mtf.layout_aliases";
    /// On a program a pipeline was built in: per layer dim, the pipeline's
    /// shape, {layers = {stages = 2, per_stage = 3, microbatches = 4,
    /// ticks = 5}} (`meshc --explain` prints it).
    static constexpr ::llvm::StringLiteral kPipelinesAttrName =
        "mtf.pipelines";
    /// On a program whose params hold a model dim cut into several
    /// (mtf-pipeline-stages under the interleaved schedule): per model dim,
    /// the dims it is cut into, outermost first, {layers = ["layers_round",
    /// "layers_stage", "layers_layer"]}. A param whose leading dims are
    /// those holds the model's param in the same row-major order; the
    /// .mprog lists its dims as the model declares them ("model_dims"), by
    /// which the runtime reads and writes it (checkpoints, --dump-params).
    static constexpr ::llvm::StringLiteral kModelDimsAttrName =
        "mtf.model_dims";
    /// On a pipeline's tick loop whose schedule is 1F1B (mtf-pipeline-stages):
    /// {stages = P, microbatches = M, stage = "layers_stage", entries = N}
    /// (its first N stacked operands are what stage 0 takes per tick, the
    /// rest the last stage's or every stage's). mtf-autodiff
    /// then runs each stage's backward of a microbatch soon after its
    /// forward, in the ticks' own loops, not after every forward
    /// (docs/pipeline.md#1f1b).
    static constexpr ::llvm::StringLiteral kOneFOneBAttrName =
        "mtf.one_f_one_b";
    /// On a program laid out on a mesh with device weights: their text
    /// ("b=1,1,2", layout::AxisWeights); a dimension split over a weighted
    /// axis is cut in proportion (docs/layouts.md#device-weights).
    static constexpr ::llvm::StringLiteral kAxisWeightsAttrName =
        "mtf.axis_weights";
    /// On a program laid out with --uneven (a unit attribute): even axes may
    /// cut a dimension they do not divide into the most even blocks.
    static constexpr ::llvm::StringLiteral kUnevenAttrName = "mtf.uneven";
    /// In a local program of a mesh with device weights, on an op whose
    /// result is cut into unequal blocks: per such dimension, the mesh axes
    /// it is split over and every block's size by shard index,
    /// {batch = {axes = ["b"], sizes = array<i64: 16, 16, 32>}}. The result
    /// type holds the largest block; each device runs on its own
    /// (docs/layouts.md#device-weights). On the tensors of a collective that
    /// moves unequal blocks the moved dims' sizes are dynamic, and every
    /// one of them has an entry, equal sizes and whole dims (no axes, one
    /// size) included.
    static constexpr ::llvm::StringLiteral kBlocksAttrName = "mtf.blocks";
    /// On an op of a loop body: the numbers of the carried waits (mtf.wait
    /// `carried`) whose collectives of the iteration before complete just
    /// before it, array<i64: 0, 3> (mtf-overlap-collectives).
    static constexpr ::llvm::StringLiteral kResumesAttrName = "mtf.resumes";
    /// On an op in a loop body: the half of its batch it computes, 0 or 1
    /// (mtf-interleave-halves); mtf-combine-collectives never combines two
    /// halves' collectives.
    static constexpr ::llvm::StringLiteral kHalfAttrName = "mtf.half";
  private:
    void registerTypes();
    void registerAttributes();
  public:
  }];
}

// Every mtf op states how it becomes .mprog steps (`stepMethods`: the
// StepOpInterface methods with a default that the op overrides).
class Mtf_Op<string mnemonic, list<Trait> traits = [],
             list<string> stepMethods = []>
    : Op<Mtf_Dialect, mnemonic,
         !listconcat([DeclareOpInterfaceMethods<Mtf_StepOpInterface,
                                                stepMethods>], traits)>;

#endif // MESHC_DIALECT_MTFBASE_TD
