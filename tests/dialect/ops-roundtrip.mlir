// RUN: meshc-opt %s | FileCheck %s
// RUN: meshc-opt %s | meshc-opt | FileCheck %s
// Every mtf op, type and attribute prints back as it parses.

// CHECK-LABEL: mtf.program @all_ops mesh <b=2, m=2>
mtf.program @all_ops mesh #mtf.mesh<b=2, m=2> {
  // CHECK: %[[X:.*]] = mtf.input "x" : !mtf.tensor<[batch=8, io=4], f32>
  %x = mtf.input "x" : !mtf.tensor<[batch=8, io=4], f32>
  // CHECK: %[[L:.*]] = mtf.input "labels" : !mtf.tensor<[batch=8], i32>
  %labels = mtf.input "labels" : !mtf.tensor<[batch=8], i32>
  // CHECK: %[[W:.*]] = mtf.param "w" normal(0.0, 0.05) : !mtf.tensor<[io=4, classes=10], f32>
  %w = mtf.param "w" normal(0.0, 0.05) : !mtf.tensor<[io=4, classes=10], f32>
  // CHECK: mtf.param "b" zeros : !mtf.tensor<[classes=10], f32>
  %b = mtf.param "b" zeros : !mtf.tensor<[classes=10], f32>
  // CHECK: mtf.param "u" uniform(-1.0, 1.0e-05)
  %u = mtf.param "u" uniform(-1.0, 1.0e-05) : !mtf.tensor<[classes=10], f32>
  // CHECK: mtf.param "c" constant(3.0)
  %c = mtf.param "c" constant(3.0) : !mtf.tensor<[classes=10], bf16>
  // CHECK: mtf.constant 5.000000e-01 : !mtf.tensor<[], f32>
  %half = mtf.constant 5.000000e-01 : !mtf.tensor<[], f32>
  // CHECK: %[[E:.*]] = mtf.einsum %[[X]], %[[W]] : !mtf.tensor<[batch=8, io=4], f32>, !mtf.tensor<[io=4, classes=10], f32> -> !mtf.tensor<[batch=8, classes=10], f32>
  %e = mtf.einsum %x, %w : !mtf.tensor<[batch=8, io=4], f32>, !mtf.tensor<[io=4, classes=10], f32> -> !mtf.tensor<[batch=8, classes=10], f32>
  // CHECK: mtf.einsum %[[X]] : !mtf.tensor<[batch=8, io=4], f32> -> !mtf.tensor<[io=4, batch=8], f32>
  %t = mtf.einsum %x : !mtf.tensor<[batch=8, io=4], f32> -> !mtf.tensor<[io=4, batch=8], f32>
  // CHECK: mtf.add %[[E]], %{{.*}} : !mtf.tensor<[batch=8, classes=10], f32>, !mtf.tensor<[classes=10], f32> -> !mtf.tensor<[batch=8, classes=10], f32>
  %z = mtf.add %e, %b : !mtf.tensor<[batch=8, classes=10], f32>, !mtf.tensor<[classes=10], f32> -> !mtf.tensor<[batch=8, classes=10], f32>
  %s1 = mtf.sub %z, %half : !mtf.tensor<[batch=8, classes=10], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[batch=8, classes=10], f32>
  %s2 = mtf.mul %s1, %s1 : !mtf.tensor<[batch=8, classes=10], f32>, !mtf.tensor<[batch=8, classes=10], f32> -> !mtf.tensor<[batch=8, classes=10], f32>
  %s3 = mtf.div %s2, %half : !mtf.tensor<[batch=8, classes=10], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[batch=8, classes=10], f32>
  %s4 = mtf.max %s3, %half : !mtf.tensor<[batch=8, classes=10], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[batch=8, classes=10], f32>
  // CHECK: mtf.min %{{.*}}, %{{.*}} : !mtf.tensor<[], f32>, !mtf.tensor<[batch=8, classes=10], f32> -> !mtf.tensor<[batch=8, classes=10], f32>
  %s5 = mtf.min %half, %s4 : !mtf.tensor<[], f32>, !mtf.tensor<[batch=8, classes=10], f32> -> !mtf.tensor<[batch=8, classes=10], f32>
  // CHECK: mtf.relu %{{.*}} : !mtf.tensor<[batch=8, classes=10], f32>
  %r0 = mtf.relu %s5 : !mtf.tensor<[batch=8, classes=10], f32>
  %r1 = mtf.gelu %r0 : !mtf.tensor<[batch=8, classes=10], f32>
  %r2 = mtf.exp %r1 : !mtf.tensor<[batch=8, classes=10], f32>
  %r3 = mtf.log %r2 : !mtf.tensor<[batch=8, classes=10], f32>
  %r4 = mtf.tanh %r3 : !mtf.tensor<[batch=8, classes=10], f32>
  %r5 = mtf.sqrt %r4 : !mtf.tensor<[batch=8, classes=10], f32>
  %r6 = mtf.rsqrt %r5 : !mtf.tensor<[batch=8, classes=10], f32>
  // CHECK: mtf.negate
  %r7 = mtf.negate %r6 : !mtf.tensor<[batch=8, classes=10], f32>
  // CHECK: mtf.cast %{{.*}} : !mtf.tensor<[batch=8, classes=10], f32> -> !mtf.tensor<[batch=8, classes=10], bf16>
  %bf = mtf.cast %r7 : !mtf.tensor<[batch=8, classes=10], f32> -> !mtf.tensor<[batch=8, classes=10], bf16>
  // CHECK: mtf.reduce_sum %{{.*}} : !mtf.tensor<[batch=8, classes=10], f32> -> !mtf.tensor<[batch=8], f32>
  %rs = mtf.reduce_sum %r7 : !mtf.tensor<[batch=8, classes=10], f32> -> !mtf.tensor<[batch=8], f32>
  %rm = mtf.reduce_max %r7 : !mtf.tensor<[batch=8, classes=10], f32> -> !mtf.tensor<[classes=10], f32>
  // CHECK: mtf.softmax %{{.*}} over "classes" : !mtf.tensor<[batch=8, classes=10], f32>
  %p = mtf.softmax %r7 over "classes" : !mtf.tensor<[batch=8, classes=10], f32>
  // CHECK: mtf.softmax_cross_entropy %{{.*}}, %[[L]] over "classes" : !mtf.tensor<[batch=8, classes=10], f32>, !mtf.tensor<[batch=8], i32> -> !mtf.tensor<[batch=8], f32>
  %xe = mtf.softmax_cross_entropy %z, %labels over "classes" : !mtf.tensor<[batch=8, classes=10], f32>, !mtf.tensor<[batch=8], i32> -> !mtf.tensor<[batch=8], f32>
  // CHECK: mtf.rename %{{.*}} "batch" to "rows" : !mtf.tensor<[batch=8, classes=10], f32> -> !mtf.tensor<[rows=8, classes=10], f32>
  %rn = mtf.rename %p "batch" to "rows" : !mtf.tensor<[batch=8, classes=10], f32> -> !mtf.tensor<[rows=8, classes=10], f32>
  // CHECK: mtf.constrain %{{.*}} to <rows: b+m> : !mtf.tensor<[rows=8, classes=10], f32>
  %cn = mtf.constrain %rn to <rows: b+m> : !mtf.tensor<[rows=8, classes=10], f32>
  // CHECK: %[[LOSS:.*]] = mtf.reduce_mean %{{.*}} : !mtf.tensor<[batch=8], f32> -> !mtf.tensor<[], f32>
  %loss = mtf.reduce_mean %xe : !mtf.tensor<[batch=8], f32> -> !mtf.tensor<[], f32>
  // CHECK: mtf.output "loss" %[[LOSS]] : !mtf.tensor<[], f32>
  mtf.output "loss" %loss : !mtf.tensor<[], f32>
  // CHECK: mtf.train %[[LOSS]] with "adam" {beta1 = 9.000000e-01 : f64, lr = 1.000000e-03 : f64} : !mtf.tensor<[], f32>
  mtf.train %loss with "adam" {lr = 1.0e-3 : f64, beta1 = 0.9 : f64} : !mtf.tensor<[], f32>
}

// CHECK-LABEL: mtf.program @layouts
mtf.program @layouts mesh #mtf.mesh<b=4, m=2> {
  // CHECK: mtf.input "x" {mtf.layout = #mtf.layout<batch: b, d: m>} : !mtf.tensor<[batch=8, d=4], f16>
  %x = mtf.input "x" {mtf.layout = #mtf.layout<batch: b, d: m>} : !mtf.tensor<[batch=8, d=4], f16>
  // CHECK: mtf.input "y" {mtf.layout = #mtf.layout<>} : !mtf.tensor<[], f32>
  %y = mtf.input "y" {mtf.layout = #mtf.layout<>} : !mtf.tensor<[], f32>
  // CHECK: mtf.input "q" : !mtf.tensor<["odd name"=8], f32>
  %q = mtf.input "q" : !mtf.tensor<["odd name"=8], f32>
}
