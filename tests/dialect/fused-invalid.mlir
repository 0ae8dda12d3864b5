// RUN: meshc-opt %s -split-input-file -verify-diagnostics
// The verifier errors of mtf.fused.

mtf.program @p local {
  %x = mtf.input "x" : !mtf.tensor<[a=4, b=8], f32>
  // expected-error @+1 {{'mtf.fused' op has 1 operands but its body takes 2}}
  %y = mtf.fused(%x) : (!mtf.tensor<[a=4, b=8], f32>) -> !mtf.tensor<[a=4, b=8], f32> {
  ^bb0(%p: !mtf.tensor<[a=4, b=8], f32>, %q: !mtf.tensor<[a=4, b=8], f32>):
    mtf.yield %p : !mtf.tensor<[a=4, b=8], f32>
  }
}

// -----

mtf.program @p local {
  %x = mtf.input "x" : !mtf.tensor<[a=4, b=8], f32>
  // expected-error @+1 {{'mtf.fused' op yields 1 value(s) whose types differ from its 1 result type(s)}}
  %y = mtf.fused(%x) : (!mtf.tensor<[a=4, b=8], f32>) -> !mtf.tensor<[a=4], f32> {
  ^bb0(%p: !mtf.tensor<[a=4, b=8], f32>):
    %e = mtf.exp %p : !mtf.tensor<[a=4, b=8], f32>
    mtf.yield %e : !mtf.tensor<[a=4, b=8], f32>
  }
}

// -----

mtf.program @p local {
  %x = mtf.input "x" : !mtf.tensor<[a=4, b=8], f32>
  %w = mtf.input "w" : !mtf.tensor<[b=8, c=2], f32>
  %y = mtf.fused(%x, %w) : (!mtf.tensor<[a=4, b=8], f32>, !mtf.tensor<[b=8, c=2], f32>) -> !mtf.tensor<[a=4, c=2], f32> {
  ^bb0(%p: !mtf.tensor<[a=4, b=8], f32>, %q: !mtf.tensor<[b=8, c=2], f32>):
    // expected-error @+1 {{'mtf.einsum' op cannot stand in an mtf.fused body (only f32 elementwise ops, constants and reductions can)}}
    %e = mtf.einsum %p, %q : !mtf.tensor<[a=4, b=8], f32>, !mtf.tensor<[b=8, c=2], f32> -> !mtf.tensor<[a=4, c=2], f32>
    mtf.yield %e : !mtf.tensor<[a=4, c=2], f32>
  }
}

// -----

mtf.program @p local {
  %x = mtf.input "x" : !mtf.tensor<[a=4, b=8], f32>
  %y:2 = mtf.fused(%x) : (!mtf.tensor<[a=4, b=8], f32>) -> (!mtf.tensor<[a=4], f32>, !mtf.tensor<[b=8], f32>) {
  ^bb0(%p: !mtf.tensor<[a=4, b=8], f32>):
    %s = mtf.reduce_sum %p : !mtf.tensor<[a=4, b=8], f32> -> !mtf.tensor<[a=4], f32>
    // expected-error @+1 {{'mtf.reduce_max' op reduces [a] but the fused body's other reductions reduce [b]}}
    %m = mtf.reduce_max %p : !mtf.tensor<[a=4, b=8], f32> -> !mtf.tensor<[b=8], f32>
    mtf.yield %s, %m : !mtf.tensor<[a=4], f32>, !mtf.tensor<[b=8], f32>
  }
}

// -----

mtf.program @p local {
  %x = mtf.input "x" : !mtf.tensor<[a=4, b=8], f32>
  %v = mtf.input "v" : !mtf.tensor<[b=8], f32>
  %y:2 = mtf.fused(%x, %v) : (!mtf.tensor<[a=4, b=8], f32>, !mtf.tensor<[b=8], f32>) -> (!mtf.tensor<[a=4, b=8], f32>, !mtf.tensor<[b=8], f32>) {
  ^bb0(%p: !mtf.tensor<[a=4, b=8], f32>, %q: !mtf.tensor<[b=8], f32>):
    %e = mtf.exp %p : !mtf.tensor<[a=4, b=8], f32>
    // expected-error @+1 {{'mtf.tanh' op has dims [b] but every value of the fused body has its dims [a, b]}}
    %t = mtf.tanh %q : !mtf.tensor<[b=8], f32>
    mtf.yield %e, %t : !mtf.tensor<[a=4, b=8], f32>, !mtf.tensor<[b=8], f32>
  }
}
