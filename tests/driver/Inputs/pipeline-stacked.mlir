// A loop that stacks a per-layer value: a pipeline does not keep those
// (tests/driver/pipeline-invalid.test).
mtf.program @stacked {
  %x = mtf.input "x" : !mtf.tensor<[batch=4, d=2], f32>
  %w = mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[layers=2, d=2], f32>
  %y, %s = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[batch=4, d=2], f32>) stacked(%w : !mtf.tensor<[layers=2, d=2], f32>) -> (!mtf.tensor<[batch=4, d=2], f32>) stacked(!mtf.tensor<[layers=2, batch=4, d=2], f32>) {
  ^bb0(%h: !mtf.tensor<[batch=4, d=2], f32>, %wi: !mtf.tensor<[d=2], f32>):
    %n = mtf.mul %h, %wi : !mtf.tensor<[batch=4, d=2], f32>, !mtf.tensor<[d=2], f32> -> !mtf.tensor<[batch=4, d=2], f32>
    mtf.yield %n, %n : !mtf.tensor<[batch=4, d=2], f32>, !mtf.tensor<[batch=4, d=2], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[batch=4, d=2], f32>
  mtf.output "s" %s : !mtf.tensor<[layers=2, batch=4, d=2], f32>
}
