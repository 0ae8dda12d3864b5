// RUN: meshc-opt %s -split-input-file -verify-diagnostics
// Every verifier error of the mtf operations.

mtf.program @p {
  // expected-error @+1 {{'mtf.constant' op value 5.000000e-01 is not representable as i32}}
  %c = mtf.constant 0.5 : !mtf.tensor<[], i32>
}

// -----

mtf.program @p {
  // expected-error @+1 {{'mtf.einsum' op needs at least one operand}}
  %e = "mtf.einsum"() : () -> !mtf.tensor<[a=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], bf16>
  // expected-error @+1 {{'mtf.einsum' op operand #0 has element type 'bf16' but the result has 'f32'}}
  %e = mtf.einsum %x : !mtf.tensor<[a=2], bf16> -> !mtf.tensor<[a=2], f32>
}

// -----

func.func @f(%x: !mtf.tensor<[a=2, b=3], f32>, %y: !mtf.tensor<[b=4], f32>) {
  // expected-error @+1 {{'mtf.einsum' op dimension 'b' has size 3 in operand #0 but 4 in operand #1}}
  %e = mtf.einsum %x, %y : !mtf.tensor<[a=2, b=3], f32>, !mtf.tensor<[b=4], f32> -> !mtf.tensor<[a=2], f32>
  return
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  // expected-error @+1 {{'mtf.einsum' op result dimension 'c' occurs in no operand}}
  %e = mtf.einsum %x : !mtf.tensor<[a=2], f32> -> !mtf.tensor<[c=2], f32>
}

// -----

func.func @f(%x: !mtf.tensor<[a=2], f32>) {
  // expected-error @+1 {{'mtf.einsum' op dimension 'a' has size 2 in operand #0 but 3 in the result}}
  %e = mtf.einsum %x : !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=3], f32>
  return
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  // expected-error @+1 {{'mtf.rename' op operand has no dimension 'z' to rename (type '!mtf.tensor<[a=2], f32>')}}
  %r = mtf.rename %x "z" to "b" : !mtf.tensor<[a=2], f32> -> !mtf.tensor<[b=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, b=2], f32>
  // expected-error @+1 {{'mtf.rename' op operand already has a dimension 'b' (type '!mtf.tensor<[a=2, b=2], f32>')}}
  %r = mtf.rename %x "a" to "b" : !mtf.tensor<[a=2, b=2], f32> -> !mtf.tensor<[c=2, b=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, b=2], f32>
  // expected-error @+1 {{'mtf.rename' op result type must be '!mtf.tensor<[c=2, b=2], f32>', got '!mtf.tensor<[b=2, c=2], f32>'}}
  %r = mtf.rename %x "a" to "c" : !mtf.tensor<[a=2, b=2], f32> -> !mtf.tensor<[b=2, c=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  // expected-error @+1 {{'mtf.constrain' op layout splits dimension 'q' which the tensor does not have (type '!mtf.tensor<[a=2], f32>')}}
  %c = mtf.constrain %x to <q: b> : !mtf.tensor<[a=2], f32>
}

// -----

mtf.program @p mesh <b=4> {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  // expected-error @+1 {{'mtf.constrain' op dimension 'a' (size 2) is not divisible by its 4 shards}}
  %c = mtf.constrain %x to <a: b> : !mtf.tensor<[a=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  // expected-error @+1 {{'mtf.cast' op must keep the dimensions: operand '!mtf.tensor<[a=2], f32>', result '!mtf.tensor<[b=2], bf16>'}}
  %c = mtf.cast %x : !mtf.tensor<[a=2], f32> -> !mtf.tensor<[b=2], bf16>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], i32>
  // expected-error @+1 {{'mtf.relu' op operand #0 must be named-dimension tensor of floating-point values, but got '!mtf.tensor<[a=2], i32>'}}
  %r = mtf.relu %x : !mtf.tensor<[a=2], i32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  %y = mtf.input "y" : !mtf.tensor<[a=2], bf16>
  // expected-error @+1 {{'mtf.add' op element types must match, got 'f32' and 'bf16' -> 'f32'}}
  %z = mtf.add %x, %y : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], bf16> -> !mtf.tensor<[a=2], f32>
}

