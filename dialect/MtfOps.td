//===- MtfOps.td - mtf dialect operations ------------------*- tablegen -*-===//
//
// Operations of a named-dimension program: its container, its sources
// (inputs, parameters, constants), compute, and its sinks (outputs, train).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_DIALECT_MTFOPS_TD
#define MESHC_DIALECT_MTFOPS_TD

include "dialect/MtfAttrs.td"
include "dialect/MtfInterfaces.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Container
//===----------------------------------------------------------------------===//

def Mtf_ProgramOp : Mtf_Op<"program", [Mtf_NoPrecisionRule, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, IsolatedFromAbove, NoTerminator,
                                       SingleBlock, Symbol]> {
  let summary = "a whole model: one straight-line block of mtf operations";
  let description = [{
    Holds the model's operations in program order. Every dimension name
    means one size throughout the program; input, parameter and output names
    are unique. Once a layout is applied, `mesh` names the device grid.

    A `local` program is the SPMD form that `mtf-partition` produces: every
    device runs it, and tensor types are the per-device blocks (so one
    dimension name may have different local sizes in different tensors).

    ```mlir
    mtf.program @mlp mesh #mtf.mesh<b=4, m=2> {
      %x = mtf.input "x" : !mtf.tensor<[batch=8, io=4], f32>
      mtf.output "x" %x : !mtf.tensor<[batch=8, io=4], f32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       OptionalAttr<Mtf_MeshAttr>:$mesh,
                       UnitAttr:$local);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name (`mesh` $mesh^)? (`local` $local^)? attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name)>];
  let extraClassDeclaration = [{
    /// The single block holding the program's operations.
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::refuse("is the container of a program, not an op inside one");
    }
  }];
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

def Mtf_InputOp : Mtf_Op<"input", [Mtf_KeepsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "a tensor fed to the program at every step";
  let description = [{
    ```mlir
    %x = mtf.input "x" : !mtf.tensor<[batch=256, io=784], f32>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Mtf_AnyTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::parallel();
    }
  }];
}

def Mtf_ParamOp : Mtf_Op<"param", [Mtf_KeepsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "a trainable parameter with its initializer";
  let description = [{
    ```mlir
    %w = mtf.param "w1" normal(0.0, 0.05) : !mtf.tensor<[io=784, hidden=1024], f32>
    %b = mtf.param "b1" zeros : !mtf.tensor<[hidden=1024], f32>
    ```

    A `slot` is optimizer state (Adam's moments, the step counter): it
    persists across steps like a parameter but has no gradient.

    ```mlir
    %m = mtf.param "w1/adam_m" zeros slot : !mtf.tensor<[io=784, hidden=1024], f32>
    ```
  }];
  let arguments = (ins StrAttr:$name, Mtf_InitAttr:$init, UnitAttr:$slot);
  let results = (outs Mtf_FloatTensor:$result);
  let assemblyFormat = [{
    $name custom<Initializer>($init) (`slot` $slot^)? attr-dict `:` type($result)
  }];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::parallel();
    }
  }];
}

