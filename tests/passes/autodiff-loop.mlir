// RUN: meshc-opt %s --mtf-autodiff="loop-remat=none" | FileCheck %s --check-prefix=NONE
// RUN: meshc-opt %s --mtf-autodiff | FileCheck %s --check-prefix=MARKED
// RUN: meshc-opt %s --mtf-autodiff="loop-remat=repeat" | FileCheck %s --check-prefix=REPEAT
// RUN: not meshc-opt %s --mtf-autodiff="loop-remat=all" 2>&1 | FileCheck %s --check-prefix=BAD
// Where the backward loop gets a layer's activations: stacked by the forward
// loop (none; marked, the default, but for checkpoint(...) ops) or
// recomputed from each layer's input (repeat). Views and values the same in
// every layer (from the extra arguments alone) are always recomputed.

// NONE: %{{.*}}, %[[S:.*]]:2 = mtf.loop "layers" 4 {{.*}} stacked(!mtf.tensor<[layers=4, b=2, d=3], f32>, !mtf.tensor<[layers=4, b=2, d=3], f32>) {
// NONE: mtf.yield %{{.*}}, %arg0, %[[TANH:[0-9]+]] :
// NONE: mtf.loop "layers" 4 reverse {{.*}} stacked(%[[S]]#0, %{{.*}}, %[[S]]#1 :
// NONE-NOT: mtf.tanh
// NONE-NOT: mtf.rename %{{.*}} "e" to "d"
// NONE: mtf.mul %arg5, %arg5
// NONE-NOT: mtf.tanh
// NONE: mtf.yield

// MARKED: %{{.*}}, %[[S:.*]]:2 = mtf.loop "layers" 4 {{.*}} stacked(!mtf.tensor<[layers=4, b=2, d=3], f32>, !mtf.tensor<[layers=4, b=2, e=3], f32>) {
// MARKED: %[[T:[0-9]+]] = mtf.einsum %arg0, %arg1
// MARKED: mtf.yield %{{.*}}, %arg0, %[[T]] :
// MARKED: mtf.loop "layers" 4 reverse {{.*}} stacked(%[[S]]#0, %{{.*}}, %[[S]]#1 :
// MARKED-NOT: mtf.einsum %arg
// MARKED: mtf.rename %arg4 "e" to "d"
// MARKED-NEXT: mtf.tanh

// REPEAT: %{{.*}}, %[[S:.*]] = mtf.loop "layers" 4 {{.*}} stacked(!mtf.tensor<[layers=4, b=2, d=3], f32>) {
// REPEAT: mtf.yield %{{.*}}, %arg0 :
// REPEAT: mtf.loop "layers" 4 reverse {{.*}} stacked(%[[S]], %{{.*}} :
// REPEAT: mtf.einsum %arg2, %arg3
// REPEAT-NEXT: mtf.rename
// REPEAT-NEXT: mtf.tanh

// BAD: for the --loop-remat option: Cannot find option named 'all'!

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[b=2, d=3], f32>
  %m = mtf.param "m" normal(0.0, 1.0) : !mtf.tensor<[d=3], f32>
  %w = mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[layers=4, d=3, e=3], f32>
  %y = mtf.loop "layers" 4 carry(%x : !mtf.tensor<[b=2, d=3], f32>) stacked(%w : !mtf.tensor<[layers=4, d=3, e=3], f32>) invariant(%m : !mtf.tensor<[d=3], f32>) -> (!mtf.tensor<[b=2, d=3], f32>) {
  ^bb0(%h: !mtf.tensor<[b=2, d=3], f32>, %wi: !mtf.tensor<[d=3, e=3], f32>, %mi: !mtf.tensor<[d=3], f32>):
    %t = mtf.einsum %h, %wi : !mtf.tensor<[b=2, d=3], f32>, !mtf.tensor<[d=3, e=3], f32> -> !mtf.tensor<[b=2, e=3], f32>
    %n = mtf.rename %t "e" to "d" : !mtf.tensor<[b=2, e=3], f32> -> !mtf.tensor<[b=2, d=3], f32>
    %a = mtf.tanh %n {mtf.checkpoint = "c"} : !mtf.tensor<[b=2, d=3], f32>
    %ms = mtf.mul %mi, %mi : !mtf.tensor<[d=3], f32>, !mtf.tensor<[d=3], f32> -> !mtf.tensor<[d=3], f32>
    %s = mtf.mul %a, %ms : !mtf.tensor<[b=2, d=3], f32>, !mtf.tensor<[d=3], f32> -> !mtf.tensor<[b=2, d=3], f32>
    mtf.yield %s : !mtf.tensor<[b=2, d=3], f32>
  }
  %l = mtf.reduce_sum %y : !mtf.tensor<[b=2, d=3], f32> -> !mtf.tensor<[], f32>
  mtf.train %l with "sgd" {lr = 0.1 : f64} : !mtf.tensor<[], f32>
}
