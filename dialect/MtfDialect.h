//===- MtfDialect.h - the mtf dialect ---------------------------*- C++ -*-===//
//
// Everything a user of the mtf dialect includes: the dialect, its types,
// attributes and operations.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_DIALECT_MTFDIALECT_H
#define MESHC_DIALECT_MTFDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/Hashing.h"

#include "dialect/PartitionRule.h"
#include "runtime/ElementFunctions.h"
#include "runtime/core/StepKinds.h"

namespace mlir {
namespace mtf {

/// One named dimension of a tensor (or one named axis of a mesh).
struct NamedDim {
  StringAttr name;
  int64_t size;
  bool operator==(const NamedDim &other) const {
    return name == other.name && size == other.size;
  }
};
inline llvm::hash_code hash_value(const NamedDim &dim) {
  return llvm::hash_combine(dim.name, dim.size);
}

/// One tensor dimension split over mesh axes (listed major to minor).
struct DimSplit {
  StringAttr dim;
  ArrayAttr axes; ///< StringAttrs naming mesh axes.
  bool operator==(const DimSplit &other) const {
    return dim == other.dim && axes == other.axes;
  }
};
inline llvm::hash_code hash_value(const DimSplit &split) {
  return llvm::hash_combine(split.dim, split.axes);
}

} // namespace mtf
} // namespace mlir

#include "dialect/MtfDialect.h.inc"
#include "dialect/MtfEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialect/MtfTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/MtfAttrs.h.inc"

namespace mlir {
namespace mtf {
/// The result type of name-based broadcasting (the binary ops, equal,
/// less): the dims of operand 0, then those of operand 1 it lacks, with
/// `elementType` (operand 0's when null). Fails unless both operands are
/// !mtf.tensor.
LogicalResult inferBroadcastType(ValueRange operands, Type elementType,
                                 SmallVectorImpl<Type> &inferred);
/// The result type of a reduction (reduce_sum, reduce_mean, reduce_max):
/// the dims of `input` but those `reduced` names, in order; null when
/// `input` is no !mtf.tensor (dialect/MtfResultTypes.cpp).
TensorType reducedType(Value input, ArrayRef<StringRef> reduced);
/// True when both ranges are one !mtf.tensor each with the same element type
/// and the same named dims and sizes, in any order.
bool sameDimsAnyOrder(TypeRange lhs, TypeRange rhs);

/// The roles of the dims of a fused attention (mtf.attention and its
/// gradient): `head` summed in query . key; `group` the other dims of key
/// besides `key` (batch, heads); `query` the other dims of the query
/// (positions); `value` the other dims of value. A value dim may share its
/// name with a head dim (the roles are per tensor).
struct AttentionRoles {
  SmallVector<NamedDim> group, query, head, value;
  NamedDim key;
};
/// The roles of `query`, `key` and `value` under `keyDim` and `headDims`;
/// fails with an error at `op` when the three do not fit the pattern.
FailureOr<AttentionRoles> attentionRoles(Operation *op, Type query, Type key,
                                         Type value, StringRef keyDim,
                                         ArrayRef<StringRef> headDims);
/// The roles of mtf.attention's or mtf.attention_grad's operands, from its
/// own key and head dims; fails with an error at `op` (any other op too).
FailureOr<AttentionRoles> attentionRolesOf(Operation *op);
/// The type of mtf.attention's logsumexp: the query's dims without the head
/// dims, in the query's order, f32.
TensorType attentionStatsType(Type query, ArrayRef<StringRef> headDims);

/// The `custom<Initializer>` directive of `mtf.param`: `normal(0.0, 0.05)`.
ParseResult parseInitializer(OpAsmParser &parser, InitAttr &init);
void printInitializer(OpAsmPrinter &printer, Operation *op, InitAttr init);
} // namespace mtf
} // namespace mlir

namespace mlir {
namespace mtf {
class OpEmitter;
class GradientSink;
class StepWriter;
class FusedProgramBuilder;

/// What a reduction op reduces with (ReductionOpInterface).
enum class Reduction { Sum, Mean, Max };

/// How mtf-precision (--precision=bf16) chooses an op's element types: the
/// op's Precision trait (Mtf_Precision in MtfInterfaces.td), one per op.
enum class PrecisionRule {
  /// As written: the results keep their types, operands are not cast.
  Keep,
  /// Float operands and results in the low precision (einsum).
  Low,
  /// Float operands and results in f32 (reductions, the loss).
  Full,
  /// The low precision when a float operand has it, else as written.
  Follow,
  /// A sink (output, train): float operands cast to f32.
  Sink,
  /// Never in a program mtf-precision sees (the container, local programs'
  /// ops, ops that later passes make): the pass fails at it.
  Refuse,
  /// A loop: its body is typed like a program, its arguments taking their
  /// operands' types and its results those of the values its body yields
  /// (a carried value cast back to its argument's type).
  Region,
};

/// The trait that gives an op its PrecisionRule.
template <PrecisionRule Rule> struct Precision {
  template <typename ConcreteType>
  class Impl : public OpTrait::TraitBase<ConcreteType, Impl> {};
};

/// The rules of the Precision traits `name` carries (exactly one for every
/// mtf op).
SmallVector<PrecisionRule, 1> precisionRulesOf(OperationName name);

/// A view: the op's result is its operand's data under another type or name
/// (to_tensor, from_tensor, rename); it becomes no step and shares its
/// operand's buffer.
template <typename ConcreteType>
class View : public OpTrait::TraitBase<ConcreteType, View> {};

/// A piecewise-constant op (a comparison, a mask, an index): mtf-autodiff
/// sends no gradient through it.
template <typename ConcreteType>
class StopsGradient : public OpTrait::TraitBase<ConcreteType, StopsGradient> {};

/// A float elementwise function of one tensor: the `.mprog` unary step runs
/// it, with the op's mnemonic as its `fn`.
template <typename ConcreteType>
class UnaryElementwise
    : public OpTrait::TraitBase<ConcreteType, UnaryElementwise> {};
} // namespace mtf
} // namespace mlir

#include "dialect/MtfInterfaces.h.inc"

#include "dialect/FusedProgram.h"
#include "dialect/StepWriter.h"

#define GET_OP_CLASSES
#include "dialect/MtfOps.h.inc"

namespace mlir {
namespace mtf {
/// Checks that `layout` splits only dimensions of `type` and, when `mesh` is
/// given, only over axes of `mesh`, into equal shards unless
/// `unequalBlocks` (allowsUnequalBlocks).
LogicalResult verifyLayout(function_ref<InFlightDiagnostic()> emitError,
                           TensorType type, LayoutAttr layout, MeshAttr mesh,
                           bool unequalBlocks = false);
/// Whether the program `op` is in (or is) was laid out with device weights
/// or --uneven, so that its splits may cut sizes their axes do not divide.
bool allowsUnequalBlocks(Operation *op);
/// The step kind `op` becomes (StepOpInterface); none when it becomes no
/// step of its own or states no steps.
std::optional<meshc::runtime::OpKind> stepKindOf(Operation *op);
/// The phase `op` runs in: its mtf.phase ("forward", "backward",
/// "update"), "forward" where it has none.
StringRef phaseOf(Operation *op);
/// Whether `op` may stand in an mtf.fused body: it has FusibleOpInterface
/// (an elementwise function, a constant, a reduction).
bool isFusible(Operation *op);
} // namespace mtf
} // namespace mlir

#endif // MESHC_DIALECT_MTFDIALECT_H
