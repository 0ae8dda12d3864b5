// RUN: meshc-opt %s --split-input-file --mtf-fuse | FileCheck %s
// The printed form parses back (and verifies) unchanged:
// RUN: meshc-opt %s --split-input-file --mtf-fuse | meshc-opt --split-input-file | FileCheck %s
// mtf-fuse on local programs: which ops become one mtf.fused step.

// gelu -> add -> layer norm (two reductions over d, the scale and shift):
// one step whose only result is what the program reads.
// CHECK-LABEL: mtf.program @chain local
// CHECK: %[[Y:.*]] = mtf.fused(%{{.*}}, %{{.*}}, %{{.*}}) : (!mtf.tensor<[batch=4, d=8], f32>, !mtf.tensor<[batch=4, d=8], f32>, !mtf.tensor<[d=8], f32>) -> !mtf.tensor<[batch=4, d=8], f32>
// CHECK: mtf.gelu
// CHECK: mtf.add
// CHECK: mtf.reduce_mean
// CHECK: mtf.sub
// CHECK: mtf.reduce_mean
// CHECK: mtf.constant 1.000000e-05
// CHECK: mtf.rsqrt
// CHECK: mtf.yield
// CHECK-NOT: mtf.fused
// CHECK: mtf.output "y" %[[Y]]
mtf.program @chain local {
  %x = mtf.input "x" : !mtf.tensor<[batch=4, d=8], f32>
  %r = mtf.input "r" : !mtf.tensor<[batch=4, d=8], f32>
  %g = mtf.param "g" normal(0.0, 0.1) : !mtf.tensor<[d=8], f32>
  %h = mtf.gelu %x : !mtf.tensor<[batch=4, d=8], f32>
  %a = mtf.add %h, %r : !mtf.tensor<[batch=4, d=8], f32>, !mtf.tensor<[batch=4, d=8], f32> -> !mtf.tensor<[batch=4, d=8], f32>
  %m = mtf.reduce_mean %a : !mtf.tensor<[batch=4, d=8], f32> -> !mtf.tensor<[batch=4], f32>
  %c = mtf.sub %a, %m : !mtf.tensor<[batch=4, d=8], f32>, !mtf.tensor<[batch=4], f32> -> !mtf.tensor<[batch=4, d=8], f32>
  %sq = mtf.mul %c, %c : !mtf.tensor<[batch=4, d=8], f32>, !mtf.tensor<[batch=4, d=8], f32> -> !mtf.tensor<[batch=4, d=8], f32>
  %v = mtf.reduce_mean %sq : !mtf.tensor<[batch=4, d=8], f32> -> !mtf.tensor<[batch=4], f32>
  %eps = mtf.constant 1.0e-5 : !mtf.tensor<[], f32>
  %ve = mtf.add %v, %eps : !mtf.tensor<[batch=4], f32>, !mtf.tensor<[], f32> -> !mtf.tensor<[batch=4], f32>
  %rs = mtf.rsqrt %ve : !mtf.tensor<[batch=4], f32>
  %n = mtf.mul %c, %rs : !mtf.tensor<[batch=4, d=8], f32>, !mtf.tensor<[batch=4], f32> -> !mtf.tensor<[batch=4, d=8], f32>
  %y = mtf.mul %n, %g : !mtf.tensor<[batch=4, d=8], f32>, !mtf.tensor<[d=8], f32> -> !mtf.tensor<[batch=4, d=8], f32>
  mtf.output "y" %y : !mtf.tensor<[batch=4, d=8], f32>
}

// -----