def Mtf_ConstantOp : Mtf_Op<"constant", [Mtf_KeepsPrecision, DeclareOpInterfaceMethods<Mtf_FusibleOpInterface>, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "a tensor with the same value everywhere";
  let description = [{
    A literal broadcast to the result type; used mostly as a scalar that
    elementwise operations broadcast by name.

    ```mlir
    %c = mtf.constant 5.000000e-01 : !mtf.tensor<[], f32>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs Mtf_AnyTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::parallel();
    }
  }];
}

def Mtf_DropoutMaskOp : Mtf_Op<"dropout_mask", [Mtf_KeepsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "a fresh random keep-mask, scaled by 1/(1 - rate)";
  let description = [{
    Every element is `1/(1 - rate)` with probability `1 - rate` and `0`
    otherwise, drawn anew at every training step from the seed, `name`, the
    step number and the element's global index, so every layout draws the
    same mask. Evaluation runs see all ones. `dropout(x, rate)` in the
    language is `x * mask`.

    ```mlir
    %m = mtf.dropout_mask "dropout_0" rate 1.000000e-01 : !mtf.tensor<[batch=8, d=4], f32>
    ```
  }];
  let arguments = (ins StrAttr:$name, F64Attr:$rate);
  let results = (outs Mtf_FloatTensor:$result);
  let assemblyFormat = "$name `rate` $rate attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::parallel();
    }
  }];
}

//===----------------------------------------------------------------------===//
// Contraction and layout changes
//===----------------------------------------------------------------------===//

def Mtf_EinsumOp : Mtf_Op<"einsum", [Mtf_LowPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "product of tensors summed over the dimensions the result drops";
  let description = [{
    Dimensions are matched by name. Every result dimension comes from some
    operand; operand dimensions absent from the result are summed over.

    ```mlir
    %h = mtf.einsum %x, %w : !mtf.tensor<[batch=8, io=4], f32>,
        !mtf.tensor<[io=4, hidden=16], f32> -> !mtf.tensor<[batch=8, hidden=16], f32>
    ```
  }];
  let arguments = (ins Variadic<Mtf_FloatTensor>:$inputs);
  let results = (outs Mtf_FloatTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::ValueRange":$inputs,
                                 "::llvm::ArrayRef<::llvm::StringRef>":$dims), [{
    build($_builder, $_state, inferResultType(inputs, dims), inputs);
  }]>];
  let extraClassDeclaration = [{
    /// The result type (dialect/MtfResultTypes.cpp): the dims `dims` names,
    /// in that order, each sized as the first operand that has it, in the
    /// first operand's element type; null when no operand has one of them.
    static TensorType inferResultType(::mlir::ValueRange inputs,
                                      ::llvm::ArrayRef<::llvm::StringRef> dims);
  }];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::contraction(*this, DimRole::Summed);
    }
  }];
}

def Mtf_RenameOp : Mtf_Op<"rename", [Mtf_FollowsPrecision, Mtf_View, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "gives one dimension a new name";
  let description = [{
    Same data, same position, new name: how a tensor gets a layout of its
    own (e.g. `seq` to `memory` for attention keys).

    ```mlir
    %k2 = mtf.rename %k "seq" to "memory" : !mtf.tensor<[seq=16, d=8], f32> -> !mtf.tensor<[memory=16, d=8], f32>
    ```
  }];
  let arguments = (ins Mtf_AnyTensor:$input, StrAttr:$from, StrAttr:$to);
  let results = (outs Mtf_AnyTensor:$result);
  let assemblyFormat = "$input $from `to` $to attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$input, "::llvm::StringRef":$from,
                                 "::llvm::StringRef":$to), [{
    build($_builder, $_state, inferResultType(input, from, to), input, from, to);
  }]>];
  let extraClassDeclaration = [{
    /// The result type: the input's with dim `from` called `to`, in place;
    /// null when the input is no tensor with `from`.
    static TensorType inferResultType(::mlir::Value input,
                                      ::llvm::StringRef from, ::llvm::StringRef to);
  }];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::rename(getFrom(), getTo());
    }
  }];
}

def Mtf_SplitDimOp : Mtf_Op<"split_dim", [Mtf_FollowsPrecision, Mtf_View, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "cuts one dimension into two, outer then inner, in place";
  let description = [{
    Same data, same order: dimension `dim` (size `o * i`) becomes the two
    dimensions the result type has at its position, an outer one of size
    `o` and an inner one of size `i` (element `[a, b]` is element `a * i + b`
    of `dim`); both are new names, since a name means one size throughout a
    program. A pipeline cuts a repeat's layer dim into stages of consecutive
    layers and the batch into microbatches so (issue 31). Where `dim` is
    split over mesh axes into equal blocks of whole inner rows, the outer
    dimension takes the split and every device keeps its block as it is;
    otherwise `dim` is gathered first.

    With `blocks` (one size per outer index, each at most the inner size,
    adding up to `dim`'s size) the outer index `a` takes the next
    `blocks[a]` elements of `dim` and zeros after them: a pipeline's
    uneven stages, `[a, b]` is element `blocks[0] + .. + blocks[a-1] + b`
    where `b < blocks[a]`, else 0. It is partitioned only where the outer
    dimension is split over mesh axes that cut `dim` into exactly those
    blocks: each device pads its own block with one window.

    ```mlir
    %s = mtf.split_dim %w "layers" : !mtf.tensor<[layers=8, d=4], f32> -> !mtf.tensor<[stage=2, layer=4, d=4], f32>
    %u = mtf.split_dim %w "layers" blocks [2, 1, 1] : !mtf.tensor<[layers=4, d=4], f32> -> !mtf.tensor<[stage=3, layer=2, d=4], f32>
    ```
  }];
  let arguments = (ins Mtf_AnyTensor:$input, StrAttr:$dim,
                       OptionalAttr<DenseI64ArrayAttr>:$blocks);
  let results = (outs Mtf_AnyTensor:$result);
  let assemblyFormat = "$input $dim (`blocks` $blocks^)? attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The position of `dim` in the operand (verified).
    unsigned getDimIndex();
    /// The result's outer and inner dimensions.
    ::mlir::mtf::NamedDim getOuter();
    ::mlir::mtf::NamedDim getInner();
  }];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::reshape();
    }
  }];
}

def Mtf_MergeDimsOp : Mtf_Op<"merge_dims", [Mtf_FollowsPrecision, Mtf_View, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "joins two adjacent dimensions into one, in place";
  let description = [{
    The inverse of `split_dim`: dimension `outer` and the one after it
    (sizes `o` and `i`) become the result type's dimension at `outer`'s
    position, of size `o * i`, under a new name. Where the inner dimension
    is split over mesh axes it is gathered first; the merged dimension takes
    the outer one's split, so every device keeps its block as it is.

    With `blocks` it is the inverse of `split_dim` with those blocks: outer
    index `a` gives its first `blocks[a]` inner elements, the rest are
    dropped.

    ```mlir
    %m = mtf.merge_dims %x "examples" : !mtf.tensor<[examples=4, micro=2, d=4], f32> -> !mtf.tensor<[batch=8, d=4], f32>
    ```
  }];
  let arguments = (ins Mtf_AnyTensor:$input, StrAttr:$outer,
                       OptionalAttr<DenseI64ArrayAttr>:$blocks);
  let results = (outs Mtf_AnyTensor:$result);
  let assemblyFormat = "$input $outer (`blocks` $blocks^)? attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The position of `outer` in the operand (verified).
    unsigned getOuterIndex();
  }];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::reshape();
    }
  }];
}

def Mtf_ConstrainOp : Mtf_Op<"constrain", [Mtf_FollowsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure, SameOperandsAndResultType]> {
  let summary = "pins the layout of one tensor, whatever the layout rules say";
  let description = [{
    Like JAX's `with_sharding_constraint`: the result has exactly `layout`
    (dimensions not listed are whole); the operand keeps the layout the rules
    give it.

    ```mlir
    %y = mtf.constrain %x to <batch: b> : !mtf.tensor<[batch=8, d=4], f32>
    ```
  }];
  let arguments = (ins Mtf_AnyTensor:$input, Mtf_LayoutAttr:$layout);
  let results = (outs Mtf_AnyTensor:$result);
  let assemblyFormat = "$input `to` $layout attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::forward();
    }
  }];
}

def Mtf_ToTensorOp : Mtf_Op<"to_tensor", [Mtf_NoPrecisionRule, Mtf_View, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "views a named tensor as a builtin ranked tensor";
  let description = [{
    Same data, dimensions in the same order, names dropped: the bridge to
    upstream ops on ranked tensors, such as the `shard` collectives in a
    `local` program.

    ```mlir
    %t = mtf.to_tensor %x : !mtf.tensor<[batch=4, d=8], f32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Mtf_AnyTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::refuse("belongs to local programs only");
    }
  }];
}

def Mtf_FromTensorOp : Mtf_Op<"from_tensor", [Mtf_NoPrecisionRule, Mtf_View, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "names the dimensions of a builtin ranked tensor";
  let description = [{
    The inverse of `mtf.to_tensor`.

    ```mlir
    %x = mtf.from_tensor %t : tensor<4x8xf32> -> !mtf.tensor<[batch=4, d=8], f32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs Mtf_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::refuse("belongs to local programs only");
    }
  }];
}

def Mtf_CombinedAllGatherOp : Mtf_Op<"combined_all_gather", [Mtf_NoPrecisionRule,
    DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "several all-gathers over the same device groups as one";
  let description = [{
    Result `i` is `shard.all_gather` of input `i` along its dim
    `gather_axes[i]` over `grid_axes` of `grid` (equal blocks), for every
    input, in one collective: member g's chunk holds block g of every input,
    in input order (`mtf-combine-collectives` makes them;
    docs/spmd.md#combined-collectives). Inputs share one element type.

    ```mlir
    %r:2 = mtf.combined_all_gather %a, %b on @mesh grid_axes = [0]
        gather_axes = [0, 1] : tensor<2x8xf32>, tensor<4x3xf32>
        -> tensor<4x8xf32>, tensor<4x6xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                       FlatSymbolRefAttr:$grid,
                       DenseI16ArrayAttr:$grid_axes,
                       DenseI64ArrayAttr:$gather_axes);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $inputs `on` $grid `grid_axes` `=` $grid_axes `gather_axes` `=`
    $gather_axes attr-dict `:` type($inputs) `->` type($results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::refuse("belongs to local programs only");
    }
  }];
}

