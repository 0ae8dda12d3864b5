// RUN: meshc-opt %s -split-input-file -verify-diagnostics --mtf-autodiff
// The errors of mtf-autodiff: an op without a gradient between a parameter
// and the loss, non-f32 parameters, partitioned programs.

mtf.program @p {
  %w = mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[a=2], f32>
  // expected-error @+1 {{cannot differentiate 'mtf.gelu_grad', which lies between a parameter and the loss}}
  %g = mtf.gelu_grad %w : !mtf.tensor<[a=2], f32>
  %l = mtf.reduce_sum %g : !mtf.tensor<[a=2], f32> -> !mtf.tensor<[], f32>
  mtf.train %l with "sgd" {lr = 0.1 : f64} : !mtf.tensor<[], f32>
}

// -----

mtf.program @p {
  // expected-error @+1 {{training needs f32 parameters; 'w' is '!mtf.tensor<[a=2], bf16>'}}
  %w = mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[a=2], bf16>
  %c = mtf.cast %w : !mtf.tensor<[a=2], bf16> -> !mtf.tensor<[a=2], f32>
  %l = mtf.reduce_sum %c : !mtf.tensor<[a=2], f32> -> !mtf.tensor<[], f32>
  mtf.train %l with "sgd" {lr = 0.1 : f64} : !mtf.tensor<[], f32>
}

// -----

mtf.program @p local {
  %l = mtf.input "l" : !mtf.tensor<[], f32>
  // expected-error @+1 {{cannot differentiate a partitioned (local) program}}
  mtf.train %l with "sgd" {lr = 0.1 : f64} : !mtf.tensor<[], f32>
}
