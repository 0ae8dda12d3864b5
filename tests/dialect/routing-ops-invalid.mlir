// RUN: meshc-opt %s -split-input-file -verify-diagnostics
// Every verifier error of mtf.range, mtf.less and mtf.cumsum.

mtf.program @p {
  // expected-error @+1 {{'mtf.range' op result must have exactly one dimension, got '!mtf.tensor<[a=2, b=2], f32>'}}
  %r = mtf.range : !mtf.tensor<[a=2, b=2], f32>
}

// -----

mtf.program @p {
  // expected-error @+1 {{'mtf.range' op result must have exactly one dimension}}
  %r = mtf.range : !mtf.tensor<[], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], i32>
  %y = mtf.input "y" : !mtf.tensor<[a=2], f32>
  // expected-error @+1 {{'mtf.less' op element types must match, got 'i32' and 'f32' -> 'f32'}}
  %e = mtf.less %x, %y : !mtf.tensor<[a=2], i32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  // expected-error @+1 {{'mtf.less' op result lacks operand dimension 'a'}}
  %e = mtf.less %x, %x : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  // expected-error @+1 {{'mtf.cumsum' op operand has no dimension 'b'}}
  %c = mtf.cumsum %x over "b" : !mtf.tensor<[a=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], i32>
  // expected-error @+1 {{operand #0 must be}}
  %c = mtf.cumsum %x over "a" : !mtf.tensor<[a=2], i32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, s=4], f32>
  // expected-error @+1 {{'mtf.window' op operand has no dimension 'q'}}
  %w = mtf.window %x from "q" to "t" offset 0 : !mtf.tensor<[a=2, s=4], f32> -> !mtf.tensor<[a=2, t=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, s=4], f32>
  // expected-error @+1 {{'mtf.window' op operand already has dimension 'a'}}
  %w = mtf.window %x from "s" to "a" offset 0 : !mtf.tensor<[a=2, s=4], f32> -> !mtf.tensor<[a=2, t=4], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, s=4], f32>
  // expected-error @+1 {{'mtf.window' op result must be the operand with 's' replaced by 't' (its dims in any order), got '!mtf.tensor<[t=2, a=3], f32>' from '!mtf.tensor<[a=2, s=4], f32>'}}
  %w = mtf.window %x from "s" to "t" offset 0 : !mtf.tensor<[a=2, s=4], f32> -> !mtf.tensor<[t=2, a=3], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, s=4], f32>
  // expected-error @+1 {{'mtf.window' op result must be the operand with 's' replaced by 't' (its dims in any order), got '!mtf.tensor<[t=2, s=4], f32>' from '!mtf.tensor<[a=2, s=4], f32>'}}
  %w = mtf.window %x from "s" to "t" offset 0 : !mtf.tensor<[a=2, s=4], f32> -> !mtf.tensor<[t=2, s=4], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, e=4], f32>
  // expected-error @+1 {{'mtf.top_k' op k must be in [1, 4] (the size of 'e'), got 5}}
  %m = mtf.top_k %x over "e" k 5 : !mtf.tensor<[a=2, e=4], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, e=4], f32>
  // expected-error @+1 {{'mtf.top_k' op operand has no dimension 'q'}}
  %m = mtf.top_k %x over "q" k 1 : !mtf.tensor<[a=2, e=4], f32>
}
