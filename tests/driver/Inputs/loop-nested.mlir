// A loop inside a loop's body: mtf IR holds it, a .mprog cannot yet (tests/driver/loop-emit-invalid.test).
mtf.program @nested {
  %x = mtf.input "x" : !mtf.tensor<[b=8, d=4], f32>
  %y = mtf.loop "outer" 2 carry(%x : !mtf.tensor<[b=8, d=4], f32>) -> (!mtf.tensor<[b=8, d=4], f32>) {
  ^bb0(%h: !mtf.tensor<[b=8, d=4], f32>):
    %z = mtf.loop "inner" 3 carry(%h : !mtf.tensor<[b=8, d=4], f32>) -> (!mtf.tensor<[b=8, d=4], f32>) {
    ^bb0(%g: !mtf.tensor<[b=8, d=4], f32>):
      %r = mtf.relu %g : !mtf.tensor<[b=8, d=4], f32>
      mtf.yield %r : !mtf.tensor<[b=8, d=4], f32>
    }
    mtf.yield %z : !mtf.tensor<[b=8, d=4], f32>
  }
  mtf.output "y" %y : !mtf.tensor<[b=8, d=4], f32>
}
