// A model of split_dim and merge_dims (docs/spmd.md#split-and-merged-dimensions):
// the batch cut into microbatches and a stacked weight cut into stages, an
// einsum over the stages, and the dims merged back. tests/driver/split-merge.test.
mtf.program @split_merge {
  %x = mtf.input "x" : !mtf.tensor<[batch=8, d=4], f32>
  %w = mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[layers=4, d=4], f32>
  %xs = mtf.split_dim %x "batch" : !mtf.tensor<[batch=8, d=4], f32> -> !mtf.tensor<[examples=4, micro=2, d=4], f32>
  %ws = mtf.split_dim %w "layers" : !mtf.tensor<[layers=4, d=4], f32> -> !mtf.tensor<[stage=2, inner=2, d=4], f32>
  %p = mtf.einsum %xs, %ws : !mtf.tensor<[examples=4, micro=2, d=4], f32>, !mtf.tensor<[stage=2, inner=2, d=4], f32> -> !mtf.tensor<[examples=4, micro=2, inner=2, d=4], f32>
  %t = mtf.tanh %p : !mtf.tensor<[examples=4, micro=2, inner=2, d=4], f32>
  %m = mtf.merge_dims %t "micro" : !mtf.tensor<[examples=4, micro=2, inner=2, d=4], f32> -> !mtf.tensor<[examples=4, slot=4, d=4], f32>
  %g = mtf.merge_dims %m "examples" : !mtf.tensor<[examples=4, slot=4, d=4], f32> -> !mtf.tensor<[rows=16, d=4], f32>
  %sq = mtf.mul %g, %g : !mtf.tensor<[rows=16, d=4], f32>, !mtf.tensor<[rows=16, d=4], f32> -> !mtf.tensor<[rows=16, d=4], f32>
  %loss = mtf.reduce_mean %sq : !mtf.tensor<[rows=16, d=4], f32> -> !mtf.tensor<[], f32>
  mtf.output "loss" %loss : !mtf.tensor<[], f32>
  mtf.output "g" %g : !mtf.tensor<[rows=16, d=4], f32>
  mtf.train %loss with "sgd" {lr = 0.1 : f64} : !mtf.tensor<[], f32>
}
