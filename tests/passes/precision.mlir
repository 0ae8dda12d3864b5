// RUN: meshc-opt %s -split-input-file -verify-diagnostics --mtf-precision | FileCheck %s
// mtf-precision (--precision=bf16): types by op kind, casts shared within a
// repeat instance and carrying it, constants retyped, outputs cast back.

// CHECK-LABEL: mtf.program @p
mtf.program @p {
  // CHECK: %[[X:.*]] = mtf.input "x" : !mtf.tensor<[a=4, k=2], f32>
  %x = mtf.input "x" : !mtf.tensor<[a=4, k=2], f32>
  // CHECK: %[[W:.*]] = mtf.param "w" {{.*}} : !mtf.tensor<[k=2], f32>
  %w = mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[k=2], f32>
  // An elementwise op of f32 operands alone stays f32.
  // CHECK: mtf.mul %[[X]], %[[X]] : {{.*}} -> !mtf.tensor<[a=4, k=2], f32>
  %sq = mtf.mul %x, %x : !mtf.tensor<[a=4, k=2], f32>, !mtf.tensor<[a=4, k=2], f32> -> !mtf.tensor<[a=4, k=2], f32>
  // One cast of x and one of w serve both einsums of instance "i0", and
  // carry it; instance "i1" gets its own casts.
  // CHECK: %[[XB:.*]] = mtf.cast %[[X]] {mtf.instance = "i0"} : {{.*}} -> !mtf.tensor<[a=4, k=2], bf16>
  // CHECK: %[[WB:.*]] = mtf.cast %[[W]] {mtf.instance = "i0"} : {{.*}} -> !mtf.tensor<[k=2], bf16>
  // CHECK: %[[E0:.*]] = mtf.einsum %[[XB]], %[[WB]] {mtf.instance = "i0"} : {{.*}} -> !mtf.tensor<[a=4], bf16>
  %e0 = mtf.einsum %x, %w {mtf.instance = "i0"} : !mtf.tensor<[a=4, k=2], f32>, !mtf.tensor<[k=2], f32> -> !mtf.tensor<[a=4], f32>
  // CHECK-NOT: mtf.cast
  // CHECK: %[[E1:.*]] = mtf.einsum %[[XB]], %[[WB]] {mtf.instance = "i0"} : {{.*}} -> !mtf.tensor<[a=4], bf16>
  %e1 = mtf.einsum %x, %w {mtf.instance = "i0"} : !mtf.tensor<[a=4, k=2], f32>, !mtf.tensor<[k=2], f32> -> !mtf.tensor<[a=4], f32>
  // CHECK: mtf.cast %[[X]] {mtf.instance = "i1"}
  // CHECK: mtf.cast %[[W]] {mtf.instance = "i1"}
  %e2 = mtf.einsum %x, %w {mtf.instance = "i1"} : !mtf.tensor<[a=4, k=2], f32>, !mtf.tensor<[k=2], f32> -> !mtf.tensor<[a=4], f32>
  // A constant used at bf16 is made at bf16, not cast.
  %c = mtf.constant 5.000000e-01 : !mtf.tensor<[], f32>
  // CHECK: %[[CB:.*]] = mtf.constant 5.000000e-01 : !mtf.tensor<[], bf16>
  // CHECK: %[[S:.*]] = mtf.mul %[[E0]], %[[CB]] : {{.*}} -> !mtf.tensor<[a=4], bf16>
  %s = mtf.mul %e0, %c : !mtf.tensor<[a=4], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[a=4], f32>
  // A reduction reads an f32 cast and is f32.
  // CHECK: %[[SW:.*]] = mtf.cast %[[S]] : {{.*}} -> !mtf.tensor<[a=4], f32>
  // CHECK: %[[R:.*]] = mtf.reduce_sum %[[SW]] : !mtf.tensor<[a=4], f32> -> !mtf.tensor<[], f32>
  %r = mtf.reduce_sum %s : !mtf.tensor<[a=4], f32> -> !mtf.tensor<[], f32>
  // An output of a bf16 value is cast back to f32.
  // CHECK: %[[OW:.*]] = mtf.cast %[[E1]] : {{.*}} -> !mtf.tensor<[a=4], f32>
  // CHECK: mtf.output "e1" %[[OW]] : !mtf.tensor<[a=4], f32>
  mtf.output "e1" %e1 : !mtf.tensor<[a=4], f32>
  mtf.output "e2" %e2 : !mtf.tensor<[a=4], f32>
  mtf.output "r" %r : !mtf.tensor<[], f32>
  mtf.output "sq" %sq : !mtf.tensor<[a=4, k=2], f32>
}

// -----

// It runs before autodiff: an op of the update phase has no rule.
mtf.program @q {
  %w = mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[k=2], f32>
  // expected-error @+1 {{'mtf.assign' op has no mixed-precision rule (mtf-precision)}}
  mtf.assign "w" %w {mtf.phase = "update"} : !mtf.tensor<[k=2], f32>
}
