// RUN: meshc-opt %s | FileCheck %s
// RUN: meshc-opt %s | meshc-opt | FileCheck %s
// mtf.loop prints back as it parses: carried, stacked and invariant
// operands, stacked results, and a loop without the optional groups.

// CHECK-LABEL: mtf.program @layers
mtf.program @layers {
  %x = mtf.input "x" : !mtf.tensor<[b=8, d=4], f32>
  %m = mtf.input "m" : !mtf.tensor<[d=4], f32>
  %w = mtf.param "block.w" normal(0.0, 0.5) : !mtf.tensor<[layers=3, d=4, e=4], f32>
  // CHECK: %{{.*}}, %{{.*}} = mtf.loop "layers" 3 carry(%{{.*}} : !mtf.tensor<[b=8, d=4], f32>) stacked(%{{.*}} : !mtf.tensor<[layers=3, d=4, e=4], f32>) invariant(%{{.*}} : !mtf.tensor<[d=4], f32>) -> (!mtf.tensor<[b=8, d=4], f32>) stacked(!mtf.tensor<[layers=3, b=8, d=4], f32>) {
  // CHECK-NEXT: ^bb0(%[[H:.*]]: !mtf.tensor<[b=8, d=4], f32>, %[[WI:.*]]: !mtf.tensor<[d=4, e=4], f32>, %[[MI:.*]]: !mtf.tensor<[d=4], f32>):
  // CHECK: mtf.yield %{{.*}}, %[[H]] : !mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[b=8, d=4], f32>
  %y:2 = mtf.loop "layers" 3 carry(%x : !mtf.tensor<[b=8, d=4], f32>)
      stacked(%w : !mtf.tensor<[layers=3, d=4, e=4], f32>)
      invariant(%m : !mtf.tensor<[d=4], f32>)
      -> (!mtf.tensor<[b=8, d=4], f32>) stacked (!mtf.tensor<[layers=3, b=8, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=8, d=4], f32>, %wi: !mtf.tensor<[d=4, e=4], f32>, %mi: !mtf.tensor<[d=4], f32>):
    %t = mtf.einsum %h, %wi : !mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[d=4, e=4], f32> -> !mtf.tensor<[b=8, e=4], f32>
    %n = mtf.rename %t "e" to "d" : !mtf.tensor<[b=8, e=4], f32> -> !mtf.tensor<[b=8, d=4], f32>
    %s = mtf.mul %n, %mi : !mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[d=4], f32> -> !mtf.tensor<[b=8, d=4], f32>
    mtf.yield %s, %h : !mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[b=8, d=4], f32>
  }
  // CHECK: mtf.loop "again" 2 carry(%{{.*}} : !mtf.tensor<[b=8, d=4], f32>) -> (!mtf.tensor<[b=8, d=4], f32>) {
  %z = mtf.loop "again" 2 carry(%x : !mtf.tensor<[b=8, d=4], f32>) -> (!mtf.tensor<[b=8, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=8, d=4], f32>):
    %r = mtf.relu %h : !mtf.tensor<[b=8, d=4], f32>
    mtf.yield %r : !mtf.tensor<[b=8, d=4], f32>
  }
  mtf.output "y" %y#0 : !mtf.tensor<[b=8, d=4], f32>
  mtf.output "saved" %y#1 : !mtf.tensor<[layers=3, b=8, d=4], f32>
  mtf.output "z" %z : !mtf.tensor<[b=8, d=4], f32>
}
