//===- OpEmitter.cpp - Building mtf ops for gradients and optimizers ------===//

#include "dialect/OpEmitter.h"

using namespace mlir;

namespace mlir {
namespace mtf {

GradientSink::~GradientSink() = default;

DictionaryAttr groupTagsOf(Operation *op) {
  SmallVector<NamedAttribute, 2> tags;
  for (StringRef name : MtfDialect::kGroupAttrNames)
    if (Attribute tag = op->getAttr(name))
      tags.push_back(
          NamedAttribute(StringAttr::get(op->getContext(), name), tag));
  return DictionaryAttr::get(op->getContext(), tags);
}

void setGroupTags(Operation *op, DictionaryAttr tags) {
  if (tags)
    for (NamedAttribute tag : tags)
      op->setAttr(tag.getName(), tag.getValue());
}

OpEmitter::OpEmitter(Block &block, StringRef phase)
    : b(OpBuilder::atBlockEnd(&block)),
      phase(phase.empty() ? StringAttr() : b.getStringAttr(phase)),
      loc_(b.getUnknownLoc()) {}

OpEmitter::OpEmitter(Operation *op)
    : b(op),
      phase(op->getAttrOfType<StringAttr>(mtf::MtfDialect::kPhaseAttrName)),
      groupTags(groupTagsOf(op)), loc_(op->getLoc()) {}

Operation *OpEmitter::tag(Operation *op) {
  if (phase)
    op->setAttr(mtf::MtfDialect::kPhaseAttrName, phase);
  setGroupTags(op, groupTags);
  return op;
}

Value OpEmitter::scalar(double value, Type elementType) {
  return constant(value, mtf::TensorType::get(context(), {}, elementType));
}

Value OpEmitter::constant(double value, mtf::TensorType type) {
  return tag(mtf::ConstantOp::create(b, loc_, type, b.getF64FloatAttr(value)))
      ->getResult(0);
}

template <typename Op> Value OpEmitter::binary(Value lhs, Value rhs) {
  return tag(Op::create(b, loc_, lhs, rhs))->getResult(0);
}

Value OpEmitter::add(Value lhs, Value rhs) {
  return binary<mtf::AddOp>(lhs, rhs);
}
Value OpEmitter::sub(Value lhs, Value rhs) {
  return binary<mtf::SubOp>(lhs, rhs);
}
Value OpEmitter::mul(Value lhs, Value rhs) {
  return binary<mtf::MulOp>(lhs, rhs);
}
Value OpEmitter::div(Value lhs, Value rhs) {
  return binary<mtf::DivOp>(lhs, rhs);
}
Value OpEmitter::max(Value lhs, Value rhs) {
  return binary<mtf::MaxOp>(lhs, rhs);
}
Value OpEmitter::min(Value lhs, Value rhs) {
  return binary<mtf::MinOp>(lhs, rhs);
}

Value OpEmitter::scale(Value value, double factor) {
  if (factor == 1.0)
    return value;
  return mul(value, scalar(factor, tensorType(value).getElementType()));
}

Value OpEmitter::sumTo(Value value, mtf::TensorType type) {
  mtf::TensorType from = tensorType(value);
  if (from.getDims() == type.getDims())
    return value;
  auto result =
      mtf::TensorType::get(context(), type.getDims(), from.getElementType());
  return tag(mtf::EinsumOp::create(b, loc_, result, ValueRange{value}))
      ->getResult(0);
}

Value OpEmitter::broadcastTo(Value value, mtf::TensorType type) {
  mtf::TensorType from = tensorType(value);
  if (from.getDims() == type.getDims())
    return value;
  auto result =
      mtf::TensorType::get(context(), type.getDims(), from.getElementType());
  bool subset = llvm::all_of(from.getDims(), [&](const mtf::NamedDim &dim) {
    return type.hasDim(dim.name.getValue());
  });
  assert(subset && "broadcastTo needs a subset of the target dims");
  (void)subset;
  if (from.getRank() == type.getRank()) // a transpose
    return sumTo(value, result);
  // value * ones: the ones carry the missing dims; the binary op orders the
  // result as asked.
  SmallVector<mtf::NamedDim> missing;
  for (const mtf::NamedDim &dim : type.getDims())
    if (!from.hasDim(dim.name.getValue()))
      missing.push_back(dim);
  Value ones = constant(
      1.0, mtf::TensorType::get(context(), missing, from.getElementType()));
  return tag(mtf::MulOp::create(b, loc_, result, value, ones))->getResult(0);
}

Value OpEmitter::sumAll(Value value) {
  mtf::TensorType from = tensorType(value);
  if (from.getRank() == 0)
    return value;
  return tag(mtf::ReduceSumOp::create(
                 b, loc_,
                 mtf::TensorType::get(context(), {}, from.getElementType()),
                 value))
      ->getResult(0);
}

} // namespace mtf
} // namespace mlir