// Forward and backward ops never share a step (evaluation runs the forward
// steps alone); reductions over other dims start a group of their own.
// CHECK-LABEL: mtf.program @phases local
// CHECK: mtf.fused
// CHECK-NEXT: ^bb0
// CHECK-NEXT: mtf.exp
// CHECK-NEXT: mtf.relu
// CHECK-NEXT: mtf.yield
// CHECK: mtf.fused
// CHECK-SAME: mtf.phase = "backward"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: mtf.negate
// CHECK-NEXT: mtf.tanh
// CHECK: mtf.reduce_sum %{{.*}} : !mtf.tensor<[a=4, b=8], f32> -> !mtf.tensor<[b=8], f32>
mtf.program @phases local {
  %x = mtf.input "x" : !mtf.tensor<[a=4, b=8], f32>
  %e = mtf.exp %x : !mtf.tensor<[a=4, b=8], f32>
  %f = mtf.relu %e : !mtf.tensor<[a=4, b=8], f32>
  %n = mtf.negate %f {mtf.phase = "backward"} : !mtf.tensor<[a=4, b=8], f32>
  %t = mtf.tanh %n {mtf.phase = "backward"} : !mtf.tensor<[a=4, b=8], f32>
  %s = mtf.reduce_sum %t {mtf.phase = "backward"} : !mtf.tensor<[a=4, b=8], f32> -> !mtf.tensor<[a=4], f32>
  %u = mtf.reduce_sum %t {mtf.phase = "backward"} : !mtf.tensor<[a=4, b=8], f32> -> !mtf.tensor<[b=8], f32>
  mtf.output "s" %s : !mtf.tensor<[a=4], f32>
  mtf.output "u" %u : !mtf.tensor<[b=8], f32>
}

// -----

// A join that would make the grouped program cyclic is refused: b2 reads
// a1 through an einsum while group {a1, a2} reads b1 through another, so
// b1 and b2 stay apart. Ops that read a group's value before its last
// member (the einsum of a1) move after the group.
// CHECK-LABEL: mtf.program @cycle local
// CHECK: %[[B1:.*]] = mtf.exp %{{.*}} : !mtf.tensor<[a=4, b=8], f32>
// CHECK: %[[N1:.*]] = mtf.einsum %[[B1]]
// CHECK: %[[A:.*]]:2 = mtf.fused
// CHECK: mtf.exp
// CHECK: mtf.add
// CHECK: mtf.einsum %[[A]]#0
// CHECK: mtf.add %[[B1]]
mtf.program @cycle local {
  %x = mtf.input "x" : !mtf.tensor<[a=4, b=8], f32>
  %y = mtf.input "y" : !mtf.tensor<[a=4, b=8], f32>
  %w = mtf.input "w" : !mtf.tensor<[b=8, c=8], f32>
  %a1 = mtf.exp %x : !mtf.tensor<[a=4, b=8], f32>
  %b1 = mtf.exp %y : !mtf.tensor<[a=4, b=8], f32>
  %n2 = mtf.einsum %a1, %w : !mtf.tensor<[a=4, b=8], f32>, !mtf.tensor<[b=8, c=8], f32> -> !mtf.tensor<[a=4, c=8], f32>
  %n1 = mtf.einsum %b1, %w : !mtf.tensor<[a=4, b=8], f32>, !mtf.tensor<[b=8, c=8], f32> -> !mtf.tensor<[a=4, c=8], f32>
  %m1 = mtf.rename %n1 "c" to "b" : !mtf.tensor<[a=4, c=8], f32> -> !mtf.tensor<[a=4, b=8], f32>
  %m2 = mtf.rename %n2 "c" to "b" : !mtf.tensor<[a=4, c=8], f32> -> !mtf.tensor<[a=4, b=8], f32>
  %a2 = mtf.add %a1, %m1 : !mtf.tensor<[a=4, b=8], f32>, !mtf.tensor<[a=4, b=8], f32> -> !mtf.tensor<[a=4, b=8], f32>
  %b2 = mtf.add %b1, %m2 : !mtf.tensor<[a=4, b=8], f32>, !mtf.tensor<[a=4, b=8], f32> -> !mtf.tensor<[a=4, b=8], f32>
  mtf.output "a2" %a2 : !mtf.tensor<[a=4, b=8], f32>
  mtf.output "b2" %b2 : !mtf.tensor<[a=4, b=8], f32>
}

// -----

