// A started collective permute whose wait comes after an op that reads its
// input
// (tests/driver/overlap-check.test; a reduce-scatter would copy its input
// into its scratch where it starts, leaving it free).
module {
  shard.grid @t_mesh(shape = 2)
  mtf.program @t mesh <b=2> local {
    %x = mtf.input "x" {mtf.layout = #mtf.layout<>} : !mtf.tensor<[d=8], f32>
    %t = mtf.to_tensor %x : !mtf.tensor<[d=8], f32> -> tensor<8xf32>
    %r = mtf.collective_permute %t on @t_mesh grid_axes = [0] pairs = [0, 1, 1, 0] : tensor<8xf32> -> tensor<8xf32>
    %c = mtf.exp %x {mtf.layout = #mtf.layout<>} : !mtf.tensor<[d=8], f32>
    %w = mtf.wait %r keep(%t : tensor<8xf32>) : tensor<8xf32>
    %v = mtf.from_tensor %w : tensor<8xf32> -> !mtf.tensor<[d=8], f32>
    mtf.output "c" %c : !mtf.tensor<[d=8], f32>
    mtf.output "v" %v : !mtf.tensor<[d=8], f32>
  }
}
