// RUN: meshc-opt %s | FileCheck %s
// RUN: meshc-opt %s | meshc-opt | FileCheck %s
// The training and data ops, slots and the training attributes print back
// as they parse.

// CHECK-LABEL: mtf.program @train attributes {mtf.training = {hyperparams = {lr = 1.000000e-01 : f64}, loss = "loss", optimizer = "sgd"}}
mtf.program @train attributes {mtf.training = {optimizer = "sgd", hyperparams = {lr = 0.1 : f64}, loss = "loss"}} {
  // CHECK: mtf.param "w/adam_m" zeros slot : !mtf.tensor<[k=3], f32>
  %m = mtf.param "w/adam_m" zeros slot : !mtf.tensor<[k=3], f32>
  // CHECK: mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[k=3], f32>
  %w = mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[k=3], f32>
  %ids = mtf.input "ids" : !mtf.tensor<[a=2], i32>
  // CHECK: mtf.dropout_mask "dropout_0" rate 2.500000e-01 : !mtf.tensor<[a=2, k=3], f32>
  %mask = mtf.dropout_mask "dropout_0" rate 0.25 : !mtf.tensor<[a=2, k=3], f32>
  // CHECK: mtf.one_hot %{{.*}} over "k" : !mtf.tensor<[a=2], i32> -> !mtf.tensor<[a=2, k=3], f32>
  %hot = mtf.one_hot %ids over "k" : !mtf.tensor<[a=2], i32> -> !mtf.tensor<[a=2, k=3], f32>
  // CHECK: mtf.argmax %{{.*}} over "k" : !mtf.tensor<[a=2, k=3], f32> -> !mtf.tensor<[a=2], i32>
  %best = mtf.argmax %hot over "k" : !mtf.tensor<[a=2, k=3], f32> -> !mtf.tensor<[a=2], i32>
  // CHECK: mtf.logsumexp %{{.*}} over "k" : !mtf.tensor<[a=2, k=3], f32> -> !mtf.tensor<[a=2], f32>
  %lse = mtf.logsumexp %hot over "k" : !mtf.tensor<[a=2, k=3], f32> -> !mtf.tensor<[a=2], f32>
  // CHECK: mtf.silu %{{.*}} : !mtf.tensor<[k=3], f32>
  %sw = mtf.silu %w : !mtf.tensor<[k=3], f32>
  // CHECK: mtf.sigmoid %{{.*}} : !mtf.tensor<[k=3], f32>
  %sg = mtf.sigmoid %w : !mtf.tensor<[k=3], f32>
  // CHECK: mtf.equal %{{.*}}, %{{.*}} : !mtf.tensor<[a=2], i32>, !mtf.tensor<[a=2], i32> -> !mtf.tensor<[a=2], f32>
  %hit = mtf.equal %best, %ids : !mtf.tensor<[a=2], i32>, !mtf.tensor<[a=2], i32> -> !mtf.tensor<[a=2], f32>
  // CHECK: mtf.positive %{{.*}} {mtf.phase = "backward"} : !mtf.tensor<[k=3], f32>
  %p = mtf.positive %w {mtf.phase = "backward"} : !mtf.tensor<[k=3], f32>
  // CHECK: mtf.gelu_grad %{{.*}} {mtf.phase = "backward"} : !mtf.tensor<[k=3], f32>
  %gg = mtf.gelu_grad %w {mtf.phase = "backward"} : !mtf.tensor<[k=3], f32>
  // CHECK: mtf.local_grad %{{.*}} {mtf.phase = "backward"} : !mtf.tensor<[k=3], f32>
  %g = mtf.local_grad %gg {mtf.phase = "backward"} : !mtf.tensor<[k=3], f32>
  %loss = mtf.reduce_sum %hit : !mtf.tensor<[a=2], f32> -> !mtf.tensor<[], f32>
  mtf.output "loss" %loss : !mtf.tensor<[], f32>
  // CHECK: mtf.assign "w" %{{.*}} {mtf.phase = "update"} : !mtf.tensor<[k=3], f32>
  mtf.assign "w" %g {mtf.phase = "update"} : !mtf.tensor<[k=3], f32>
  // CHECK: mtf.assign "w/adam_m" %{{.*}} {mtf.phase = "update"} : !mtf.tensor<[k=3], f32>
  mtf.assign "w/adam_m" %p {mtf.phase = "update"} : !mtf.tensor<[k=3], f32>
}
