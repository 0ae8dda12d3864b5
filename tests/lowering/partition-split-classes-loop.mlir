// RUN: meshc-opt %s --mtf-apply-layout='mesh=m:4 layout=classes:m' --mtf-partition | FileCheck %s
// A cross-entropy over a class dim split on 'm' inside a loop's body (a 1F1B
// pipeline's loss in its ticks, docs/pipeline.md#1f1b) is written as
// reductions and elementwise ops there too: every iteration all-reduces
// per-row maxima and sums; nothing gathers 'classes'.

// CHECK-LABEL: mtf.program @xent mesh <m=4> local
// CHECK-NOT: shard.all_gather
// CHECK: mtf.loop "ticks" 3
// CHECK: mtf.one_hot %{{.*}} over "classes" {mtf.layout = #mtf.layout<classes: m>} : !mtf.tensor<[batch=8], i32> -> !mtf.tensor<[batch=8, classes=4], f32>
// CHECK: shard.all_reduce {{.*}} {mtf.reason = "sum over 'classes' split across devices"} : tensor<8xf32>
// CHECK: shard.all_reduce {{.*}} reduction = max {mtf.reason = "maximum over 'classes' split across devices"} : tensor<8xf32>
// CHECK: mtf.yield
// CHECK-NOT: shard.all_gather
// CHECK: mtf.output "loss"
mtf.program @xent {
  %z = mtf.input "z" : !mtf.tensor<[ticks=3, batch=8, classes=16], f32>
  %y = mtf.input "y" : !mtf.tensor<[batch=8], i32>
  %zero = mtf.constant 0.0 : !mtf.tensor<[batch=8], f32>
  %sum = mtf.loop "ticks" 3 carry(%zero : !mtf.tensor<[batch=8], f32>) stacked(%z : !mtf.tensor<[ticks=3, batch=8, classes=16], f32>) invariant(%y : !mtf.tensor<[batch=8], i32>) -> (!mtf.tensor<[batch=8], f32>) {
  ^bb0(%acc: !mtf.tensor<[batch=8], f32>, %zt: !mtf.tensor<[batch=8, classes=16], f32>, %yt: !mtf.tensor<[batch=8], i32>):
    %l = mtf.softmax_cross_entropy %zt, %yt over "classes" : !mtf.tensor<[batch=8, classes=16], f32>, !mtf.tensor<[batch=8], i32> -> !mtf.tensor<[batch=8], f32>
    %n = mtf.add %acc, %l : !mtf.tensor<[batch=8], f32>, !mtf.tensor<[batch=8], f32> -> !mtf.tensor<[batch=8], f32>
    mtf.yield %n : !mtf.tensor<[batch=8], f32>
  }
  mtf.output "loss" %sum : !mtf.tensor<[batch=8], f32>
}
