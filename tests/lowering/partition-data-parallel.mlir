// RUN: meshc-opt %s --mtf-apply-layout='mesh=b:4 layout=batch:b' --mtf-partition | FileCheck %s
// Data parallelism: with only the batch split, the forward pass of an MLP
// block needs no communication at all.

// CHECK: shard.grid @block_mesh(shape = 4)
// CHECK-LABEL: mtf.program @block mesh <b=4> local
// CHECK-NOT: shard.
// CHECK: mtf.output "y" %{{.*}} : !mtf.tensor<[batch=2, d=8], f32>
mtf.program @block {
  %x = mtf.input "x" : !mtf.tensor<[batch=8, d=8], f32>
  %w1 = mtf.param "w1" normal(0.0, 0.1) : !mtf.tensor<[d=8, ff=32], f32>
  %w2 = mtf.param "w2" normal(0.0, 0.1) : !mtf.tensor<[ff=32, d=8], f32>
  %h = mtf.einsum %x, %w1 : !mtf.tensor<[batch=8, d=8], f32>, !mtf.tensor<[d=8, ff=32], f32> -> !mtf.tensor<[batch=8, ff=32], f32>
  %r = mtf.relu %h : !mtf.tensor<[batch=8, ff=32], f32>
  %y = mtf.einsum %r, %w2 : !mtf.tensor<[batch=8, ff=32], f32>, !mtf.tensor<[ff=32, d=8], f32> -> !mtf.tensor<[batch=8, d=8], f32>
  mtf.output "y" %y : !mtf.tensor<[batch=8, d=8], f32>
}
