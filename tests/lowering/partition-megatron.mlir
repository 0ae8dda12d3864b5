// RUN: meshc-opt %s --mtf-apply-layout='mesh=b:2,m:4 layout=batch:b,ff:m' --mtf-partition | FileCheck %s
// Megatron-style MLP: the first weight split on its output dim, the second
// on its input dim. The forward pass needs exactly one all-reduce, over 'm',
// after the second contraction.

// CHECK-LABEL: mtf.program @block mesh <b=2, m=4> local
// CHECK: %[[H:.*]] = mtf.einsum {{.*}} -> !mtf.tensor<[batch=4, ff=8], f32>
// CHECK-NOT: shard.
// CHECK: %[[Y:.*]] = mtf.einsum {{.*}} -> !mtf.tensor<[batch=4, d=8], f32>
// CHECK-NEXT: %[[T:.*]] = mtf.to_tensor %[[Y]] : !mtf.tensor<[batch=4, d=8], f32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[R:.*]] = shard.all_reduce %[[T]] on @block_mesh grid_axes = [1] {mtf.reason = "sum over 'ff' split across devices"} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[F:.*]] = mtf.from_tensor %[[R]] {mtf.layout = #mtf.layout<batch: b>} : tensor<4x8xf32> -> !mtf.tensor<[batch=4, d=8], f32>
// CHECK-NOT: shard.
// CHECK: mtf.output "y" %[[F]]
mtf.program @block {
  %x = mtf.input "x" : !mtf.tensor<[batch=8, d=8], f32>
  %w1 = mtf.param "w1" normal(0.0, 0.1) : !mtf.tensor<[d=8, ff=32], f32>
  %w2 = mtf.param "w2" normal(0.0, 0.1) : !mtf.tensor<[ff=32, d=8], f32>
  %h = mtf.einsum %x, %w1 : !mtf.tensor<[batch=8, d=8], f32>, !mtf.tensor<[d=8, ff=32], f32> -> !mtf.tensor<[batch=8, ff=32], f32>
  %r = mtf.gelu %h : !mtf.tensor<[batch=8, ff=32], f32>
  %y = mtf.einsum %r, %w2 : !mtf.tensor<[batch=8, ff=32], f32>, !mtf.tensor<[ff=32, d=8], f32> -> !mtf.tensor<[batch=8, d=8], f32>
  mtf.output "y" %y : !mtf.tensor<[batch=8, d=8], f32>
}
