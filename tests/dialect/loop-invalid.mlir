// RUN: meshc-opt %s -split-input-file -verify-diagnostics
// The verifier errors of mtf.loop.

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[b=8, d=4], f32>
  // expected-error @+1 {{'mtf.loop' op has 1 operands but its body takes 2 arguments (one per operand)}}
  %y = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=8, d=4], f32>) -> (!mtf.tensor<[b=8, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=8, d=4], f32>, %g: !mtf.tensor<[b=8, d=4], f32>):
    mtf.yield %h : !mtf.tensor<[b=8, d=4], f32>
  }
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[b=8, d=4], f32>
  %w = mtf.input "w" : !mtf.tensor<[d=4, layers=2], f32>
  // expected-error @+1 {{'mtf.loop' op stacked operand #0 has type '!mtf.tensor<[d=4, layers=2], f32>'; a stacked operand has the loop's dim 'layers' (size 2) first}}
  %y = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=8, d=4], f32>) stacked(%w : !mtf.tensor<[d=4, layers=2], f32>) -> (!mtf.tensor<[b=8, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=8, d=4], f32>, %wi: !mtf.tensor<[d=4], f32>):
    mtf.yield %h : !mtf.tensor<[b=8, d=4], f32>
  }
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[b=8, d=4], f32>
  %w = mtf.input "w" : !mtf.tensor<[layers=3, d=4], f32>
  // expected-error @+1 {{'mtf.loop' op stacked operand #0 has type '!mtf.tensor<[layers=3, d=4], f32>'; a stacked operand has the loop's dim 'layers' (size 2) first}}
  %y = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=8, d=4], f32>) stacked(%w : !mtf.tensor<[layers=3, d=4], f32>) -> (!mtf.tensor<[b=8, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=8, d=4], f32>, %wi: !mtf.tensor<[d=4], f32>):
    mtf.yield %h : !mtf.tensor<[b=8, d=4], f32>
  }
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[b=8, d=4], f32>
  %w = mtf.input "w" : !mtf.tensor<[layers=2, d=4], f32>
  // expected-error @+1 {{'mtf.loop' op body argument #1 has type '!mtf.tensor<[layers=2, d=4], f32>' but operand #1 gives it '!mtf.tensor<[d=4], f32>'}}
  %y = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=8, d=4], f32>) stacked(%w : !mtf.tensor<[layers=2, d=4], f32>) -> (!mtf.tensor<[b=8, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=8, d=4], f32>, %wi: !mtf.tensor<[layers=2, d=4], f32>):
    mtf.yield %h : !mtf.tensor<[b=8, d=4], f32>
  }
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[b=8, d=4], f32>
  // expected-error @+1 {{'mtf.loop' op yields '!mtf.tensor<[b=8], f32>' for carried value #0, which has type '!mtf.tensor<[b=8, d=4], f32>'}}
  %y = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=8, d=4], f32>) -> (!mtf.tensor<[b=8, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=8, d=4], f32>):
    %s = mtf.reduce_sum %h : !mtf.tensor<[b=8, d=4], f32> -> !mtf.tensor<[b=8], f32>
    mtf.yield %s : !mtf.tensor<[b=8], f32>
  }
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[b=8, d=4], f32>
  // expected-error @+1 {{'mtf.loop' op result #1 has type '!mtf.tensor<[b=8, layers=2, d=4], f32>' but stacking the body's '!mtf.tensor<[b=8, d=4], f32>' along 'layers' gives '!mtf.tensor<[layers=2, b=8, d=4], f32>'}}
  %y:2 = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=8, d=4], f32>) -> (!mtf.tensor<[b=8, d=4], f32>) stacked (!mtf.tensor<[b=8, layers=2, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=8, d=4], f32>):
    mtf.yield %h, %h : !mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[b=8, d=4], f32>
  }
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[b=8, d=4], f32>
  // expected-error @+1 {{'mtf.loop' op yields 2 value(s) but has 1 result(s)}}
  %y = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=8, d=4], f32>) -> (!mtf.tensor<[b=8, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=8, d=4], f32>):
    mtf.yield %h, %h : !mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[b=8, d=4], f32>
  }
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[b=8, d=4], f32>
  %y = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=8, d=4], f32>) -> (!mtf.tensor<[b=8, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=8, d=4], f32>):
    // expected-error @+1 {{'mtf.constant' op has the loop's dim 'layers', which the body of the loop over it never sees}}
    %c = mtf.constant 1.0 : !mtf.tensor<[layers=2], f32>
    mtf.yield %h : !mtf.tensor<[b=8, d=4], f32>
  }
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[b=8, d=4], f32>
  // expected-error @+1 {{'mtf.loop' op attribute 'count' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %y = mtf.loop "layers" 0 carry(%x : !mtf.tensor<[b=8, d=4], f32>) -> (!mtf.tensor<[b=8, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=8, d=4], f32>):
    mtf.yield %h : !mtf.tensor<[b=8, d=4], f32>
  }
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[b=8, d=4], f32>
  %y = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=8, d=4], f32>) -> (!mtf.tensor<[b=8, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=8, d=4], f32>):
    // expected-error @+1 {{'mtf.input' op cannot stand in a loop body: inputs, parameters, outputs and updates belong to the program (a stacked parameter is an operand)}}
    %z = mtf.input "z" : !mtf.tensor<[b=8, d=4], f32>
    mtf.yield %h : !mtf.tensor<[b=8, d=4], f32>
  }
}