// -----

func.func @f(%x: !mtf.tensor<[a=2], f32>, %y: !mtf.tensor<[a=3], f32>) {
  // expected-error @+1 {{'mtf.mul' op dimension 'a' has size 2 in lhs but 3 in rhs}}
  %z = mtf.mul %x, %y : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=3], f32> -> !mtf.tensor<[a=2], f32>
  return
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  // expected-error @+1 {{'mtf.sub' op result dimension 'c' is in neither operand}}
  %z = mtf.sub %x, %x : !mtf.tensor<[a=2], f32>, !mtf.tensor<[a=2], f32> -> !mtf.tensor<[a=2, c=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  %y = mtf.input "y" : !mtf.tensor<[c=2], f32>
  // expected-error @+1 {{'mtf.div' op result lacks operand dimension 'c'; elementwise ops do not reduce (use mtf.reduce_sum)}}
  %z = mtf.div %x, %y : !mtf.tensor<[a=2], f32>, !mtf.tensor<[c=2], f32> -> !mtf.tensor<[a=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, b=3], f32>
  // expected-error @+1 {{'mtf.reduce_sum' op result dimension 'c' is not an operand dimension (operand '!mtf.tensor<[a=2, b=3], f32>')}}
  %s = mtf.reduce_sum %x : !mtf.tensor<[a=2, b=3], f32> -> !mtf.tensor<[c=2], f32>
}

// -----

