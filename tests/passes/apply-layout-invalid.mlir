// RUN: meshc-opt %s -split-input-file -verify-diagnostics --mtf-apply-layout='mesh=b:4,m:3 layout=batch:b,hidden:m'
// Layout errors point at the op whose tensor cannot have the layout, or at the
// program when the rules themselves do not fit the model.

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[batch=8], f32>
  // expected-error @+2 {{tensor 'w' dimension 'hidden' (size 128) is not divisible by mesh axis 'm' (size 3)}}
  // expected-note @+1 {{hint: leave 'hidden' unsplit or make its size a multiple of 3 (e.g. 126 or 129)}}
  %w = mtf.param "w" zeros : !mtf.tensor<[io=6, hidden=128], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[batch=8, hidden=6], f32>
  // expected-error @+2 {{tensor 'constrain@18:8' dimension 'hidden' is split over mesh axis 'q', which is not in the mesh (axes: 'b', 'm')}}
  // expected-note @+1 {{hint: add 'q' to the mesh or split 'hidden' over one of its axes}}
  %c = mtf.constrain %x to <hidden: q> : !mtf.tensor<[batch=8, hidden=6], f32>
}

// -----

// expected-error @+2 {{the layout splits dimension 'batch', which the model does not have}}
// expected-note @+1 {{hint: the model's dimensions are 'hidden', 'io'}}
mtf.program @p {
  %w = mtf.param "w" zeros : !mtf.tensor<[io=6, hidden=6], f32>
}
