// RUN: meshc-opt %s -split-input-file -mtf-overlap-collectives | FileCheck %s
// RUN: meshc-opt %s -split-input-file -mtf-overlap-collectives=schedule=false | FileCheck %s --check-prefix=UNSCHEDULED
// A loop body's ops ordered for overlap (lowering/ScheduleForOverlap.h)
// before mtf-overlap-collectives starts and waits: an all-reduce whose
// result the body reads starts as soon as its input is made, and the ops
// that do not need its result run between its start and its wait.

// The backward pass's case: the weight gradient (the tanh, only stacked)
// came first; the input gradient (the exp) that the all-reduce sums now
// does, and the weight gradient runs beside the all-reduce. Unscheduled,
// nothing is left between the all-reduce and the add that reads it: it
// blocks.
// CHECK-LABEL: mtf.program @weight_gradient_beside
// CHECK: ^bb0
// CHECK-NEXT: mtf.exp
// CHECK-NEXT: mtf.to_tensor
// CHECK-NEXT: shard.all_reduce
// CHECK-NEXT: mtf.tanh
// CHECK-NEXT: mtf.wait
// CHECK-NEXT: mtf.from_tensor
// CHECK-NEXT: mtf.add
// UNSCHEDULED-LABEL: mtf.program @weight_gradient_beside
// UNSCHEDULED: ^bb0
// UNSCHEDULED-NEXT: mtf.tanh
// UNSCHEDULED-NEXT: mtf.exp
// UNSCHEDULED-NOT: mtf.wait
// UNSCHEDULED: mtf.yield
shard.grid @mesh(shape = 2)
mtf.program @weight_gradient_beside local {
  %x = mtf.input "x" : !mtf.tensor<[d=4], f32>
  %f, %s = mtf.loop "layers" 3 reverse carry(%x : !mtf.tensor<[d=4], f32>) -> (!mtf.tensor<[d=4], f32>) stacked(!mtf.tensor<[layers=3, d=4], f32>) attributes {mtf.phase = "backward"} {
  ^bb0(%g: !mtf.tensor<[d=4], f32>):
    %dw = mtf.tanh %g {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %dx = mtf.exp %g {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %t = mtf.to_tensor %dx {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %r = shard.all_reduce %t on @mesh grid_axes = [0] {mtf.phase = "backward"} : tensor<4xf32> -> tensor<4xf32>
    %o = mtf.from_tensor %r {mtf.phase = "backward"} : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    %n = mtf.add %o, %g {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32> -> !mtf.tensor<[d=4], f32>
    mtf.yield %n, %dw : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>
  }
  mtf.output "f" %f : !mtf.tensor<[d=4], f32>
  mtf.output "s" %s : !mtf.tensor<[layers=3, d=4], f32>
}

// -----

// The recomputed forward pass's case: an op that reads only the incoming
// gradient (the exp of %g) came first; the ops that lead to the first
// all-reduce the body reads go before it, and it runs beside that
// all-reduce. Of two all-reduces, the one that comes first is started
// first; an op leading to the second (the tanh of %w) still runs beside
// the first.
// CHECK-LABEL: mtf.program @earliest_collective_first
// CHECK: ^bb0
// CHECK-NEXT: mtf.negate
// CHECK-NEXT: mtf.to_tensor
// CHECK-NEXT: shard.all_reduce
// CHECK-NEXT: mtf.exp
// CHECK-NEXT: mtf.tanh
// CHECK-NEXT: mtf.wait
// CHECK-NEXT: mtf.from_tensor
// CHECK-NEXT: mtf.add
// CHECK-NEXT: mtf.mul
// CHECK-NEXT: mtf.to_tensor
// CHECK-NEXT: shard.all_reduce
shard.grid @mesh(shape = 2)
mtf.program @earliest_collective_first local {
  %x = mtf.input "x" : !mtf.tensor<[d=4], f32>
  %w = mtf.input "w" : !mtf.tensor<[d=4], f32>
  %f = mtf.loop "layers" 3 reverse carry(%x : !mtf.tensor<[d=4], f32>) invariant(%w : !mtf.tensor<[d=4], f32>) -> (!mtf.tensor<[d=4], f32>) attributes {mtf.phase = "backward"} {
  ^bb0(%g: !mtf.tensor<[d=4], f32>, %v: !mtf.tensor<[d=4], f32>):
    %early = mtf.exp %g {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %a = mtf.negate %v {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %t = mtf.to_tensor %a {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %r = shard.all_reduce %t on @mesh grid_axes = [0] {mtf.phase = "backward"} : tensor<4xf32> -> tensor<4xf32>
    %o = mtf.from_tensor %r {mtf.phase = "backward"} : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    %b = mtf.add %o, %early {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32> -> !mtf.tensor<[d=4], f32>
    %k = mtf.tanh %v {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %c = mtf.mul %b, %k {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32> -> !mtf.tensor<[d=4], f32>
    %t2 = mtf.to_tensor %c {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %r2 = shard.all_reduce %t2 on @mesh grid_axes = [0] {mtf.phase = "backward"} : tensor<4xf32> -> tensor<4xf32>
    %o2 = mtf.from_tensor %r2 {mtf.phase = "backward"} : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    %n = mtf.add %o2, %g {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32> -> !mtf.tensor<[d=4], f32>
    mtf.yield %n : !mtf.tensor<[d=4], f32>
  }
  mtf.output "f" %f : !mtf.tensor<[d=4], f32>
}

// -----

// An all-reduce reads its input until its wait, so the other readers of
// its input (the tanh) go before its start: placed after it, one would keep
// the wait from passing and leave it blocking. The negate, which reads
// neither, runs beside it.
// CHECK-LABEL: mtf.program @input_readers_first
// CHECK: ^bb0
// CHECK-NEXT: mtf.exp
// CHECK-NEXT: mtf.to_tensor
// CHECK-NEXT: mtf.tanh
// CHECK-NEXT: shard.all_reduce
// CHECK-NEXT: mtf.negate
// CHECK-NEXT: mtf.wait
shard.grid @mesh(shape = 2)
mtf.program @input_readers_first local {
  %x = mtf.input "x" : !mtf.tensor<[d=4], f32>
  %f, %s, %s2 = mtf.loop "layers" 3 reverse carry(%x : !mtf.tensor<[d=4], f32>) -> (!mtf.tensor<[d=4], f32>) stacked(!mtf.tensor<[layers=3, d=4], f32>, !mtf.tensor<[layers=3, d=4], f32>) attributes {mtf.phase = "backward"} {
  ^bb0(%g: !mtf.tensor<[d=4], f32>):
    %p = mtf.exp %g {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %t = mtf.to_tensor %p {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %r = shard.all_reduce %t on @mesh grid_axes = [0] {mtf.phase = "backward"} : tensor<4xf32> -> tensor<4xf32>
    %xr = mtf.tanh %p {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %y = mtf.negate %g {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %o = mtf.from_tensor %r {mtf.phase = "backward"} : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    %n = mtf.add %o, %g {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32> -> !mtf.tensor<[d=4], f32>
    mtf.yield %n, %xr, %y : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>
  }
  mtf.output "f" %f : !mtf.tensor<[d=4], f32>
  mtf.output "s" %s : !mtf.tensor<[layers=3, d=4], f32>
  mtf.output "s2" %s2 : !mtf.tensor<[layers=3, d=4], f32>
}