def Mtf_CombinedReduceScatterOp : Mtf_Op<"combined_reduce_scatter", [Mtf_NoPrecisionRule,
    DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "several reduce-scatters over the same device groups as one";
  let description = [{
    Result `i` is `shard.reduce_scatter` of input `i` along its dim
    `scatter_axes[i]` over `grid_axes` of `grid` by `reduction` ("sum" or
    "max"; equal blocks), for every input, in one collective: member g's
    chunk holds block g of every input, in input order
    (`mtf-combine-collectives` makes them; docs/spmd.md#combined-collectives).
    Inputs share one element type.

    ```mlir
    %r:2 = mtf.combined_reduce_scatter %a, %b on @mesh grid_axes = [0]
        scatter_axes = [0, 1] reduction = "sum" : tensor<4x8xf32>,
        tensor<4x6xf32> -> tensor<2x8xf32>, tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                       FlatSymbolRefAttr:$grid,
                       DenseI16ArrayAttr:$grid_axes,
                       DenseI64ArrayAttr:$scatter_axes, StrAttr:$reduction);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $inputs `on` $grid `grid_axes` `=` $grid_axes `scatter_axes` `=`
    $scatter_axes `reduction` `=` $reduction attr-dict `:` type($inputs) `->`
    type($results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::refuse("belongs to local programs only");
    }
  }];
}

def Mtf_CombinedAllReduceOp : Mtf_Op<"combined_all_reduce", [Mtf_NoPrecisionRule,
    DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure],
    ["mayWorkInPlace"]> {
  let summary = "several all-reduces over the same device groups as one";
  let description = [{
    Result `i` is `shard.all_reduce` of input `i` over `grid_axes` of `grid`
    by `reduction` ("sum" or "max"), for every input, in one collective over
    their elements packed end to end: one latency instead of one per input
    (`mtf-combine-collectives` makes them; docs/spmd.md#combined-collectives).
    Inputs share one element type; each result has its input's type.

    ```mlir
    %r:2 = mtf.combined_all_reduce %a, %b on @mesh grid_axes = [0]
        reduction = "sum" : tensor<64x128xf32>, tensor<128xf32>
        -> tensor<64x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                       FlatSymbolRefAttr:$grid,
                       DenseI16ArrayAttr:$grid_axes, StrAttr:$reduction);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $inputs `on` $grid `grid_axes` `=` $grid_axes `reduction` `=` $reduction
    attr-dict `:` type($inputs) `->` type($results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::refuse("belongs to local programs only");
    }
  }];
}

def Mtf_CollectivePermuteOp : Mtf_Op<"collective_permute", [Mtf_NoPrecisionRule,
    DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure,
    SameOperandsAndResultType]> {
  let summary = "each member of a device group sends its block to another";
  let description = [{
    Within each group of `grid_axes` (members ranked by their shard index
    over those axes, as every collective's), for each pair `[source,
    target]` of `pairs` (flattened: source, target, source, target, ...)
    the target's result is the source's input; a member no pair targets
    gets zeros. Each member is the source of at most one pair and the
    target of at most one. mtf-partition makes it for a `shift` along a
    split dimension: the halo each block needs from its neighbour
    (docs/spmd.md#shifts-along-a-split-dimension).

    ```mlir
    %h = mtf.collective_permute %x on @mesh grid_axes = [0]
        pairs = [1, 0, 2, 1, 3, 2] : tensor<2x1x6xf32> -> tensor<2x1x6xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$grid,
                       DenseI16ArrayAttr:$grid_axes,
                       DenseI64ArrayAttr:$pairs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $grid `grid_axes` `=` $grid_axes `pairs` `=` $pairs
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::refuse("belongs to local programs only");
    }
  }];
}

def Mtf_WaitOp : Mtf_Op<"wait", [Mtf_NoPrecisionRule, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "completes a collective started earlier in its block";
  let description = [{
    `mtf-overlap-collectives` splits a collective into its start (the
    collective op itself, whose results this op alone uses) and this wait:
    the results are the collective's `values`, ready from here on; `kept`
    lists the collective's inputs, so the memory plan keeps them, like the
    results, from the start to the wait. The ops between the two touch
    neither (the pass's rule; the `.mprog` loader checks it again): the
    collective runs beside them (docs/mprog.md#overlapped-collectives).

    ```mlir
    %s = shard.all_reduce %x on @mesh mesh_axes = [0] : tensor<4xf32> -> tensor<4xf32>
    %y = mtf.einsum ...
    %r = mtf.wait %s keep(%x : tensor<4xf32>) : tensor<4xf32>
    ```

    A wait with `carried = N`, in a loop body, completes its collective in
    the next iteration instead, before the op of the body whose
    `mtf.resumes` lists N (the last iteration's when the loop ends): the
    collective runs beside the rest of its iteration and the next one's ops
    before that op, which touch none of its buffers either. Its results are
    yielded as stacked values only (each iteration's own slice), so nothing
    in the body reads them; the values are the same
    (docs/mprog.md#collectives-carried-across-iterations).
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$values,
                       Variadic<AnyRankedTensor>:$kept,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$carried);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $values `keep` `(` ($kept^ `:` type($kept))? `)` attr-dict `:`
    type($values)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The collective this op completes (the one that defines `values`).
    ::mlir::Operation *getStart() { return getValues().front().getDefiningOp(); }
    /// The wait that completes `op`, where `op` is a started collective.
    static WaitOp of(::mlir::Operation *op);
    /// `value`, or where a wait defines it, the collective's result it
    /// stands for (its blocks, dims and buffer).
    static ::mlir::Value throughWait(::mlir::Value value);
    /// Whether the results, through any chain of views, are only yielded
    /// as stacked values of the loop whose body holds this op (what a
    /// carried wait needs: nothing in the body reads them).
    bool resultsOnlyStacked();
    /// Where a carried wait completes its collective of the iteration
    /// before: the op of its block whose `mtf.resumes` lists its number;
    /// null for a wait that is not carried.
    ::mlir::Operation *getResumePoint();
    /// The carried waits (mtf.wait ops) whose collectives complete before
    /// `op` (those its `mtf.resumes` lists), in its block.
    static ::llvm::SmallVector<::mlir::Operation *>
    resumedAt(::mlir::Operation *op);
  }];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::refuse("belongs to local programs only");
    }
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Mtf_UnaryFloatOp<string mnemonic, string what,
                       string rule = "PartitionRule::parallel()",
                       list<Trait> traits = []>
    : Mtf_Op<mnemonic, !listconcat([Mtf_FollowsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, DeclareOpInterfaceMethods<Mtf_FusibleOpInterface>,
    Mtf_UnaryElementwise, Pure,
    SameOperandsAndResultType], traits)> {
  let summary = "elementwise " # what;
  let description = [{
    ```mlir
    %y = mtf.}] # mnemonic # [{ %x : !mtf.tensor<[batch=8, hidden=16], f32>
    ```
  }];
  let arguments = (ins Mtf_FloatTensor:$input);
  let results = (outs Mtf_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return }] # rule # [{;
    }
    std::optional<::meshc::runtime::OpKind> $cppClass::getStepKind() {
      return ::meshc::runtime::OpKind::Unary;
    }
    ::mlir::LogicalResult $cppClass::writeSteps(StepWriter &writer) {
      return writeUnaryStep(*this, writer);
    }
    int64_t $cppClass::writeFusedInstructions(FusedProgramBuilder &program) {
      return program.add(getOperation(), getOperationName().drop_front(4));
    }
  }];
}

