// RUN: meshc-opt %s -split-input-file -verify-diagnostics
// Every verifier error of mtf.split_dim and mtf.merge_dims.

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=6], f32>
  // expected-error @+1 {{'mtf.split_dim' op operand has no dimension 'b' to split (type '!mtf.tensor<[a=6], f32>')}}
  %s = mtf.split_dim %x "b" : !mtf.tensor<[a=6], f32> -> !mtf.tensor<[u=3, v=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=6], f32>
  // expected-error @+1 {{'mtf.split_dim' op result must have one dimension more than the operand (type '!mtf.tensor<[a=6], f32>'), got '!mtf.tensor<[u=6], f32>'}}
  %s = mtf.split_dim %x "a" : !mtf.tensor<[a=6], f32> -> !mtf.tensor<[u=6], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=6], f32>
  // expected-error @+1 {{'mtf.split_dim' op splits 'a' of size 6 into 'u' (4) and 'v' (2), whose sizes do not multiply to it}}
  %s = mtf.split_dim %x "a" : !mtf.tensor<[a=6], f32> -> !mtf.tensor<[u=4, v=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=6], f32>
  // expected-error @+1 {{'mtf.split_dim' op operand already has a dimension 'a'}}
  %s = mtf.split_dim %x "a" : !mtf.tensor<[a=6], f32> -> !mtf.tensor<[a=3, v=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=6, c=2], f32>
  // expected-error @+1 {{'mtf.split_dim' op result must be the operand (type '!mtf.tensor<[a=6, c=2], f32>') with 'a' replaced by two dimensions, got '!mtf.tensor<[u=3, v=2, d=2], f32>'}}
  %s = mtf.split_dim %x "a" : !mtf.tensor<[a=6, c=2], f32> -> !mtf.tensor<[u=3, v=2, d=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=6], f32>
  // expected-error @+1 {{'mtf.split_dim' op result must be the operand (type '!mtf.tensor<[a=6], f32>') with 'a' replaced by two dimensions, got '!mtf.tensor<[u=3, v=2], bf16>'}}
  %s = mtf.split_dim %x "a" : !mtf.tensor<[a=6], f32> -> !mtf.tensor<[u=3, v=2], bf16>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=3, b=2], f32>
  // expected-error @+1 {{'mtf.merge_dims' op operand has no dimension 'b' followed by another to merge it with}}
  %m = mtf.merge_dims %x "b" : !mtf.tensor<[a=3, b=2], f32> -> !mtf.tensor<[c=6], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=3, b=2], f32>
  // expected-error @+1 {{'mtf.merge_dims' op merges 'a' (3) and 'b' (2) into 'c' of size 5, not 6}}
  %m = mtf.merge_dims %x "a" : !mtf.tensor<[a=3, b=2], f32> -> !mtf.tensor<[c=5], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=3, b=2], f32>
  // expected-error @+1 {{'mtf.merge_dims' op operand already has a dimension 'a'}}
  %m = mtf.merge_dims %x "a" : !mtf.tensor<[a=3, b=2], f32> -> !mtf.tensor<[a=6], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=3, b=2, c=1], f32>
  // expected-error @+1 {{'mtf.merge_dims' op result must have one dimension less than the operand}}
  %m = mtf.merge_dims %x "a" : !mtf.tensor<[a=3, b=2, c=1], f32> -> !mtf.tensor<[d=6, c=1, e=1], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=3, b=2, c=1], f32>
  // expected-error @+1 {{'mtf.merge_dims' op result must be the operand (type '!mtf.tensor<[a=3, b=2, c=1], f32>') with 'a' and the dimension after it replaced by one, got '!mtf.tensor<[d=6, e=1], f32>'}}
  %m = mtf.merge_dims %x "a" : !mtf.tensor<[a=3, b=2, c=1], f32> -> !mtf.tensor<[d=6, e=1], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=4], f32>
  // expected-error @+1 {{'mtf.split_dim' op has 2 blocks for the 3 indices of 'u'}}
  %s = mtf.split_dim %x "a" blocks [2, 2] : !mtf.tensor<[a=4], f32> -> !mtf.tensor<[u=3, v=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=4], f32>
  // expected-error @+1 {{'mtf.split_dim' op block 0 has size 3, outside [0, 2] (the size of 'v')}}
  %s = mtf.split_dim %x "a" blocks [3, 1, 0] : !mtf.tensor<[a=4], f32> -> !mtf.tensor<[u=3, v=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=4], f32>
  // expected-error @+1 {{'mtf.split_dim' op has blocks adding up to 3, not the size of 'a' (4)}}
  %s = mtf.split_dim %x "a" blocks [1, 1, 1] : !mtf.tensor<[a=4], f32> -> !mtf.tensor<[u=3, v=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[u=3, v=2], f32>
  // expected-error @+1 {{'mtf.merge_dims' op has blocks adding up to 5, not the size of 'a' (4)}}
  %m = mtf.merge_dims %x "u" blocks [2, 2, 1] : !mtf.tensor<[u=3, v=2], f32> -> !mtf.tensor<[a=4], f32>
}
