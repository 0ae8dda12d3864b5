//===- MtfInterfaces.td - mtf op interfaces ----------------*- tablegen -*-===//
//
// What an op is, stated once, read by the generic passes: how mtf-partition
// splits it (the role of each named dimension), how mtf-autodiff
// differentiates it (its vector-Jacobian product) and, for an op that needs
// a dimension whole, how it is written as ops that do not.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_DIALECT_MTFINTERFACES_TD
#define MESHC_DIALECT_MTFINTERFACES_TD

include "mlir/IR/OpBase.td"

def Mtf_PartitionRuleOpInterface : OpInterface<"PartitionRuleOpInterface"> {
  let cppNamespace = "::mlir::mtf";
  let description = [{
    How `mtf-partition` runs the op on per-device blocks, as Shardy's factor
    rules and upstream `ShardingInterface` state it: the role of each named
    dimension (`parallel` unless listed: each device works on its block and
    operands follow the result's split; `summed` / `maxed`: in the operands
    and not in the result, each device reduces its block and the partial
    results are combined over the dimension's mesh axes; `whole`: gathered in
    the operands, the result computed whole along it and sliced to its
    layout), or one of the structural kinds (rename, constrain, output,
    assign, local gradient). The partitioner is generic over this rule; an
    op without it is refused, never guessed.
  }];
  let methods = [
    InterfaceMethod<
      "The rule mtf-partition follows for this op.",
      "::mlir::mtf::PartitionRule", "getPartitionRule">,
  ];
}

// A piecewise-constant op: mtf-autodiff sends no gradient through it.
def Mtf_StopsGradient : NativeOpTrait<"StopsGradient"> {
  let cppNamespace = "::mlir::mtf";
}

// A float elementwise function of one tensor: the `.mprog` unary step runs
// it, with the op's mnemonic as its `fn`.
def Mtf_UnaryElementwise : NativeOpTrait<"UnaryElementwise"> {
  let cppNamespace = "::mlir::mtf";
}

def Mtf_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::mtf";
  let description = [{
    The reverse-mode rule of the op, read by `mtf-autodiff`: given the
    gradient of the loss with respect to the op's result, the op sends the
    vector-Jacobian product to each operand the loss depends on, as mtf ops
    built with an `OpEmitter` (so the backward pass is partitioned like the
    forward one). A piecewise-constant op (a comparison, a mask, an index)
    has the `Mtf_StopsGradient` trait: no gradient flows through it. Ops
    that cannot lie between a parameter and the loss (sinks, ops of local
    programs) fail with an error at the op.
  }];
  let methods = [
    InterfaceMethod<
      [{Sends the gradient of each operand the sink wants, given `grad`, the
        gradient of the op's result; fails with an error at the op when the
        op has no gradient.}],
      "::mlir::LogicalResult", "buildGradients",
      (ins "::mlir::mtf::OpEmitter &":$emit, "::mlir::Value":$grad,
           "::mlir::mtf::GradientSink &":$sink)>,
  ];
}

def Mtf_DecomposeOpInterface : OpInterface<"DecomposeOpInterface"> {
  let cppNamespace = "::mlir::mtf";
  let description = [{
    An op whose partition rule needs a dimension `whole` (softmax, logsumexp,
    softmax-cross-entropy, argmax) written as reductions and
    elementwise ops that need no dimension whole. `mtf-partition` uses it
    where the layout splits that dimension: each device then reduces its
    block and the partitioner all-reduces per-row statistics (the maximum,
    the sum of exponentials) instead of all-gathering the dimension, as
    Megatron-LM's vocabulary-parallel cross-entropy does. The values equal
    the op's own up to the order of floating-point additions.
  }];
  let methods = [
    InterfaceMethod<
      [{Builds the op's value from reductions and elementwise ops with `emit`
        (placed before the op) and returns it; it has the op's result type.}],
      "::mlir::Value", "decompose", (ins "::mlir::mtf::OpEmitter &":$emit)>,
  ];
}

#endif // MESHC_DIALECT_MTFINTERFACES_TD
