//===- Passes.td - SPMD lowering passes --------------------*- tablegen -*-===//
//
// Passes that turn a laid-out global program into per-device SPMD code.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_LOWERING_PASSES_TD
#define MESHC_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def MtfPartition : Pass<"mtf-partition", "::mlir::ModuleOp"> {
  let summary = "turns each laid-out mtf.program into a local SPMD program "
                "with explicit collectives";
  let description = [{
    Every op of a program whose tensors carry `mtf.layout` (see
    `mtf-apply-layout`) becomes the same op on per-device blocks. Collectives
    (upstream `shard` ops on ranked tensors, bridged by `mtf.to_tensor` /
    `mtf.from_tensor`) are inserted exactly where the layouts require them:

    - an operand whose layout differs from what the op needs is resharded by
      the cheapest plan: all-to-all when one mesh axis moves between
      dimensions, all-gather when a dimension must become whole, a local
      `shard.all_slice` when it must become split;
    - an einsum or reduction over a dimension split over mesh axes computes
      partial results locally, then `shard.reduce_scatter` when the result
      is split over those axes, else `shard.all_reduce`;
    - softmax, logsumexp, cross-entropy and argmax over a split dimension are
      first rewritten as reductions and elementwise ops (their
      `DecomposeOpInterface`), so each device reduces its block and row
      maxima and sums are all-reduced; one_hot builds each device's block.

    Each collective carries `mtf.reason` (why it is there) and the location
    of the model line that caused it. The result program is marked `local`;
    a `shard.grid` with the mesh shape is added to the module.

    Example: `hidden` split over `m` in both operands of a contraction.
    ```mlir
    %y = mtf.einsum %h, %w : !mtf.tensor<[batch=8, hidden=16], f32>,
        !mtf.tensor<[hidden=16, out=4], f32> -> !mtf.tensor<[batch=8, out=4], f32>
    ```
    becomes on a 4-device mesh `m`:
    ```mlir
    %0 = mtf.einsum %h, %w : !mtf.tensor<[batch=8, hidden=4], f32>,
        !mtf.tensor<[hidden=4, out=4], f32> -> !mtf.tensor<[batch=8, out=4], f32>
    %1 = mtf.to_tensor %0 : ... -> tensor<8x4xf32>
    %2 = shard.all_reduce %1 on @mesh grid_axes = [0] : tensor<8x4xf32> -> tensor<8x4xf32>
    %3 = mtf.from_tensor %2 : tensor<8x4xf32> -> !mtf.tensor<[batch=8, out=4], f32>
    ```
  }];
  let dependentDialects = ["::mlir::mtf::MtfDialect",
                           "::mlir::shard::ShardDialect"];
}

def MtfDeferAccumulatedReductions
    : Pass<"mtf-defer-accumulated-reductions", "::mlir::ModuleOp"> {
  let summary = "all-reduces each gradient once per step, not once per "
                "microbatch, in programs with microbatches";
  let description = [{
    In a local program that accumulates gradients over microbatches
    (`mtf.training` lists its `accumulators`), a gradient all-reduced (sum)
    and then added into its accumulator slot is added unreduced instead: the
    slot holds each device's partial sum over the microbatches, and one
    all-reduce of it, in the update phase, gives the sum the update reads.
    By linearity, allreduce(g1) + ... + allreduce(gM) = allreduce(g1 + ... +
    gM): the same values, one collective instead of M. Gradients yielded by
    a loop's body are all-reduced after the loop, stacked. A gradient that
    reaches its accumulator through anything else (a reduce-scatter into a
    `--shard-optimizer` shard, a cast) keeps its collective per microbatch.
    Runs after `mtf-partition`, before `mtf-fuse`.
  }];
  let dependentDialects = ["::mlir::mtf::MtfDialect",
                           "::mlir::shard::ShardDialect"];
}

