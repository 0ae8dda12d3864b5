// RUN: meshc-opt %s -split-input-file -verify-diagnostics --allow-unregistered-dialect --mtf-partition
// mtf-partition partitions an op only by the rule its PartitionRuleOpInterface
// states; an op without one is refused, never treated as elementwise.

mtf.program @unknown mesh #mtf.mesh<b=2> {
  %x = mtf.input "x" {mtf.layout = #mtf.layout<n: b>} : !mtf.tensor<[n=8], f32>
  // expected-error @+1 {{'test.running_max' op has no partitioning rule (mtf-partition partitions only ops that implement the mtf PartitionRuleOpInterface)}}
  %y = "test.running_max"(%x) {mtf.layout = #mtf.layout<n: b>} : (!mtf.tensor<[n=8], f32>) -> !mtf.tensor<[n=8], f32>
  mtf.output "y" %y : !mtf.tensor<[n=8], f32>
}

// -----

// Ops of local programs have a rule that refuses them in a global one.
mtf.program @bridge mesh #mtf.mesh<b=2> {
  %x = mtf.input "x" : !mtf.tensor<[n=8], f32>
  // expected-error @+1 {{'mtf.to_tensor' op belongs to local programs only}}
  %t = mtf.to_tensor %x : !mtf.tensor<[n=8], f32> -> tensor<8xf32>
}
