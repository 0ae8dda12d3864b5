// RUN: meshc-opt %s | FileCheck %s
// RUN: meshc-opt %s | meshc-opt | FileCheck %s
// split_dim and merge_dims print back as they parse.

// CHECK-LABEL: mtf.program @stages
mtf.program @stages {
  %w = mtf.param "w" zeros : !mtf.tensor<[layers=8, d=4], f32>
  // CHECK: %[[S:.*]] = mtf.split_dim %{{.*}} "layers" : !mtf.tensor<[layers=8, d=4], f32> -> !mtf.tensor<[stage=2, layer=4, d=4], f32>
  %s = mtf.split_dim %w "layers" : !mtf.tensor<[layers=8, d=4], f32> -> !mtf.tensor<[stage=2, layer=4, d=4], f32>
  // CHECK: mtf.merge_dims %[[S]] "stage" : !mtf.tensor<[stage=2, layer=4, d=4], f32> -> !mtf.tensor<[all=8, d=4], f32>
  %m = mtf.merge_dims %s "stage" : !mtf.tensor<[stage=2, layer=4, d=4], f32> -> !mtf.tensor<[all=8, d=4], f32>
  // Any element type, any position.
  // CHECK: mtf.split_dim %{{.*}} "t" : !mtf.tensor<[b=2, t=6], i32> -> !mtf.tensor<[b=2, u=3, v=2], i32>
  %i = mtf.input "i" : !mtf.tensor<[b=2, t=6], i32>
  %j = mtf.split_dim %i "t" : !mtf.tensor<[b=2, t=6], i32> -> !mtf.tensor<[b=2, u=3, v=2], i32>
}

// -----

// Blocks: a pipeline's uneven stages (4 layers over 3 stages of up to 2).
// CHECK-LABEL: mtf.program @blocks
mtf.program @blocks {
  %w = mtf.param "w" zeros : !mtf.tensor<[layers=4, d=4], f32>
  // CHECK: %[[S:.*]] = mtf.split_dim %{{.*}} "layers" blocks [2, 1, 1] : !mtf.tensor<[layers=4, d=4], f32> -> !mtf.tensor<[stage=3, layer=2, d=4], f32>
  %s = mtf.split_dim %w "layers" blocks [2, 1, 1] : !mtf.tensor<[layers=4, d=4], f32> -> !mtf.tensor<[stage=3, layer=2, d=4], f32>
  // CHECK: mtf.merge_dims %[[S]] "stage" blocks [2, 1, 1] : !mtf.tensor<[stage=3, layer=2, d=4], f32> -> !mtf.tensor<[all=4, d=4], f32>
  %m = mtf.merge_dims %s "stage" blocks [2, 1, 1] : !mtf.tensor<[stage=3, layer=2, d=4], f32> -> !mtf.tensor<[all=4, d=4], f32>
}
