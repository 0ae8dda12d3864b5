// RUN: meshc-opt %s -split-input-file --mtf-apply-layout='mesh=b:4,m:2 layout=batch:b,hidden:m' | FileCheck %s
// Layout rules apply by dimension name; constraints override them.

// CHECK-LABEL: mtf.program @mlp mesh <b=4, m=2>
mtf.program @mlp {
  // CHECK: mtf.input "x" {mtf.layout = #mtf.layout<batch: b>} : !mtf.tensor<[batch=64, io=64], f32>
  %x = mtf.input "x" : !mtf.tensor<[batch=64, io=64], f32>
  // CHECK: mtf.param "w1" zeros {mtf.layout = #mtf.layout<hidden: m>} : !mtf.tensor<[io=64, hidden=128], f32>
  %w1 = mtf.param "w1" zeros : !mtf.tensor<[io=64, hidden=128], f32>
  // CHECK: mtf.einsum {{.*}} {mtf.layout = #mtf.layout<batch: b, hidden: m>} : {{.*}} -> !mtf.tensor<[batch=64, hidden=128], f32>
  %h = mtf.einsum %x, %w1 : !mtf.tensor<[batch=64, io=64], f32>, !mtf.tensor<[io=64, hidden=128], f32> -> !mtf.tensor<[batch=64, hidden=128], f32>
  // CHECK: mtf.constrain {{.*}} to <hidden: b+m> {mtf.layout = #mtf.layout<hidden: b+m>}
  %c = mtf.constrain %w1 to <hidden: b+m> : !mtf.tensor<[io=64, hidden=128], f32>
  // CHECK: mtf.reduce_sum {{.*}} {mtf.layout = #mtf.layout<>} : {{.*}} -> !mtf.tensor<[], f32>
  %s = mtf.reduce_sum %h : !mtf.tensor<[batch=64, hidden=128], f32> -> !mtf.tensor<[], f32>
  // CHECK: mtf.output "s" %{{.*}} : !mtf.tensor<[], f32>
  mtf.output "s" %s : !mtf.tensor<[], f32>
}

// -----

// A program's own mesh is replaced by the option's.
// CHECK-LABEL: mtf.program @remesh mesh <b=4, m=2>
mtf.program @remesh mesh <x=8> {
  // CHECK: mtf.input "x" {mtf.layout = #mtf.layout<batch: b, hidden: m>}
  %x = mtf.input "x" : !mtf.tensor<[batch=64, hidden=4], f32>
}
