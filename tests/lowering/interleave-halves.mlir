// RUN: meshc-opt %s -split-input-file -mtf-interleave-halves | FileCheck %s
// The printed form parses back (and verifies) unchanged:
// RUN: meshc-opt %s -split-input-file -mtf-interleave-halves | meshc-opt -split-input-file | FileCheck %s
// With join-reverse (meshc --interleave-halves=forward) a reverse loop
// all-reduces both halves at once; a forward loop's stay apart:
// RUN: meshc-opt %s -split-input-file -mtf-interleave-halves="join-reverse=1" | FileCheck %s --check-prefix=JOIN
// mtf-interleave-halves (lowering/Passes.td): a loop body that all-reduces
// its activations runs as two halves of the batch, each op once per half.

shard.grid @mesh(shape = 2)

// The carried activations cut in two before the loop (a window each, to a
// dim of their own, renamed back), the body's ops once per half (mtf.half),
// a sum over the batch (a weight's gradient) added from the halves', the
// final value joined after the loop.
// CHECK-LABEL: mtf.program @layers local
// CHECK: %[[A:.*]] = mtf.window %[[X:.*]] from "b" to "b_half" offset 0 : !mtf.tensor<[b=4, d=4], f32> -> !mtf.tensor<[b_half=2, d=4], f32>
// CHECK-NEXT: %[[AR:.*]] = mtf.rename %[[A]] "b_half" to "b" : !mtf.tensor<[b_half=2, d=4], f32> -> !mtf.tensor<[b=2, d=4], f32>
// CHECK-NEXT: %[[B:.*]] = mtf.window %[[X]] from "b" to "b_half" offset 2
// CHECK-NEXT: %[[BR:.*]] = mtf.rename %[[B]] "b_half" to "b"
// CHECK-NEXT: %[[F:.*]]:2, %[[S:.*]] = mtf.loop "layers" 2 carry(%[[AR]], %[[BR]] : !mtf.tensor<[b=2, d=4], f32>, !mtf.tensor<[b=2, d=4], f32>) stacked(%{{.*}} : !mtf.tensor<[layers=2, d=4, e=4], f32>) -> (!mtf.tensor<[b=2, d=4], f32>, !mtf.tensor<[b=2, d=4], f32>) stacked(!mtf.tensor<[layers=2, d=4], f32>)
// CHECK-NEXT: ^bb0(%[[H0:.*]]: !mtf.tensor<[b=2, d=4], f32>, %[[H1:.*]]: !mtf.tensor<[b=2, d=4], f32>, %[[W:.*]]: !mtf.tensor<[d=4, e=4], f32>):
// CHECK-NEXT: mtf.einsum %[[H0]], %[[W]] {mtf.half = 0 : i64}
// CHECK-NEXT: mtf.einsum %[[H1]], %[[W]] {mtf.half = 1 : i64}
// CHECK: shard.all_reduce %{{.*}} on @mesh grid_axes = [0] {mtf.half = 0 : i64} : tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT: shard.all_reduce %{{.*}} on @mesh grid_axes = [0] {mtf.half = 1 : i64} : tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK: %[[G0:.*]] = mtf.reduce_sum %[[H0]] {mtf.half = 0 : i64} : !mtf.tensor<[b=2, d=4], f32> -> !mtf.tensor<[d=4], f32>
// CHECK-NEXT: %[[G1:.*]] = mtf.reduce_sum %[[H1]] {mtf.half = 1 : i64}
// CHECK-NEXT: %[[G:.*]] = mtf.add %[[G0]], %[[G1]] : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32> -> !mtf.tensor<[d=4], f32>
// CHECK: mtf.yield %{{.*}}, %{{.*}}, %[[G]] :
// CHECK: %[[JA:.*]] = mtf.rename %[[F]]#0 "b" to "b_half"
// CHECK-NEXT: %[[PA:.*]] = mtf.window %[[JA]] from "b_half" to "b" offset 0 : !mtf.tensor<[b_half=2, d=4], f32> -> !mtf.tensor<[b=4, d=4], f32>
// CHECK-NEXT: %[[JB:.*]] = mtf.rename %[[F]]#1 "b" to "b_half"
// CHECK-NEXT: %[[PB:.*]] = mtf.window %[[JB]] from "b_half" to "b" offset -2
// CHECK-NEXT: %[[Y:.*]] = mtf.add %[[PA]], %[[PB]]
// CHECK: mtf.output "y" %[[Y]]
// CHECK: mtf.output "g" %[[S]]
mtf.program @layers local {
  %x = mtf.input "x" : !mtf.tensor<[b=4, d=4], f32>
  %w = mtf.param "w" normal(0.0, 0.1) : !mtf.tensor<[layers=2, d=4, e=4], f32>
  %y, %g = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=4, d=4], f32>) stacked(%w : !mtf.tensor<[layers=2, d=4, e=4], f32>) -> (!mtf.tensor<[b=4, d=4], f32>) stacked(!mtf.tensor<[layers=2, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=4, d=4], f32>, %wi: !mtf.tensor<[d=4, e=4], f32>):
    %o = mtf.einsum %h, %wi : !mtf.tensor<[b=4, d=4], f32>, !mtf.tensor<[d=4, e=4], f32> -> !mtf.tensor<[b=4, e=4], f32>
    %ot = mtf.to_tensor %o : !mtf.tensor<[b=4, e=4], f32> -> tensor<4x4xf32>
    %r = shard.all_reduce %ot on @mesh grid_axes = [0] : tensor<4x4xf32> -> tensor<4x4xf32>
    %ro = mtf.from_tensor %r : tensor<4x4xf32> -> !mtf.tensor<[b=4, e=4], f32>
    %n = mtf.rename %ro "e" to "d" : !mtf.tensor<[b=4, e=4], f32> -> !mtf.tensor<[b=4, d=4], f32>
    %s = mtf.reduce_sum %h : !mtf.tensor<[b=4, d=4], f32> -> !mtf.tensor<[d=4], f32>
    mtf.yield %n, %s : !mtf.tensor<[b=4, d=4], f32>, !mtf.tensor<[d=4], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[b=4, d=4], f32>
  mtf.output "g" %g : !mtf.tensor<[layers=2, d=4], f32>
}