def Mtf_ReluOp : Mtf_UnaryFloatOp<"relu", "max(x, 0)">;
def Mtf_GeluOp : Mtf_UnaryFloatOp<"gelu", "Gaussian error linear unit (tanh approximation)">;
def Mtf_SiluOp : Mtf_UnaryFloatOp<"silu", "x * sigmoid(x) (SiLU, swish)">;
def Mtf_SigmoidOp : Mtf_UnaryFloatOp<"sigmoid", "logistic function 1 / (1 + exp(-x))">;
def Mtf_ExpOp : Mtf_UnaryFloatOp<"exp", "exponential">;
def Mtf_LogOp : Mtf_UnaryFloatOp<"log", "natural logarithm">;
def Mtf_TanhOp : Mtf_UnaryFloatOp<"tanh", "hyperbolic tangent">;
def Mtf_SqrtOp : Mtf_UnaryFloatOp<"sqrt", "square root">;
def Mtf_RsqrtOp : Mtf_UnaryFloatOp<"rsqrt", "reciprocal square root">;
def Mtf_NegateOp : Mtf_UnaryFloatOp<"negate", "negation">;

def Mtf_PositiveOp : Mtf_UnaryFloatOp<"positive", "step function: 1 where x > 0, else 0",
    "PartitionRule::parallel()", [Mtf_StopsGradient]>;
def Mtf_GeluGradOp : Mtf_UnaryFloatOp<"gelu_grad", "derivative of gelu (tanh approximation)">;

def Mtf_LocalGradOp : Mtf_Op<"local_grad", [Mtf_FollowsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure, SameOperandsAndResultType]> {
  let summary = "a parameter's gradient under local SGD";
  let description = [{
    The identity on the global program. Partitioned, the gradient is not
    all-reduced over the data-parallel mesh axes (those splitting `batch`):
    each replica keeps the mean gradient of its own examples, as in
    SparkNet's local SGD, and parameters are averaged every few steps.

    ```mlir
    %g = mtf.local_grad %dw : !mtf.tensor<[io=4, hidden=16], f32>
    ```
  }];
  let arguments = (ins Mtf_FloatTensor:$input);
  let results = (outs Mtf_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::localGrad();
    }
  }];
}

def Mtf_CastOp : Mtf_Op<"cast", [Mtf_KeepsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, DeclareOpInterfaceMethods<Mtf_FusibleOpInterface>, Pure]> {
  let summary = "converts the element type, keeping the dimensions";
  let description = [{
    Between float types it may stand in an `mtf.fused` body (mtf-fuse):
    the value passes unchanged and is rounded to a 16-bit result type as
    the cast step would store it.


    ```mlir
    %y = mtf.cast %x : !mtf.tensor<[batch=8], f32> -> !mtf.tensor<[batch=8], bf16>
    ```
  }];
  let arguments = (ins Mtf_AnyTensor:$input);
  let results = (outs Mtf_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let builders = [OpBuilder<(ins "::mlir::Value":$input, "::mlir::Type":$elementType), [{
    auto type = ::llvm::dyn_cast<TensorType>(input.getType());
    build($_builder, $_state,
          type ? type.withElementType(elementType) : TensorType(), input);
  }]>];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::parallel();
    }
  }];
}

class Mtf_BinaryOp<string mnemonic, string what, string fn, string rule = "PartitionRule::parallel()"> : Mtf_Op<mnemonic, [Mtf_FollowsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, DeclareOpInterfaceMethods<Mtf_FusibleOpInterface>,
    DeclareOpInterfaceMethods<InferTypeOpInterface>, Pure]> {
  let summary = "elementwise " # what # " with broadcasting by dimension name";
  let description = [{
    The result has every dimension of either operand (a dimension present in
    both must have one size); an operand lacking a dimension is repeated
    along it. Element types must match.

    ```mlir
    %y = mtf.}] # mnemonic # [{ %a, %b : !mtf.tensor<[batch=8, d=4], f32>, !mtf.tensor<[d=4], f32> -> !mtf.tensor<[batch=8, d=4], f32>
    ```
  }];
  let arguments = (ins Mtf_AnyTensor:$lhs, Mtf_AnyTensor:$rhs);
  let results = (outs Mtf_AnyTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Broadcasting fixes the result's dims, not their order.
    static bool isCompatibleReturnTypes(::mlir::TypeRange lhs,
                                        ::mlir::TypeRange rhs);
    /// The function of the binary step that computes it.
    static ::meshc::runtime::BinaryFn getBinaryFn() {
      return ::meshc::runtime::BinaryFn::}] # fn # [{;
    }
  }];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return }] # rule # [{;
    }
    std::optional<::meshc::runtime::OpKind> $cppClass::getStepKind() {
      return ::meshc::runtime::OpKind::Binary;
    }
    ::mlir::LogicalResult $cppClass::writeSteps(StepWriter &writer) {
      return writeBinaryStep(*this, getBinaryFn(), writer);
    }
    int64_t $cppClass::writeFusedInstructions(FusedProgramBuilder &program) {
      return program.add(getOperation(), ::meshc::runtime::binaryFnName(getBinaryFn()));
    }
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, ::std::optional<::mlir::Location>,
        ::mlir::ValueRange operands, ::mlir::DictionaryAttr,
        ::mlir::OpaqueProperties, ::mlir::RegionRange,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return inferBroadcastType(operands, ::mlir::Type(), inferred);
    }
    bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange lhs,
                                            ::mlir::TypeRange rhs) {
      return sameDimsAnyOrder(lhs, rhs);
    }
  }];
}

def Mtf_AddOp : Mtf_BinaryOp<"add", "addition", "Add", "PartitionRule::linearParallel()">;
def Mtf_SubOp : Mtf_BinaryOp<"sub", "subtraction", "Sub", "PartitionRule::linearParallel()">;
def Mtf_MulOp : Mtf_BinaryOp<"mul", "multiplication", "Mul">;
def Mtf_DivOp : Mtf_BinaryOp<"div", "division", "Div">;
def Mtf_MaxOp : Mtf_BinaryOp<"max", "maximum", "Max">;
def Mtf_MinOp : Mtf_BinaryOp<"min", "minimum", "Min">;

def Mtf_EqualOp : Mtf_Op<"equal", [Mtf_KeepsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, DeclareOpInterfaceMethods<InferTypeOpInterface>,
    Mtf_StopsGradient, Pure]> {
  let summary = "elementwise equality as 1.0 or 0.0, with broadcasting by name";
  let description = [{
    Operands share an element type (float or integer); the result is float
    and has every dimension of either operand.

    ```mlir
    %c = mtf.equal %a, %b : !mtf.tensor<[batch=8], i32>, !mtf.tensor<[batch=8], i32> -> !mtf.tensor<[batch=8], f32>
    ```
  }];
  let arguments = (ins Mtf_AnyTensor:$lhs, Mtf_AnyTensor:$rhs);
  let results = (outs Mtf_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Broadcasting fixes the result's dims, not their order.
    static bool isCompatibleReturnTypes(::mlir::TypeRange lhs,
                                        ::mlir::TypeRange rhs);
    /// The function of the binary step that computes it.
    static ::meshc::runtime::BinaryFn getBinaryFn() {
      return ::meshc::runtime::BinaryFn::Eq;
    }
  }];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::parallel();
    }
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, ::std::optional<::mlir::Location>,
        ::mlir::ValueRange operands, ::mlir::DictionaryAttr,
        ::mlir::OpaqueProperties, ::mlir::RegionRange,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return inferBroadcastType(operands, ::mlir::Float32Type::get(context),
                                inferred);
    }
    bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange lhs,
                                            ::mlir::TypeRange rhs) {
      return sameDimsAnyOrder(lhs, rhs);
    }
  }];
}

