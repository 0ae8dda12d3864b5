// RUN: meshc-opt %s -split-input-file -mtf-prefetch-gathers | FileCheck %s
// The printed form parses back (and verifies) unchanged:
// RUN: meshc-opt %s -split-input-file -mtf-prefetch-gathers | meshc-opt -split-input-file | FileCheck %s
// Then mtf-overlap-collectives starts the gather at the body's top and
// waits for it just before the yield: it runs beside the whole iteration.
// RUN: meshc-opt %s -split-input-file -mtf-prefetch-gathers -mtf-overlap-collectives | FileCheck %s --check-prefix=OVERLAP
// mtf-prefetch-gathers (lowering/Passes.td): a loop body's gather of its
// layer's weights gathers the next layer's, carried to the next iteration.

shard.grid @mesh(shape = 2)

// A layer's weight shard, cast to bf16 and gathered: before the loop, the
// first layer's slice (a window and a sum over its dim of one) is cast and
// gathered, and the stacked shard moved by one layer; the loop carries
// the gathered weight, which the einsum reads; the body gathers the next
// layer's from the moved argument and yields it. The forward's cast, also
// stacked for the backward, stays.
// CHECK-LABEL: mtf.program @forward local
// CHECK: %[[W:.*]] = mtf.param "w"
// CHECK: %[[ONE:.*]] = mtf.window %[[W]] from "layers" to "layers_first" offset 0 {mtf.layout = #mtf.layout<d: x>} : !mtf.tensor<[layers=3, d=4, e=8], f32> -> !mtf.tensor<[layers_first=1, d=4, e=8], f32>
// CHECK: %[[FIRST:.*]] = mtf.reduce_sum %[[ONE]] {{.*}} -> !mtf.tensor<[d=4, e=8], f32>
// CHECK: %[[MOVED:.*]] = mtf.window %[[W]] from "layers" to "layers" offset 1 {{.*}} -> !mtf.tensor<[layers=3, d=4, e=8], f32>
// CHECK: %[[C0:.*]] = mtf.cast %[[FIRST]]
// CHECK: %[[T0:.*]] = mtf.to_tensor %[[C0]]
// CHECK: %[[G0:.*]] = shard.all_gather %[[T0]] on @mesh grid_axes = [0] gather_axis = 0
// CHECK: %[[INITIAL:.*]] = mtf.from_tensor %[[G0]] : tensor<8x8xbf16> -> !mtf.tensor<[d=8, e=8], bf16>
// CHECK: %{{.*}}:2, %{{.*}} = mtf.loop "layers" 3 carry(%{{.*}}, %[[INITIAL]] : !mtf.tensor<[b=4, d=8], bf16>, !mtf.tensor<[d=8, e=8], bf16>) stacked(%[[W]], %[[MOVED]] :
// CHECK-NEXT: ^bb0(%[[H:.*]]: !mtf.tensor<[b=4, d=8], bf16>, %[[GATHERED:.*]]: !mtf.tensor<[d=8, e=8], bf16>, %[[WI:.*]]: !mtf.tensor<[d=4, e=8], f32>, %[[NEXT:.*]]: !mtf.tensor<[d=4, e=8], f32>):
// CHECK-NEXT: %[[C1:.*]] = mtf.cast %[[NEXT]]
// CHECK-NEXT: %[[T1:.*]] = mtf.to_tensor %[[C1]]
// CHECK-NEXT: %[[G1:.*]] = shard.all_gather %[[T1]]
// CHECK-NEXT: %[[F1:.*]] = mtf.from_tensor %[[G1]]
// CHECK-NEXT: %[[KEPT:.*]] = mtf.cast %[[WI]]
// CHECK-NEXT: mtf.einsum %[[H]], %[[GATHERED]]
// CHECK-NOT: all_gather
// CHECK: mtf.yield %{{.*}}, %[[F1]], %[[KEPT]] :
// OVERLAP-LABEL: mtf.program @forward local
// OVERLAP: ^bb0
// OVERLAP-NEXT: mtf.cast
// OVERLAP-NEXT: mtf.to_tensor
// OVERLAP-NEXT: shard.all_gather
// OVERLAP: mtf.einsum
// OVERLAP: mtf.wait
// OVERLAP-NEXT: mtf.from_tensor
// OVERLAP-NEXT: mtf.yield
mtf.program @forward local {
  %x = mtf.input "x" : !mtf.tensor<[b=4, d=8], bf16>
  %w = mtf.param "w" normal(0.0, 0.1) {mtf.layout = #mtf.layout<d: x>} : !mtf.tensor<[layers=3, d=4, e=8], f32>
  %y, %kept = mtf.loop "layers" 3 carry(%x : !mtf.tensor<[b=4, d=8], bf16>) stacked(%w : !mtf.tensor<[layers=3, d=4, e=8], f32>) -> (!mtf.tensor<[b=4, d=8], bf16>) stacked(!mtf.tensor<[layers=3, d=4, e=8], bf16>) {
  ^bb0(%h: !mtf.tensor<[b=4, d=8], bf16>, %wi: !mtf.tensor<[d=4, e=8], f32>):
    %c = mtf.cast %wi {mtf.layout = #mtf.layout<d: x>} : !mtf.tensor<[d=4, e=8], f32> -> !mtf.tensor<[d=4, e=8], bf16>
    %t = mtf.to_tensor %c : !mtf.tensor<[d=4, e=8], bf16> -> tensor<4x8xbf16>
    %g = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xbf16> -> tensor<8x8xbf16>
    %wg = mtf.from_tensor %g : tensor<8x8xbf16> -> !mtf.tensor<[d=8, e=8], bf16>
    %o = mtf.einsum %h, %wg : !mtf.tensor<[b=4, d=8], bf16>, !mtf.tensor<[d=8, e=8], bf16> -> !mtf.tensor<[b=4, e=8], bf16>
    %n = mtf.rename %o "e" to "d" : !mtf.tensor<[b=4, e=8], bf16> -> !mtf.tensor<[b=4, d=8], bf16>
    mtf.yield %n, %c : !mtf.tensor<[b=4, d=8], bf16>, !mtf.tensor<[d=4, e=8], bf16>
  }
  mtf.output "y" %y : !mtf.tensor<[b=4, d=8], bf16>
  mtf.output "kept" %kept : !mtf.tensor<[layers=3, d=4, e=8], bf16>
}

// -----

shard.grid @mesh(shape = 2)

// A reverse loop gathers the layer before: its first slice is the last
// (offset 2) and its moved copy holds slice i - 1 at position i.
// CHECK-LABEL: mtf.program @backward local
// CHECK: mtf.window %{{.*}} from "layers" to "layers_first" offset 2
// CHECK: mtf.window %{{.*}} from "layers" to "layers" offset -1
// CHECK: mtf.loop "layers" 3 reverse carry(
mtf.program @backward local {
  %x = mtf.input "x" : !mtf.tensor<[b=4, d=8], f32>
  %w = mtf.param "w" normal(0.0, 0.1) : !mtf.tensor<[layers=3, d=4, e=8], f32>
  %y = mtf.loop "layers" 3 reverse carry(%x : !mtf.tensor<[b=4, d=8], f32>) stacked(%w : !mtf.tensor<[layers=3, d=4, e=8], f32>) -> (!mtf.tensor<[b=4, d=8], f32>) attributes {mtf.phase = "backward"} {
  ^bb0(%h: !mtf.tensor<[b=4, d=8], f32>, %wi: !mtf.tensor<[d=4, e=8], f32>):
    %t = mtf.to_tensor %wi : !mtf.tensor<[d=4, e=8], f32> -> tensor<4x8xf32>
    %g = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
    %wg = mtf.from_tensor %g : tensor<8x8xf32> -> !mtf.tensor<[d=8, e=8], f32>
    %o = mtf.einsum %h, %wg : !mtf.tensor<[b=4, d=8], f32>, !mtf.tensor<[d=8, e=8], f32> -> !mtf.tensor<[b=4, e=8], f32>
    %n = mtf.rename %o "e" to "d" : !mtf.tensor<[b=4, e=8], f32> -> !mtf.tensor<[b=4, d=8], f32>
    mtf.yield %n : !mtf.tensor<[b=4, d=8], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[b=4, d=8], f32>
}

// -----

shard.grid @mesh(shape = 2)

// Left alone: a gather of a carried value (the activations), and a loop
// of one iteration.
// CHECK-LABEL: mtf.program @carried local
// CHECK-NOT: mtf.window
// CHECK: mtf.loop "layers" 3 carry(%{{[^,]*}} : !mtf.tensor<[b=2, d=8], f32>)
// CHECK-LABEL: mtf.program @once local
// CHECK-NOT: mtf.window
mtf.program @carried local {
  %x = mtf.input "x" : !mtf.tensor<[b=2, d=8], f32>
  %y = mtf.loop "layers" 3 carry(%x : !mtf.tensor<[b=2, d=8], f32>) -> (!mtf.tensor<[b=2, d=8], f32>) {
  ^bb0(%h: !mtf.tensor<[b=2, d=8], f32>):
    %t = mtf.to_tensor %h : !mtf.tensor<[b=2, d=8], f32> -> tensor<2x8xf32>
    %g = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x8xf32> -> tensor<4x8xf32>
    %a = mtf.from_tensor %g : tensor<4x8xf32> -> !mtf.tensor<[b=4, d=8], f32>
    %s = mtf.reduce_sum %a : !mtf.tensor<[b=4, d=8], f32> -> !mtf.tensor<[d=8], f32>
    %n = mtf.add %h, %s : !mtf.tensor<[b=2, d=8], f32>, !mtf.tensor<[d=8], f32> -> !mtf.tensor<[b=2, d=8], f32>
    mtf.yield %n : !mtf.tensor<[b=2, d=8], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[b=2, d=8], f32>
}
mtf.program @once local {
  %x = mtf.input "x" : !mtf.tensor<[b=4, d=8], f32>
  %w = mtf.param "w" normal(0.0, 0.1) : !mtf.tensor<[layers=1, d=4, e=8], f32>
  %y = mtf.loop "layers" 1 carry(%x : !mtf.tensor<[b=4, d=8], f32>) stacked(%w : !mtf.tensor<[layers=1, d=4, e=8], f32>) -> (!mtf.tensor<[b=4, d=8], f32>) {
  ^bb0(%h: !mtf.tensor<[b=4, d=8], f32>, %wi: !mtf.tensor<[d=4, e=8], f32>):
    %t = mtf.to_tensor %wi : !mtf.tensor<[d=4, e=8], f32> -> tensor<4x8xf32>
    %g = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
    %wg = mtf.from_tensor %g : tensor<8x8xf32> -> !mtf.tensor<[d=8, e=8], f32>
    %o = mtf.einsum %h, %wg : !mtf.tensor<[b=4, d=8], f32>, !mtf.tensor<[d=8, e=8], f32> -> !mtf.tensor<[b=4, e=8], f32>
    %n = mtf.rename %o "e" to "d" : !mtf.tensor<[b=4, e=8], f32> -> !mtf.tensor<[b=4, d=8], f32>
    mtf.yield %n : !mtf.tensor<[b=4, d=8], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[b=4, d=8], f32>
}

// -----

shard.grid @mesh(shape = 2)

// A half's gather of its stacked layer input (mtf-interleave-halves): the
// copy before the loop computes no half (mtf.half is an op of a loop body's).
// CHECK-LABEL: mtf.program @half local
// CHECK: shard.all_gather %{{.*}} on @mesh grid_axes = [0] gather_axis = 1 {mtf.phase = "backward"} : tensor<2x8xf32> -> tensor<2x16xf32>
// CHECK: mtf.loop "layers" 3 reverse
// CHECK: shard.all_gather %{{.*}} {mtf.half = 0 : i64,
mtf.program @half local {
  %g = mtf.input "g" : !mtf.tensor<[b=2, d=16], f32>
  %xs = mtf.input "xs" : !mtf.tensor<[layers=3, b=2, d=8], f32>
  %y = mtf.loop "layers" 3 reverse carry(%g : !mtf.tensor<[b=2, d=16], f32>) stacked(%xs : !mtf.tensor<[layers=3, b=2, d=8], f32>) -> (!mtf.tensor<[b=2, d=16], f32>) attributes {mtf.phase = "backward"} {
  ^bb0(%h: !mtf.tensor<[b=2, d=16], f32>, %xi: !mtf.tensor<[b=2, d=8], f32>):
    %t = mtf.to_tensor %xi {mtf.half = 0 : i64, mtf.phase = "backward"} : !mtf.tensor<[b=2, d=8], f32> -> tensor<2x8xf32>
    %a = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 1 {mtf.half = 0 : i64, mtf.phase = "backward"} : tensor<2x8xf32> -> tensor<2x16xf32>
    %x = mtf.from_tensor %a {mtf.half = 0 : i64, mtf.phase = "backward"} : tensor<2x16xf32> -> !mtf.tensor<[b=2, d=16], f32>
    %n = mtf.mul %h, %x {mtf.half = 0 : i64, mtf.phase = "backward"} : !mtf.tensor<[b=2, d=16], f32>, !mtf.tensor<[b=2, d=16], f32> -> !mtf.tensor<[b=2, d=16], f32>
    mtf.yield %n : !mtf.tensor<[b=2, d=16], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[b=2, d=16], f32>
}