func.func @f(%x: !mtf.tensor<[a=2, b=3], f32>) {
  // expected-error @+1 {{'mtf.reduce_mean' op dimension 'b' has size 3 in the operand but 4 in the result}}
  %s = mtf.reduce_mean %x : !mtf.tensor<[a=2, b=3], f32> -> !mtf.tensor<[b=4], f32>
  return
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2, b=3, c=4], f32>
  // expected-error @+1 {{'mtf.reduce_max' op result dimensions must keep the operand's order, got '!mtf.tensor<[c=4, a=2], f32>' from '!mtf.tensor<[a=2, b=3, c=4], f32>'}}
  %s = mtf.reduce_max %x : !mtf.tensor<[a=2, b=3, c=4], f32> -> !mtf.tensor<[c=4, a=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  // expected-error @+1 {{'mtf.reduce_sum' op element types must match, got 'f32' -> 'f16'}}
  %s = mtf.reduce_sum %x : !mtf.tensor<[a=2], f32> -> !mtf.tensor<[], f16>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[a=2], f32>
  // expected-error @+1 {{'mtf.softmax' op operand has no dimension 'classes' (type '!mtf.tensor<[a=2], f32>')}}
  %s = mtf.softmax %x over "classes" : !mtf.tensor<[a=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[batch=2, k=3], f32>
  %l = mtf.input "l" : !mtf.tensor<[batch=2], i32>
  // expected-error @+1 {{'mtf.softmax_cross_entropy' op logits have no class dimension 'classes' (type '!mtf.tensor<[batch=2, k=3], f32>')}}
  %s = mtf.softmax_cross_entropy %x, %l over "classes" : !mtf.tensor<[batch=2, k=3], f32>, !mtf.tensor<[batch=2], i32> -> !mtf.tensor<[batch=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[batch=2, k=3], f32>
  %l = mtf.input "l" : !mtf.tensor<[batch=2, k=3], i32>
  // expected-error @+1 {{'mtf.softmax_cross_entropy' op labels must not have the class dimension 'k'}}
  %s = mtf.softmax_cross_entropy %x, %l over "k" : !mtf.tensor<[batch=2, k=3], f32>, !mtf.tensor<[batch=2, k=3], i32> -> !mtf.tensor<[batch=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[batch=2, seq=4, k=3], f32>
  %l = mtf.input "l" : !mtf.tensor<[batch=2], i32>
  // expected-error @+1 {{'mtf.softmax_cross_entropy' op labels must have the logits' dimensions except 'k': logits '!mtf.tensor<[batch=2, seq=4, k=3], f32>', labels '!mtf.tensor<[batch=2], i32>'}}
  %s = mtf.softmax_cross_entropy %x, %l over "k" : !mtf.tensor<[batch=2, seq=4, k=3], f32>, !mtf.tensor<[batch=2], i32> -> !mtf.tensor<[batch=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[batch=2, k=3], f32>
  %l = mtf.input "l" : !mtf.tensor<[seq=2], i32>
  // expected-error @+1 {{'mtf.softmax_cross_entropy' op labels dimension 'seq' is not a logits dimension}}
  %s = mtf.softmax_cross_entropy %x, %l over "k" : !mtf.tensor<[batch=2, k=3], f32>, !mtf.tensor<[seq=2], i32> -> !mtf.tensor<[seq=2], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[batch=2, k=3], f32>
  %l = mtf.input "l" : !mtf.tensor<[batch=2], i32>
  // expected-error @+1 {{'mtf.softmax_cross_entropy' op result must have the labels' dimensions, got '!mtf.tensor<[], f32>'}}
  %s = mtf.softmax_cross_entropy %x, %l over "k" : !mtf.tensor<[batch=2, k=3], f32>, !mtf.tensor<[batch=2], i32> -> !mtf.tensor<[], f32>
}

// -----

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[batch=2, k=3], f32>
  %l = mtf.input "l" : !mtf.tensor<[batch=2], i32>
  // expected-error @+1 {{'mtf.softmax_cross_entropy' op result element type must be 'f32', got 'bf16'}}
  %s = mtf.softmax_cross_entropy %x, %l over "k" : !mtf.tensor<[batch=2, k=3], f32>, !mtf.tensor<[batch=2], i32> -> !mtf.tensor<[batch=2], bf16>
}

// -----

mtf.program @p {
  %l = mtf.input "l" : !mtf.tensor<[batch=2], f32>
  // expected-error @+1 {{'mtf.train' op loss must be a scalar, got '!mtf.tensor<[batch=2], f32>'}}
  mtf.train %l with "sgd" {lr = 1.0 : f64} : !mtf.tensor<[batch=2], f32>
}

// -----

mtf.program @p {
  %l = mtf.input "l" : !mtf.tensor<[], f32>
  // expected-error @+1 {{'mtf.train' op unknown optimizer 'lamb'; expected sgd, momentum, adam or adamw}}
  mtf.train %l with "lamb" {lr = 1.0 : f64} : !mtf.tensor<[], f32>
}

// -----

mtf.program @p {
  %l = mtf.input "l" : !mtf.tensor<[], f32>
  // expected-error @+1 {{'mtf.train' op optimizer 'sgd' has no hyper-parameter 'beta1'}}
  mtf.train %l with "sgd" {lr = 1.0 : f64, beta1 = 0.9 : f64} : !mtf.tensor<[], f32>
}

// -----

mtf.program @p {
  %l = mtf.input "l" : !mtf.tensor<[], f32>
  // expected-error @+1 {{'mtf.train' op hyper-parameter 'momentum' must be a number, got "high"}}
  mtf.train %l with "momentum" {lr = 1.0 : f64, momentum = "high"} : !mtf.tensor<[], f32>
}

// -----

mtf.program @p {
  %l = mtf.input "l" : !mtf.tensor<[], f32>
  // expected-error @+1 {{'mtf.train' op optimizer 'adam' needs a learning rate 'lr' (a float)}}
  mtf.train %l with "adam" {clip_norm = 1.0 : f64} : !mtf.tensor<[], f32>
}

// -----

mtf.program @p {
  %l = mtf.input "l" : !mtf.tensor<[], f32>
  // expected-error @+1 {{'mtf.train' op learning rate must be positive, got 0.000000e+00}}
  mtf.train %l with "adamw" {lr = 0.0 : f64} : !mtf.tensor<[], f32>
}
