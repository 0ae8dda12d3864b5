// RUN: meshc-opt %s --split-input-file --mtf-hoist-loop-reductions | FileCheck %s
// The printed form parses back (and verifies) unchanged:
// RUN: meshc-opt %s --split-input-file --mtf-hoist-loop-reductions | meshc-opt --split-input-file | FileCheck %s
// A stacked tensor larger than the bucket keeps its all-reduce per iteration:
// RUN: meshc-opt %s --split-input-file --mtf-hoist-loop-reductions=bucket-bytes=16 | FileCheck %s --check-prefix=SMALL
// mtf-hoist-loop-reductions: a loop body's all-reduce of a stacked gradient
// moves after the loop.

shard.grid @mesh(shape = 2)

// The gradient of a layer's [d] parameter, all-reduced and rounded through
// bf16 (f32 -> bf16 -> f32), is yielded unreduced; the all-reduce and the two
// casts act on the stacked [layers, d] result once, after the loop. The
// all-reduce of the carried value stays in the body.
// CHECK-LABEL: mtf.program @stacked local
// CHECK: %[[F:.*]], %[[S:.*]] = mtf.loop "layers" 3
// CHECK: shard.all_reduce %{{.*}} on @mesh grid_axes = [0] {mtf.phase = "backward"} : tensor<4xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: mtf.yield %{{.*}}, %{{.*}} : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>
// CHECK: %[[T:.*]] = mtf.to_tensor %[[S]] {mtf.phase = "backward"} : !mtf.tensor<[layers=3, d=4], f32> -> tensor<3x4xf32>
// CHECK-NEXT: %[[R:.*]] = shard.all_reduce %[[T]] on @mesh grid_axes = [0] {mtf.phase = "backward", mtf.reason = "sum over 'batch', once after the loop over 'layers', stacked (mtf-hoist-loop-reductions)"} : tensor<3x4xf32> -> tensor<3x4xf32>
// CHECK-NEXT: %[[V:.*]] = mtf.from_tensor %[[R]] {mtf.phase = "backward"} : tensor<3x4xf32> -> !mtf.tensor<[layers=3, d=4], f32>
// CHECK-NEXT: %[[H:.*]] = mtf.cast %[[V]] {mtf.phase = "backward"} : !mtf.tensor<[layers=3, d=4], f32> -> !mtf.tensor<[layers=3, d=4], bf16>
// CHECK-NEXT: %[[G:.*]] = mtf.cast %[[H]] {mtf.phase = "backward"} : !mtf.tensor<[layers=3, d=4], bf16> -> !mtf.tensor<[layers=3, d=4], f32>
// CHECK: mtf.output "grads" %[[G]]
// SMALL-LABEL: mtf.program @stacked local
// SMALL: shard.all_reduce
// SMALL: shard.all_reduce
// SMALL: mtf.yield
// SMALL-NOT: shard.all_reduce
mtf.program @stacked local {
  %x = mtf.input "x" : !mtf.tensor<[d=4], f32>
  %f, %s = mtf.loop "layers" 3 reverse carry(%x : !mtf.tensor<[d=4], f32>) -> (!mtf.tensor<[d=4], f32>) stacked(!mtf.tensor<[layers=3, d=4], f32>) attributes {mtf.phase = "backward"} {
  ^bb0(%h: !mtf.tensor<[d=4], f32>):
    %g = mtf.exp %h {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %ct = mtf.to_tensor %h {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %cr = shard.all_reduce %ct on @mesh grid_axes = [0] {mtf.phase = "backward"} : tensor<4xf32> -> tensor<4xf32>
    %c = mtf.from_tensor %cr {mtf.phase = "backward"} : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    %gt = mtf.to_tensor %g {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %gr = shard.all_reduce %gt on @mesh grid_axes = [0] {mtf.phase = "backward", mtf.reason = "sum over 'batch'"} : tensor<4xf32> -> tensor<4xf32>
    %go = mtf.from_tensor %gr {mtf.phase = "backward"} : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    %gh = mtf.cast %go {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32> -> !mtf.tensor<[d=4], bf16>
    %gf = mtf.cast %gh {mtf.phase = "backward"} : !mtf.tensor<[d=4], bf16> -> !mtf.tensor<[d=4], f32>
    mtf.yield %c, %gf : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>
  }
  mtf.output "carry" %f : !mtf.tensor<[d=4], f32>
  mtf.output "grads" %s : !mtf.tensor<[layers=3, d=4], f32>
}

// -----

shard.grid @mesh(shape = 2)

// A reduced value the body also reads, and a maximum, stay in the body.
// CHECK-LABEL: mtf.program @kept local
// SMALL-LABEL: mtf.program @kept local
// CHECK: mtf.loop
// CHECK: shard.all_reduce
// CHECK: shard.all_reduce
// CHECK: mtf.yield
// CHECK-NOT: shard.all_reduce
mtf.program @kept local {
  %x = mtf.input "x" : !mtf.tensor<[d=4], f32>
  %f, %s:2 = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[d=4], f32>) -> (!mtf.tensor<[d=4], f32>) stacked(!mtf.tensor<[layers=2, d=4], f32>, !mtf.tensor<[layers=2, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[d=4], f32>):
    %ht = mtf.to_tensor %h : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %hr = shard.all_reduce %ht on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
    %ho = mtf.from_tensor %hr : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    %n = mtf.exp %ho : !mtf.tensor<[d=4], f32>
    %mt = mtf.to_tensor %n : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %mr = shard.all_reduce %mt on @mesh grid_axes = [0] reduction = max : tensor<4xf32> -> tensor<4xf32>
    %mo = mtf.from_tensor %mr : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    mtf.yield %n, %ho, %mo : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>
  }
  mtf.output "carry" %f : !mtf.tensor<[d=4], f32>
  mtf.output "a" %s#0 : !mtf.tensor<[layers=2, d=4], f32>
  mtf.output "b" %s#1 : !mtf.tensor<[layers=2, d=4], f32>
}

// -----

shard.grid @mesh(shape = 2)

// A sum carried from zero that adds one all-reduced value per iteration (a
// weight's gradient over a pipeline's ticks) adds the partial sums, and its
// final is all-reduced once after the loop, whatever its size. A sum that
// starts elsewhere keeps its all-reduce per iteration (all-reducing the
// final would count its start once per device).
// CHECK-LABEL: mtf.program @carried local
// CHECK: %[[F:.*]]:2 = mtf.loop "ticks" 3 carry(%{{.*}}, %{{.*}} :
// CHECK: %[[A:.*]] = mtf.add %{{.*}}, %{{.*}} {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32> -> !mtf.tensor<[d=4], f32>
// CHECK: shard.all_reduce
// CHECK: mtf.yield %[[A]], %{{.*}}
// CHECK: %[[T:.*]] = mtf.to_tensor %[[F]]#0 {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
// CHECK-NEXT: %[[R:.*]] = shard.all_reduce %[[T]] on @mesh grid_axes = [0] {mtf.phase = "backward", mtf.reason = "sum over 'batch', once after the loop over 'ticks', summed (mtf-hoist-loop-reductions)"} : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[V:.*]] = mtf.from_tensor %[[R]] {mtf.phase = "backward"} : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
// CHECK: mtf.output "sum" %[[V]]
// CHECK: mtf.output "started" %[[F]]#1
// SMALL-LABEL: mtf.program @carried local
// SMALL: mtf.yield
// SMALL: shard.all_reduce {{.*}} once after the loop over 'ticks', summed
mtf.program @carried local {
  %x = mtf.input "x" : !mtf.tensor<[d=4], f32>
  %zero = mtf.constant 0.0 : !mtf.tensor<[d=4], f32>
  %f:2 = mtf.loop "ticks" 3 carry(%zero, %x : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>) invariant(%x : !mtf.tensor<[d=4], f32>) -> (!mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>) attributes {mtf.phase = "backward"} {
  ^bb0(%acc: !mtf.tensor<[d=4], f32>, %other: !mtf.tensor<[d=4], f32>, %v: !mtf.tensor<[d=4], f32>):
    %g = mtf.exp %v {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %gt = mtf.to_tensor %g {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %gr = shard.all_reduce %gt on @mesh grid_axes = [0] {mtf.phase = "backward", mtf.reason = "sum over 'batch'"} : tensor<4xf32> -> tensor<4xf32>
    %go = mtf.from_tensor %gr {mtf.phase = "backward"} : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    %n = mtf.add %acc, %go {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32> -> !mtf.tensor<[d=4], f32>
    %ot = mtf.to_tensor %g {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %or = shard.all_reduce %ot on @mesh grid_axes = [0] {mtf.phase = "backward"} : tensor<4xf32> -> tensor<4xf32>
    %oo = mtf.from_tensor %or {mtf.phase = "backward"} : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    %m = mtf.add %other, %oo {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32> -> !mtf.tensor<[d=4], f32>
    mtf.yield %n, %m : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>
  }
  mtf.output "sum" %f#0 : !mtf.tensor<[d=4], f32>
  mtf.output "started" %f#1 : !mtf.tensor<[d=4], f32>
}
