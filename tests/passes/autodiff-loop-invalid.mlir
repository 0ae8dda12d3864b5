// RUN: meshc-opt %s -verify-diagnostics --mtf-autodiff
// mtf-autodiff differentiates a loop with one carried value and nothing
// stacked (what the frontend's repeats are); other loops are refused at the
// loop.

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  %w = mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[layers=2, a=2], f32>
  // expected-error @+1 {{'mtf.loop' op is differentiated only with one carried value and nothing stacked (as a repeat)}}
  %y:2 = mtf.loop "layers" 2 carry(%x, %x : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32>) stacked(%w : !mtf.tensor<[layers=2, a=2], f32>) -> (!mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32>) {
  ^bb0(%h: !mtf.tensor<[a=2], f32>, %g: !mtf.tensor<[a=2], f32>, %wi: !mtf.tensor<[a=2], f32>):
    %n = mtf.mul %h, %wi : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
    mtf.yield %n, %g : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32>
  }
  %l = mtf.reduce_sum %y#0 : !mtf.tensor<[a=2], f32> -> !mtf.tensor<[], f32>
  mtf.train %l with "sgd" {lr = 0.1 : f64} : !mtf.tensor<[], f32>
}