def Mtf_LessOp : Mtf_Op<"less", [Mtf_KeepsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, DeclareOpInterfaceMethods<InferTypeOpInterface>,
    Mtf_StopsGradient, Pure]> {
  let summary = "elementwise lhs < rhs as 1.0 or 0.0, with broadcasting by name";
  let description = [{
    Like `mtf.equal`: operands share an element type (float or integer); the
    result is float and has every dimension of either operand. With
    `mtf.range` it builds masks: `less(range(seq), range(memory))` is 1 where
    a key lies in a query's future.

    ```mlir
    %c = mtf.less %a, %b : !mtf.tensor<[seq=4], f32>, !mtf.tensor<[memory=4], f32> -> !mtf.tensor<[seq=4, memory=4], f32>
    ```
  }];
  let arguments = (ins Mtf_AnyTensor:$lhs, Mtf_AnyTensor:$rhs);
  let results = (outs Mtf_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Broadcasting fixes the result's dims, not their order.
    static bool isCompatibleReturnTypes(::mlir::TypeRange lhs,
                                        ::mlir::TypeRange rhs);
    /// The function of the binary step that computes it.
    static ::meshc::runtime::BinaryFn getBinaryFn() {
      return ::meshc::runtime::BinaryFn::Lt;
    }
  }];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::parallel();
    }
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, ::std::optional<::mlir::Location>,
        ::mlir::ValueRange operands, ::mlir::DictionaryAttr,
        ::mlir::OpaqueProperties, ::mlir::RegionRange,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return inferBroadcastType(operands, ::mlir::Float32Type::get(context),
                                inferred);
    }
    bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange lhs,
                                            ::mlir::TypeRange rhs) {
      return sameDimsAnyOrder(lhs, rhs);
    }
  }];
}

def Mtf_RangeOp : Mtf_Op<"range", [Mtf_KeepsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "the positions 0, 1, ..., n-1 along the result's one dimension";
  let description = [{
    The result has exactly one dimension; element `i` is `i` (float or
    integer). Every layout gives each device the positions of its block.

    ```mlir
    %r = mtf.range : !mtf.tensor<[seq=16], f32>
    ```
  }];
  let results = (outs Mtf_AnyTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$dim, "int64_t":$size), [{
    build($_builder, $_state,
          inferResultType($_builder.getContext(), dim, size));
  }]>];
  let extraClassDeclaration = [{
    /// The result type: [dim=size] in f32.
    static TensorType inferResultType(::mlir::MLIRContext *context,
                                      ::llvm::StringRef dim, int64_t size);
  }];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::whole(
          {::llvm::cast<TensorType>(getType()).getDims()[0].name.getValue()});
    }
  }];
}

def Mtf_CumsumOp : Mtf_Op<"cumsum", [Mtf_FollowsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure, SameOperandsAndResultType]> {
  let summary = "inclusive running sum along one named dimension";
  let description = [{
    Element `i` along `dim` is the sum of elements `0..i` (with `reverse`:
    of elements `i..n-1`, which is the gradient of the forward sum).
    Mixture-of-experts routing uses it to number the tokens sent to each
    expert.

    ```mlir
    %c = mtf.cumsum %x over "tokens" : !mtf.tensor<[tokens=8, experts=4], f32>
    %r = mtf.cumsum %x over "tokens" reverse : !mtf.tensor<[tokens=8, experts=4], f32>
    ```
  }];
  let arguments = (ins Mtf_FloatTensor:$input, StrAttr:$dim, UnitAttr:$reverse);
  let results = (outs Mtf_FloatTensor:$result);
  let assemblyFormat = "$input `over` $dim (`reverse` $reverse^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::whole({getDim()});
    }
  }];
}

def Mtf_WindowOp : Mtf_Op<"window", [Mtf_FollowsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "a window of one dimension, moved by an offset, zeros outside";
  let description = [{
    The result is the operand with dimension `from` replaced by `to`, and
    `result[.., j, ..] = input[.., j + offset, ..]` where
    `0 <= j + offset < size(from)`, else 0. With `to` shorter than `from` it
    is a slice (`offset` its start), longer a pad (`-offset` zeros before),
    the same dimension a shift (`offset = -k` moves elements k places up).
    The result may hold its dims in another order than the operand (a
    window that also transposes: a pipeline's microbatches as ticks, the
    ticks first). It is its own gradient: `window(g, to -> from, -offset)`
    of the operand's type.

    ```mlir
    %s = mtf.window %x from "seq" to "half" offset 4 : !mtf.tensor<[b=2, seq=8], f32> -> !mtf.tensor<[b=2, half=4], f32>
    ```
  }];
  let arguments = (ins Mtf_FloatTensor:$input, StrAttr:$from, StrAttr:$to,
                       I64Attr:$offset);
  let results = (outs Mtf_FloatTensor:$result);
  let assemblyFormat = "$input `from` $from `to` $to `offset` $offset attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$input, "::llvm::StringRef":$from,
                                 "::llvm::StringRef":$to, "int64_t":$toSize,
                                 "int64_t":$offset), [{
    build($_builder, $_state, inferResultType(input, from, to, toSize), input,
          from, to, offset);
  }]>];
  let extraClassDeclaration = [{
    /// The result type: the input's with dim `from` replaced in place by
    /// `to` of size `toSize`; null when the input is no tensor with `from`.
    static TensorType inferResultType(::mlir::Value input, ::llvm::StringRef from,
                                      ::llvm::StringRef to, int64_t toSize);
  }];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::whole({getFrom(), getTo()});
    }
  }];
}

def Mtf_TopKOp : Mtf_Op<"top_k", [Mtf_FollowsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Mtf_StopsGradient, Pure, SameOperandsAndResultType]> {
  let summary = "1.0 at the k largest elements along one dimension, else 0.0";
  let description = [{
    Per row along `dim`, the `k` largest elements (the first of equal ones,
    NaN never) get 1.0, the others 0.0: the routing mask of top-k
    mixture-of-experts (`gates * top_k(gates, experts, 2)`). Piecewise
    constant: no gradient flows through it.

    ```mlir
    %m = mtf.top_k %g over "experts" k 2 : !mtf.tensor<[tokens=8, experts=4], f32>
    ```
  }];
  let arguments = (ins Mtf_FloatTensor:$input, StrAttr:$dim, I64Attr:$k);
  let results = (outs Mtf_FloatTensor:$result);
  let assemblyFormat = "$input `over` $dim `k` $k attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::whole({getDim()});
    }
  }];
}

