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
/// True when both ranges are one !mtf.tensor each with the same element type
/// and the same named dims and sizes, in any order.
bool sameDimsAnyOrder(TypeRange lhs, TypeRange rhs);

/// The `custom<Initializer>` directive of `mtf.param`: `normal(0.0, 0.05)`.
ParseResult parseInitializer(OpAsmParser &parser, InitAttr &init);
void printInitializer(OpAsmPrinter &printer, Operation *op, InitAttr init);
} // namespace mtf
} // namespace mlir

namespace mlir {
namespace mtf {
class OpEmitter;
class GradientSink;

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
/// Whether `op` may stand in an mtf.fused body: an f32 elementwise op (a
/// UnaryElementwise op, add, sub, mul, div, max, min), a constant or a
/// reduction (reduce_sum, reduce_mean, reduce_max).
bool isFusible(Operation *op);
} // namespace mtf
} // namespace mlir

#endif // MESHC_DIALECT_MTFDIALECT_H
