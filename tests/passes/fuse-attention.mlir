// RUN: meshc-opt %s -split-input-file --mtf-fuse-attention | FileCheck %s
// mtf-fuse-attention: einsum(q, k) [* c] [+ bias] -> softmax -> einsum(., v)
// becomes one mtf.attention; anything else stays as written.

// charlm's form: a value dim shares its name (d) with the head dim, the
// bias is a mask no parameter reaches, the scale a scalar constant; the
// context's tags carry over.
// CHECK-LABEL: mtf.program @charlm
// CHECK: %[[Q:.*]] = mtf.einsum %{{.*}}, %[[WQ:.*]] : {{.*}} -> !mtf.tensor<[b=2, s=4, h=2, d=3], f32>
// CHECK: %[[O:.*]], %[[L:.*]] = mtf.attention %[[Q]], %[[K:.*]], %[[V:.*]] bias %[[MASK:.*]] over "m" heads ["d"] scale 5.000000e-01 {mtf.instance = "block_0"}
// CHECK-SAME: -> !mtf.tensor<[b=2, s=4, h=2, d=3], f32>, !mtf.tensor<[b=2, s=4, h=2], f32>
// CHECK-NOT: mtf.softmax
// CHECK: mtf.output "y" %[[O]]
mtf.program @charlm {
  %x = mtf.input "x" : !mtf.tensor<[b=2, s=4, i=5], f32>
  %wq = mtf.param "wq" normal(0.0, 1.0) : !mtf.tensor<[i=5, h=2, d=3], f32>
  %wk = mtf.param "wk" normal(0.0, 1.0) : !mtf.tensor<[i=5, h=2, d=3], f32>
  %wv = mtf.param "wv" normal(0.0, 1.0) : !mtf.tensor<[i=5, h=2, d=3], f32>
  %rs = mtf.range : !mtf.tensor<[s=4], f32>
  %rm = mtf.range : !mtf.tensor<[m=4], f32>
  %lt = mtf.less %rs, %rm : !mtf.tensor<[s=4], f32>, !mtf.tensor<[m=4], f32> -> !mtf.tensor<[s=4, m=4], f32>
  %big = mtf.constant -1.000000e+09 : !mtf.tensor<[], f32>
  %mask = mtf.mul %lt, %big : !mtf.tensor<[s=4, m=4], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[s=4, m=4], f32>
  %q = mtf.einsum %x, %wq : !mtf.tensor<[b=2, s=4, i=5], f32>, !mtf.tensor<[i=5, h=2, d=3], f32> -> !mtf.tensor<[b=2, s=4, h=2, d=3], f32>
  %k0 = mtf.einsum %x, %wk : !mtf.tensor<[b=2, s=4, i=5], f32>, !mtf.tensor<[i=5, h=2, d=3], f32> -> !mtf.tensor<[b=2, s=4, h=2, d=3], f32>
  %k = mtf.rename %k0 "s" to "m" : !mtf.tensor<[b=2, s=4, h=2, d=3], f32> -> !mtf.tensor<[b=2, m=4, h=2, d=3], f32>
  %v0 = mtf.einsum %x, %wv : !mtf.tensor<[b=2, s=4, i=5], f32>, !mtf.tensor<[i=5, h=2, d=3], f32> -> !mtf.tensor<[b=2, s=4, h=2, d=3], f32>
  %v = mtf.rename %v0 "s" to "m" : !mtf.tensor<[b=2, s=4, h=2, d=3], f32> -> !mtf.tensor<[b=2, m=4, h=2, d=3], f32>
  %e = mtf.einsum %q, %k : !mtf.tensor<[b=2, s=4, h=2, d=3], f32>, !mtf.tensor<[b=2, m=4, h=2, d=3], f32> -> !mtf.tensor<[b=2, h=2, s=4, m=4], f32>
  %c = mtf.constant 5.000000e-01 : !mtf.tensor<[], f32>
  %scaled = mtf.mul %e, %c : !mtf.tensor<[b=2, h=2, s=4, m=4], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[b=2, h=2, s=4, m=4], f32>
  %biased = mtf.add %scaled, %mask : !mtf.tensor<[b=2, h=2, s=4, m=4], f32>, !mtf.tensor<[s=4, m=4], f32> -> !mtf.tensor<[b=2, h=2, s=4, m=4], f32>
  %w = mtf.softmax %biased over "m" : !mtf.tensor<[b=2, h=2, s=4, m=4], f32>
  %y = mtf.einsum %w, %v {mtf.instance = "block_0"} : !mtf.tensor<[b=2, h=2, s=4, m=4], f32>, !mtf.tensor<[b=2, m=4, h=2, d=3], f32> -> !mtf.tensor<[b=2, s=4, h=2, d=3], f32>
  mtf.output "y" %y : !mtf.tensor<[b=2, s=4, h=2, d=3], f32>
}

