// RUN: meshc-opt %s --split-input-file --mtf-overlap-collectives | FileCheck %s
// The printed form parses back (and verifies) unchanged:
// RUN: meshc-opt %s --split-input-file --mtf-overlap-collectives | meshc-opt --split-input-file | FileCheck %s
// Too few bytes in flight allowed for any of them: nothing is started.
// RUN: meshc-opt %s --split-input-file --mtf-overlap-collectives=in-flight-bytes=16 | FileCheck %s --check-prefix=SMALL
// mtf-overlap-collectives: where each collective starts and where it is
// waited for.

shard.grid @mesh(shape = 2)

// Megatron's backward: the input gradient's all-reduce starts right after
// its einsum, runs beside the weight gradient's einsum, and is waited for
// before the add that reads it; its view moves after the wait. The input
// is made before an unrelated einsum, so the start moves above that one.
// CHECK-LABEL: mtf.program @backward local
// CHECK: %[[T:.*]] = mtf.to_tensor %[[DX:.*]] {mtf.phase = "backward"}
// CHECK-NEXT: %[[R:.*]] = shard.all_reduce %[[T]] on @mesh grid_axes = [0] {mtf.phase = "backward"}
// CHECK-NEXT: %[[U:.*]] = mtf.einsum %{{.*}}, %{{.*}} {mtf.phase = "backward"}
// CHECK-NEXT: %[[DW:.*]] = mtf.einsum %{{.*}}, %{{.*}} {mtf.phase = "backward"}
// CHECK-NEXT: %[[W:.*]] = mtf.wait %[[R]] keep(%[[T]] : tensor<4x8xf32>) {mtf.phase = "backward"} : tensor<4x8xf32>
// CHECK-NEXT: %[[V:.*]] = mtf.from_tensor %[[W]]
// CHECK-NEXT: mtf.add %[[V]], %{{.*}}
// SMALL-LABEL: mtf.program @backward local
// SMALL-NOT: mtf.wait
mtf.program @backward local {
  %g = mtf.input "g" : !mtf.tensor<[b=4, h=8], f32>
  %w = mtf.input "w" : !mtf.tensor<[h=8, d=8], f32>
  %x = mtf.input "x" : !mtf.tensor<[b=4, d=8], f32>
  %dx = mtf.einsum %g, %w {mtf.phase = "backward"} : !mtf.tensor<[b=4, h=8], f32>, !mtf.tensor<[h=8, d=8], f32> -> !mtf.tensor<[b=4, d=8], f32>
  %u = mtf.einsum %g, %g {mtf.phase = "backward"} : !mtf.tensor<[b=4, h=8], f32>, !mtf.tensor<[b=4, h=8], f32> -> !mtf.tensor<[h=8], f32>
  %t = mtf.to_tensor %dx {mtf.phase = "backward"} : !mtf.tensor<[b=4, d=8], f32> -> tensor<4x8xf32>
  %r = shard.all_reduce %t on @mesh grid_axes = [0] {mtf.phase = "backward"} : tensor<4x8xf32> -> tensor<4x8xf32>
  %v = mtf.from_tensor %r {mtf.phase = "backward"} : tensor<4x8xf32> -> !mtf.tensor<[b=4, d=8], f32>
  %dw = mtf.einsum %g, %x {mtf.phase = "backward"} : !mtf.tensor<[b=4, h=8], f32>, !mtf.tensor<[b=4, d=8], f32> -> !mtf.tensor<[h=8, d=8], f32>
  %s = mtf.add %v, %x {mtf.phase = "backward"} : !mtf.tensor<[b=4, d=8], f32>, !mtf.tensor<[b=4, d=8], f32> -> !mtf.tensor<[b=4, d=8], f32>
  mtf.output "s" %s : !mtf.tensor<[b=4, d=8], f32>
  mtf.output "u" %u : !mtf.tensor<[h=8], f32>
  mtf.output "dw" %dw : !mtf.tensor<[h=8, d=8], f32>
}

// -----

shard.grid @mesh(shape = 2)

// Nothing to run beside it (its result is read at once): it stays a
// blocking collective.
// CHECK-LABEL: mtf.program @nothing local
// CHECK-NOT: mtf.wait
mtf.program @nothing local {
  %x = mtf.input "x" : !mtf.tensor<[d=8], f32>
  %t = mtf.to_tensor %x : !mtf.tensor<[d=8], f32> -> tensor<8xf32>
  %r = shard.all_reduce %t on @mesh grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  %v = mtf.from_tensor %r : tensor<8xf32> -> !mtf.tensor<[d=8], f32>
  %e = mtf.exp %v : !mtf.tensor<[d=8], f32>
  mtf.output "e" %e : !mtf.tensor<[d=8], f32>
}

// -----

shard.grid @mesh(shape = 2)

