// RUN: meshc-opt %s -split-input-file -verify-diagnostics
// mtf.half (mtf-interleave-halves) names the half of a loop's batch an op
// computes: 0 or 1, on an op in a loop body.

shard.grid @mesh(shape = 2)
mtf.program @outside_a_loop local {
  %x = mtf.input "x" : !mtf.tensor<[d=8], f32>
  // expected-error @+1 {{'mtf.half' must be 0 or 1 on an op in a loop body, got 0 : i64}}
  %y = mtf.exp %x {mtf.half = 0 : i64} : !mtf.tensor<[d=8], f32>
  mtf.output "y" %y : !mtf.tensor<[d=8], f32>
}

// -----

shard.grid @mesh(shape = 2)
mtf.program @third_half local {
  %x = mtf.input "x" : !mtf.tensor<[d=8], f32>
  %y = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[d=8], f32>) -> (!mtf.tensor<[d=8], f32>) {
  ^bb0(%h: !mtf.tensor<[d=8], f32>):
    // expected-error @+1 {{'mtf.half' must be 0 or 1 on an op in a loop body, got 2 : i64}}
    %n = mtf.exp %h {mtf.half = 2 : i64} : !mtf.tensor<[d=8], f32>
    mtf.yield %n : !mtf.tensor<[d=8], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[d=8], f32>
}
