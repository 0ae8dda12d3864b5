// A loop whose body yields its carried arguments swapped: each would be
// copied over the other (tests/driver/loop-emit-invalid.test).
mtf.program @swap {
  %x = mtf.input "x" : !mtf.tensor<[b=8, d=4], f32>
  %w = mtf.input "w" : !mtf.tensor<[b=8, d=4], f32>
  %y:2 = mtf.loop "layers" 3 carry(%x, %w : !mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[b=8, d=4], f32>) -> (!mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[b=8, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=8, d=4], f32>, %g: !mtf.tensor<[b=8, d=4], f32>):
    mtf.yield %g, %h : !mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[b=8, d=4], f32>
  }
  mtf.output "y" %y#0 : !mtf.tensor<[b=8, d=4], f32>
  mtf.output "z" %y#1 : !mtf.tensor<[b=8, d=4], f32>
}