// An op that reads the collective's input (through a view) bounds both
// ends: the start stays below it when it comes first, the wait above it
// when it comes after. The exp between them runs beside the collective.
// CHECK-LABEL: mtf.program @touching local
// CHECK: mtf.exp %[[X:.*]] :
// CHECK-NEXT: %[[R:.*]] = shard.all_reduce
// CHECK-NEXT: mtf.exp %{{.*}}
// CHECK-NEXT: %[[W:.*]] = mtf.wait %[[R]]
// CHECK-NEXT: mtf.log %[[X]]
mtf.program @touching local {
  %x = mtf.input "x" : !mtf.tensor<[d=8], f32>
  %y = mtf.input "y" : !mtf.tensor<[d=8], f32>
  %t = mtf.to_tensor %x : !mtf.tensor<[d=8], f32> -> tensor<8xf32>
  %a = mtf.exp %x : !mtf.tensor<[d=8], f32>
  %r = shard.all_reduce %t on @mesh grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  %b = mtf.exp %y : !mtf.tensor<[d=8], f32>
  %c = mtf.log %x : !mtf.tensor<[d=8], f32>
  %v = mtf.from_tensor %r : tensor<8xf32> -> !mtf.tensor<[d=8], f32>
  mtf.output "a" %a : !mtf.tensor<[d=8], f32>
  mtf.output "b" %b : !mtf.tensor<[d=8], f32>
  mtf.output "c" %c : !mtf.tensor<[d=8], f32>
  mtf.output "v" %v : !mtf.tensor<[d=8], f32>
}

// -----

shard.grid @mesh(shape = 2)

// Neither end crosses into another phase: the backward gradient's
// reduce-scatter is waited for before the first update op, even one that
// does not read it; the forward exp before it stays outside too.
// CHECK-LABEL: mtf.program @phases local
// CHECK: mtf.exp {{.*}}: !mtf.tensor<[d=8], f32>
// CHECK-NEXT: %[[R:.*]] = shard.reduce_scatter
// CHECK-NEXT: mtf.log {{.*}}mtf.phase = "backward"
// CHECK-NEXT: mtf.wait %[[R]] keep(%{{.*}} : tensor<8xf32>) {mtf.phase = "backward"}
// CHECK-NEXT: mtf.sqrt {{.*}}mtf.phase = "update"
mtf.program @phases local {
  %x = mtf.input "x" : !mtf.tensor<[d=8], f32>
  %y = mtf.input "y" : !mtf.tensor<[d=8], f32>
  %t = mtf.to_tensor %x {mtf.phase = "backward"} : !mtf.tensor<[d=8], f32> -> tensor<8xf32>
  %a = mtf.exp %y : !mtf.tensor<[d=8], f32>
  %r = shard.reduce_scatter %t on @mesh grid_axes = [0] scatter_axis = 0 {mtf.phase = "backward"} : tensor<8xf32> -> tensor<4xf32>
  %b = mtf.log %y {mtf.phase = "backward"} : !mtf.tensor<[d=8], f32>
  %c = mtf.sqrt %y {mtf.phase = "update"} : !mtf.tensor<[d=8], f32>
  %v = mtf.from_tensor %r {mtf.phase = "update"} : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
  mtf.output "a" %a : !mtf.tensor<[d=8], f32>
  mtf.output "b" %b : !mtf.tensor<[d=8], f32>
  mtf.output "c" %c : !mtf.tensor<[d=8], f32>
  mtf.output "v" %v : !mtf.tensor<[d=4], f32>
}

// -----

shard.grid @mesh(shape = 2)

// In a loop's body the wait stays in the body, before the yield; a
// combined collective's wait completes every result.
// CHECK-LABEL: mtf.program @loop local
// CHECK: mtf.loop
// CHECK: %[[C:.*]]:2 = mtf.combined_all_reduce
// CHECK-NEXT: mtf.exp
// CHECK-NEXT: %[[W:.*]]:2 = mtf.wait %[[C]]#0, %[[C]]#1 keep(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>) : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: mtf.from_tensor %[[W]]#0
// CHECK-NEXT: mtf.from_tensor %[[W]]#1
// CHECK: mtf.yield
mtf.program @loop local {
  %x = mtf.input "x" : !mtf.tensor<[d=4], f32>
  %f, %s:2 = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[d=4], f32>) -> (!mtf.tensor<[d=4], f32>) stacked(!mtf.tensor<[layers=2, d=4], f32>, !mtf.tensor<[layers=2, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[d=4], f32>):
    %a = mtf.log %h : !mtf.tensor<[d=4], f32>
    %z = mtf.sqrt %h : !mtf.tensor<[d=4], f32>
    %at = mtf.to_tensor %a : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %ht = mtf.to_tensor %h : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %c:2 = mtf.combined_all_reduce %at, %ht on @mesh grid_axes = [0] reduction = "sum" : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
    %e = mtf.exp %z : !mtf.tensor<[d=4], f32>
    %c0 = mtf.from_tensor %c#0 : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    %c1 = mtf.from_tensor %c#1 : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    mtf.yield %e, %c0, %c1 : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>
  }
  mtf.output "f" %f : !mtf.tensor<[d=4], f32>
  mtf.output "s" %s#0 : !mtf.tensor<[layers=2, d=4], f32>
  mtf.output "t" %s#1 : !mtf.tensor<[layers=2, d=4], f32>
}