// -----

// No scale, no bias, key first in the first einsum, value first in the
// second.
// CHECK-LABEL: mtf.program @plain
// CHECK: mtf.attention %[[Q:.*]], %[[K:.*]], %[[V:.*]] over "m" heads ["d"] scale 1.000000e+00 :
// CHECK-NOT: bias
mtf.program @plain {
  %q = mtf.input "q" : !mtf.tensor<[s=4, d=3], f32>
  %k = mtf.input "k" : !mtf.tensor<[m=5, d=3], f32>
  %v = mtf.input "v" : !mtf.tensor<[m=5, e=2], f32>
  %e = mtf.einsum %k, %q : !mtf.tensor<[m=5, d=3], f32>, !mtf.tensor<[s=4, d=3], f32> -> !mtf.tensor<[s=4, m=5], f32>
  %w = mtf.softmax %e over "m" : !mtf.tensor<[s=4, m=5], f32>
  %y = mtf.einsum %v, %w : !mtf.tensor<[m=5, e=2], f32>, !mtf.tensor<[s=4, m=5], f32> -> !mtf.tensor<[s=4, e=2], f32>
  mtf.output "y" %y : !mtf.tensor<[s=4, e=2], f32>
}

// -----

// Left alone: the weights are read twice; a bias a parameter reaches; the
// softmax over a dim of the query; a second einsum that sums more than the
// key dim.
// CHECK-LABEL: mtf.program @unmatched
// CHECK-NOT: mtf.attention
// CHECK-COUNT-4: mtf.softmax
mtf.program @unmatched {
  %q = mtf.input "q" : !mtf.tensor<[s=4, d=3], f32>
  %k = mtf.input "k" : !mtf.tensor<[m=5, d=3], f32>
  %v = mtf.input "v" : !mtf.tensor<[m=5, e=2], f32>
  %p = mtf.param "p" normal(0.0, 1.0) : !mtf.tensor<[s=4, m=5], f32>
  %e1 = mtf.einsum %q, %k : !mtf.tensor<[s=4, d=3], f32>, !mtf.tensor<[m=5, d=3], f32> -> !mtf.tensor<[s=4, m=5], f32>
  %w1 = mtf.softmax %e1 over "m" : !mtf.tensor<[s=4, m=5], f32>
  %y1 = mtf.einsum %w1, %v : !mtf.tensor<[s=4, m=5], f32>, !mtf.tensor<[m=5, e=2], f32> -> !mtf.tensor<[s=4, e=2], f32>
  mtf.output "y1" %y1 : !mtf.tensor<[s=4, e=2], f32>
  mtf.output "w1" %w1 : !mtf.tensor<[s=4, m=5], f32>
  %e2 = mtf.einsum %q, %k : !mtf.tensor<[s=4, d=3], f32>, !mtf.tensor<[m=5, d=3], f32> -> !mtf.tensor<[s=4, m=5], f32>
  %b2 = mtf.add %e2, %p : !mtf.tensor<[s=4, m=5], f32>, !mtf.tensor<[s=4, m=5], f32> -> !mtf.tensor<[s=4, m=5], f32>
  %w2 = mtf.softmax %b2 over "m" : !mtf.tensor<[s=4, m=5], f32>
  %y2 = mtf.einsum %w2, %v : !mtf.tensor<[s=4, m=5], f32>, !mtf.tensor<[m=5, e=2], f32> -> !mtf.tensor<[s=4, e=2], f32>
  mtf.output "y2" %y2 : !mtf.tensor<[s=4, e=2], f32>
  %e3 = mtf.einsum %q, %k : !mtf.tensor<[s=4, d=3], f32>, !mtf.tensor<[m=5, d=3], f32> -> !mtf.tensor<[s=4, m=5], f32>
  %w3 = mtf.softmax %e3 over "s" : !mtf.tensor<[s=4, m=5], f32>
  %y3 = mtf.einsum %w3, %v : !mtf.tensor<[s=4, m=5], f32>, !mtf.tensor<[m=5, e=2], f32> -> !mtf.tensor<[s=4, e=2], f32>
  mtf.output "y3" %y3 : !mtf.tensor<[s=4, e=2], f32>
  %e4 = mtf.einsum %q, %k : !mtf.tensor<[s=4, d=3], f32>, !mtf.tensor<[m=5, d=3], f32> -> !mtf.tensor<[s=4, m=5], f32>
  %w4 = mtf.softmax %e4 over "m" : !mtf.tensor<[s=4, m=5], f32>
  %y4 = mtf.einsum %w4, %v : !mtf.tensor<[s=4, m=5], f32>, !mtf.tensor<[m=5, e=2], f32> -> !mtf.tensor<[e=2], f32>
  mtf.output "y4" %y4 : !mtf.tensor<[e=2], f32>
}
