// RUN: meshc-opt %s --split-input-file --mtf-combine-collectives | FileCheck %s
// The printed form parses back (and verifies) unchanged:
// RUN: meshc-opt %s --split-input-file --mtf-combine-collectives | meshc-opt --split-input-file | FileCheck %s
// A bucket as small as the first two all-reduces closes before the third:
// RUN: meshc-opt %s --split-input-file --mtf-combine-collectives=bucket-bytes=160 | FileCheck %s --check-prefix=SMALL
// mtf-combine-collectives: which all-reduces become one.

shard.grid @mesh(shape = 2x2)

// Three independent gradient all-reduces over axis 0 become one, placed
// after the last; the views after the first two move after it; the one
// over axis 1 and the forward one stay apart.
// CHECK-LABEL: mtf.program @grads local
// CHECK: shard.all_reduce %{{.*}} on @mesh grid_axes = [0] : tensor<f32>
// CHECK: shard.all_reduce %{{.*}} on @mesh grid_axes = [1]
// CHECK: %[[C:.*]]:3 = mtf.combined_all_reduce %{{.*}}, %{{.*}}, %{{.*}} on @mesh grid_axes = [0] reduction = "sum" {mtf.phase = "backward", mtf.reason = "3 all-reduces combined: sum over 'batch'"} : tensor<4x8xf32>, tensor<8xf32>, tensor<2xf32> -> tensor<4x8xf32>, tensor<8xf32>, tensor<2xf32>
// CHECK-NEXT: mtf.from_tensor %[[C]]#0
// CHECK-NEXT: mtf.from_tensor %[[C]]#1
// CHECK-NEXT: mtf.from_tensor %[[C]]#2
// CHECK-NOT: all_reduce
// SMALL-LABEL: mtf.program @grads local
// SMALL: mtf.combined_all_reduce %{{.*}}, %{{.*}} on @mesh grid_axes = [0]
// SMALL-SAME: tensor<4x8xf32>, tensor<8xf32> ->
// SMALL: shard.all_reduce %{{.*}} on @mesh grid_axes = [0] {{.*}}tensor<2xf32>
mtf.program @grads local {
  %a = mtf.input "a" : !mtf.tensor<[r=4, c=8], f32>
  %b = mtf.input "b" : !mtf.tensor<[c=8], f32>
  %d = mtf.input "d" : !mtf.tensor<[k=2], f32>
  %l = mtf.input "l" : !mtf.tensor<[], f32>
  %lt = mtf.to_tensor %l : !mtf.tensor<[], f32> -> tensor<f32>
  %lr = shard.all_reduce %lt on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
  %lo = mtf.from_tensor %lr : tensor<f32> -> !mtf.tensor<[], f32>
  mtf.output "loss" %lo : !mtf.tensor<[], f32>
  %at = mtf.to_tensor %a {mtf.phase = "backward"} : !mtf.tensor<[r=4, c=8], f32> -> tensor<4x8xf32>
  %ar = shard.all_reduce %at on @mesh grid_axes = [0] {mtf.phase = "backward", mtf.reason = "sum over 'batch'"} : tensor<4x8xf32> -> tensor<4x8xf32>
  %ao = mtf.from_tensor %ar : tensor<4x8xf32> -> !mtf.tensor<[r=4, c=8], f32>
  %bt = mtf.to_tensor %b {mtf.phase = "backward"} : !mtf.tensor<[c=8], f32> -> tensor<8xf32>
  %br = shard.all_reduce %bt on @mesh grid_axes = [0] {mtf.phase = "backward", mtf.reason = "sum over 'batch'"} : tensor<8xf32> -> tensor<8xf32>
  %bo = mtf.from_tensor %br : tensor<8xf32> -> !mtf.tensor<[c=8], f32>
  %b1 = shard.all_reduce %bt on @mesh grid_axes = [1] {mtf.phase = "backward"} : tensor<8xf32> -> tensor<8xf32>
  %b1o = mtf.from_tensor %b1 : tensor<8xf32> -> !mtf.tensor<[c=8], f32>
  %dt = mtf.to_tensor %d {mtf.phase = "backward"} : !mtf.tensor<[k=2], f32> -> tensor<2xf32>
  %dr = shard.all_reduce %dt on @mesh grid_axes = [0] {mtf.phase = "backward", mtf.reason = "sum over 'batch'"} : tensor<2xf32> -> tensor<2xf32>
  %do = mtf.from_tensor %dr : tensor<2xf32> -> !mtf.tensor<[k=2], f32>
  mtf.output "ga" %ao : !mtf.tensor<[r=4, c=8], f32>
  mtf.output "gb" %bo : !mtf.tensor<[c=8], f32>
  mtf.output "gb1" %b1o : !mtf.tensor<[c=8], f32>
  mtf.output "gd" %do : !mtf.tensor<[k=2], f32>
}

// -----

shard.grid @mesh(shape = 2)

