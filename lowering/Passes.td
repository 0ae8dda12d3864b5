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
    - softmax and cross-entropy gather their class dimension.

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

#endif // MESHC_LOWERING_PASSES_TD