// -----

shard.grid @mesh(shape = 2)

// A layer's inputs stacked by the first loop in halves, taken in halves by
// the reverse loop: neither is cut nor joined per layer.
// CHECK-LABEL: mtf.program @stacked local
// CHECK: %{{.*}}:2, %[[XS:.*]]:2 = mtf.loop "layers" 2 carry(
// CHECK: mtf.loop "layers" 2 reverse carry(%{{.*}}, %{{.*}} : !mtf.tensor<[b=2, d=4], f32>, !mtf.tensor<[b=2, d=4], f32>) stacked(%[[XS]]#0, %[[XS]]#1 : !mtf.tensor<[layers=2, b=2, d=4], f32>, !mtf.tensor<[layers=2, b=2, d=4], f32>)
// JOIN-LABEL: mtf.program @stacked local
// JOIN: shard.all_reduce %{{.*}} {mtf.half = 0 : i64}
// JOIN-NEXT: shard.all_reduce %{{.*}} {mtf.half = 1 : i64}
// JOIN: mtf.loop "layers" 2 reverse
// JOIN-NOT: shard.all_reduce
// JOIN: %[[BOTH:.*]]:2 = mtf.combined_all_reduce %{{.*}}, %{{.*}} on @mesh grid_axes = [0] reduction = "sum" {mtf.phase = "backward", mtf.reason = "both halves of the batch at once"} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>, tensor<2x4xf32>
// JOIN-NOT: shard.all_reduce
// JOIN: mtf.from_tensor %[[BOTH]]#0
// JOIN: mtf.from_tensor %[[BOTH]]#1
// JOIN: mtf.yield
mtf.program @stacked local {
  %x = mtf.input "x" : !mtf.tensor<[b=4, d=4], f32>
  %y, %xs = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=4, d=4], f32>) -> (!mtf.tensor<[b=4, d=4], f32>) stacked(!mtf.tensor<[layers=2, b=4, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=4, d=4], f32>):
    %ht = mtf.to_tensor %h : !mtf.tensor<[b=4, d=4], f32> -> tensor<4x4xf32>
    %r = shard.all_reduce %ht on @mesh grid_axes = [0] : tensor<4x4xf32> -> tensor<4x4xf32>
    %ro = mtf.from_tensor %r : tensor<4x4xf32> -> !mtf.tensor<[b=4, d=4], f32>
    mtf.yield %ro, %h : !mtf.tensor<[b=4, d=4], f32>, !mtf.tensor<[b=4, d=4], f32>
  }
  %dy = mtf.loop "layers" 2 reverse carry(%y : !mtf.tensor<[b=4, d=4], f32>) stacked(%xs : !mtf.tensor<[layers=2, b=4, d=4], f32>) -> (!mtf.tensor<[b=4, d=4], f32>) attributes {mtf.phase = "backward"} {
  ^bb0(%g: !mtf.tensor<[b=4, d=4], f32>, %xi: !mtf.tensor<[b=4, d=4], f32>):
    %p = mtf.mul %g, %xi {mtf.phase = "backward"} : !mtf.tensor<[b=4, d=4], f32>, !mtf.tensor<[b=4, d=4], f32> -> !mtf.tensor<[b=4, d=4], f32>
    %pt = mtf.to_tensor %p {mtf.phase = "backward"} : !mtf.tensor<[b=4, d=4], f32> -> tensor<4x4xf32>
    %r = shard.all_reduce %pt on @mesh grid_axes = [0] {mtf.phase = "backward"} : tensor<4x4xf32> -> tensor<4x4xf32>
    %ro = mtf.from_tensor %r {mtf.phase = "backward"} : tensor<4x4xf32> -> !mtf.tensor<[b=4, d=4], f32>
    mtf.yield %ro : !mtf.tensor<[b=4, d=4], f32>
  }
  mtf.output "dy" %dy : !mtf.tensor<[b=4, d=4], f32>
}

// -----

