// The axis-weights option of mtf-apply-layout and of mtf-pipeline-stages is
// read in one place (optionWeights): text that does not fit the mesh is an
// error at the program naming the option, the text and the column.
// RUN: not meshc-opt %s --mtf-apply-layout="mesh=p:2 layout=batch:p axis-weights=p=1" 2>&1 | FileCheck %s
// RUN: not meshc-opt %s --mtf-pipeline-stages="mesh=p:2 layout=batch:p axis-weights=p=1" 2>&1 | FileCheck %s
// CHECK: option-weights-invalid.mlir:[[@LINE+3]]:1: error: in axis-weights "p=1" at column 3: mesh axis 'p' has 2 devices, but 1 weight was given
// CHECK: note: hint: give one weight per device along 'p'

mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[batch=4, d=2], f32>
  mtf.output "y" %x : !mtf.tensor<[batch=4, d=2], f32>
}
