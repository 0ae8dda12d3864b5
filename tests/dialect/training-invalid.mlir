// RUN: meshc-opt %s -split-input-file -verify-diagnostics
// Every verifier error of the training and data ops, mtf.assign's program
// rules, and the training attributes.

mtf.program @p {
  // expected-error @+1 {{'mtf.dropout_mask' op rate must be in [0, 1), got 1}}
  %m = mtf.dropout_mask "d" rate 1.0 : !mtf.tensor<[a=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], i32>
  %y = mtf.input "y" : !mtf.tensor<[a=2], f32>
  // expected-error @+1 {{'mtf.equal' op element types must match, got 'i32' and 'f32' -> 'f32'}}
  %e = mtf.equal %x, %y : !mtf.tensor<[a=2], i32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], i32>
  // expected-error @+1 {{'mtf.equal' op result lacks operand dimension 'a'}}
  %e = mtf.equal %x, %x : !mtf.tensor<[a=2], i32>, !mtf.tensor<[a=2], i32> -> !mtf.tensor<[], f32>
}

// -----

mtf.program @p {
  %i = mtf.input "i" : !mtf.tensor<[a=2, k=3], i32>
  // expected-error @+1 {{'mtf.one_hot' op indices already have dimension 'k'}}
  %o = mtf.one_hot %i over "k" : !mtf.tensor<[a=2, k=3], i32> -> !mtf.tensor<[a=2, k=3], f32>
}

// -----

mtf.program @p {
  %i = mtf.input "i" : !mtf.tensor<[a=2], i32>
  // expected-error @+1 {{'mtf.one_hot' op result has no dimension 'k'}}
  %o = mtf.one_hot %i over "k" : !mtf.tensor<[a=2], i32> -> !mtf.tensor<[a=2], f32>
}

// -----

mtf.program @p {
  %i = mtf.input "i" : !mtf.tensor<[a=2], i32>
  // expected-error @+1 {{'mtf.one_hot' op result must have the indices' dimensions plus 'k'}}
  %o = mtf.one_hot %i over "k" : !mtf.tensor<[a=2], i32> -> !mtf.tensor<[b=4, k=3], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, k=3], f32>
  // expected-error @+1 {{'mtf.argmax' op operand has no dimension 'q'}}
  %i = mtf.argmax %x over "q" : !mtf.tensor<[a=2, k=3], f32> -> !mtf.tensor<[a=2], i32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, k=3], f32>
  // expected-error @+1 {{'mtf.argmax' op result must have the operand's dimensions without 'k' in order}}
  %i = mtf.argmax %x over "k" : !mtf.tensor<[a=2, k=3], f32> -> !mtf.tensor<[a=2, k=3], i32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, k=3], f32>
  // expected-error @+1 {{'mtf.logsumexp' op operand has no dimension 'q'}}
  %l = mtf.logsumexp %x over "q" : !mtf.tensor<[a=2, k=3], f32> -> !mtf.tensor<[a=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, k=3], f32>
  // expected-error @+1 {{'mtf.logsumexp' op result must have the operand's dimensions without 'k' in order}}
  %l = mtf.logsumexp %x over "k" : !mtf.tensor<[a=2, k=3], f32> -> !mtf.tensor<[k=3], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, k=3], f32>
  // expected-error @+1 {{'mtf.logsumexp' op element types must match, got 'f32' -> 'bf16'}}
  %l = mtf.logsumexp %x over "k" : !mtf.tensor<[a=2, k=3], f32> -> !mtf.tensor<[a=2], bf16>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  // expected-error @+1 {{'mtf.assign' op assigns 'w', which is no parameter defined before it}}
  mtf.assign "w" %x : !mtf.tensor<[a=2], f32>
}

// -----

mtf.program @p {
  %w = mtf.param "w" zeros : !mtf.tensor<[a=2], f32>
  %x = mtf.input "x" : !mtf.tensor<[b=2], f32>
  // expected-error @+1 {{'mtf.assign' op assigns '!mtf.tensor<[b=2], f32>' to 'w' of type '!mtf.tensor<[a=2], f32>'}}
  mtf.assign "w" %x : !mtf.tensor<[b=2], f32>
}

// -----

mtf.program @p {
  %w = mtf.param "w" zeros : !mtf.tensor<[a=2], f32>
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  // expected-note @+1 {{first used here}}
  mtf.assign "w" %x : !mtf.tensor<[a=2], f32>
  // expected-error @+1 {{'mtf.assign' op assigned name 'w' is used twice}}
  mtf.assign "w" %x : !mtf.tensor<[a=2], f32>
}

// -----

mtf.program @p {
  %w = mtf.param "w" zeros : !mtf.tensor<[a=2], f32>
  // expected-error @+1 {{'mtf.assign' op must follow every use of 'w'}}
  mtf.assign "w" %w : !mtf.tensor<[a=2], f32>
  // expected-note @+1 {{used here, after the assign}}
  mtf.output "w" %w : !mtf.tensor<[a=2], f32>
}

// -----

mtf.program @p {
  // expected-error @+1 {{'mtf.phase' must be "backward" or "update", got "sideways"}}
  %x = mtf.input "x" {mtf.phase = "sideways"} : !mtf.tensor<[a=2], f32>
}

// -----

mtf.program @p {
  // expected-error @+1 {{'mtf.instance' must be a string, got 3 : i64}}
  %x = mtf.input "x" {mtf.instance = 3 : i64} : !mtf.tensor<[a=2], f32>
}

// -----

// expected-error @+1 {{'mtf.training' must be a dictionary on an mtf.program}}
mtf.program @p attributes {mtf.training = 3 : i64} {
}

// -----

mtf.program @p {
  %l = mtf.input "l" : !mtf.tensor<[], f32>
  // expected-error @+1 {{'mtf.train' op hyper-parameter 'sync_every' must be an integer >= 1, got 0.5}}
  mtf.train %l with "sgd" {lr = 0.1 : f64, sync_every = 0.5 : f64} : !mtf.tensor<[], f32>
}

// -----

mtf.program @p {
  %l = mtf.input "l" : !mtf.tensor<[], f32>
  // expected-error @+1 {{'mtf.train' op hyper-parameter 'eps' must be >= 0, got -1}}
  mtf.train %l with "adam" {lr = 0.1 : f64, eps = -1.0 : f64} : !mtf.tensor<[], f32>
}
