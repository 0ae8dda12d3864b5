// RUN: meshc-opt %s --mtf-apply-layout='layout=batch:x+y' | FileCheck %s
// Without a mesh option the program's own mesh is used; one dimension can be
// split over several mesh axes.

// CHECK-LABEL: mtf.program @own mesh <x=2, y=2, z=2>
mtf.program @own mesh <x=2, y=2, z=2> {
  // CHECK: mtf.input "x" {mtf.layout = #mtf.layout<batch: x+y>} : !mtf.tensor<[batch=8, d=3], f32>
  %x = mtf.input "x" : !mtf.tensor<[batch=8, d=3], f32>
}