def Mtf_OneHotOp : Mtf_Op<"one_hot", [Mtf_KeepsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Mtf_StopsGradient, Pure]> {
  let summary = "1.0 at each index along a new dimension, 0.0 elsewhere";
  let description = [{
    The result has the indices' dimensions plus `dim`; an embedding lookup
    is `einsum(one_hot(ids), table)`. Every layout gives each device its
    block of `dim`: the `.mprog` step knows the block's first class.

    ```mlir
    %o = mtf.one_hot %ids over "vocab" : !mtf.tensor<[batch=8], i32> -> !mtf.tensor<[batch=8, vocab=100], f32>
    ```
  }];
  let arguments = (ins Mtf_IntTensor:$indices, StrAttr:$dim);
  let results = (outs Mtf_FloatTensor:$result);
  let assemblyFormat = "$indices `over` $dim attr-dict `:` type($indices) `->` type($result)";
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$indices, "::llvm::StringRef":$dim,
                                 "int64_t":$size), [{
    build($_builder, $_state, inferResultType(indices, dim, size), indices, dim);
  }]>];
  let extraClassDeclaration = [{
    /// The result type: the indices' dims, then [dim=size], in f32; null
    /// when the indices are no tensor.
    static TensorType inferResultType(::mlir::Value indices,
                                      ::llvm::StringRef dim, int64_t size);
  }];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::parallel();
    }
  }];
}

def Mtf_ArgmaxOp : Mtf_Op<"argmax", [Mtf_KeepsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_DecomposeOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Mtf_StopsGradient, Pure]> {
  let summary = "index of the first maximum along one dimension";
  let description = [{
    ```mlir
    %i = mtf.argmax %logits over "classes" : !mtf.tensor<[batch=8, classes=10], f32> -> !mtf.tensor<[batch=8], i32>
    ```
  }];
  let arguments = (ins Mtf_FloatTensor:$input, StrAttr:$dim);
  let results = (outs Mtf_IntTensor:$result);
  let assemblyFormat = "$input `over` $dim attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$input, "::llvm::StringRef":$dim), [{
    TensorType type = reducedType(input, dim);
    build($_builder, $_state,
          type ? type.withElementType($_builder.getI32Type()) : TensorType(),
          input, dim);
  }]>];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::whole({getDim()});
    }
  }];
}

//===----------------------------------------------------------------------===//
// Reductions and normalisation
//===----------------------------------------------------------------------===//

class Mtf_ReduceOp<string mnemonic, string what, string reduction, string rule> : Mtf_Op<mnemonic, [Mtf_FullPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, DeclareOpInterfaceMethods<Mtf_FusibleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_ReductionOpInterface>, Pure]> {
  let summary = what # " over the dimensions the result drops";
  let description = [{
    The result's dimensions are a subset of the operand's, in the operand's
    order; the others are reduced.

    ```mlir
    %s = mtf.}] # mnemonic # [{ %x : !mtf.tensor<[batch=8, d=4], f32> -> !mtf.tensor<[batch=8], f32>
    ```
  }];
  let arguments = (ins Mtf_FloatTensor:$input);
  let results = (outs Mtf_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$input,
                                 "::llvm::ArrayRef<::llvm::StringRef>":$reduced), [{
    build($_builder, $_state, inferResultType(input, reduced), input);
  }]>];
  let extraClassDeclaration = [{
    /// The result type: the input's dims but those `reduced` names, in the
    /// input's order (reducedType); null when the input is no tensor.
    static TensorType inferResultType(::mlir::Value input,
                                      ::llvm::ArrayRef<::llvm::StringRef> reduced) {
      return reducedType(input, reduced);
    }
  }];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return }] # rule # [{;
    }
    ::mlir::mtf::Reduction $cppClass::getReduction() {
      return ::mlir::mtf::Reduction::}] # reduction # [{;
    }
    std::optional<::meshc::runtime::OpKind> $cppClass::getStepKind() {
      return ::meshc::runtime::OpKind::Reduce;
    }
    ::mlir::LogicalResult $cppClass::writeSteps(StepWriter &writer) {
      return writeReduceSteps(*this, writer);
    }
    int64_t $cppClass::writeFusedInstructions(FusedProgramBuilder &program) {
      return writeReduceInstructions(*this, program);
    }
  }];
}

def Mtf_ReduceSumOp : Mtf_ReduceOp<"reduce_sum", "sum", "Sum",
    "PartitionRule::contraction(*this, DimRole::Summed)">;
def Mtf_ReduceMeanOp : Mtf_ReduceOp<"reduce_mean", "mean", "Mean",
    "PartitionRule::contraction(*this, DimRole::Summed, /*mean=*/true)">;
def Mtf_ReduceMaxOp : Mtf_ReduceOp<"reduce_max", "maximum", "Max",
    "PartitionRule::contraction(*this, DimRole::Maxed)">;

def Mtf_SoftmaxOp : Mtf_Op<"softmax", [Mtf_FollowsPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_DecomposeOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure, SameOperandsAndResultType]> {
  let summary = "softmax along one named dimension";
  let description = [{
    ```mlir
    %p = mtf.softmax %x over "classes" : !mtf.tensor<[batch=8, classes=10], f32>
    ```
  }];
  let arguments = (ins Mtf_FloatTensor:$input, StrAttr:$dim);
  let results = (outs Mtf_FloatTensor:$result);
  let assemblyFormat = "$input `over` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::whole({getDim()});
    }
  }];
}

def Mtf_LogSumExpOp : Mtf_Op<"logsumexp", [Mtf_FullPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_DecomposeOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "log of the sum of exponentials along one named dimension";
  let description = [{
    `log(sum_d exp(x))`, computed stably (the row maximum is subtracted
    first); the result has the operand's dimensions except `dim`, in order.
    Its gradient is `g * softmax(x, dim)`.

    ```mlir
    %l = mtf.logsumexp %x over "vocab" : !mtf.tensor<[batch=8, vocab=64], f32> -> !mtf.tensor<[batch=8], f32>
    ```
  }];
  let arguments = (ins Mtf_FloatTensor:$input, StrAttr:$dim);
  let results = (outs Mtf_FloatTensor:$result);
  let assemblyFormat = "$input `over` $dim attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$input, "::llvm::StringRef":$dim), [{
    build($_builder, $_state, reducedType(input, dim), input, dim);
  }]>];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::whole({getDim()});
    }
  }];
}

def Mtf_SoftmaxCrossEntropyOp : Mtf_Op<"softmax_cross_entropy", [Mtf_FullPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_DecomposeOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "cross-entropy of softmax(logits) against integer labels";
  let description = [{
    `labels` has the dimensions of `logits` except the class dimension `dim`
    and holds class indices; the result has the labels' dimensions.

    ```mlir
    %l = mtf.softmax_cross_entropy %logits, %labels over "classes"
        : !mtf.tensor<[batch=8, classes=10], f32>, !mtf.tensor<[batch=8], i32>
        -> !mtf.tensor<[batch=8], f32>
    ```
  }];
  let arguments = (ins Mtf_FloatTensor:$logits, Mtf_IntTensor:$labels, StrAttr:$dim);
  let results = (outs Mtf_FloatTensor:$result);
  let assemblyFormat = "$logits `,` $labels `over` $dim attr-dict `:` type($logits) `,` type($labels) `->` type($result)";
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$logits, "::mlir::Value":$labels,
                                 "::llvm::StringRef":$dim), [{
    auto logitsType = ::llvm::dyn_cast<TensorType>(logits.getType());
    auto labelsType = ::llvm::dyn_cast<TensorType>(labels.getType());
    build($_builder, $_state,
          logitsType && labelsType
              ? labelsType.withElementType(logitsType.getElementType())
              : TensorType(),
          logits, labels, dim);
  }]>];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::whole({getDim()});
    }
  }];
}

