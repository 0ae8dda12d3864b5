//===- LoopOp.cpp - mtf.loop: a layer compiled once -----------------------===//
//
// The loop's verifier and its types: a stacked tensor has the loop's dim
// first, and its slice is the rest.
//
//===----------------------------------------------------------------------===//

#include "dialect/MtfDialect.h"

using namespace mlir;

namespace mlir {
namespace mtf {

TensorType LoopOp::sliceType(Type stacked, StringRef dim, int64_t count) {
  auto type = llvm::dyn_cast<TensorType>(stacked);
  if (!type || type.getDims().empty() ||
      type.getDims().front().name.getValue() != dim ||
      type.getDims().front().size != count)
    return {};
  return TensorType::get(type.getContext(), type.getDims().drop_front(),
                         type.getElementType());
}

TensorType LoopOp::stackedType(TensorType slice, StringRef dim, int64_t count) {
  SmallVector<NamedDim> dims{
      NamedDim{StringAttr::get(slice.getContext(), dim), count}};
  llvm::append_range(dims, slice.getDims());
  return TensorType::get(slice.getContext(), dims, slice.getElementType());
}

LoopOp LoopOp::extend(ValueRange carried, ValueRange stacked,
                      TypeRange stackedResultTypes) {
  SmallVector<Value> carriedOperands(getCarried());
  llvm::append_range(carriedOperands, carried);
  SmallVector<Value> stackedOperands(getStacked());
  llvm::append_range(stackedOperands, stacked);
  SmallVector<Type> finalTypes(getFinals().getTypes());
  llvm::append_range(finalTypes, carried.getTypes());
  SmallVector<Type> resultTypes(getStackedResults().getTypes());
  llvm::append_range(resultTypes, stackedResultTypes);
  OpBuilder builder(*this);
  auto replaced = LoopOp::create(builder, getLoc(), finalTypes, resultTypes,
                                 getDim(), getCount(), carriedOperands,
                                 stackedOperands, getInvariant(), getReverse());
  replaced->setDiscardableAttrs(getOperation()->getDiscardableAttrDictionary());
  replaced.getBody().takeBody(getBody());
  for (auto [old, now] : llvm::zip(getFinals(), replaced.getFinals()))
    old.replaceAllUsesWith(now);
  for (auto [old, now] :
       llvm::zip(getStackedResults(), replaced.getStackedResults()))
    old.replaceAllUsesWith(now);
  erase();
  return replaced;
}

/// Contract:
/// - the body takes one argument per carried, stacked and invariant operand,
///   in that order: a carried or invariant one of its operand's type, a
///   stacked one of its operand's slice (the operand has `dim`=`count`
///   first);
/// - the body yields the carried values (of their types), then the values
///   the loop stacks: its results are the carried values, then each of
///   those with `dim`=`count` first;
/// - no body argument or body value has `dim`;
/// - the body holds no input, parameter, output, assign or train.
LogicalResult LoopOp::verifyRegions() {
  Block &body = getBodyBlock();
  size_t carried = getCarried().size(), stacked = getStacked().size();
  if (body.getNumArguments() != getNumOperands())
    return emitOpError() << "has " << getNumOperands()
                         << " operands but its body takes "
                         << body.getNumArguments()
                         << " arguments (one per operand)";
  StringRef dim = getDim();
  int64_t count = getCount();
  for (auto [index, operand, arg] :
       llvm::enumerate(getOperands(), body.getArguments())) {
    Type expected = operand.getType();
    if (index >= carried && index < carried + stacked) {
      expected = sliceType(operand.getType(), dim, count);
      if (!expected)
        return emitOpError() << "stacked operand #" << index - carried
                             << " has type " << operand.getType()
                             << "; a stacked operand has the loop's dim '"
                             << dim << "' (size " << count << ") first";
    }
    if (arg.getType() != expected)
      return emitOpError() << "body argument #" << index << " has type "
                           << arg.getType() << " but operand #" << index
                           << " gives it " << expected;
  }
  auto yield = llvm::cast<YieldOp>(body.getTerminator());
  if (yield.getValues().size() != getNumResults())
    return emitOpError() << "yields " << yield.getValues().size()
                         << " value(s) but has " << getNumResults()
                         << " result(s)";
  for (auto [index, value, result] :
       llvm::enumerate(yield.getValues(), getResults())) {
    if (index < carried) {
      if (value.getType() != getCarried()[index].getType())
        return emitOpError()
               << "yields " << value.getType() << " for carried value #"
               << index << ", which has type " << getCarried()[index].getType();
      if (result.getType() != value.getType())
        return emitOpError() << "result #" << index << " has type "
                             << result.getType() << " but carried value #"
                             << index << " has type " << value.getType();
      continue;
    }
    auto slice = llvm::dyn_cast<TensorType>(value.getType());
    if (!slice)
      return emitOpError() << "yields a value of type " << value.getType()
                           << ", which is not an !mtf.tensor";
    Type expected = stackedType(slice, dim, count);
    if (result.getType() != expected)
      return emitOpError() << "result #" << index << " has type "
                           << result.getType() << " but stacking the body's "
                           << value.getType() << " along '" << dim << "' gives "
                           << expected;
  }
  WalkResult walk = body.walk([&](Operation *op) {
    if (llvm::isa<InputOp, ParamOp, OutputOp, AssignOp, TrainOp>(op)) {
      op->emitOpError() << "cannot stand in a loop body: inputs, "
                           "parameters, outputs and updates belong to the "
                           "program (a stacked parameter is an operand)";
      return WalkResult::interrupt();
    }
    for (Value value : op->getResults())
      if (auto type = llvm::dyn_cast<TensorType>(value.getType());
          type && type.hasDim(dim)) {
        op->emitOpError() << "has the loop's dim '" << dim
                          << "', which the body of the loop over it never "
                             "sees";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  for (BlockArgument arg : body.getArguments())
    if (auto type = llvm::dyn_cast<TensorType>(arg.getType());
        type && type.hasDim(dim))
      return emitOpError() << "body argument #" << arg.getArgNumber()
                           << " has the loop's dim '" << dim << "'";
  return success();
}

} // namespace mtf
} // namespace mlir
