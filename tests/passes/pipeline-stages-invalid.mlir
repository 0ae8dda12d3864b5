// mtf-pipeline-stages refuses, at the repeat, what the interleaved schedule
// cannot store by rounds: a stacked operand that is not a parameter the
// repeat reads once (the model language always passes parameters; IR
// written by hand may not). Each device would need its own blocks of every
// round of a value computed elsewhere.
// RUN: not meshc-opt %s --split-input-file --mtf-pipeline-stages="mesh=p:2 layout=layers:p microbatches=2 schedule=interleaved virtual-stages=2" 2>&1 | FileCheck %s

// CHECK: pipeline-stages-invalid.mlir:[[@LINE+4]]:8: error: the layout pipelines this repeat ('layers' over 2 stages), but its stacked operand #0 (!mtf.tensor<[layers=4, d=3, e=3], f32>) is not a parameter it reads once; the interleaved schedule stores each stacked parameter by rounds, [rounds, layers of a round, ...], so that each device holds its own blocks
mtf.program @input {
  %x = mtf.input "x" : !mtf.tensor<[b=2, d=3], f32>
  %w = mtf.input "w" : !mtf.tensor<[layers=4, d=3, e=3], f32>
  %y = mtf.loop "layers" 4 carry(%x : !mtf.tensor<[b=2, d=3], f32>) stacked(%w : !mtf.tensor<[layers=4, d=3, e=3], f32>) -> (!mtf.tensor<[b=2, d=3], f32>) {
  ^bb0(%a: !mtf.tensor<[b=2, d=3], f32>, %v: !mtf.tensor<[d=3, e=3], f32>):
    %t = mtf.einsum %a, %v : !mtf.tensor<[b=2, d=3], f32>, !mtf.tensor<[d=3, e=3], f32> -> !mtf.tensor<[b=2, e=3], f32>
    %r = mtf.rename %t "e" to "d" : !mtf.tensor<[b=2, e=3], f32> -> !mtf.tensor<[b=2, d=3], f32>
    mtf.yield %r : !mtf.tensor<[b=2, d=3], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[b=2, d=3], f32>
}

// -----

// CHECK: pipeline-stages-invalid.mlir:[[@LINE+4]]:8: error: the layout pipelines this repeat ('layers' over 2 stages), but its stacked operand #0 (!mtf.tensor<[layers=4, d=3, e=3], f32>) is not a parameter it reads once
mtf.program @twice {
  %x = mtf.input "x" : !mtf.tensor<[b=2, d=3], f32>
  %w = mtf.param "w" normal(0.0, 1.0) : !mtf.tensor<[layers=4, d=3, e=3], f32>
  %y = mtf.loop "layers" 4 carry(%x : !mtf.tensor<[b=2, d=3], f32>) stacked(%w, %w : !mtf.tensor<[layers=4, d=3, e=3], f32>, !mtf.tensor<[layers=4, d=3, e=3], f32>) -> (!mtf.tensor<[b=2, d=3], f32>) {
  ^bb0(%a: !mtf.tensor<[b=2, d=3], f32>, %v: !mtf.tensor<[d=3, e=3], f32>, %u: !mtf.tensor<[d=3, e=3], f32>):
    %t = mtf.einsum %a, %v : !mtf.tensor<[b=2, d=3], f32>, !mtf.tensor<[d=3, e=3], f32> -> !mtf.tensor<[b=2, e=3], f32>
    %r = mtf.rename %t "e" to "d" : !mtf.tensor<[b=2, e=3], f32> -> !mtf.tensor<[b=2, d=3], f32>
    mtf.yield %r : !mtf.tensor<[b=2, d=3], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[b=2, d=3], f32>
}
