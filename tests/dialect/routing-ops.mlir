// RUN: meshc-opt %s -split-input-file | FileCheck %s
// RUN: meshc-opt %s -split-input-file | meshc-opt -split-input-file | FileCheck %s
// The ops of causal masks and expert routing print back as they parse.

// CHECK-LABEL: mtf.program @mask
mtf.program @mask {
  // CHECK: %[[Q:.*]] = mtf.range : !mtf.tensor<[seq=4], f32>
  %q = mtf.range : !mtf.tensor<[seq=4], f32>
  // CHECK: %[[K:.*]] = mtf.range : !mtf.tensor<[memory=4], f32>
  %k = mtf.range : !mtf.tensor<[memory=4], f32>
  // CHECK: mtf.less %[[Q]], %[[K]] : !mtf.tensor<[seq=4], f32>, !mtf.tensor<[memory=4], f32> -> !mtf.tensor<[seq=4, memory=4], f32>
  %m = mtf.less %q, %k : !mtf.tensor<[seq=4], f32>, !mtf.tensor<[memory=4], f32> -> !mtf.tensor<[seq=4, memory=4], f32>
  // CHECK: mtf.range : !mtf.tensor<[slot=3], i32>
  %i = mtf.range : !mtf.tensor<[slot=3], i32>
}

// -----

// CHECK-LABEL: mtf.program @route
mtf.program @route {
  %x = mtf.input "x" : !mtf.tensor<[tokens=8, experts=2], f32>
  // CHECK: mtf.cumsum %{{.*}} over "tokens" : !mtf.tensor<[tokens=8, experts=2], f32>
  %c = mtf.cumsum %x over "tokens" : !mtf.tensor<[tokens=8, experts=2], f32>
  // CHECK: mtf.cumsum %{{.*}} over "tokens" reverse : !mtf.tensor<[tokens=8, experts=2], f32>
  %r = mtf.cumsum %c over "tokens" reverse : !mtf.tensor<[tokens=8, experts=2], f32>
}

// -----

// CHECK-LABEL: mtf.program @window
mtf.program @window {
  %x = mtf.input "x" : !mtf.tensor<[b=2, seq=8], f32>
  // CHECK: mtf.window %{{.*}} from "seq" to "half" offset 4 : !mtf.tensor<[b=2, seq=8], f32> -> !mtf.tensor<[b=2, half=4], f32>
  %s = mtf.window %x from "seq" to "half" offset 4 : !mtf.tensor<[b=2, seq=8], f32> -> !mtf.tensor<[b=2, half=4], f32>
  // CHECK: mtf.window %{{.*}} from "seq" to "seq" offset -1 : !mtf.tensor<[b=2, seq=8], f32> -> !mtf.tensor<[b=2, seq=8], f32>
  %t = mtf.window %x from "seq" to "seq" offset -1 : !mtf.tensor<[b=2, seq=8], f32> -> !mtf.tensor<[b=2, seq=8], f32>
  // A window may also put the dims in another order.
  // CHECK: mtf.window %{{.*}} from "seq" to "tick" offset 0 : !mtf.tensor<[b=2, seq=8], f32> -> !mtf.tensor<[tick=10, b=2], f32>
  %u = mtf.window %x from "seq" to "tick" offset 0 : !mtf.tensor<[b=2, seq=8], f32> -> !mtf.tensor<[tick=10, b=2], f32>
}

// -----

// CHECK-LABEL: mtf.program @topk
mtf.program @topk {
  %g = mtf.input "g" : !mtf.tensor<[tokens=8, experts=4], f32>
  // CHECK: mtf.top_k %{{.*}} over "experts" k 2 : !mtf.tensor<[tokens=8, experts=4], f32>
  %m = mtf.top_k %g over "experts" k 2 : !mtf.tensor<[tokens=8, experts=4], f32>
}
