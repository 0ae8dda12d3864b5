// A loop whose body yields each carried argument as the next one (a line
// of slots moving one on, as a 1F1B pipeline's: docs/pipeline.md#1f1b):
// the copies run last slot first, each read before it is overwritten
// (tests/driver/loop-emit-invalid.test).
mtf.program @shift {
  %x = mtf.input "x" : !mtf.tensor<[b=8, d=4], f32>
  %z = mtf.constant 0.0 : !mtf.tensor<[b=8, d=4], f32>
  %y:3 = mtf.loop "ticks" 4 carry(%x, %z, %z : !mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[b=8, d=4], f32>) -> (!mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[b=8, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=8, d=4], f32>, %s0: !mtf.tensor<[b=8, d=4], f32>, %s1: !mtf.tensor<[b=8, d=4], f32>):
    %n = mtf.add %h, %h : !mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[b=8, d=4], f32> -> !mtf.tensor<[b=8, d=4], f32>
    mtf.yield %n, %h, %s0 : !mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[b=8, d=4], f32>
  }
  mtf.output "y" %y#0 : !mtf.tensor<[b=8, d=4], f32>
  mtf.output "s0" %y#1 : !mtf.tensor<[b=8, d=4], f32>
  mtf.output "s1" %y#2 : !mtf.tensor<[b=8, d=4], f32>
}
