// RUN: meshc-opt %s -split-input-file -verify-diagnostics
// mtf.wait's contract (dialect/MtfOps.cpp): it completes every result of
// one collective, keeps that collective's operands, and is the only user of
// its results.

shard.grid @mesh(shape = 2)
mtf.program @not_collective local {
  %x = mtf.input "x" : !mtf.tensor<[d=8], f32>
  %t = mtf.to_tensor %x : !mtf.tensor<[d=8], f32> -> tensor<8xf32>
  // expected-error @+1 {{'mtf.wait' op value 0 is not the result of a collective step}}
  %w = mtf.wait %t keep(%t : tensor<8xf32>) : tensor<8xf32>
}

// -----

shard.grid @mesh(shape = 2)
mtf.program @some_results local {
  %x = mtf.input "x" : !mtf.tensor<[d=8], f32>
  %t = mtf.to_tensor %x : !mtf.tensor<[d=8], f32> -> tensor<8xf32>
  %c:2 = mtf.combined_all_reduce %t, %t on @mesh grid_axes = [0] reduction = "sum" : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>
  // expected-error @+1 {{'mtf.wait' op `values` must be every result of 'mtf.combined_all_reduce' in order (2), got 1}}
  %w = mtf.wait %c#0 keep(%t, %t : tensor<8xf32>, tensor<8xf32>) : tensor<8xf32>
}

// -----

shard.grid @mesh(shape = 2)
mtf.program @other_user local {
  %x = mtf.input "x" : !mtf.tensor<[d=8], f32>
  %t = mtf.to_tensor %x : !mtf.tensor<[d=8], f32> -> tensor<8xf32>
  %r = shard.all_reduce %t on @mesh grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  %v = mtf.from_tensor %r : tensor<8xf32> -> !mtf.tensor<[d=8], f32>
  // expected-error @+1 {{'mtf.wait' op a started collective's results are used by its wait alone; use the wait's results}}
  %w = mtf.wait %r keep(%t : tensor<8xf32>) : tensor<8xf32>
}

// -----

shard.grid @mesh(shape = 2)
mtf.program @wrong_kept local {
  %x = mtf.input "x" : !mtf.tensor<[d=8], f32>
  %t = mtf.to_tensor %x : !mtf.tensor<[d=8], f32> -> tensor<8xf32>
  %r = shard.all_reduce %t on @mesh grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  // expected-error @+1 {{'mtf.wait' op `kept` must be the operands of 'shard.all_reduce' in order (1), got 0}}
  %w = mtf.wait %r keep() : tensor<8xf32>
}

// -----

shard.grid @mesh(shape = 2)
mtf.program @empty local {
  // expected-error @+1 {{'mtf.wait' op completes no collective: `values` is empty}}
  "mtf.wait"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> ()
}

// -----

shard.grid @mesh(shape = 2)
mtf.program @other_block local {
  %x = mtf.input "x" : !mtf.tensor<[d=4], f32>
  %t = mtf.to_tensor %x : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
  %r = shard.all_reduce %t on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %f = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[d=4], f32>) -> (!mtf.tensor<[d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[d=4], f32>):
    // expected-error @+1 {{'mtf.wait' op its collective is in another block}}
    %w = mtf.wait %r keep(%t : tensor<4xf32>) : tensor<4xf32>
    mtf.yield %h : !mtf.tensor<[d=4], f32>
  }
  mtf.output "f" %f : !mtf.tensor<[d=4], f32>
}

// -----

shard.grid @mesh(shape = 2)
mtf.program @carried_outside_a_loop local {
  %x = mtf.input "x" : !mtf.tensor<[d=8], f32>
  %t = mtf.to_tensor %x : !mtf.tensor<[d=8], f32> -> tensor<8xf32>
  %r = shard.all_reduce %t on @mesh grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  // expected-error @+1 {{'mtf.wait' op is carried but not in a loop body}}
  %w = mtf.wait %r keep(%t : tensor<8xf32>) {carried = 0 : i64} : tensor<8xf32>
}

// -----

shard.grid @mesh(shape = 2)
mtf.program @carried_result_read local {
  %x = mtf.input "x" : !mtf.tensor<[d=4], f32>
  %f, %s = mtf.loop "layers" 3 carry(%x : !mtf.tensor<[d=4], f32>) -> (!mtf.tensor<[d=4], f32>) stacked(!mtf.tensor<[layers=3, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[d=4], f32>):
    %g = mtf.tanh %h {mtf.resumes = array<i64: 0>} : !mtf.tensor<[d=4], f32>
    %gt = mtf.to_tensor %g : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %gr = shard.all_reduce %gt on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
    // expected-error @+1 {{'mtf.wait' op is carried, so its results may only be yielded as stacked values (each iteration's own slice), through views or not}}
    %w = mtf.wait %gr keep(%gt : tensor<4xf32>) {carried = 0 : i64} : tensor<4xf32>
    %go = mtf.from_tensor %w : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    mtf.yield %go, %go : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>
  }
}

// -----

shard.grid @mesh(shape = 2)
mtf.program @carried_without_resume local {
  %x = mtf.input "x" : !mtf.tensor<[d=4], f32>
  %f, %s = mtf.loop "layers" 3 carry(%x : !mtf.tensor<[d=4], f32>) -> (!mtf.tensor<[d=4], f32>) stacked(!mtf.tensor<[layers=3, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[d=4], f32>):
    %g = mtf.tanh %h : !mtf.tensor<[d=4], f32>
    %gt = mtf.to_tensor %g : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %gr = shard.all_reduce %gt on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
    // expected-error @+1 {{'mtf.wait' op is carried (0) but no op of its block resumes it ('mtf.resumes')}}
    %w = mtf.wait %gr keep(%gt : tensor<4xf32>) {carried = 0 : i64} : tensor<4xf32>
    %go = mtf.from_tensor %w : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    mtf.yield %g, %go : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>
  }
}

// -----

shard.grid @mesh(shape = 2)
mtf.program @resumes_outside_a_loop local {
  %x = mtf.input "x" : !mtf.tensor<[d=8], f32>
  // expected-error @+1 {{'mtf.resumes' must be a non-empty array<i64> on an op of a loop body, got array<i64: 0>}}
  %y = mtf.tanh %x {mtf.resumes = array<i64: 0>} : !mtf.tensor<[d=8], f32>
}

// -----

shard.grid @mesh(shape = 2)
mtf.program @carried_resumes_after_its_start local {
  %x = mtf.input "x" : !mtf.tensor<[d=4], f32>
  %f, %s = mtf.loop "layers" 3 carry(%x : !mtf.tensor<[d=4], f32>) -> (!mtf.tensor<[d=4], f32>) stacked(!mtf.tensor<[layers=3, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[d=4], f32>):
    %g = mtf.tanh %h : !mtf.tensor<[d=4], f32>
    %gt = mtf.to_tensor %g : !mtf.tensor<[d=4], f32> -> tensor<4xf32>
    %gr = shard.all_reduce %gt on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
    %n = mtf.exp %h {mtf.resumes = array<i64: 0>} : !mtf.tensor<[d=4], f32>
    // expected-error @+1 {{'mtf.wait' op is carried, so it must resume at or before its collective}}
    %w = mtf.wait %gr keep(%gt : tensor<4xf32>) {carried = 0 : i64} : tensor<4xf32>
    %go = mtf.from_tensor %w : tensor<4xf32> -> !mtf.tensor<[d=4], f32>
    mtf.yield %n, %go : !mtf.tensor<[d=4], f32>, !mtf.tensor<[d=4], f32>
  }
}
