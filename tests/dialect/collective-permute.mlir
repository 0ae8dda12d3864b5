// RUN: meshc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// mtf.collective_permute (mtf-partition makes it for a shift along a split
// dim): it round-trips, and its pairs are checked.

shard.grid @mesh(shape = 4)
// CHECK-LABEL: func.func @halo
// CHECK: mtf.collective_permute %{{.*}} on @mesh grid_axes = [0] pairs = [1, 0, 2, 1, 3, 2] : tensor<2x1xf32> -> tensor<2x1xf32>
func.func @halo(%a: tensor<2x1xf32>) -> tensor<2x1xf32> {
  %r = mtf.collective_permute %a on @mesh grid_axes = [0] pairs = [1, 0, 2, 1, 3, 2] : tensor<2x1xf32> -> tensor<2x1xf32>
  return %r : tensor<2x1xf32>
}

// -----

shard.grid @mesh(shape = 4)
func.func @odd(%a: tensor<2xf32>) {
  // expected-error @+1 {{pairs must be a non-empty list of [source, target] ranks, flattened; got 3 numbers}}
  %r = mtf.collective_permute %a on @mesh grid_axes = [0] pairs = [1, 0, 2] : tensor<2xf32> -> tensor<2xf32>
  return
}

// -----

shard.grid @mesh(shape = 4)
func.func @negative(%a: tensor<2xf32>) {
  // expected-error @+1 {{pair 1 has a negative rank}}
  %r = mtf.collective_permute %a on @mesh grid_axes = [0] pairs = [1, 0, -1, 2] : tensor<2xf32> -> tensor<2xf32>
  return
}

// -----

shard.grid @mesh(shape = 4)
func.func @two_sources(%a: tensor<2xf32>) {
  // expected-error @+1 {{member 1 is the source of two pairs}}
  %r = mtf.collective_permute %a on @mesh grid_axes = [0] pairs = [1, 0, 1, 2] : tensor<2xf32> -> tensor<2xf32>
  return
}

// -----

shard.grid @mesh(shape = 4)
func.func @two_targets(%a: tensor<2xf32>) {
  // expected-error @+1 {{member 0 is the target of two pairs}}
  %r = mtf.collective_permute %a on @mesh grid_axes = [0] pairs = [1, 0, 2, 0] : tensor<2xf32> -> tensor<2xf32>
  return
}

// -----

shard.grid @mesh(shape = 4)
func.func @types(%a: tensor<2xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %r = mtf.collective_permute %a on @mesh grid_axes = [0] pairs = [1, 0] : tensor<2xf32> -> tensor<3xf32>
  return
}
