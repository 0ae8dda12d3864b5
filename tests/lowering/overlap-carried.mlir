// RUN: meshc-opt %s -split-input-file -mtf-overlap-collectives | FileCheck %s
// Waits carried across a loop's iterations (lowering/Passes.td,
// mtf-overlap-collectives): a wait that ends its body, whose results the
// body only stacks, completes in the next iteration before the first op
// that touches its buffers (here the tanh that makes the gradient again);
// the exp before it runs beside the iteration before's all-reduce.

// CHECK-LABEL: mtf.program @carried
// CHECK: ^bb0
// CHECK-NEXT: mtf.exp %{{.*}} {mtf.phase = "backward"}
// CHECK-NEXT: mtf.tanh %{{.*}} {mtf.phase = "backward", mtf.resumes = array<i64: 0>}
// CHECK: shard.all_reduce
// CHECK: mtf.wait %{{.*}} keep(%{{.*}} : tensor<4xf32>) {carried = 0 : i64, mtf.phase = "backward"}
// CHECK-NEXT: mtf.from_tensor
// CHECK-NEXT: mtf.yield
shard.grid @mesh(shape = 2)
mtf.program @carried local {
  %x = mtf.input "x" : !mtf.tensor<[d=4], f32>
  %f, %s = mtf.loop "layers" 3 reverse carry(%x : !mtf.tensor<[d=4], f32>) -> (!mtf.tensor<[d=4], f32>) stacked(!mtf.tensor<[layers=3, d=4], f32>) attributes {mtf.phase = "backward"} {
  ^bb0(%h: !mtf.tensor<[d=4], f32>):
    %a = mtf.exp %h {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %g = mtf.tanh %h {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %gt = mtf.to_tensor %g {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %gr = shard.all_reduce %gt on @mesh grid_axes = [0] {mtf.phase = "backward"} : tensor<4xf32> -> tensor<4xf32>
    %go = mtf.from_tensor %gr {mtf.phase = "backward"} : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    %n = mtf.exp %a {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    mtf.yield %n, %go : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>
  }
  mtf.output "f" %f : !mtf.tensor<[d=4], f32>
  mtf.output "s" %s : !mtf.tensor<[layers=3, d=4], f32>
}

// -----

// Not carried: the body reads the result (the add), or the loop has one
// iteration.
// CHECK-LABEL: mtf.program @read
// CHECK-NOT: carried
// CHECK-NOT: mtf.resumes
// CHECK-LABEL: mtf.program @once
// CHECK-NOT: carried
// CHECK-NOT: mtf.resumes
shard.grid @mesh(shape = 2)
mtf.program @read local {
  %x = mtf.input "x" : !mtf.tensor<[d=4], f32>
  %f, %s = mtf.loop "layers" 3 reverse carry(%x : !mtf.tensor<[d=4], f32>) -> (!mtf.tensor<[d=4], f32>) stacked(!mtf.tensor<[layers=3, d=4], f32>) attributes {mtf.phase = "backward"} {
  ^bb0(%h: !mtf.tensor<[d=4], f32>):
    %a = mtf.exp %h {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %g = mtf.tanh %h {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %gt = mtf.to_tensor %g {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %gr = shard.all_reduce %gt on @mesh grid_axes = [0] {mtf.phase = "backward"} : tensor<4xf32> -> tensor<4xf32>
    %go = mtf.from_tensor %gr {mtf.phase = "backward"} : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    %n = mtf.exp %a {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %m = mtf.add %n, %go {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32> -> !mtf.tensor<[d=4], f32>
    mtf.yield %m, %go : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>
  }
  mtf.output "f" %f : !mtf.tensor<[d=4], f32>
  mtf.output "s" %s : !mtf.tensor<[layers=3, d=4], f32>
}
mtf.program @once local {
  %x = mtf.input "x" : !mtf.tensor<[d=4], f32>
  %f, %s = mtf.loop "layers" 1 reverse carry(%x : !mtf.tensor<[d=4], f32>) -> (!mtf.tensor<[d=4], f32>) stacked(!mtf.tensor<[layers=1, d=4], f32>) attributes {mtf.phase = "backward"} {
  ^bb0(%h: !mtf.tensor<[d=4], f32>):
    %a = mtf.exp %h {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %g = mtf.tanh %h {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    %gt = mtf.to_tensor %g {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %gr = shard.all_reduce %gt on @mesh grid_axes = [0] {mtf.phase = "backward"} : tensor<4xf32> -> tensor<4xf32>
    %go = mtf.from_tensor %gr {mtf.phase = "backward"} : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    %n = mtf.exp %a {mtf.phase = "backward"} : !mtf.tensor<[d=4], f32>
    mtf.yield %n, %go : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>
  }
  mtf.output "f" %f : !mtf.tensor<[d=4], f32>
  mtf.output "s" %s : !mtf.tensor<[layers=1, d=4], f32>
}
