// RUN: meshc-opt %s --split-input-file --verify-diagnostics
// The contracts of the combined collectives (mtf-combine-collectives makes them).

shard.grid @mesh(shape = 2)
func.func @one(%a: tensor<4xf32>) {
  // expected-error @+1 {{combines at least two inputs, not 1}}
  %r = mtf.combined_all_reduce %a on @mesh grid_axes = [0] reduction = "sum" : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

shard.grid @mesh(shape = 2)
func.func @types(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{result 1 has type 'tensor<4xf32>', input 1 'tensor<3xf32>'}}
  %r:2 = mtf.combined_all_reduce %a, %b on @mesh grid_axes = [0] reduction = "sum" : tensor<4xf32>, tensor<3xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

shard.grid @mesh(shape = 2)
func.func @elements(%a: tensor<4xf32>, %b: tensor<3xi32>) {
  // expected-error @+1 {{input 1 has element type 'i32', input 0 'f32'}}
  %r:2 = mtf.combined_all_reduce %a, %b on @mesh grid_axes = [0] reduction = "sum" : tensor<4xf32>, tensor<3xi32> -> tensor<4xf32>, tensor<3xi32>
  return
}

// -----

shard.grid @mesh(shape = 2)
func.func @reduction(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{reduction 'mean' is neither "sum" nor "max"}}
  %r:2 = mtf.combined_all_reduce %a, %b on @mesh grid_axes = [0] reduction = "mean" : tensor<4xf32>, tensor<3xf32> -> tensor<4xf32>, tensor<3xf32>
  return
}

// -----

shard.grid @mesh(shape = 2)
func.func @gather_dims(%a: tensor<2x8xf32>, %b: tensor<2x2xf32>) {
  // expected-error @+1 {{has 1 dims for 2 inputs}}
  %r:2 = mtf.combined_all_gather %a, %b on @mesh grid_axes = [0] gather_axes = [0] : tensor<2x8xf32>, tensor<2x2xf32> -> tensor<4x8xf32>, tensor<2x4xf32>
  return
}

// -----

shard.grid @mesh(shape = 2)
func.func @gather_shape(%a: tensor<2x8xf32>, %b: tensor<2x2xf32>) {
  // expected-error @+1 {{result 1 of type 'tensor<4x2xf32>' is not input 1 'tensor<2x2xf32>' gathered along dim 1}}
  %r:2 = mtf.combined_all_gather %a, %b on @mesh grid_axes = [0] gather_axes = [0, 1] : tensor<2x8xf32>, tensor<2x2xf32> -> tensor<4x8xf32>, tensor<4x2xf32>
  return
}

// -----

shard.grid @mesh(shape = 2)
func.func @scatter_rank(%a: tensor<4x8xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{dim 2 of input 1 is outside its rank 2}}
  %r:2 = mtf.combined_reduce_scatter %a, %b on @mesh grid_axes = [0] scatter_axes = [0, 2] reduction = "sum" : tensor<4x8xf32>, tensor<2x4xf32> -> tensor<2x8xf32>, tensor<2x2xf32>
  return
}

// -----

shard.grid @mesh(shape = 2)
func.func @scatter_shape(%a: tensor<4x8xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{result 0 of type 'tensor<3x8xf32>' is not input 0 'tensor<4x8xf32>' scattered along dim 0}}
  %r:2 = mtf.combined_reduce_scatter %a, %b on @mesh grid_axes = [0] scatter_axes = [0, 1] reduction = "sum" : tensor<4x8xf32>, tensor<2x4xf32> -> tensor<3x8xf32>, tensor<2x2xf32>
  return
}