shard.grid @mesh(shape = 2)

// Left whole: a body that all-reduces nothing with the batch; a batch of
// odd size; a mean over the batch; a dropout mask (drawn from each
// element's global index); a loop whose stacked halves nothing would take
// in halves (an output reads them).
// CHECK-LABEL: mtf.program @nothing local
// CHECK-NOT: mtf.half
// CHECK-LABEL: mtf.program @odd local
// CHECK-NOT: mtf.half
// CHECK-LABEL: mtf.program @mean local
// CHECK-NOT: mtf.half
// CHECK-LABEL: mtf.program @dropout local
// CHECK-NOT: mtf.half
// CHECK-LABEL: mtf.program @output local
// CHECK-NOT: mtf.half
mtf.program @nothing local {
  %x = mtf.input "x" : !mtf.tensor<[b=4, d=4], f32>
  %y = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=4, d=4], f32>) -> (!mtf.tensor<[b=4, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=4, d=4], f32>):
    %n = mtf.exp %h : !mtf.tensor<[b=4, d=4], f32>
    mtf.yield %n : !mtf.tensor<[b=4, d=4], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[b=4, d=4], f32>
}
mtf.program @odd local {
  %x = mtf.input "x" : !mtf.tensor<[b=3, d=4], f32>
  %y = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=3, d=4], f32>) -> (!mtf.tensor<[b=3, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=3, d=4], f32>):
    %ht = mtf.to_tensor %h : !mtf.tensor<[b=3, d=4], f32> -> tensor<3x4xf32>
    %r = shard.all_reduce %ht on @mesh grid_axes = [0] : tensor<3x4xf32> -> tensor<3x4xf32>
    %ro = mtf.from_tensor %r : tensor<3x4xf32> -> !mtf.tensor<[b=3, d=4], f32>
    mtf.yield %ro : !mtf.tensor<[b=3, d=4], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[b=3, d=4], f32>
}
mtf.program @mean local {
  %x = mtf.input "x" : !mtf.tensor<[b=4, d=4], f32>
  %y, %m = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=4, d=4], f32>) -> (!mtf.tensor<[b=4, d=4], f32>) stacked(!mtf.tensor<[layers=2, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=4, d=4], f32>):
    %ht = mtf.to_tensor %h : !mtf.tensor<[b=4, d=4], f32> -> tensor<4x4xf32>
    %r = shard.all_reduce %ht on @mesh grid_axes = [0] : tensor<4x4xf32> -> tensor<4x4xf32>
    %ro = mtf.from_tensor %r : tensor<4x4xf32> -> !mtf.tensor<[b=4, d=4], f32>
    %s = mtf.reduce_mean %h : !mtf.tensor<[b=4, d=4], f32> -> !mtf.tensor<[d=4], f32>
    mtf.yield %ro, %s : !mtf.tensor<[b=4, d=4], f32>, !mtf.tensor<[d=4], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[b=4, d=4], f32>
  mtf.output "m" %m : !mtf.tensor<[layers=2, d=4], f32>
}
mtf.program @dropout local {
  %x = mtf.input "x" : !mtf.tensor<[b=4, d=4], f32>
  %y = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=4, d=4], f32>) -> (!mtf.tensor<[b=4, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=4, d=4], f32>):
    %k = mtf.dropout_mask "drop" rate 1.000000e-01 : !mtf.tensor<[b=4, d=4], f32>
    %p = mtf.mul %h, %k : !mtf.tensor<[b=4, d=4], f32>, !mtf.tensor<[b=4, d=4], f32> -> !mtf.tensor<[b=4, d=4], f32>
    %ht = mtf.to_tensor %p : !mtf.tensor<[b=4, d=4], f32> -> tensor<4x4xf32>
    %r = shard.all_reduce %ht on @mesh grid_axes = [0] : tensor<4x4xf32> -> tensor<4x4xf32>
    %ro = mtf.from_tensor %r : tensor<4x4xf32> -> !mtf.tensor<[b=4, d=4], f32>
    mtf.yield %ro : !mtf.tensor<[b=4, d=4], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[b=4, d=4], f32>
}
mtf.program @output local {
  %x = mtf.input "x" : !mtf.tensor<[b=4, d=4], f32>
  %y, %xs = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=4, d=4], f32>) -> (!mtf.tensor<[b=4, d=4], f32>) stacked(!mtf.tensor<[layers=2, b=4, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=4, d=4], f32>):
    %ht = mtf.to_tensor %h : !mtf.tensor<[b=4, d=4], f32> -> tensor<4x4xf32>
    %r = shard.all_reduce %ht on @mesh grid_axes = [0] : tensor<4x4xf32> -> tensor<4x4xf32>
    %ro = mtf.from_tensor %r : tensor<4x4xf32> -> !mtf.tensor<[b=4, d=4], f32>
    mtf.yield %ro, %h : !mtf.tensor<[b=4, d=4], f32>, !mtf.tensor<[b=4, d=4], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[b=4, d=4], f32>
  mtf.output "xs" %xs : !mtf.tensor<[layers=2, b=4, d=4], f32>
}