// Moving a read of a parameter past its assign would make it read the new
// value: that join is refused, so the einsum stays before the assign.
// CHECK-LABEL: mtf.program @assign local
// CHECK: mtf.einsum %{{.*}}, %[[W:[0-9a-z]+]]
// CHECK: mtf.assign "w"
// CHECK-NOT: mtf.fused
mtf.program @assign local {
  %w = mtf.param "w" normal(0.0, 0.1) : !mtf.tensor<[b=8, c=8], f32>
  %x = mtf.input "x" : !mtf.tensor<[a=4, b=8], f32>
  %a1 = mtf.exp %x : !mtf.tensor<[a=4, b=8], f32>
  %n = mtf.einsum %a1, %w : !mtf.tensor<[a=4, b=8], f32>, !mtf.tensor<[b=8, c=8], f32> -> !mtf.tensor<[a=4, c=8], f32>
  %z = mtf.constant 0.0 : !mtf.tensor<[b=8, c=8], f32>
  mtf.assign "w" %z : !mtf.tensor<[b=8, c=8], f32>
  %a2 = mtf.tanh %a1 : !mtf.tensor<[a=4, b=8], f32>
  mtf.output "n" %n : !mtf.tensor<[a=4, c=8], f32>
  mtf.output "a2" %a2 : !mtf.tensor<[a=4, b=8], f32>
}

// -----

// A one-operand einsum summing trailing dims (a row sum, as a layer norm's
// gradient makes) joins its operand's group as a reduce_sum; one summing
// leading dims (a column sum: a shift's gradient) stays an einsum.
// CHECK-LABEL: mtf.program @row_sums local
// CHECK: mtf.fused
// CHECK-NEXT: ^bb0
// CHECK-NEXT: mtf.mul
// CHECK-NEXT: mtf.reduce_sum %{{.*}} : !mtf.tensor<[a=4, b=8], bf16> -> !mtf.tensor<[a=4], bf16>
// CHECK-NEXT: mtf.yield
// CHECK: mtf.einsum %{{.*}} : !mtf.tensor<[a=4, b=8], bf16> -> !mtf.tensor<[b=8], bf16>
// CHECK-NOT: mtf.einsum
mtf.program @row_sums local {
  %x = mtf.input "x" : !mtf.tensor<[a=4, b=8], bf16>
  %y = mtf.input "y" : !mtf.tensor<[a=4, b=8], bf16>
  %p = mtf.mul %x, %y : !mtf.tensor<[a=4, b=8], bf16>, !mtf.tensor<[a=4, b=8], bf16> -> !mtf.tensor<[a=4, b=8], bf16>
  %rows = mtf.einsum %p : !mtf.tensor<[a=4, b=8], bf16> -> !mtf.tensor<[a=4], bf16>
  %cols = mtf.einsum %x : !mtf.tensor<[a=4, b=8], bf16> -> !mtf.tensor<[b=8], bf16>
  mtf.output "rows" %rows : !mtf.tensor<[a=4], bf16>
  mtf.output "cols" %cols : !mtf.tensor<[b=8], bf16>
}

// -----

// An op alone stays its own step in f32; one that reads or writes bf16 is a
// fused step of one op (its own step would stage each bf16 operand whole
// in f32 in the scratch; a fused step widens and rounds as it streams); a
// cast alone stays a cast (it stages nothing).
// CHECK-LABEL: mtf.program @alone local
// CHECK: mtf.add %{{.*}} : !mtf.tensor<[a=4], f32>
// CHECK: mtf.fused(%{{.*}}) : (!mtf.tensor<[a=4], bf16>) -> !mtf.tensor<[a=4], bf16>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: mtf.add
// CHECK-NEXT: mtf.yield
// CHECK: mtf.cast %{{.*}} : !mtf.tensor<[a=4], bf16> -> !mtf.tensor<[a=4], f32>
// CHECK-NOT: mtf.fused
mtf.program @alone local {
  %x = mtf.input "x" : !mtf.tensor<[a=4], f32>
  %s = mtf.add %x, %x : !mtf.tensor<[a=4], f32>, !mtf.tensor<[a=4], f32> -> !mtf.tensor<[a=4], f32>
  %h = mtf.input "h" : !mtf.tensor<[a=4], bf16>
  %t = mtf.add %h, %h : !mtf.tensor<[a=4], bf16>, !mtf.tensor<[a=4], bf16> -> !mtf.tensor<[a=4], bf16>
  %k = mtf.input "k" : !mtf.tensor<[a=4], bf16>
  %w = mtf.cast %k : !mtf.tensor<[a=4], bf16> -> !mtf.tensor<[a=4], f32>
  mtf.output "s" %s : !mtf.tensor<[a=4], f32>
  mtf.output "t" %t : !mtf.tensor<[a=4], bf16>
  mtf.output "w" %w : !mtf.tensor<[a=4], f32>
}