//===----------------------------------------------------------------------===//
// Fused attention
//===----------------------------------------------------------------------===//

def Mtf_AttentionOp : Mtf_Op<"attention", [Mtf_NoPrecisionRule, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "softmax attention that never stores the scores";
  let description = [{
    `result = einsum(softmax(scale * einsum(query, key) + bias, key_dim), value)`
    in one step (FlashAttention): the scores `[..., key_dim]` are computed
    block by block and never stored. `mtf-fuse-attention` makes it from
    that pattern (docs/spmd.md#fused-attention).

    The roles of the dims: `head_dims` are summed in `query . key`; the
    group dims are the other dims of `key` besides `key_dim` (batch, heads);
    the query dims the other dims of `query` (positions); the value dims the
    other dims of `value` besides the group dims and `key_dim`. The result
    has the group, query and value dims; `logsumexp` (f32) the group and
    query dims: `log sum_key exp(scores)`, which the gradient reads. The
    optional `bias` has some of the group, query and key dims (a mask).

    ```mlir
    %o, %l = mtf.attention %q, %k, %v bias %mask over "memory" heads ["d_k"]
        scale 0.125 : !mtf.tensor<[batch=2, seq=8, heads=4, d_k=16], f32>,
        !mtf.tensor<[batch=2, memory=8, heads=4, d_k=16], f32>,
        !mtf.tensor<[batch=2, memory=8, heads=4, d_k=16], f32>,
        !mtf.tensor<[seq=8, memory=8], f32>
        -> !mtf.tensor<[batch=2, seq=8, heads=4, d_k=16], f32>,
           !mtf.tensor<[batch=2, heads=4, seq=8], f32>
    ```
  }];
  let arguments = (ins Mtf_FloatTensor:$query, Mtf_FloatTensor:$key,
                       Mtf_FloatTensor:$value, Optional<Mtf_FloatTensor>:$bias,
                       StrAttr:$key_dim, StrArrayAttr:$head_dims,
                       F64Attr:$scale);
  let results = (outs Mtf_FloatTensor:$result, Mtf_FloatTensor:$logsumexp);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`bias` $bias^)? `over` $key_dim `heads`
    $head_dims `scale` $scale attr-dict `:` type($query) `,` type($key) `,`
    type($value) (`,` type($bias)^)? `->` type($result) `,` type($logsumexp)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::attention();
    }
  }];
}

def Mtf_AttentionGradOp : Mtf_Op<"attention_grad", [Mtf_NoPrecisionRule, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, Pure]> {
  let summary = "the gradients of mtf.attention's query, key and value";
  let description = [{
    Given the forward op's operands, its `result` and `logsumexp`, and
    `grad`, the gradient of the loss with respect to its result: the
    gradients of query, key and value (FlashAttention-2's backward, the
    probabilities recomputed block by block from `logsumexp`). The bias gets
    none (mtf-fuse-attention fuses only a bias no parameter reaches).

    ```mlir
    %dq, %dk, %dv = mtf.attention_grad %q, %k, %v, %o, %l, %g bias %mask
        over "memory" heads ["d_k"] scale 0.125 : ...
    ```
  }];
  let arguments = (ins Mtf_FloatTensor:$query, Mtf_FloatTensor:$key,
                       Mtf_FloatTensor:$value, Mtf_FloatTensor:$result,
                       Mtf_FloatTensor:$logsumexp, Mtf_FloatTensor:$grad,
                       Optional<Mtf_FloatTensor>:$bias, StrAttr:$key_dim,
                       StrArrayAttr:$head_dims, F64Attr:$scale);
  let results = (outs Mtf_FloatTensor:$query_grad, Mtf_FloatTensor:$key_grad,
                      Mtf_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $result `,` $logsumexp `,` $grad
    (`bias` $bias^)? `over` $key_dim `heads` $head_dims `scale` $scale
    attr-dict `:` type($query) `,` type($key) `,` type($value) `,`
    type($result) `,` type($logsumexp) `,` type($grad) (`,` type($bias)^)?
    `->` type($query_grad) `,` type($key_grad) `,` type($value_grad)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::attention();
    }
  }];
}

//===----------------------------------------------------------------------===//
// Sinks
//===----------------------------------------------------------------------===//

def Mtf_OutputOp : Mtf_Op<"output", [Mtf_PrecisionSink, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>]> {
  let summary = "makes a tensor a named result of the program";
  let description = [{
    ```mlir
    mtf.output "loss" %loss : !mtf.tensor<[], f32>
    ```
  }];
  let arguments = (ins StrAttr:$name, Mtf_AnyTensor:$value);
  let assemblyFormat = "$name $value attr-dict `:` type($value)";
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::output();
    }
  }];
}

def Mtf_AssignOp : Mtf_Op<"assign", [Mtf_NoPrecisionRule, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>]> {
  let summary = "the value a parameter or slot holds in the next step";
  let description = [{
    Written by the optimizer at the end of the step; reads of the
    parameter in this step still see the old value.

    ```mlir
    mtf.assign "w1" %w1_new : !mtf.tensor<[io=4, hidden=16], f32>
    ```
  }];
  let arguments = (ins StrAttr:$name, Mtf_FloatTensor:$value);
  let assemblyFormat = "$name $value attr-dict `:` type($value)";
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::assign(getName());
    }
  }];
}

def Mtf_TrainOp : Mtf_Op<"train", [Mtf_PrecisionSink, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>]> {
  let summary = "asks for the program to minimise a scalar loss";
  let description = [{
    Records which scalar to minimise and with which optimizer and
    hyper-parameters; at most one per program. Known optimizers and their
    hyper-parameters: `sgd` (lr), `momentum` (lr, momentum), `adam` (lr,
    beta1, beta2, eps), `adamw` (lr, beta1, beta2, eps, weight_decay); every
    optimizer also takes `clip_norm`, `warmup_steps` and `decay_steps`.

    ```mlir
    mtf.train %loss with "adam" {lr = 1.000000e-03 : f64} : !mtf.tensor<[], f32>
    ```
  }];
  let arguments = (ins Mtf_FloatTensor:$loss, StrAttr:$optimizer,
                       DictionaryAttr:$hyperparams);
  let assemblyFormat = "$loss `with` $optimizer $hyperparams attr-dict `:` type($loss)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::refuse("must be turned into the backward pass and the update by mtf-autodiff before partitioning");
    }
  }];
}

//===----------------------------------------------------------------------===//
// Fusion (local programs only)
//===----------------------------------------------------------------------===//

