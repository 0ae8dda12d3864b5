%x = mtf.input "x" : !mtf.tensor<[batch=8], f32>
mtf.program @a {
}
