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

// What a .mprog view is: the op's result is its operand's data under another
// type or name (to_tensor, from_tensor, rename): it becomes no step and
// shares its operand's buffer.
def Mtf_View : NativeOpTrait<"View"> {
  let cppNamespace = "::mlir::mtf";
}

// How mtf-precision (--precision=bf16) types an op (PrecisionRule in
// MtfDialect.h): every op carries exactly one.
class Mtf_Precision<string rule>
    : ParamNativeOpTrait<"Precision", "::mlir::mtf::PrecisionRule::" # rule> {
  let cppNamespace = "::mlir::mtf";
}
def Mtf_KeepsPrecision : Mtf_Precision<"Keep">;
def Mtf_LowPrecision : Mtf_Precision<"Low">;
def Mtf_FullPrecision : Mtf_Precision<"Full">;
def Mtf_FollowsPrecision : Mtf_Precision<"Follow">;
def Mtf_PrecisionSink : Mtf_Precision<"Sink">;
def Mtf_NoPrecisionRule : Mtf_Precision<"Refuse">;
def Mtf_RegionPrecision : Mtf_Precision<"Region">;

def Mtf_StepOpInterface : OpInterface<"StepOpInterface"> {
  let cppNamespace = "::mlir::mtf";
  let description = [{
    How the op of a local program becomes `.mprog` steps: the step kind it
    names from `runtime/core/StepKinds.def`, and the steps themselves,
    written through a `StepWriter` that knows the program's buffers, dim
    names and per-device sizes (the emitter, `lowering/EmitMprog.cpp`, is
    generic over it). Ops that become no step of their own (sources, views,
    outputs) name no kind; ops that cannot stand in a local program (the
    container, `train`) fail with an error at the op. Every mtf op has it
    (`Mtf_Op`); the upstream `shard` collectives get it as external models
    (`lowering/CollectiveSteps.cpp`).
  }];
  let methods = [
    InterfaceMethod<
      [{The kind of the step the op becomes; none when it becomes no step of
        its own (a source, a view, an output, a container).}],
      "::std::optional<::meshc::runtime::OpKind>", "getStepKind">,
    InterfaceMethod<
      [{Appends the op's steps to the program through `writer`; fails with
        an error at the op when it cannot be written.}],
      "::mlir::LogicalResult", "writeSteps",
      (ins "::mlir::mtf::StepWriter &":$writer)>,
    InterfaceMethod<
      [{Whether the step may write each result i over operand i when nothing
        reads that operand afterwards (an all-reduce works in place).}],
      "bool", "mayWorkInPlace", (ins), [{}], [{ return false; }]>,
  ];
}

def Mtf_ReductionOpInterface : OpInterface<"ReductionOpInterface"> {
  let cppNamespace = "::mlir::mtf";
  let description = [{
    A reduction over the dimensions the result drops (reduce_sum,
    reduce_mean, reduce_max): which one, for the passes that treat the three
    alike (the reduce step, fusion, `--explain`).
  }];
  let methods = [
    InterfaceMethod<"What the op reduces with.", "::mlir::mtf::Reduction",
                    "getReduction">,
  ];
}

def Mtf_FusibleOpInterface : OpInterface<"FusibleOpInterface"> {
  let cppNamespace = "::mlir::mtf";
  let description = [{
    An op that may stand in an `mtf.fused` body (`mtf-fuse` groups such ops
    when they are f32): an elementwise function, a constant or a reduction.
    It writes the instructions of the fused step's expression program
    (docs/mprog.md) that compute its value.
  }];
  let methods = [
    InterfaceMethod<
      [{Appends the instructions that compute the op's result, whose
        operands `program` has numbered, and returns the number of the
        result's value.}],
      "int64_t", "writeFusedInstructions",
      (ins "::mlir::mtf::FusedProgramBuilder &":$program)>,
  ];
}

#endif // MESHC_DIALECT_MTFINTERFACES_TD
