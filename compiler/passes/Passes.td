//===- Passes.td - meshc compiler passes -------------------*- tablegen -*-===//
//
// Passes over the global-view mtf dialect.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_PASSES_TD
#define MESHC_COMPILER_PASSES_TD

include "mlir/Pass/PassBase.td"

def MtfApplyLayout : Pass<"mtf-apply-layout", "::mlir::mtf::ProgramOp"> {
  let summary = "gives every tensor a layout from the mesh and the layout rules";
  let description = [{
    Applies Mesh-TensorFlow layout rules by dimension name: a tensor dimension
    that has a rule is split over the rule's mesh axes, every other dimension
    is whole. With `shard-optimizer`, each optimizer slot and each op of the
    update phase is split further over the mesh axes its tensor is
    replicated on, along its first dimension (by name) those axes divide:
    every device keeps and updates one shard of the optimizer state, the
    partitioner reduce-scatters the gradients into it and all-gathers the
    updated parameters (ZeRO-1, GSPMD's weight-update sharding). With
    `shard-params` the parameters themselves are kept so split too (ZeRO-3,
    FSDP's full sharding), a repeat's layer dim whole, and so is each cast
    of a parameter (or of its slice in a loop): the partitioner gathers a
    parameter where an op reads it whole, after its cast to bf16, inside
    the loop for a layer's slice, and the update's result needs no gather.
    `mtf.constrain` results take the layout the constraint names.
    With `axis-weights` (or `uneven`), a dimension split over a weighted
    axis (or one its axes do not divide) is cut into unequal blocks
    (`layout::cutBlocks`); the program records them as `mtf.axis_weights`
    and `mtf.uneven`.
    The result is the `mtf.layout` attribute on every op that produces a
    tensor, and the mesh on the program. Invalid layouts (unknown axis or
    dimension, one axis splitting two dimensions of a tensor, sizes that do
    not divide) are errors at the op that would have the layout.

    Before, with `mesh="b:4;m:2" layout="batch:b;hidden:m"`:
    ```mlir
    mtf.program @mlp {
      %x = mtf.input "x" : !mtf.tensor<[batch=64, io=64], f32>
      %w = mtf.param "w" = #mtf.init<zeros> : !mtf.tensor<[io=64, hidden=128], f32>
      %h = mtf.einsum %x, %w : ... -> !mtf.tensor<[batch=64, hidden=128], f32>
    }
    ```
    After:
    ```mlir
    mtf.program @mlp mesh #mtf.mesh<b=4, m=2> {
      %x = mtf.input "x" {mtf.layout = #mtf.layout<batch: b>} : ...
      %w = mtf.param "w" = #mtf.init<zeros> {mtf.layout = #mtf.layout<hidden: m>} : ...
      %h = mtf.einsum %x, %w {mtf.layout = #mtf.layout<batch: b, hidden: m>} : ...
    }
    ```
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", /*default=*/"\"\"",
           "device mesh in Mesh-TensorFlow form (b:4;m:2); empty: keep the "
           "program's mesh">,
    Option<"layout", "layout", "std::string", /*default=*/"\"\"",
           "layout rules (batch:b;d_ff:m;x:b+m); empty: everything whole">,
    Option<"shardOptimizer", "shard-optimizer", "bool", /*default=*/"false",
           "also split optimizer slots and update ops over the mesh axes "
           "their tensor is replicated on (ZeRO-1)">,
    Option<"shardParams", "shard-params", "bool", /*default=*/"false",
           "also keep the parameters (and their casts) split so, gathered "
           "where they are read (ZeRO-3); implies shard-optimizer">,
    Option<"axisWeights", "axis-weights", "std::string", /*default=*/"\"\"",
           "device weights per mesh axis (b=1,1,2): dimensions split over a "
           "weighted axis are cut in proportion; empty: keep the program's "
           "when the mesh is kept, else even">,
    Option<"uneven", "uneven", "bool", /*default=*/"false",
           "let even mesh axes cut dimensions they do not divide into the "
           "most even blocks">,
  ];
  let dependentDialects = ["::mlir::mtf::MtfDialect"];
}

def MtfPipelineStages : Pass<"mtf-pipeline-stages", "::mlir::mtf::ProgramOp"> {
  let summary = "a repeat whose layer dim the layout splits becomes a pipeline";
  let description = [{
    Runs on the forward program, before mtf-precision and mtf-autodiff (so
    the backward pass is the pipeline's own, GPipe's schedule). Each
    outermost `mtf.loop` whose dim the `layout` splits over mesh axes of
    total size P becomes a pipeline of P stages of L / P consecutive layers
    with `microbatches` microbatches of `batch-dim` (docs/pipeline.md):

    - each stacked weight `[layers=L, ...]` is cut (`split_dim`) into
      `[layers_stage=P, layers_layer=L/P, ...]`, and each of a stage's
      layers taken out, `[layers_stage=P, ...]`;
    - each carried value is cut into microbatches (`split_dim` of the batch
      into `batch_mb` and `batch_micro`) and laid along a new tick dim,
      `M + P - 1` long (zeros after the last microbatch);
    - one `mtf.loop` over the ticks carries each value's state on every
      stage, `[layers_stage=P, ...]`: stage 0 takes the tick's microbatch,
      every stage runs its layers (the body cloned once per layer of a
      stage, every value that depends on the state with the stage dim
      first), the last stage's result is stacked, and the state moves one
      stage on (a `window` shift along the stage dim);
    - microbatch m is the last stage's result of tick m + P - 1; the
      microbatches are merged back into the batch.

    The program records `mtf.layout_aliases` (`layers_stage` takes the rule
    of `layers`, `batch_mb` that of the batch), which mtf-apply-layout
    reads. Where the batch's rule also names a stage axis and a
    microbatch's examples divide over all its axes, the stacks along the
    ticks call them `batch_spread`, which takes the batch's whole rule (each
    device stacks its share; renamed to `batch_mb` in the ticks). With
    microbatches, a per-example value every layer reads (an
    invariant with the batch dim) travels with its microbatch as a second
    state. Under `uneven` or `axis-weights` the stages may hold unequal
    numbers of layers (the blocks the layout cuts the layer dim into): the
    weights are padded per stage to the most a stage holds (`split_dim`
    with blocks), and a stage past its own layers passes its activations
    on unchanged (a 0/1 vector along the stages selects them). Under
    `schedule=1f1b` the ops after the loop that compute the trained loss
    (a mean over the batch) run in the ticks on every stage's result, each
    stage's loss weighted per tick (1/M on the last stage when a microbatch
    leaves it) into a carried sum that becomes the trained loss; stage 0's
    microbatch enters as a stacked value with the stage dim; the tick loop
    gets `mtf.one_f_one_b`, for mtf-autodiff (docs/pipeline.md#1f1b). Under
    `schedule=interleaved` with `virtual-stages` V, each stacked parameter
    is stored as `[layers_round=V, layers_in_round=L/V, ...]` (recorded
    in `mtf.model_dims`; layers_in_round takes the layer dim's rule, so
    each round is cut into the stages, evenly or under `uneven`), the
    ticks are `V M + P - 1` of one block, each stage's weights per tick
    the round it runs (an einsum with a 0/1 tick input), and stage 0 takes
    the last stage's result of the tick before for a microbatch's next
    round (docs/pipeline.md#interleaved). Refused with the reason: layers that do not cut into P equal stages (without
    `uneven` or weights; interleaved: into V rounds, then each round's
    into P stages), a body that stacks per-layer values, draws
    dropout masks, holds a loop, or mixes the examples of the batch (with
    microbatches), a carried value without the batch dim.
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", /*default=*/"\"\"",
           "the device mesh, e.g. \"p:2;b:2\"">,
    Option<"layout", "layout", "std::string", /*default=*/"\"\"",
           "the layout rules, e.g. \"layers:p;batch:b\"">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "microbatches per step (meshc --microbatches)">,
    Option<"batchDim", "batch-dim", "std::string", /*default=*/"\"batch\"",
           "the dim cut into microbatches (meshc --microbatch-dim)">,
    Option<"axisWeights", "axis-weights", "std::string", /*default=*/"\"\"",
           "device weights per mesh axis (meshc --axis-weights): stages of "
           "layers in proportion">,
    Option<"uneven", "uneven", "bool", /*default=*/"false",
           "let the stage axes cut a layer count they do not divide into the "
           "most even stages (meshc --uneven)">,
    Option<"schedule", "schedule", "::meshc::PipelineSchedule",
           /*default=*/"::meshc::PipelineSchedule::GPipe",
           "the order of the microbatches' forwards and backwards (meshc "
           "--schedule)", [{::meshc::choiceValues(::meshc::scheduleChoices())}]>,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"1",
           "under schedule=interleaved, the rounds each stage runs (meshc "
           "--virtual-stages)">,
  ];
  let dependentDialects = ["::mlir::mtf::MtfDialect"];
}

def MtfAutodiff : Pass<"mtf-autodiff", "::mlir::mtf::ProgramOp"> {
  let summary = "turns mtf.train into the backward pass and the optimizer update";
  let description = [{
    Reverse-mode differentiation of the trained loss with respect to every
    parameter (not `slot`s), as ordinary mtf ops tagged
    `mtf.phase = "backward"`, then the optimizer's update tagged
    `mtf.phase = "update"`: learning-rate schedule, clipping by global norm,
    SGD, momentum, Adam or AdamW, with optimizer state in `slot` parameters
    and `mtf.assign` for every new value. With `sync_every` (local SGD) each
    gradient goes through `mtf.local_grad`. On a program marked
    `mtf.microbatches` (meshc --microbatches) each gradient is added into
    an accumulator slot NAME/grad_sum in the backward phase and the update
    reads the sum scaled by 1/count; a forward pass that mixes examples is
    refused. The program gets an `mtf.training` attribute (optimizer,
    hyper-parameters, loss output; with microbatches their count and the
    accumulators). A loop marked `mtf.one_f_one_b` (a 1F1B pipeline's
    ticks) gets its backward inside three loops over its ticks (forward
    only, both, backward only), each stage's backward reading its forward's
    values from carried lines of slots, instead of a backward loop after it
    (OneFOneB.cpp; docs/pipeline.md#1f1b).
    Programs without `mtf.train` are left alone.
  }];
  let options = [
    Option<"outputGrads", "output-grads", "bool", /*default=*/"false",
           "also output every parameter's gradient as grad/NAME">,
    Option<"loopRemat", "loop-remat", "::meshc::Remat",
           /*default=*/"::meshc::Remat::Marked",
           "how a loop's backward pass gets its activations, as meshc's "
           "--remat: none (the forward loop stacks them), marked "
           "(checkpoint(...) ops recomputed, the rest stacked) or repeat "
           "(each layer recomputed from its input)",
           "::meshc::choiceValues(::meshc::rematChoices())">,
  ];
  let dependentDialects = ["::mlir::mtf::MtfDialect"];
}

def MtfFuseAttention : Pass<"mtf-fuse-attention", "::mlir::mtf::ProgramOp"> {
  let summary = "fuses softmax attention into mtf.attention (FlashAttention)";
  let description = [{
    Finds, in the global program and in loop bodies, the pattern

    ```
    scores  = einsum(q, k) [* c] [+ bias]     (c a scalar constant)
    weights = softmax(scores, key)
    context = einsum(weights, v)              (sums exactly `key`)
    ```

    where `key` is a dim of `k` and `v` but not of `q`, the first einsum
    sums exactly the dims `q` and `k` share and drops (the head dims), and
    the scores, their scaled and biased forms and the weights are read by
    nothing else; the bias (either operand of the add) is reached by no
    parameter (a mask), and q, k, v and context share one float type. The
    four ops become one `mtf.attention` (the context, and the logsumexp its
    gradient reads): no `[..., key]` tensor is stored, forward or backward.
    Runs after mtf-precision and before mtf-autodiff, so the backward pass
    is one `mtf.attention_grad`. `meshc --no-fuse-attention` skips it.
    docs/spmd.md#fused-attention.
  }];
  let dependentDialects = ["::mlir::mtf::MtfDialect"];
}

def MtfRemat : Pass<"mtf-remat", "::mlir::mtf::ProgramOp"> {
  let summary = "recomputes checkpointed activations in the backward pass";
  let description = [{
    Activation recomputation per group of forward ops: each
    `checkpoint(...)` expression of the model (ops tagged `mtf.checkpoint`
    by the frontend) and, with `repeat=true`, each instance of an outermost
    `repeat` (ops tagged `mtf.instance`: per-layer activation
    checkpointing). An op with both tags belongs to its instance when
    instances are groups, else to its checkpoint. After mtf-autodiff, a
    forward value computed inside a group and read by the backward pass or
    the update is recomputed there: the group's forward ops that lead to
    such values are cloned, tagged `mtf.phase = "backward"`, just before
    the first backward op that reads one of them, and the backward reads the
    clones. The group then keeps only what it reads from outside (its
    input, the parameters) until the backward pass; its own activations die
    with the forward pass. Parameters, inputs and ops with effects are never
    cloned. The clones compute the same ops on the same values, so training
    is bit-identical with and without it.

    Before (one instance, `y = gelu(x)` read back by the backward pass):
    ```mlir
    %y = mtf.gelu %x {mtf.instance = "block_0"} : ...
    ...
    %dy = mtf.gelu_grad %y {mtf.phase = "backward"} : ...
    ```
    After:
    ```mlir
    %y = mtf.gelu %x {mtf.instance = "block_0"} : ...
    ...
    %y2 = mtf.gelu %x {mtf.instance = "block_0", mtf.phase = "backward"} : ...
    %dy = mtf.gelu_grad %y2 {mtf.phase = "backward"} : ...
    ```
  }];
  let options = [
    Option<"repeat", "repeat", "bool", /*default=*/"true",
           "recompute every repeat instance too (--remat=repeat), not only "
           "the checkpointed expressions (--remat=marked)">,
  ];
  let dependentDialects = ["::mlir::mtf::MtfDialect"];
}

def MtfPrecision : Pass<"mtf-precision", "::mlir::mtf::ProgramOp"> {
  let summary = "mixed precision: activations and GEMM inputs in bf16, statistics in f32";
  let description = [{
    `--precision=bf16` (docs/training.md). Runs on the forward program,
    before mtf-autodiff, so that the backward pass follows the same types.
    Parameters, inputs and optimizer state stay f32 (the master weights);
    each op gets an element type by its kind:

    - einsum: its float operands are cast to bf16 and its result is bf16
      (the kernels accumulate in f32);
    - reductions, logsumexp and softmax_cross_entropy: f32 (a bf16 operand is
      cast to f32 first), so normalisation statistics and the loss are f32;
    - elementwise ops, softmax, cumsum, window, top_k, local_grad, rename,
      constrain: bf16 when one of their float operands is (the f32 ones are
      cast to bf16), else f32;
    - inputs, params, constants, casts the model writes, dropout masks,
      one_hot, range, equal, less, argmax: as written.

    Outputs and the trained loss are cast back to f32. A constant used at
    bf16 becomes a bf16 constant rather than a cast; a cast of one value to
    one type is made once per repeat instance and carries the instance's
    `mtf.instance`, so mtf-remat recomputes it with its instance. An op with
    no rule here is an error.

    ```mlir
    %h = mtf.einsum %x, %w ... -> !mtf.tensor<[batch=8, h=16], f32>
    ```
    becomes
    ```mlir
    %xb = mtf.cast %x : ... f32 -> ... bf16
    %wb = mtf.cast %w : ... f32 -> ... bf16
    %h = mtf.einsum %xb, %wb ... -> !mtf.tensor<[batch=8, h=16], bf16>
    ```
  }];
  let dependentDialects = ["::mlir::mtf::MtfDialect"];
}

#endif // MESHC_COMPILER_PASSES_TD
