// RUN: meshc-opt %s -verify-diagnostics --mtf-partition
// mtf-partition needs the training step spelt out by mtf-autodiff first.

mtf.program @p {
  %l = mtf.input "l" : !mtf.tensor<[], f32>
  // expected-error @+1 {{'mtf.train' op must be turned into the backward pass and the update by mtf-autodiff before partitioning}}
  mtf.train %l with "sgd" {lr = 0.1 : f64} : !mtf.tensor<[], f32>
}
