// A started reduce-scatter whose wait comes after an op that reads its input
// (tests/driver/overlap-check.test).
module {
  shard.grid @t_mesh(shape = 2)
  mtf.program @t mesh <b=2> local {
    %x = mtf.input "x" {mtf.layout = #mtf.layout<>} : !mtf.tensor<[d=8], f32>
    %t = mtf.to_tensor %x : !mtf.tensor<[d=8], f32> -> tensor<8xf32>
    %r = shard.reduce_scatter %t on @t_mesh grid_axes = [0] scatter_axis = 0 : tensor<8xf32> -> tensor<4xf32>
    %c = mtf.exp %x {mtf.layout = #mtf.layout<>} : !mtf.tensor<[d=8], f32>
    %w = mtf.wait %r keep(%t : tensor<8xf32>) : tensor<4xf32>
    %v = mtf.from_tensor %w : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    mtf.output "c" %c : !mtf.tensor<[d=8], f32>
    mtf.output "v" %v : !mtf.tensor<[d=4], f32>
  }
}
