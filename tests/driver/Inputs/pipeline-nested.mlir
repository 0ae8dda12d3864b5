// A layer that holds a loop of its own: a pipeline does not take it
// (tests/driver/pipeline-invalid.test).
mtf.program @nested {
  %x = mtf.input "x" : !mtf.tensor<[batch=4, d=2], f32>
  %w = mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[layers=2, d=2], f32>
  %v = mtf.param "v" normal(0.0, 1.0) : !mtf.tensor<[sub=2, d=2], f32>
  %y = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[batch=4, d=2], f32>) stacked(%w : !mtf.tensor<[layers=2, d=2], f32>) invariant(%v : !mtf.tensor<[sub=2, d=2], f32>) -> (!mtf.tensor<[batch=4, d=2], f32>) {
  ^bb0(%h: !mtf.tensor<[batch=4, d=2], f32>, %wi: !mtf.tensor<[d=2], f32>, %vs: !mtf.tensor<[sub=2, d=2], f32>):
    %n = mtf.mul %h, %wi : !mtf.tensor<[batch=4, d=2], f32>, !mtf.tensor<[d=2], f32> -> !mtf.tensor<[batch=4, d=2], f32>
    %m = mtf.loop "sub" 2 carry(%n : !mtf.tensor<[batch=4, d=2], f32>) stacked(%vs : !mtf.tensor<[sub=2, d=2], f32>) -> (!mtf.tensor<[batch=4, d=2], f32>) {
    ^bb0(%g: !mtf.tensor<[batch=4, d=2], f32>, %vi: !mtf.tensor<[d=2], f32>):
      %o = mtf.mul %g, %vi : !mtf.tensor<[batch=4, d=2], f32>, !mtf.tensor<[d=2], f32> -> !mtf.tensor<[batch=4, d=2], f32>
      mtf.yield %o : !mtf.tensor<[batch=4, d=2], f32>
    }
    mtf.yield %m : !mtf.tensor<[batch=4, d=2], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[batch=4, d=2], f32>
}
