// RUN: meshc-opt %s -verify-diagnostics --mtf-autodiff
// mtf-autodiff differentiates a forward loop (any carried values, stacked
// results; GradientCheck.LoopWith*): a loop that runs in reverse is refused
// at the loop.

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  %w = mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[layers=2, a=2], f32>
  // expected-error @+1 {{'mtf.loop' op runs its iterations in reverse; only a forward loop is differentiated}}
  %y = mtf.loop "layers" 2 reverse carry(%x : !mtf.tensor<[a=2], f32>) stacked(%w : !mtf.tensor<[layers=2, a=2], f32>) -> (!mtf.tensor<[a=2], f32>) {
  ^bb0(%h: !mtf.tensor<[a=2], f32>, %wi: !mtf.tensor<[a=2], f32>):
    %n = mtf.mul %h, %wi : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
    mtf.yield %n : !mtf.tensor<[a=2], f32>
  }
  %l = mtf.reduce_sum %y : !mtf.tensor<[a=2], f32> -> !mtf.tensor<[], f32>
  mtf.train %l with "sgd" {lr = 0.1 : f64} : !mtf.tensor<[], f32>
}
