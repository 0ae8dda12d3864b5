// RUN: meshc-opt %s -split-input-file -verify-diagnostics
// Errors of the !mtf.tensor type and the #mtf.mesh, #mtf.layout, #mtf.init attributes.

mtf.program @p {
  // expected-error @+1 {{element type must be f32, bf16, f16 or i32, got 'f64'}}
  %x = mtf.input "x" : !mtf.tensor<[a=2], f64>
}

// -----

mtf.program @p {
  // expected-error @+1 {{dimension 'a' appears twice (#0 and #1)}}
  %x = mtf.input "x" : !mtf.tensor<[a=2, a=2], f32>
}

// -----

mtf.program @p {
  // expected-error @+1 {{dimension 'a' must have a positive size, got 0}}
  %x = mtf.input "x" : !mtf.tensor<[a=0], f32>
}

// -----

// expected-error @+1 {{mesh axis 'b' appears twice (#0 and #1)}}
mtf.program @p mesh <b=2, b=4> {
}

// -----

mtf.program @p {
  // expected-error @+1 {{dimension 'a' is split twice in one layout}}
  %x = mtf.input "x" {mtf.layout = #mtf.layout<a: b, a: m>} : !mtf.tensor<[a=4], f32>
}

// -----

mtf.program @p {
  // expected-error @+1 {{mesh axis 'b' splits both 'a' and 'c'; a mesh axis can split one dimension of a tensor at most}}
  %x = mtf.input "x" {mtf.layout = #mtf.layout<a: b, c: m+b>} : !mtf.tensor<[a=4, c=4], f32>
}

// -----

mtf.program @p {
  // expected-error @+1 {{initializer 'normal' takes 2 arguments, got 1}}
  %w = mtf.param "w" normal(1.0) : !mtf.tensor<[a=4], f32>
}

// -----

mtf.program @p {
  // expected-error @+1 {{initializer 'zeros' takes 0 arguments, got 1}}
  %w = mtf.param "w" zeros(1.0) : !mtf.tensor<[a=4], f32>
}

// -----

mtf.program @p {
  // expected-error @+1 {{initializer 'normal' needs a positive standard deviation, got -1.000000e+00}}
  %w = mtf.param "w" normal(0.0, -1.0) : !mtf.tensor<[a=4], f32>
}

// -----

mtf.program @p {
  // expected-error @+1 {{initializer 'uniform' needs low < high, got low 1.000000e+00 and high 1.000000e+00}}
  %w = mtf.param "w" uniform(1.0, 1.0) : !mtf.tensor<[a=4], f32>
}

// -----

mtf.program @p {
  // expected-error @+1 {{unknown initializer 'gaussian'; expected zeros, ones, constant, normal or uniform}}
  %w = mtf.param "w" gaussian(0.0, 1.0) : !mtf.tensor<[a=4], f32>
}

// -----

mtf.program @p {
  // expected-error @+1 {{'mtf.param' op result #0 must be named-dimension tensor of floating-point values, but got '!mtf.tensor<[a=4], i32>'}}
  %w = mtf.param "w" zeros : !mtf.tensor<[a=4], i32>
}