def Mtf_FusedOp : Mtf_Op<"fused", [Mtf_NoPrecisionRule, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">, Pure]> {
  let summary = "a group of elementwise ops and the reductions they feed, run as one step";
  let description = [{
    Made by `mtf-fuse` in a local program: its body (one block whose
    arguments are the operands) holds f32 elementwise ops (the unary
    functions, add, sub, mul, div, max, min), scalar constants and
    reductions (reduce_sum, reduce_mean, reduce_max); `mtf.yield` names the
    values the rest of the program reads, which are the results. Every body
    value has the group's dims (its iteration space) or, when the body
    reduces, those dims without the reduced ones; every reduction reduces
    the same dims. The body's intermediates get no buffer: the runtime
    evaluates the group in one pass over memory (one kernel on a GPU).

    ```mlir
    %r = mtf.fused (%x, %y) : (!mtf.tensor<[batch=8, d=4], f32>, !mtf.tensor<[d=4], f32>)
        -> !mtf.tensor<[batch=8, d=4], f32> {
    ^bb0(%a: !mtf.tensor<[batch=8, d=4], f32>, %b: !mtf.tensor<[d=4], f32>):
      %g = mtf.gelu %a : !mtf.tensor<[batch=8, d=4], f32>
      %s = mtf.add %g, %b : !mtf.tensor<[batch=8, d=4], f32>, !mtf.tensor<[d=4], f32> -> !mtf.tensor<[batch=8, d=4], f32>
      mtf.yield %s : !mtf.tensor<[batch=8, d=4], f32>
    }
    ```
  }];
  let arguments = (ins Variadic<Mtf_FloatTensor>:$inputs);
  let results = (outs Variadic<Mtf_FloatTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::refuse("is made by mtf-fuse in local programs, after partitioning");
    }
  }];
}

//===----------------------------------------------------------------------===//
// Loops
//===----------------------------------------------------------------------===//

def Mtf_LoopOp : Mtf_Op<"loop", [Mtf_RegionPrecision, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">, AttrSizedOperandSegments,
    AttrSizedResultSegments, RecursiveMemoryEffects]> {
  let summary = "a layer compiled once: its body run once per position of a named dim";
  let description = [{
    `repeat layers block(x, extra...)`: the body (one block) runs `count`
    times, once per position of the named dim `dim` (the layer dim). Its
    operands come in three kinds, and so do the body's arguments, in this
    order:

    - `carry`: the values passed from one iteration to the next (the
      body's first arguments, then the first values it yields); the loop's
      first results are their values after the last iteration;
    - `stacked`: tensors stacked along `dim`, which must be their first dim
      (`count` long): the body sees iteration i's slice, without `dim` (a
      layer's weights);
    - `invariant`: the same value in every iteration (a mask).

    With `reverse` the iterations run from the last position down to the
    first (a backward pass through the layers); iteration i still sees
    slice i. The values the body yields after the carried ones are stacked along
    `dim` into the loop's other results (iteration i's value at position i
    of a new first dim). The body is isolated from above: everything it
    reads is an operand; no body value has `dim`.

    ```mlir
    %y = mtf.loop "layers" 2 carry(%x : !mtf.tensor<[b=8, d=4], f32>)
        stacked(%w : !mtf.tensor<[layers=2, d=4, e=4], f32>)
        -> (!mtf.tensor<[b=8, d=4], f32>) {
    ^bb0(%h: !mtf.tensor<[b=8, d=4], f32>, %wi: !mtf.tensor<[d=4, e=4], f32>):
      %t = mtf.einsum %h, %wi : !mtf.tensor<[b=8, d=4], f32>, !mtf.tensor<[d=4, e=4], f32> -> !mtf.tensor<[b=8, e=4], f32>
      %n = mtf.rename %t "e" to "d" : !mtf.tensor<[b=8, e=4], f32> -> !mtf.tensor<[b=8, d=4], f32>
      mtf.yield %n : !mtf.tensor<[b=8, d=4], f32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$dim, ConfinedAttr<I64Attr, [IntPositive]>:$count,
                       Variadic<Mtf_AnyTensor>:$carried,
                       Variadic<Mtf_AnyTensor>:$stacked,
                       Variadic<Mtf_AnyTensor>:$invariant,
                       UnitAttr:$reverse);
  let results = (outs Variadic<Mtf_AnyTensor>:$finals,
                      Variadic<Mtf_AnyTensor>:$stackedResults);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $dim $count (`reverse` $reverse^)?
    (`carry` `(` $carried^ `:` type($carried) `)`)?
    (`stacked` `(` $stacked^ `:` type($stacked) `)`)?
    (`invariant` `(` $invariant^ `:` type($invariant) `)`)?
    `->` `(` type($finals) `)` (`stacked` `(` type($stackedResults)^ `)`)?
    attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    /// The body's arguments for the carried, stacked and invariant operands.
    ::mlir::Block::BlockArgListType getCarriedArgs() {
      return getBodyBlock().getArguments().take_front(getCarried().size());
    }
    ::mlir::Block::BlockArgListType getStackedArgs() {
      return getBodyBlock().getArguments().slice(getCarried().size(),
                                                 getStacked().size());
    }
    ::mlir::Block::BlockArgListType getInvariantArgs() {
      return getBodyBlock().getArguments().drop_front(getCarried().size() +
                                                      getStacked().size());
    }
    /// The type of one iteration's slice of a value of type `stacked`
    /// stacked along `dim` (its first dim), or null when it is not.
    static TensorType sliceType(::mlir::Type stacked, ::llvm::StringRef dim,
                                int64_t count);
    /// `slice` stacked along `dim`: `dim`=`count` first, then its dims.
    static TensorType stackedType(TensorType slice, ::llvm::StringRef dim,
                                  int64_t count);
    /// This loop rebuilt with `carried` carried after its own carried
    /// operands (finals of their types after its own), `stacked` stacked
    /// after its own and more stacked results of `stackedResultTypes`
    /// after its own: the body (whose arguments and yield the caller made)
    /// moves over, its attributes too, every use of its results goes to
    /// the new loop's, and it is erased. (The lowering passes that carry,
    /// stack or keep more per layer.)
    LoopOp extend(::mlir::ValueRange carried, ::mlir::ValueRange stacked,
                  ::mlir::TypeRange stackedResultTypes);
  }];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::loop();
    }
  }];
}

def Mtf_YieldOp : Mtf_Op<"yield", [Mtf_NoPrecisionRule, DeclareOpInterfaceMethods<Mtf_PartitionRuleOpInterface>,
    DeclareOpInterfaceMethods<Mtf_GradientOpInterface>, ParentOneOf<["FusedOp", "LoopOp"]>, Pure,
    Terminator]> {
  let summary = "the values of an mtf.fused or mtf.loop body that the program reads";
  let arguments = (ins Variadic<Mtf_AnyTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
  let extraClassDefinition = [{
    ::mlir::mtf::PartitionRule $cppClass::getPartitionRule() {
      return PartitionRule::refuse("ends an mtf.fused body");
    }
  }];
}

#endif // MESHC_DIALECT_MTFOPS_TD
