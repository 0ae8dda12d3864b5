//===- MtfResultTypes.cpp - The result types the ops own ------------------===//
//
// The result types of the ops whose builders take names and sizes instead
// of a type: einsum (the result's dims), reductions (the dims reduced),
// one_hot and window (the new dim and its size), range (its one dim) and
// rename. Each op's inferResultType computes it from its operands and those
// names and sizes; the other ops' builders derive theirs from the operands
// (argmax, logsumexp, softmax_cross_entropy, cast: in MtfOps.td; the
// elementwise ops: SameOperandsAndResultType or inferReturnTypes). The
// frontend builds every op through these builders and computes no type
// itself; the verifiers check the same rules on IR read from text.
//
//===----------------------------------------------------------------------===//

#include "dialect/MtfDialect.h"

namespace mlir {
namespace mtf {

TensorType reducedType(Value input, ArrayRef<StringRef> reduced) {
  auto type =
      llvm::dyn_cast_or_null<TensorType>(input ? input.getType() : Type());
  if (!type)
    return {};
  SmallVector<NamedDim> kept;
  for (const NamedDim &dim : type.getDims())
    if (!llvm::is_contained(reduced, dim.name.getValue()))
      kept.push_back(dim);
  return TensorType::get(type.getContext(), kept, type.getElementType());
}

TensorType EinsumOp::inferResultType(ValueRange inputs,
                                     ArrayRef<StringRef> dims) {
  if (inputs.empty())
    return {};
  auto first = llvm::dyn_cast<TensorType>(inputs.front().getType());
  if (!first)
    return {};
  SmallVector<NamedDim> result;
  for (StringRef name : dims) {
    std::optional<NamedDim> found;
    for (Value input : inputs) {
      auto type = llvm::dyn_cast<TensorType>(input.getType());
      if (!type)
        return {};
      if (std::optional<unsigned> index = type.getDimIndex(name)) {
        found = type.getDims()[*index];
        break;
      }
    }
    if (!found)
      return {};
    result.push_back(*found);
  }
  return TensorType::get(first.getContext(), result, first.getElementType());
}

TensorType RangeOp::inferResultType(MLIRContext *context, StringRef dim,
                                    int64_t size) {
  return TensorType::get(context,
                         {NamedDim{StringAttr::get(context, dim), size}},
                         Float32Type::get(context));
}

TensorType WindowOp::inferResultType(Value input, StringRef from, StringRef to,
                                     int64_t toSize) {
  auto type =
      llvm::dyn_cast_or_null<TensorType>(input ? input.getType() : Type());
  if (!type || !type.hasDim(from))
    return {};
  SmallVector<NamedDim> dims;
  for (const NamedDim &dim : type.getDims())
    dims.push_back(
        dim.name.getValue() == from
            ? NamedDim{StringAttr::get(type.getContext(), to), toSize}
            : dim);
  return TensorType::get(type.getContext(), dims, type.getElementType());
}

TensorType RenameOp::inferResultType(Value input, StringRef from,
                                     StringRef to) {
  auto type =
      llvm::dyn_cast_or_null<TensorType>(input ? input.getType() : Type());
  if (!type || !type.hasDim(from))
    return {};
  SmallVector<NamedDim> dims(type.getDims());
  for (NamedDim &dim : dims)
    if (dim.name.getValue() == from)
      dim.name = StringAttr::get(type.getContext(), to);
  return TensorType::get(type.getContext(), dims, type.getElementType());
}

TensorType OneHotOp::inferResultType(Value indices, StringRef dim,
                                     int64_t size) {
  auto type =
      llvm::dyn_cast_or_null<TensorType>(indices ? indices.getType() : Type());
  if (!type)
    return {};
  SmallVector<NamedDim> dims(type.getDims());
  dims.push_back({StringAttr::get(type.getContext(), dim), size});
  return TensorType::get(type.getContext(), dims,
                         Float32Type::get(type.getContext()));
}

} // namespace mtf
} // namespace mlir