// An op that reads the first all-reduce's result closes the bucket before
// the second: nothing is combined, and the reader still follows its input.
// CHECK-LABEL: mtf.program @dependent local
// CHECK-NOT: combined_all_reduce
// CHECK: %[[R:.*]] = shard.all_reduce
// CHECK: %[[V:.*]] = mtf.from_tensor %[[R]]
// CHECK: mtf.exp %[[V]]
// CHECK: shard.all_reduce
mtf.program @dependent local {
  %a = mtf.input "a" : !mtf.tensor<[c=8], f32>
  %at = mtf.to_tensor %a : !mtf.tensor<[c=8], f32> -> tensor<8xf32>
  %ar = shard.all_reduce %at on @mesh grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  %ao = mtf.from_tensor %ar : tensor<8xf32> -> !mtf.tensor<[c=8], f32>
  %e = mtf.exp %ao : !mtf.tensor<[c=8], f32>
  %et = mtf.to_tensor %e : !mtf.tensor<[c=8], f32> -> tensor<8xf32>
  %er = shard.all_reduce %et on @mesh grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  %eo = mtf.from_tensor %er : tensor<8xf32> -> !mtf.tensor<[c=8], f32>
  mtf.output "y" %eo : !mtf.tensor<[c=8], f32>
}

// -----

shard.grid @mesh(shape = 2)

// ZeRO's pattern: each gradient's reduce-scatter sits just before the
// update that reads it. Both move up to just after their inputs and become
// one; the updated parameters' all-gathers become one too, the assigns that
// follow each moving after it.
// CHECK-LABEL: mtf.program @zero local
// CHECK: %[[RS:.*]]:2 = mtf.combined_reduce_scatter %{{.*}}, %{{.*}} on @mesh grid_axes = [0] scatter_axes = [0, 1] reduction = "sum" {mtf.phase = "update", mtf.reason = "2 reduce-scatters combined: into the shard"} : tensor<4x8xf32>, tensor<2x4xf32> -> tensor<2x8xf32>, tensor<2x2xf32>
// CHECK: mtf.exp
// CHECK: mtf.exp
// CHECK: %[[AG:.*]]:2 = mtf.combined_all_gather %{{.*}}, %{{.*}} on @mesh grid_axes = [0] gather_axes = [0, 1] {mtf.phase = "update", mtf.reason = "2 all-gathers combined: gather"} : tensor<2x8xf32>, tensor<2x2xf32> -> tensor<4x8xf32>, tensor<2x4xf32>
// CHECK-NEXT: mtf.from_tensor %[[AG]]#0
// CHECK-NEXT: mtf.assign "w"
// CHECK-NEXT: mtf.from_tensor %[[AG]]#1
// CHECK-NEXT: mtf.assign "v"
mtf.program @zero local {
  %w = mtf.param "w" normal(0.0, 0.1) : !mtf.tensor<[r=4, c=8], f32>
  %v = mtf.param "v" normal(0.0, 0.1) : !mtf.tensor<[p=2, q=4], f32>
  %gw = mtf.input "gw" : !mtf.tensor<[r=4, c=8], f32>
  %gv = mtf.input "gv" : !mtf.tensor<[p=2, q=4], f32>
  %gwt = mtf.to_tensor %gw {mtf.phase = "update"} : !mtf.tensor<[r=4, c=8], f32> -> tensor<4x8xf32>
  %sw = shard.reduce_scatter %gwt on @mesh grid_axes = [0] scatter_axis = 0 {mtf.phase = "update", mtf.reason = "into the shard"} : tensor<4x8xf32> -> tensor<2x8xf32>
  %swn = mtf.from_tensor %sw : tensor<2x8xf32> -> !mtf.tensor<[r=2, c=8], f32>
  %uw = mtf.exp %swn {mtf.phase = "update"} : !mtf.tensor<[r=2, c=8], f32>
  %gvt = mtf.to_tensor %gv {mtf.phase = "update"} : !mtf.tensor<[p=2, q=4], f32> -> tensor<2x4xf32>
  %sv = shard.reduce_scatter %gvt on @mesh grid_axes = [0] scatter_axis = 1 {mtf.phase = "update", mtf.reason = "into the shard"} : tensor<2x4xf32> -> tensor<2x2xf32>
  %svn = mtf.from_tensor %sv : tensor<2x2xf32> -> !mtf.tensor<[p=2, q=2], f32>
  %uv = mtf.exp %svn {mtf.phase = "update"} : !mtf.tensor<[p=2, q=2], f32>
  %uwt = mtf.to_tensor %uw {mtf.phase = "update"} : !mtf.tensor<[r=2, c=8], f32> -> tensor<2x8xf32>
  %aw = shard.all_gather %uwt on @mesh grid_axes = [0] gather_axis = 0 {mtf.phase = "update", mtf.reason = "gather"} : tensor<2x8xf32> -> tensor<4x8xf32>
  %awn = mtf.from_tensor %aw : tensor<4x8xf32> -> !mtf.tensor<[r=4, c=8], f32>
  mtf.assign "w" %awn {mtf.phase = "update"} : !mtf.tensor<[r=4, c=8], f32>
  %uvt = mtf.to_tensor %uv {mtf.phase = "update"} : !mtf.tensor<[p=2, q=2], f32> -> tensor<2x2xf32>
  %av = shard.all_gather %uvt on @mesh grid_axes = [0] gather_axis = 1 {mtf.phase = "update", mtf.reason = "gather"} : tensor<2x2xf32> -> tensor<2x4xf32>
  %avn = mtf.from_tensor %av : tensor<2x4xf32> -> !mtf.tensor<[p=2, q=4], f32>
  mtf.assign "v" %avn {mtf.phase = "update"} : !mtf.tensor<[p=2, q=4], f32>
}
