// RUN: meshc-opt %s --mtf-apply-layout='mesh=m:4 layout=classes:m' --mtf-partition | FileCheck %s
// Cross-entropy, argmax and logsumexp over a class dim split on 'm': each is
// written as reductions and elementwise ops (DecomposeOpInterface), so every
// device reduces its block of 4 classes and only per-row maxima and sums are
// all-reduced; nothing gathers 'classes'. one_hot builds its own block.

// CHECK-LABEL: mtf.program @xent mesh <m=4> local
// CHECK-NOT: shard.all_gather
// The cross-entropy: the picked logit, then logsumexp.
// CHECK: mtf.one_hot %{{.*}} over "classes" {mtf.layout = #mtf.layout<classes: m>} : !mtf.tensor<[batch=8], i32> -> !mtf.tensor<[batch=8, classes=4], f32>
// CHECK: mtf.reduce_sum %{{.*}} : !mtf.tensor<[batch=8, classes=4], f32> -> !mtf.tensor<[batch=8], f32>
// CHECK: shard.all_reduce {{.*}} {mtf.reason = "sum over 'classes' split across devices"} : tensor<8xf32>
// CHECK: mtf.reduce_max %{{.*}} : !mtf.tensor<[batch=8, classes=4], f32> -> !mtf.tensor<[batch=8], f32>
// CHECK: shard.all_reduce {{.*}} reduction = max {mtf.reason = "maximum over 'classes' split across devices"} : tensor<8xf32>
// CHECK: mtf.exp %{{.*}} : !mtf.tensor<[batch=8, classes=4], f32>
// CHECK: shard.all_reduce {{.*}} {mtf.reason = "sum over 'classes' split across devices"} : tensor<8xf32>
// CHECK: mtf.log
// The argmax: the row maximum, then the largest (16 - position) where it is hit.
// CHECK: shard.all_reduce {{.*}} reduction = max
// CHECK: mtf.equal %{{.*}} : !mtf.tensor<[batch=8, classes=4], f32>, !mtf.tensor<[batch=8], f32> -> !mtf.tensor<[batch=8, classes=4], f32>
// CHECK: mtf.range : !mtf.tensor<[classes=16], f32>
// CHECK: shard.all_slice
// CHECK: shard.all_reduce {{.*}} reduction = max
// CHECK: mtf.cast %{{.*}} : !mtf.tensor<[batch=8], f32> -> !mtf.tensor<[batch=8], i32>
// The logsumexp.
// CHECK: shard.all_reduce {{.*}} reduction = max
// CHECK: shard.all_reduce {{.*}} {mtf.reason = "sum over 'classes' split across devices"}
// CHECK-NOT: shard.all_gather
// CHECK: mtf.output "loss"
mtf.program @xent {
  %z = mtf.input "z" : !mtf.tensor<[batch=8, classes=16], f32>
  %y = mtf.input "y" : !mtf.tensor<[batch=8], i32>
  %l = mtf.softmax_cross_entropy %z, %y over "classes" : !mtf.tensor<[batch=8, classes=16], f32>, !mtf.tensor<[batch=8], i32> -> !mtf.tensor<[batch=8], f32>
  %a = mtf.argmax %z over "classes" : !mtf.tensor<[batch=8, classes=16], f32> -> !mtf.tensor<[batch=8], i32>
  %s = mtf.logsumexp %z over "classes" : !mtf.tensor<[batch=8, classes=16], f32> -> !mtf.tensor<[batch=8], f32>
  mtf.output "loss" %l : !mtf.tensor<[batch=8], f32>
  mtf.output "best" %a : !mtf.tensor<[batch=8], i32>
  mtf.output "lse" %s : !mtf.tensor<[batch=8], f32>
}
