// RUN: meshc-opt %s --mtf-apply-layout='mesh=m:4 layout=seq:m' --mtf-partition | FileCheck %s
// Changing which dimension a mesh axis splits is one all-to-all: 'x' is split
// over 'm' along 'seq' by the rules and constrained onto 'heads'.

// CHECK-LABEL: mtf.program @swap mesh <m=4> local
// CHECK: mtf.input "x" {mtf.layout = #mtf.layout<seq: m>} : !mtf.tensor<[seq=2, heads=4], f32>
// CHECK: shard.all_to_all %{{.*}} on @swap_mesh grid_axes = [0] split_axis = 1 concat_axis = 0 {mtf.reason = "constrain needs 'x' as [seq, heads:m], it is [seq:m, heads]"} : tensor<2x4xf32> -> tensor<8x1xf32>
// CHECK-NOT: shard.
// CHECK: mtf.output "y" %{{.*}} : !mtf.tensor<[seq=8, heads=1], f32>
mtf.program @swap {
  %x = mtf.input "x" : !mtf.tensor<[seq=8, heads=4], f32>
  %c = mtf.constrain %x to <heads: m> : !mtf.tensor<[seq=8, heads=4], f32>
  mtf.output "y" %c : !mtf.tensor<[seq=8, heads=4], f32>
}
