// RUN: meshc-opt %s --mtf-partition | FileCheck %s
// A softmax whose operand splits 'classes' over m while its own layout puts m
// on 'a': the rewrite into row statistics would need m on two dims, so the
// op stays whole (lowering/Decompose.cpp) and its operand is resharded, here
// by one all-to-all, as the generic rule does.
// CHECK-LABEL: mtf.program @mixed mesh <m=2> local
// CHECK-NOT: mtf.reduce_max
// CHECK: shard.all_to_all {{.*}} {mtf.reason = "softmax needs 'x' as [a:m, classes], it is [a, classes:m]"}
// CHECK: mtf.softmax %{{.*}} over "classes" {mtf.layout = #mtf.layout<a: m>} : !mtf.tensor<[a=2, classes=8], f32>
mtf.program @mixed mesh <m=2> {
  %x = mtf.input "x" {mtf.layout = #mtf.layout<classes: m>} : !mtf.tensor<[a=4, classes=8], f32>
  %p = mtf.softmax %x over "classes" {mtf.layout = #mtf.layout<a: m>} : !mtf.tensor<[a=4, classes=8], f32>
  mtf.output "p" %p : !mtf.tensor<[a=4, classes=8], f32>
}
