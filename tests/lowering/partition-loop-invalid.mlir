// RUN: meshc-opt %s -split-input-file -verify-diagnostics --mtf-partition
// mtf-partition refuses a loop whose layer dim a layout splits (IR written
// by hand: mtf-apply-layout refuses such a layout first) and a loop under
// device weights.

mtf.program @split mesh #mtf.mesh<b=2> {
  %x = mtf.input "x" {mtf.layout = #mtf.layout<>} : !mtf.tensor<[a=2], f32>
  %w = mtf.param "w" normal(0.0, 1.0) {mtf.layout = #mtf.layout<layers: b>} : !mtf.tensor<[layers=2, a=2], f32>
  // expected-error @+1 {{'mtf.loop' op cannot split its dim 'layers' over the mesh ([layers:b, a]): a layer dim is whole until pipeline parallelism}}
  %y = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[a=2], f32>) stacked(%w : !mtf.tensor<[layers=2, a=2], f32>) -> (!mtf.tensor<[a=2], f32>) {
  ^bb0(%h: !mtf.tensor<[a=2], f32>, %wi: !mtf.tensor<[a=2], f32>):
    %n = mtf.mul %h, %wi {mtf.layout = #mtf.layout<>} : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2], f32>
    mtf.yield %n : !mtf.tensor<[a=2], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[a=2], f32>
}

// -----

// Device weights that cut a value of the loop unequally (a over b as 1 and
// 2): refused, naming it. (Weights that cut nothing inside a loop, a
// pipeline's ticks, are partitioned as any: tests/training/pipeline-uneven.test.)
mtf.program @weighted mesh #mtf.mesh<b=2> attributes {mtf.axis_weights = "b=1,2"} {
  %x = mtf.input "x" {mtf.layout = #mtf.layout<a: b>} : !mtf.tensor<[a=3], f32>
  // expected-error @+1 {{'mtf.loop' op cannot be partitioned with unequal blocks yet: device weights or --uneven cut 'a' of 'x' ([a:b]) unequally, and a loop's body runs one block size on every device}}
  %y = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[a=3], f32>) -> (!mtf.tensor<[a=3], f32>) {
  ^bb0(%h: !mtf.tensor<[a=3], f32>):
    %n = mtf.relu %h {mtf.layout = #mtf.layout<a: b>} : !mtf.tensor<[a=3], f32>
    mtf.yield %n : !mtf.tensor<[a=3], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[a=3], f32>
}
