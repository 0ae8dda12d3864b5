// RUN: meshc-opt %s --mtf-apply-layout='mesh=m:4 layout=n:m' --mtf-partition | FileCheck %s
// A contraction over 'k', split on 'm' in x (by a constraint), whose result is
// split on 'm' along 'n': the weight moves 'm' from 'n' to 'k' (one
// all-to-all), each device computes partial sums, and they are
// reduce-scattered along 'n' rather than all-reduced and sliced. Then a mean
// over split dims (sum, all-reduce, scale) and a softmax over the split 'n':
// written as max, exp and sum (DecomposeOpInterface), it all-reduces the row
// maximum and the row sum instead of gathering 'n'.

// CHECK-LABEL: mtf.program @rs mesh <m=4> local
// CHECK: shard.all_to_all %{{.*}} on @rs_mesh grid_axes = [0] split_axis = 0 concat_axis = 1 {mtf.reason = "einsum needs 'w' as [k:m, n], it is [k, n:m]"} : tensor<16x2xf32> -> tensor<4x8xf32>
// CHECK: mtf.einsum {{.*}} : !mtf.tensor<[a=8, k=4], f32>, !mtf.tensor<[k=4, n=8], f32> -> !mtf.tensor<[a=8, n=8], f32>
// CHECK: shard.reduce_scatter %{{.*}} on @rs_mesh grid_axes = [0] scatter_axis = 1 {mtf.reason = "the sum over 'k' (split on its axes) ends up split along 'n'"} : tensor<8x8xf32> -> tensor<8x2xf32>
// CHECK: mtf.reduce_sum %{{.*}} : !mtf.tensor<[a=8, n=2], f32> -> !mtf.tensor<[], f32>
// CHECK: shard.all_reduce %{{.*}} on @rs_mesh grid_axes = [0] {mtf.reason = "sum over 'n' split across devices"}
// CHECK: mtf.constant 1.562500e-02
// CHECK: mtf.mul
// CHECK: mtf.reduce_max %{{.*}} : !mtf.tensor<[a=8, n=2], f32> -> !mtf.tensor<[a=8], f32>
// CHECK: shard.all_reduce %{{.*}} on @rs_mesh grid_axes = [0] reduction = max {mtf.reason = "maximum over 'n' split across devices"} : tensor<8xf32> -> tensor<8xf32>
// CHECK: mtf.sub
// CHECK: mtf.exp %{{.*}} : !mtf.tensor<[a=8, n=2], f32>
// CHECK: mtf.reduce_sum %{{.*}} : !mtf.tensor<[a=8, n=2], f32> -> !mtf.tensor<[a=8], f32>
// CHECK: shard.all_reduce %{{.*}} on @rs_mesh grid_axes = [0] {mtf.reason = "sum over 'n' split across devices"} : tensor<8xf32> -> tensor<8xf32>
// CHECK: mtf.div %{{.*}} : !mtf.tensor<[a=8, n=2], f32>, !mtf.tensor<[a=8], f32> -> !mtf.tensor<[a=8, n=2], f32>
// CHECK-NOT: shard.all_gather
mtf.program @rs {
  %x = mtf.input "x" : !mtf.tensor<[a=8, k=16], f32>
  %xc = mtf.constrain %x to <k: m> : !mtf.tensor<[a=8, k=16], f32>
  %w = mtf.param "w" normal(0.0, 0.1) : !mtf.tensor<[k=16, n=8], f32>
  %s = mtf.einsum %xc, %w : !mtf.tensor<[a=8, k=16], f32>, !mtf.tensor<[k=16, n=8], f32> -> !mtf.tensor<[a=8, n=8], f32> loc("s"("f.mtf":1:1))
  %m = mtf.reduce_mean %s : !mtf.tensor<[a=8, n=8], f32> -> !mtf.tensor<[], f32>
  %p = mtf.softmax %s over "n" : !mtf.tensor<[a=8, n=8], f32>
  mtf.output "m" %m : !mtf.tensor<[], f32>
  mtf.output "p" %p : !mtf.tensor<[a=8, n=8], f32>
}