def MtfFuse : Pass<"mtf-fuse", "::mlir::ModuleOp"> {
  let summary = "groups the elementwise ops of local programs, and the "
                "reductions they feed, into mtf.fused steps";
  let description = [{
    In every local (partitioned) program, connected float (f32, bf16, f16)
    elementwise ops
    (unary functions, add, sub, mul, div, max, min; scalar constants are
    copied in) over the same dims, and reductions of those dims that they
    feed or that feed them (reduce_sum, reduce_mean, reduce_max, all over
    the same dims), become one `mtf.fused` op: one step of the `.mprog`,
    one pass over memory, and no buffers for the values that live only
    inside it. A one-operand `mtf.einsum` that sums its operand's trailing
    dims (a row sum, as the layer norms' gradients make) is a reduce_sum
    first, so it joins the group that computes its operand; one that sums
    leading dims (a column sum) stays an einsum, since a fused step reduces
    along its inner run. Ops join a group in program order:

    - only ops of the same phase (forward, backward, update) share a group,
      so evaluation still runs the forward steps alone;
    - a group never depends on itself through an op outside it (the
      contracted program stays acyclic), and ops that read a group's values
      before its last member are moved after it only when that moves no
      read of a parameter past its `mtf.assign`;
    - a group has at most 32 ops, 16 operands and 8 results (what one
      fused kernel takes); a group of one op stays that op, unless it
      reads or writes 16-bit floats (not a cast): its own step would stage
      each of those operands whole in f32 in the scratch, where a fused step
      widens and rounds them as it streams them.

    `meshc --no-fuse` skips the pass; `--explain` lists the groups.
  }];
  let dependentDialects = ["::mlir::mtf::MtfDialect"];
}

def MtfHoistLoopReductions
    : Pass<"mtf-hoist-loop-reductions", "::mlir::ModuleOp"> {
  let summary = "all-reduces a loop body's small stacked gradients once, "
                "after the loop";
  let description = [{
    In every local program, a sum all-reduce in a loop's body whose result
    only reaches one of the body's stacked values (directly or through
    casts: a bf16 gradient's rounded total) moves after the loop: the body
    yields the unreduced partial sum, and one all-reduce of the stacked
    tensor, then the same casts, give the loop's stacked result. The values
    are the same (a collective and a cast act on each element alone, and
    stacking only places the iterations' values side by side); the step
    runs one collective instead of one per iteration. The layer norms'
    parameter gradients are the case it is for: 16 KiB all-reduced once per
    layer are latency-bound (1.26 ms between nodes on `h100-sxm`, 96 times
    per step for the 96-layer GPT).

    Only stacked tensors of at most `bucket-bytes` bytes move (a large
    gradient keeps one all-reduce per iteration, where it is bandwidth-bound
    already and could overlap the next iteration's compute).

    Likewise a carried value that starts at zero and to which the body adds
    one sum all-reduce's result per iteration (and that nothing else in the
    body reads) adds the partial sums instead, and its final is all-reduced
    once after the loop, whatever its size: the gradient of a weight that a
    pipeline's loop over ticks reads in every tick (docs/pipeline.md), its
    data-parallel all-reduce once per step instead of once per tick.

    And casts that end a stacked value (each read only by the next, the last
    by the yield; the stacked type unchanged, as f32 -> bf16 -> f32) move
    after the loop onto the stacked tensor: the body stacks the value before
    them. Same values and work; the collective that made the value (a large
    gradient's reduce-scatter) then only has its result stacked, so
    mtf-overlap-collectives can carry its wait into the next iteration. `meshc
    --bucket-size` sets it (0: the pass is skipped, as combining is). Runs
    after `mtf-partition`, before `mtf-fuse`.
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"128 << 20",
           "the most bytes of a stacked tensor whose all-reduce moves">,
  ];
  let dependentDialects = ["::mlir::mtf::MtfDialect",
                           "::mlir::shard::ShardDialect"];
}

def MtfCombineCollectives : Pass<"mtf-combine-collectives", "::mlir::ModuleOp"> {
  let summary = "merges independent collectives of one kind over the same "
                "device groups into one over their packed elements";
  let description = [{
    In every local program (and each loop's body, once), collectives of one
    kind -- `shard.all_reduce`, `shard.all_gather`, `shard.reduce_scatter` --
    on the same mesh, axes, reduction, element type and phase that do not
    depend on each other become one `mtf.combined_all_reduce`,
    `mtf.combined_all_gather` or `mtf.combined_reduce_scatter`: one
    collective, one latency, over their elements packed end to end (for the
    gather and the scatter, member g's chunk holds block g of every tensor).
    They are gathered in program order into a bucket of at most
    `bucket-bytes` bytes (a gather's results, a scatter's inputs); a bucket
    is closed where an op reads one of its results (the combined op goes
    right after its last member, so every member's input is ready and no
    reader moves; the views, casts, assigns and outputs between move after
    it), or
    where the next member would overflow it. A bucket of one stays as it
    was, and so does a collective that fills a bucket alone (bandwidth-bound
    already; the open bucket stays open for the small ones). Collectives of
    tensors with dynamic (unequal) sizes are left alone. Each reduce-scatter
    first moves up to just after the op that makes its input (the
    partitioner places it just before the update that reads it, between
    other parameters' updates); its result is smaller than its input, which
    it then frees earlier. In a loop's body, each all-gather whose input is
    made from the body's stacked or invariant arguments alone (through views
    and casts: a layer's parameter slice under --shard-params) first moves to
    the top of the body with the ops that make its input, so a layer's
    weights are gathered in one collective as the iteration starts; hoisted
    ops alike but for their reasons become one. A collective alike a member
    of its bucket (the same input, or alike views of it) is that member: a
    combined collective takes each buffer once.

    Every device runs the same program, so every device combines the same
    collectives. The runtime packs the buffers into the step's scratch
    (docs/mprog.md). A ring adds an element's members in an order that
    depends on the element's place in the buffer, so a combined sum may
    differ from the uncombined one in the last bit.

    `meshc --bucket-size` sets `bucket-bytes` (0: the pass is skipped).
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"128 << 20",
           "the most bytes one combined collective packs">,
  ];
  let dependentDialects = ["::mlir::mtf::MtfDialect",
                           "::mlir::shard::ShardDialect"];
}

def MtfInterleaveHalves
    : Pass<"mtf-interleave-halves", "::mlir::ModuleOp"> {
  let summary = "runs a loop body that all-reduces its activations as two "
                "halves of its batch, interleaved";
  let description = [{
    In every local program, each loop whose body all-reduces a value with
    the batch dim (tensor parallelism: the sum of a layer's output over the
    devices that split its weights) runs each op that reads or makes a
    value with that dim twice, once per half of the batch (DeepSpeed's
    Domino): each half's ops are its own, so mtf-overlap-collectives can
    run one half's all-reduce beside the other half's compute (its
    scheduler takes the first half's ops toward its all-reduce first, then
    the second half's beside it).

    The batch is the first dim of the loop's first carried value (the
    activations, or their gradient), of an even size on every device. The
    loop carries each value with it as its two halves (cut before the loop:
    a window to a dim of its own, renamed back; joined after it: two
    windows and an add) and stacks each stacked value with it as its two
    halves; a stacked operand with it must come in halves from a loop
    rewritten so (the forward's layer inputs, read by the backward loop),
    so a loop that stacks halves is rewritten only where every reader of
    them is a loop that takes them in halves: no tensor of every layer is
    cut or joined. In the body an op whose rule keeps the dim parallel
    runs on the halves; one that sums (or maxes) over it (a weight's
    gradient) runs on each half and the two partial results are added
    (maxed) in the op's own element type (under bf16 one rounding more
    than the whole batch's); ops without the dim (a layer's weights, their casts and
    gathers) run once, shared. The ops of each half carry `mtf.half` (0 or
    1), and mtf-combine-collectives never combines two halves'
    collectives.

    A loop is left as it is when some op cannot run so: a collective other
    than an all-reduce or an all-gather along another dim, a mean over the
    batch, a value made from a global index (dropout masks, ranges), a
    rename of the batch dim, a reshape (split_dim, merge_dims), an op
    with a region or unequal
    blocks, a carried or invariant operand with the batch that is not a
    float; or when its body all-reduces no value with the batch.

    With `join-reverse`, a reverse loop (a backward pass) runs in halves
    as above but all-reduces both halves of a value at once, one
    `mtf.combined_all_reduce` where the second half's was: as many
    collectives as the whole loop's (its all-reduces overlap the weight
    gradients' GEMMs already), its halves still read the forward's stacked
    halves.

    On CPU threads the halves' smaller GEMMs cost more than the overlap
    hides (docs/performance.md), so it is not on by default.
    Added by meshc with `--interleave-halves` where collectives overlap
    (`--overlap-limit` not 0); runs after
    `mtf-hoist-loop-reductions`, before `mtf-fuse`
    (`--interleave-halves=forward` sets `join-reverse`).
  }];
  let options = [
    Option<"joinReverse", "join-reverse", "bool", /*default=*/"false",
           "in a reverse loop, all-reduce both halves of a value at once">,
  ];
  let dependentDialects = ["::mlir::mtf::MtfDialect",
                           "::mlir::shard::ShardDialect"];
}

def MtfKeepGathered : Pass<"mtf-keep-gathered", "::mlir::ModuleOp"> {
  let summary = "reads what an earlier loop over the same layers gathered "
                "instead of gathering it again";
  let description = [{
    In every local program, an all-gather (plain or combined, of equal
    blocks) of a loop's body each of whose inputs a body of an earlier loop
    over the same dim and count gathers the same way (the same grid axes
    and gather axis, from the same stacked or invariant operands through
    the same ops) is removed: the earlier loop yields each of those
    gathered values (as the later body reads them: `mtf.from_tensor`) as a
    new stacked result, and the later loop reads it as a new stacked
    operand. Under `--shard-params` the backward's gathers of a layer's
    weights (for its gradients, and for the forward recomputed under
    `--remat`) are the forward's: each layer is gathered once per step, not
    twice (FSDP's `reshard_after_forward=False`; ZeRO-1's communication
    with the parameters split between steps). The cost: every layer's
    gathered weights (bf16 under `--precision=bf16`) are live from the
    forward to the backward.

    Added by meshc with `--keep-gathered`; runs after
    `mtf-combine-collectives`, before `mtf-prefetch-gathers` (which then
    prefetches the forward's gathers; the backward has none left).
  }];
  let dependentDialects = ["::mlir::mtf::MtfDialect",
                           "::mlir::shard::ShardDialect"];
}

def MtfPrefetchGathers : Pass<"mtf-prefetch-gathers", "::mlir::ModuleOp"> {
  let summary = "gathers the next layer's weights while a loop's iteration "
                "computes with this one's";
  let description = [{
    In every local program, each loop of two or more iterations whose body
    all-gathers (plainly or combined, of equal blocks) values made from
    its stacked arguments (one at least) and invariant ones alone, through
    views and casts of floats, and reads the gathered results through
    `mtf.from_tensor` alone (a layer's weights under --shard-params, which
    mtf-combine-collectives hoisted to the top of the body), gathers the
    next iteration's instead:

    - before the loop, each stacked operand those gathers read is sliced at
      the first iteration (the last of a reverse loop: a window and a
      sum over its dim of one) and copied moved by one iteration (a window:
      position i holds slice i + 1, or i - 1 in a reverse loop, zeros at
      the end); the gathers are made once there, of the first slices;
    - the loop carries the gathered values (new carried operands after its
      own, new finals nobody reads); the body's readers read the carried
      arguments, and the body makes the gathers again from the moved
      stacked arguments (new stacked operands after its own), yielding
      them as the next iteration's.

    The values are the same; each gather's result is read one iteration
    later, so mtf-overlap-collectives starts it at the body's top and waits
    for it before the yield: it runs beside the whole iteration. The cost:
    the moved copy of those stacked operands (the shards, under
    --shard-params), two layers' gathered values live at once, and one
    gather in the last iteration whose values are not read.

    Added by meshc where collectives overlap (`--overlap-limit` not 0)
    unless `--no-prefetch`; runs after `mtf-combine-collectives`.
  }];
  let dependentDialects = ["::mlir::mtf::MtfDialect",
                           "::mlir::shard::ShardDialect"];
}

def MtfOverlapCollectives
    : Pass<"mtf-overlap-collectives", "::mlir::ModuleOp"> {
  let summary = "starts each collective as early as its inputs allow and "
                "waits for it just before its result is first used";
  let description = [{
    First each loop body's ops are reordered for overlap (with `schedule`,
    the default; lowering/ScheduleForOverlap.h): uses after definitions, a
    collective as soon as its inputs are made (an all-reduce or permute
    after the other readers of its inputs), the ops that lead to the first
    collective the body reads before the others, and the ops that need no
    collective in flight before those that do.

    In every local program (and each loop's body, once), a collective that
    communicates (all-reduce, all-gather, reduce-scatter, all-to-all,
    collective permute; plain or combined) becomes a started collective and
    an `mtf.wait`: the collective moves up, past the ops that touch none of
    its buffers, to just after the op that makes its last input; the wait
    goes down, past such ops, to just before the first op that reads its
    result. The ops in between run while the collective communicates
    (docs/mprog.md#overlapped-collectives). An op touches a buffer when it
    reads or writes the collective's inputs or results or a view of them
    (after the start of an all-gather, reduce-scatter or all-to-all, which
    copy their inputs where they start, only their results count);
    neither end moves past an op of another phase, an `mtf.assign` (it
    writes its parameter by name), or out of its block. A collective with no computing step to overlap
    stays as it was.

    Started collectives keep their buffers live from start to wait: the
    bytes of the collectives in flight at any op (inputs and results) stay
    within `in-flight-bytes`; a collective that would go beyond moves less
    far, or not at all. The values are the blocking program's: the
    collective reads the same inputs and writes the same results, and
    nothing in between looks at them.

    Across iterations: in a loop body of two or more iterations, a wait that
    reaches the body's end and whose results are only yielded as stacked
    values (each iteration's own slice; a gradient of the layer) becomes a
    carried wait (`carried = N`): the collective also runs beside the next
    iteration's ops from the body's start up to the first that does not
    pass (usually the one that makes its input again), which gets
    `mtf.resumes` listing N; there the iteration before's collective
    completes, and the last one when the loop ends. Its buffers must be the
    body's own (no loop argument). No later end moves past a resume point.

    `meshc --overlap-limit` sets `in-flight-bytes` (0: the pass is
    skipped). Runs last, after `mtf-combine-collectives`.
  }];
  let options = [
    Option<"inFlightBytes", "in-flight-bytes", "int64_t",
           /*default=*/"1 << 30",
           "the most bytes of collectives in flight at once">,
    Option<"schedule", "schedule", "bool", /*default=*/"true",
           "reorder each loop body's ops first so that the ops that do not "
           "need a collective's result run before its first reader "
           "(lowering/ScheduleForOverlap.h)">,
  ];
  let dependentDialects = ["::mlir::mtf::MtfDialect",
                           "::mlir::shard::ShardDialect"];
}

#endif // MESHC_LOWERING_PASSES_TD
