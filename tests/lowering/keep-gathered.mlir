// RUN: meshc-opt %s -split-input-file -mtf-keep-gathered | FileCheck %s
// The printed form parses back (and verifies) unchanged:
// RUN: meshc-opt %s -split-input-file -mtf-keep-gathered | meshc-opt -split-input-file | FileCheck %s
// Then mtf-prefetch-gathers prefetches the forward's gather alone: the
// backward has none left.
// RUN: meshc-opt %s -split-input-file -mtf-keep-gathered -mtf-prefetch-gathers | FileCheck %s --check-prefix=PREFETCH
// mtf-keep-gathered (lowering/Passes.td): a later loop's gather of what an
// earlier loop over the same layers gathers reads the earlier one's,
// stacked.

shard.grid @mesh(shape = 2)

// The forward and the backward (a reverse loop, the weight cast in its own
// phase) gather the same layer's weight, cast to bf16: the forward yields
// the gathered weight as a new stacked result; the backward reads it as a
// new stacked operand, its cast, gather and view erased.
// CHECK-LABEL: mtf.program @train local
// CHECK: %[[W:.*]] = mtf.param "w"
// CHECK: %{{.*}}, %[[KEPT:.*]] = mtf.loop "layers" 3 carry(%{{.*}}) stacked(%[[W]] : !mtf.tensor<[layers=3, d=4, e=8], f32>) -> (!mtf.tensor<[b=4, d=8], bf16>) stacked(!mtf.tensor<[layers=3, d=8, e=8], bf16>)
// CHECK: %[[G:.*]] = shard.all_gather
// CHECK-NEXT: %[[WG:.*]] = mtf.from_tensor %[[G]]
// CHECK: mtf.yield %{{.*}}, %[[WG]] :
// CHECK: mtf.loop "layers" 3 reverse carry(%{{.*}}) stacked(%[[W]], %[[KEPT]] : !mtf.tensor<[layers=3, d=4, e=8], f32>, !mtf.tensor<[layers=3, d=8, e=8], bf16>)
// CHECK-NEXT: ^bb0(%[[D:.*]]: !mtf.tensor<[b=4, d=8], bf16>, %{{.*}}: !mtf.tensor<[d=4, e=8], f32>, %[[WB:.*]]: !mtf.tensor<[d=8, e=8], bf16>):
// CHECK-NOT: all_gather
// CHECK-NOT: mtf.cast
// CHECK: mtf.einsum %[[D]], %[[WB]]
// CHECK: mtf.yield
// PREFETCH-LABEL: mtf.program @train local
// PREFETCH-COUNT-2: shard.all_gather
// PREFETCH-NOT: shard.all_gather
// PREFETCH: mtf.loop "layers" 3 reverse
// PREFETCH-NOT: shard.all_gather
mtf.program @train local {
  %x = mtf.input "x" : !mtf.tensor<[b=4, d=8], bf16>
  %w = mtf.param "w" normal(0.0, 0.1) {mtf.layout = #mtf.layout<d: x>} : !mtf.tensor<[layers=3, d=4, e=8], f32>
  %y = mtf.loop "layers" 3 carry(%x : !mtf.tensor<[b=4, d=8], bf16>) stacked(%w : !mtf.tensor<[layers=3, d=4, e=8], f32>) -> (!mtf.tensor<[b=4, d=8], bf16>) {
  ^bb0(%h: !mtf.tensor<[b=4, d=8], bf16>, %wi: !mtf.tensor<[d=4, e=8], f32>):
    %c = mtf.cast %wi {mtf.layout = #mtf.layout<d: x>} : !mtf.tensor<[d=4, e=8], f32> -> !mtf.tensor<[d=4, e=8], bf16>
    %t = mtf.to_tensor %c : !mtf.tensor<[d=4, e=8], bf16> -> tensor<4x8xbf16>
    %g = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xbf16> -> tensor<8x8xbf16>
    %wg = mtf.from_tensor %g : tensor<8x8xbf16> -> !mtf.tensor<[d=8, e=8], bf16>
    %o = mtf.einsum %h, %wg : !mtf.tensor<[b=4, d=8], bf16>, !mtf.tensor<[d=8, e=8], bf16> -> !mtf.tensor<[b=4, e=8], bf16>
    %n = mtf.rename %o "e" to "d" : !mtf.tensor<[b=4, e=8], bf16> -> !mtf.tensor<[b=4, d=8], bf16>
    mtf.yield %n : !mtf.tensor<[b=4, d=8], bf16>
  }
  %dx = mtf.loop "layers" 3 reverse carry(%y : !mtf.tensor<[b=4, d=8], bf16>) stacked(%w : !mtf.tensor<[layers=3, d=4, e=8], f32>) -> (!mtf.tensor<[b=4, d=8], bf16>) {
  ^bb0(%d: !mtf.tensor<[b=4, d=8], bf16>, %wi: !mtf.tensor<[d=4, e=8], f32>):
    %c = mtf.cast %wi {mtf.instance = "layers", mtf.layout = #mtf.layout<d: x>, mtf.phase = "backward"} : !mtf.tensor<[d=4, e=8], f32> -> !mtf.tensor<[d=4, e=8], bf16>
    %t = mtf.to_tensor %c {mtf.phase = "backward"} : !mtf.tensor<[d=4, e=8], bf16> -> tensor<4x8xbf16>
    %g = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 0 {mtf.phase = "backward", mtf.reason = "the backward's"} : tensor<4x8xbf16> -> tensor<8x8xbf16>
    %wg = mtf.from_tensor %g {mtf.phase = "backward"} : tensor<8x8xbf16> -> !mtf.tensor<[d=8, e=8], bf16>
    %o = mtf.einsum %d, %wg {mtf.phase = "backward"} : !mtf.tensor<[b=4, d=8], bf16>, !mtf.tensor<[d=8, e=8], bf16> -> !mtf.tensor<[b=4, e=8], bf16>
    %n = mtf.rename %o "e" to "d" {mtf.phase = "backward"} : !mtf.tensor<[b=4, e=8], bf16> -> !mtf.tensor<[b=4, d=8], bf16>
    mtf.yield %n : !mtf.tensor<[b=4, d=8], bf16>
  }
  mtf.output "dx" %dx : !mtf.tensor<[b=4, d=8], bf16>
}

// -----

shard.grid @mesh(shape = 2)

// Left as they are: a later gather along another axis, one of another
// stacked operand, and one of a carried value (not the same in every
// iteration of both loops).
// CHECK-LABEL: mtf.program @apart local
// PREFETCH-LABEL: mtf.program @apart local
// CHECK-COUNT-5: shard.all_gather
// CHECK-NOT: stacked(!mtf.tensor<[layers=3, d=8
mtf.program @apart local {
  %x = mtf.input "x" : !mtf.tensor<[b=4, d=8], f32>
  %w = mtf.param "w" normal(0.0, 0.1) : !mtf.tensor<[layers=3, d=4, e=4], f32>
  %v = mtf.param "v" normal(0.0, 0.1) : !mtf.tensor<[layers=3, d=4, e=4], f32>
  %y = mtf.loop "layers" 3 carry(%x : !mtf.tensor<[b=4, d=8], f32>) stacked(%w : !mtf.tensor<[layers=3, d=4, e=4], f32>) -> (!mtf.tensor<[b=4, d=8], f32>) {
  ^bb0(%h: !mtf.tensor<[b=4, d=8], f32>, %wi: !mtf.tensor<[d=4, e=4], f32>):
    %t = mtf.to_tensor %wi : !mtf.tensor<[d=4, e=4], f32> -> tensor<4x4xf32>
    %g = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
    %wg = mtf.from_tensor %g : tensor<8x4xf32> -> !mtf.tensor<[d=8, e=4], f32>
    %o = mtf.einsum %h, %wg : !mtf.tensor<[b=4, d=8], f32>, !mtf.tensor<[d=8, e=4], f32> -> !mtf.tensor<[b=4, e=4], f32>
    %p = mtf.to_tensor %h : !mtf.tensor<[b=4, d=8], f32> -> tensor<4x8xf32>
    %q = shard.all_gather %p on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
    %r = mtf.from_tensor %q : tensor<8x8xf32> -> !mtf.tensor<[b=8, d=8], f32>
    %s = mtf.reduce_sum %r : !mtf.tensor<[b=8, d=8], f32> -> !mtf.tensor<[d=8], f32>
    %n = mtf.add %h, %s : !mtf.tensor<[b=4, d=8], f32>, !mtf.tensor<[d=8], f32> -> !mtf.tensor<[b=4, d=8], f32>
    mtf.yield %n : !mtf.tensor<[b=4, d=8], f32>
  }
  %z = mtf.loop "layers" 3 reverse carry(%y : !mtf.tensor<[b=4, d=8], f32>) stacked(%w, %v : !mtf.tensor<[layers=3, d=4, e=4], f32>, !mtf.tensor<[layers=3, d=4, e=4], f32>) -> (!mtf.tensor<[b=4, d=8], f32>) {
  ^bb0(%h: !mtf.tensor<[b=4, d=8], f32>, %wi: !mtf.tensor<[d=4, e=4], f32>, %vi: !mtf.tensor<[d=4, e=4], f32>):
    %t = mtf.to_tensor %wi : !mtf.tensor<[d=4, e=4], f32> -> tensor<4x4xf32>
    %g = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 1 : tensor<4x4xf32> -> tensor<4x8xf32>
    %wg = mtf.from_tensor %g : tensor<4x8xf32> -> !mtf.tensor<[d=4, e=8], f32>
    %tv = mtf.to_tensor %vi : !mtf.tensor<[d=4, e=4], f32> -> tensor<4x4xf32>
    %gv = shard.all_gather %tv on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
    %vg = mtf.from_tensor %gv : tensor<8x4xf32> -> !mtf.tensor<[d=8, e=4], f32>
    %p = mtf.to_tensor %h : !mtf.tensor<[b=4, d=8], f32> -> tensor<4x8xf32>
    %q = shard.all_gather %p on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
    %r = mtf.from_tensor %q : tensor<8x8xf32> -> !mtf.tensor<[b=8, d=8], f32>
    %s = mtf.reduce_sum %r : !mtf.tensor<[b=8, d=8], f32> -> !mtf.tensor<[d=8], f32>
    %n = mtf.add %h, %s : !mtf.tensor<[b=4, d=8], f32>, !mtf.tensor<[d=8], f32> -> !mtf.tensor<[b=4, d=8], f32>
    mtf.yield %n : !mtf.tensor<[b=4, d=8], f32>
  }
  mtf.output "z" %z : !mtf.tensor<[b=4, d=8], f32>
}

// -----

shard.grid @mesh(shape = 2)

// The backward gathers the forward's cast of the weight, stacked for it
// (no recomputation): the same value the forward gathers.
// CHECK-LABEL: mtf.program @stacked_cast local
// CHECK: %{{.*}}, %[[R:.*]]:2 = mtf.loop "layers" 3
// CHECK: mtf.loop "layers" 3 reverse carry(%{{.*}}) stacked(%[[R]]#0, %[[R]]#1 :
// CHECK-NOT: all_gather
// CHECK: mtf.output "dx"
mtf.program @stacked_cast local {
  %x = mtf.input "x" : !mtf.tensor<[b=4, d=8], bf16>
  %w = mtf.param "w" normal(0.0, 0.1) {mtf.layout = #mtf.layout<d: x>} : !mtf.tensor<[layers=3, d=4, e=8], f32>
  %y, %casts = mtf.loop "layers" 3 carry(%x : !mtf.tensor<[b=4, d=8], bf16>) stacked(%w : !mtf.tensor<[layers=3, d=4, e=8], f32>) -> (!mtf.tensor<[b=4, d=8], bf16>) stacked(!mtf.tensor<[layers=3, d=4, e=8], bf16>) {
  ^bb0(%h: !mtf.tensor<[b=4, d=8], bf16>, %wi: !mtf.tensor<[d=4, e=8], f32>):
    %c = mtf.cast %wi {mtf.layout = #mtf.layout<d: x>} : !mtf.tensor<[d=4, e=8], f32> -> !mtf.tensor<[d=4, e=8], bf16>
    %t = mtf.to_tensor %c : !mtf.tensor<[d=4, e=8], bf16> -> tensor<4x8xbf16>
    %g = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xbf16> -> tensor<8x8xbf16>
    %wg = mtf.from_tensor %g : tensor<8x8xbf16> -> !mtf.tensor<[d=8, e=8], bf16>
    %o = mtf.einsum %h, %wg : !mtf.tensor<[b=4, d=8], bf16>, !mtf.tensor<[d=8, e=8], bf16> -> !mtf.tensor<[b=4, e=8], bf16>
    %n = mtf.rename %o "e" to "d" : !mtf.tensor<[b=4, e=8], bf16> -> !mtf.tensor<[b=4, d=8], bf16>
    mtf.yield %n, %c : !mtf.tensor<[b=4, d=8], bf16>, !mtf.tensor<[d=4, e=8], bf16>
  }
  %dx = mtf.loop "layers" 3 reverse carry(%y : !mtf.tensor<[b=4, d=8], bf16>) stacked(%casts : !mtf.tensor<[layers=3, d=4, e=8], bf16>) -> (!mtf.tensor<[b=4, d=8], bf16>) {
  ^bb0(%d: !mtf.tensor<[b=4, d=8], bf16>, %ci: !mtf.tensor<[d=4, e=8], bf16>):
    %t = mtf.to_tensor %ci {mtf.phase = "backward"} : !mtf.tensor<[d=4, e=8], bf16> -> tensor<4x8xbf16>
    %g = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 0 {mtf.phase = "backward"} : tensor<4x8xbf16> -> tensor<8x8xbf16>
    %wg = mtf.from_tensor %g {mtf.phase = "backward"} : tensor<8x8xbf16> -> !mtf.tensor<[d=8, e=8], bf16>
    %o = mtf.einsum %d, %wg {mtf.phase = "backward"} : !mtf.tensor<[b=4, d=8], bf16>, !mtf.tensor<[d=8, e=8], bf16> -> !mtf.tensor<[b=4, e=8], bf16>
    %n = mtf.rename %o "e" to "d" {mtf.phase = "backward"} : !mtf.tensor<[b=4, e=8], bf16> -> !mtf.tensor<[b=4, d=8], bf16>
    mtf.yield %n : !mtf.tensor<[b=4, d=8], bf16>
  }
  mtf.output "dx" %dx : !mtf.tensor<[b=4, d=8], bf16>
}

// -----

shard.grid @mesh(shape = 2)

// The backward gathers the weight twice (uncombined: --bucket-size 0, for
// the recomputed forward and for its own einsum): the forward stacks it
// once and both read it. A loop over another count gathers its own.
// CHECK-LABEL: mtf.program @twice local
// CHECK: %{{.*}}, %[[KEPT:.*]] = mtf.loop "layers" 3 carry(%{{.*}}) stacked(%{{.*}} : !mtf.tensor<[layers=3, d=4, e=8], f32>) -> (!mtf.tensor<[b=4, d=8], f32>) stacked(!mtf.tensor<[layers=3, d=8, e=8], f32>) {
// CHECK: mtf.loop "layers" 3 reverse carry(%{{.*}}) stacked(%{{.*}}, %[[KEPT]], %[[KEPT]] :
// CHECK-NOT: all_gather
// CHECK: mtf.yield
// CHECK: mtf.loop "layers" 2
// CHECK: shard.all_gather
mtf.program @twice local {
  %x = mtf.input "x" : !mtf.tensor<[b=4, d=8], f32>
  %w = mtf.param "w" normal(0.0, 0.1) : !mtf.tensor<[layers=3, d=4, e=8], f32>
  %u = mtf.param "u" normal(0.0, 0.1) : !mtf.tensor<[layers=2, d=4, e=8], f32>
  %y = mtf.loop "layers" 3 carry(%x : !mtf.tensor<[b=4, d=8], f32>) stacked(%w : !mtf.tensor<[layers=3, d=4, e=8], f32>) -> (!mtf.tensor<[b=4, d=8], f32>) {
  ^bb0(%h: !mtf.tensor<[b=4, d=8], f32>, %wi: !mtf.tensor<[d=4, e=8], f32>):
    %t = mtf.to_tensor %wi : !mtf.tensor<[d=4, e=8], f32> -> tensor<4x8xf32>
    %g = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
    %wg = mtf.from_tensor %g : tensor<8x8xf32> -> !mtf.tensor<[d=8, e=8], f32>
    %o = mtf.einsum %h, %wg : !mtf.tensor<[b=4, d=8], f32>, !mtf.tensor<[d=8, e=8], f32> -> !mtf.tensor<[b=4, e=8], f32>
    %n = mtf.rename %o "e" to "d" : !mtf.tensor<[b=4, e=8], f32> -> !mtf.tensor<[b=4, d=8], f32>
    mtf.yield %n : !mtf.tensor<[b=4, d=8], f32>
  }
  %dx = mtf.loop "layers" 3 reverse carry(%y : !mtf.tensor<[b=4, d=8], f32>) stacked(%w : !mtf.tensor<[layers=3, d=4, e=8], f32>) -> (!mtf.tensor<[b=4, d=8], f32>) {
  ^bb0(%d: !mtf.tensor<[b=4, d=8], f32>, %wi: !mtf.tensor<[d=4, e=8], f32>):
    %t = mtf.to_tensor %wi : !mtf.tensor<[d=4, e=8], f32> -> tensor<4x8xf32>
    %g = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
    %wg = mtf.from_tensor %g : tensor<8x8xf32> -> !mtf.tensor<[d=8, e=8], f32>
    %t2 = mtf.to_tensor %wi : !mtf.tensor<[d=4, e=8], f32> -> tensor<4x8xf32>
    %g2 = shard.all_gather %t2 on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
    %wg2 = mtf.from_tensor %g2 : tensor<8x8xf32> -> !mtf.tensor<[d=8, e=8], f32>
    %o = mtf.einsum %d, %wg : !mtf.tensor<[b=4, d=8], f32>, !mtf.tensor<[d=8, e=8], f32> -> !mtf.tensor<[b=4, e=8], f32>
    %o2 = mtf.einsum %o, %wg2 : !mtf.tensor<[b=4, e=8], f32>, !mtf.tensor<[d=8, e=8], f32> -> !mtf.tensor<[b=4, d=8], f32>
    mtf.yield %o2 : !mtf.tensor<[b=4, d=8], f32>
  }
  %z = mtf.loop "layers" 2 carry(%dx : !mtf.tensor<[b=4, d=8], f32>) stacked(%u : !mtf.tensor<[layers=2, d=4, e=8], f32>) -> (!mtf.tensor<[b=4, d=8], f32>) {
  ^bb0(%h: !mtf.tensor<[b=4, d=8], f32>, %ui: !mtf.tensor<[d=4, e=8], f32>):
    %t = mtf.to_tensor %ui : !mtf.tensor<[d=4, e=8], f32> -> tensor<4x8xf32>
    %g = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
    %wg = mtf.from_tensor %g : tensor<8x8xf32> -> !mtf.tensor<[d=8, e=8], f32>
    %o = mtf.einsum %h, %wg : !mtf.tensor<[b=4, d=8], f32>, !mtf.tensor<[d=8, e=8], f32> -> !mtf.tensor<[b=4, e=8], f32>
    %n = mtf.rename %o "e" to "d" : !mtf.tensor<[b=4, e=8], f32> -> !mtf.tensor<[b=4, d=8], f32>
    mtf.yield %n : !mtf.tensor<[b=4, d=8], f32>
  }
  mtf.output "z" %z : !mtf.tensor<[b=4, d=8], f32>
}

// -----

shard.grid @mesh(shape = 2)

// Layouts count: the backward's cast is laid out otherwise than the
// forward's (an op that reads a global index computes its block by its
// layout), so its gather stays.
// CHECK-LABEL: mtf.program @other_layout local
// CHECK: mtf.loop "layers" 3 carry
// CHECK: shard.all_gather
// CHECK: mtf.loop "layers" 3 reverse carry(%{{.*}} : !mtf.tensor<[b=4, d=8], bf16>) stacked(%{{.*}} : !mtf.tensor<[layers=3, d=4, e=8], f32>)
// CHECK: shard.all_gather
mtf.program @other_layout local {
  %x = mtf.input "x" : !mtf.tensor<[b=4, d=8], bf16>
  %w = mtf.param "w" normal(0.0, 0.1) {mtf.layout = #mtf.layout<d: x>} : !mtf.tensor<[layers=3, d=4, e=8], f32>
  %y = mtf.loop "layers" 3 carry(%x : !mtf.tensor<[b=4, d=8], bf16>) stacked(%w : !mtf.tensor<[layers=3, d=4, e=8], f32>) -> (!mtf.tensor<[b=4, d=8], bf16>) {
  ^bb0(%h: !mtf.tensor<[b=4, d=8], bf16>, %wi: !mtf.tensor<[d=4, e=8], f32>):
    %c = mtf.cast %wi {mtf.layout = #mtf.layout<d: x>} : !mtf.tensor<[d=4, e=8], f32> -> !mtf.tensor<[d=4, e=8], bf16>
    %t = mtf.to_tensor %c : !mtf.tensor<[d=4, e=8], bf16> -> tensor<4x8xbf16>
    %g = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xbf16> -> tensor<8x8xbf16>
    %wg = mtf.from_tensor %g : tensor<8x8xbf16> -> !mtf.tensor<[d=8, e=8], bf16>
    %o = mtf.einsum %h, %wg : !mtf.tensor<[b=4, d=8], bf16>, !mtf.tensor<[d=8, e=8], bf16> -> !mtf.tensor<[b=4, e=8], bf16>
    %n = mtf.rename %o "e" to "d" : !mtf.tensor<[b=4, e=8], bf16> -> !mtf.tensor<[b=4, d=8], bf16>
    mtf.yield %n : !mtf.tensor<[b=4, d=8], bf16>
  }
  %dx = mtf.loop "layers" 3 reverse carry(%y : !mtf.tensor<[b=4, d=8], bf16>) stacked(%w : !mtf.tensor<[layers=3, d=4, e=8], f32>) -> (!mtf.tensor<[b=4, d=8], bf16>) {
  ^bb0(%d: !mtf.tensor<[b=4, d=8], bf16>, %wi: !mtf.tensor<[d=4, e=8], f32>):
    %c = mtf.cast %wi {mtf.layout = #mtf.layout<e: x>} : !mtf.tensor<[d=4, e=8], f32> -> !mtf.tensor<[d=4, e=8], bf16>
    %t = mtf.to_tensor %c : !mtf.tensor<[d=4, e=8], bf16> -> tensor<4x8xbf16>
    %g = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xbf16> -> tensor<8x8xbf16>
    %wg = mtf.from_tensor %g : tensor<8x8xbf16> -> !mtf.tensor<[d=8, e=8], bf16>
    %o = mtf.einsum %d, %wg : !mtf.tensor<[b=4, d=8], bf16>, !mtf.tensor<[d=8, e=8], bf16> -> !mtf.tensor<[b=4, e=8], bf16>
    %n = mtf.rename %o "e" to "d" : !mtf.tensor<[b=4, e=8], bf16> -> !mtf.tensor<[b=4, d=8], bf16>
    mtf.yield %n : !mtf.tensor<[b=4, d=8], bf16>
  }
  mtf.output "dx" %dx : !mtf.tensor<[b=4, d=8], bf16>
}
