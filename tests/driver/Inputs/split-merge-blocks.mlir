// split_dim and merge_dims with blocks (a pipeline's uneven stages, 4 layers
// over 3 stages of up to 2): the weight padded per stage, used, and its
// rows taken back (tests/driver/split-merge.test).
mtf.program @split_merge_blocks {
  %x = mtf.input "x" : !mtf.tensor<[batch=6, d=4], f32>
  %w = mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[layers=4, d=4], f32>
  %ws = mtf.split_dim %w "layers" blocks [2, 1, 1] : !mtf.tensor<[layers=4, d=4], f32> -> !mtf.tensor<[stage=3, inner=2, d=4], f32>
  %p = mtf.einsum %x, %ws : !mtf.tensor<[batch=6, d=4], f32>, !mtf.tensor<[stage=3, inner=2, d=4], f32> -> !mtf.tensor<[batch=6, stage=3, inner=2], f32>
  %t = mtf.tanh %p : !mtf.tensor<[batch=6, stage=3, inner=2], f32>
  %e = mtf.einsum %t, %ws : !mtf.tensor<[batch=6, stage=3, inner=2], f32>, !mtf.tensor<[stage=3, inner=2, d=4], f32> -> !mtf.tensor<[stage=3, inner=2, d=4], f32>
  %m = mtf.merge_dims %e "stage" blocks [2, 1, 1] : !mtf.tensor<[stage=3, inner=2, d=4], f32> -> !mtf.tensor<[rows=4, d=4], f32>
  %sq = mtf.mul %m, %m : !mtf.tensor<[rows=4, d=4], f32>, !mtf.tensor<[rows=4, d=4], f32> -> !mtf.tensor<[rows=4, d=4], f32>
  %loss = mtf.reduce_mean %sq : !mtf.tensor<[rows=4, d=4], f32> -> !mtf.tensor<[], f32>
  mtf.output "loss" %loss : !mtf.tensor<[], f32>
  mtf.output "m" %m : !mtf.tensor<[rows=4, d=4], f32>
  mtf.train %loss with "sgd" {lr = 0.1 : f64} : !mtf.tensor<[], f32>
}
