//===- MtfOps.cpp - mtf dialect operations --------------------------------===//
//
// Verifiers of the mtf operations. Each states its contract first; messages
// name the dimensions, sizes and types involved.
//
//===----------------------------------------------------------------------===//

#include "dialect/MtfDialect.h"

#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <cstdio>

using namespace mlir;

#define GET_OP_CLASSES
#include "dialect/MtfOps.cpp.inc"

namespace mlir {
namespace mtf {

static TensorType tensorOf(Value value) {
  return llvm::cast<TensorType>(value.getType());
}

/// Checks that every dimension of `type` that `sizes` already knows has the
/// size recorded there, and records the others. `role` names the operand.
static LogicalResult
recordDims(Operation *op, TensorType type, StringRef role,
           llvm::StringMap<std::pair<int64_t, std::string>> &sizes) {
  for (const NamedDim &dim : type.getDims()) {
    auto [it, inserted] =
        sizes.try_emplace(dim.name.getValue(), dim.size, role.str());
    if (!inserted && it->second.first != dim.size)
      return op->emitOpError()
             << "dimension '" << dim.name.getValue() << "' has size "
             << it->second.first << " in " << it->second.second << " but "
             << dim.size << " in " << role;
  }
  return success();
}

static std::string operandRole(unsigned index) {
  return "operand #" + std::to_string(index);
}

//===----------------------------------------------------------------------===//
// ProgramOp
//===----------------------------------------------------------------------===//

void ProgramOp::build(OpBuilder &builder, OperationState &state,
                      StringRef name) {
  state.addAttribute(SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  Region *body = state.addRegion();
  body->push_back(new Block());
}

/// Contract:
///  - every dimension name has one size across all tensors of the program;
///  - input and parameter names are unique among themselves, output names
///    among outputs;
///  - at most one `mtf.train`;
///  - `mtf.assign` names a parameter defined before it, with its type, once,
///    and after every use of it.
LogicalResult ProgramOp::verifyRegions() {
  bool local = getLocal();
  llvm::StringMap<std::pair<int64_t, Operation *>> dimSizes;
  llvm::StringMap<Operation *> sourceNames, outputNames, assignNames;
  llvm::StringMap<ParamOp> params;
  Operation *train = nullptr;
  for (Operation &op : getBodyBlock()) {
    for (Value result : op.getResults()) {
      auto type = llvm::dyn_cast<TensorType>(result.getType());
      if (!type || local)
        continue;
      for (const NamedDim &dim : type.getDims()) {
        auto [it, inserted] =
            dimSizes.try_emplace(dim.name.getValue(), dim.size, &op);
        if (!inserted && it->second.first != dim.size)
          return op.emitOpError()
                     .append("dimension '", dim.name.getValue(), "' has size ",
                             dim.size, " here but ", it->second.first,
                             " elsewhere in the program")
                     .attachNote(it->second.second->getLoc())
                 << "size " << it->second.first << " here";
      }
    }
    auto checkUnique = [&](llvm::StringMap<Operation *> &names, StringRef name,
                           StringRef what) -> LogicalResult {
      auto [it, inserted] = names.try_emplace(name, &op);
      if (inserted)
        return success();
      return op.emitOpError()
                 .append(what, " name '", name, "' is used twice")
                 .attachNote(it->second->getLoc())
             << "first used here";
    };
    if (auto input = llvm::dyn_cast<InputOp>(op)) {
      if (failed(checkUnique(sourceNames, input.getName(), "input/parameter")))
        return failure();
    } else if (auto param = llvm::dyn_cast<ParamOp>(op)) {
      if (failed(checkUnique(sourceNames, param.getName(), "input/parameter")))
        return failure();
      params[param.getName()] = param;
    } else if (auto output = llvm::dyn_cast<OutputOp>(op)) {
      if (failed(checkUnique(outputNames, output.getName(), "output")))
        return failure();
    } else if (auto assign = llvm::dyn_cast<AssignOp>(op)) {
      auto it = params.find(assign.getName());
      if (it == params.end())
        return op.emitOpError() << "assigns '" << assign.getName()
                                << "', which is no parameter defined before it";
      if (it->second.getType() != assign.getValue().getType())
        return op.emitOpError()
               << "assigns " << assign.getValue().getType() << " to '"
               << assign.getName() << "' of type " << it->second.getType();
      if (failed(checkUnique(assignNames, assign.getName(), "assigned")))
        return failure();
      for (Operation *user : it->second.getResult().getUsers())
        if (user->getBlock() == op.getBlock() && op.isBeforeInBlock(user))
          return op.emitOpError()
                     .append("must follow every use of '", assign.getName(),
                             "'")
                     .attachNote(user->getLoc())
                 << "used here, after the assign";
    } else if (llvm::isa<TrainOp>(op)) {
      if (train)
        return op.emitOpError("a program trains one loss at most")
                   .attachNote(train->getLoc())
               << "first mtf.train here";
      train = &op;
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

/// Contract: the value is finite, and integral for an i32 tensor.
LogicalResult ConstantOp::verify() {
  double value = getValue().convertToDouble();
  if (!std::isfinite(value))
    return emitOpError() << "value must be finite, got " << value;
  if (tensorOf(getResult()).getElementType().isInteger(32) &&
      (value != std::trunc(value) || std::fabs(value) > 2147483647.0))
    return emitOpError() << "value " << value << " is not representable as i32";
  return success();
}

//===----------------------------------------------------------------------===//
// EinsumOp
//===----------------------------------------------------------------------===//

/// Contract:
///  - at least one operand; operands and result share the element type;
///  - a dimension name has one size across operands and result;
///  - every result dimension occurs in some operand.
LogicalResult EinsumOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  TensorType resultType = tensorOf(getResult());
  llvm::StringMap<std::pair<int64_t, std::string>> sizes;
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    TensorType type = tensorOf(input);
    if (type.getElementType() != resultType.getElementType())
      return emitOpError() << "operand #" << index << " has element type "
                           << type.getElementType() << " but the result has "
                           << resultType.getElementType();
    if (failed(recordDims(*this, type, operandRole(index), sizes)))
      return failure();
  }
  for (const NamedDim &dim : resultType.getDims()) {
    auto it = sizes.find(dim.name.getValue());
    if (it == sizes.end())
      return emitOpError() << "result dimension '" << dim.name.getValue()
                           << "' occurs in no operand";
    if (it->second.first != dim.size)
      return emitOpError() << "dimension '" << dim.name.getValue()
                           << "' has size " << it->second.first << " in "
                           << it->second.second << " but " << dim.size
                           << " in the result";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// RenameOp
//===----------------------------------------------------------------------===//

/// Contract: `from` is a dimension of the operand, `to` is not (unless equal
/// to `from`); the result is the operand with that one name changed.
LogicalResult RenameOp::verify() {
  TensorType input = tensorOf(getInput());
  TensorType result = tensorOf(getResult());
  std::optional<unsigned> index = input.getDimIndex(getFrom());
  if (!index)
    return emitOpError() << "operand has no dimension '" << getFrom()
                         << "' to rename (type " << input << ")";
  if (getFrom() != getTo() && input.hasDim(getTo()))
    return emitOpError() << "operand already has a dimension '" << getTo()
                         << "' (type " << input << ")";
  SmallVector<NamedDim> expected(input.getDims());
  expected[*index].name = StringAttr::get(getContext(), getTo());
  TensorType expectedType =
      TensorType::get(getContext(), expected, input.getElementType());
  if (result != expectedType)
    return emitOpError() << "result type must be " << expectedType << ", got "
                         << result;
  return success();
}

//===----------------------------------------------------------------------===//
// SplitDimOp, MergeDimsOp
//===----------------------------------------------------------------------===//

namespace {
/// Whether `result` is `input` with the dims at [at, at + count) replaced by
/// `replaced`, which hold as many elements.
bool replacesDims(TensorType input, TensorType result, unsigned at,
                  unsigned count, ArrayRef<NamedDim> replaced) {
  SmallVector<NamedDim> expected(input.getDims().take_front(at));
  expected.append(replaced.begin(), replaced.end());
  expected.append(input.getDims().begin() + at + count, input.getDims().end());
  return result.getElementType() == input.getElementType() &&
         ArrayRef<NamedDim>(expected) == result.getDims();
}
} // namespace

/// The `blocks` of a split_dim or merge_dims between `whole` and `outer` x
/// `inner`: one per outer index, each in [0, inner], adding up to `whole`.
static LogicalResult verifyBlocks(Operation *op, ArrayRef<int64_t> blocks,
                                  NamedDim outer, NamedDim inner,
                                  NamedDim whole) {
  if (static_cast<int64_t>(blocks.size()) != outer.size)
    return op->emitOpError()
           << "has " << blocks.size() << " blocks for the " << outer.size
           << " indices of '" << outer.name.getValue() << "'";
  int64_t sum = 0;
  for (auto [index, block] : llvm::enumerate(blocks)) {
    if (block < 0 || block > inner.size)
      return op->emitOpError()
             << "block " << index << " has size " << block << ", outside [0, "
             << inner.size << "] (the size of '" << inner.name.getValue()
             << "')";
    sum += block;
  }
  if (sum != whole.size)
    return op->emitOpError()
           << "has blocks adding up to " << sum << ", not the size of '"
           << whole.name.getValue() << "' (" << whole.size << ")";
  return success();
}

unsigned SplitDimOp::getDimIndex() {
  return *tensorOf(getInput()).getDimIndex(getDim());
}
NamedDim SplitDimOp::getOuter() {
  return tensorOf(getResult()).getDims()[getDimIndex()];
}
NamedDim SplitDimOp::getInner() {
  return tensorOf(getResult()).getDims()[getDimIndex() + 1];
}

/// Contract: `dim` is a dimension of the operand; the result is the operand
/// with `dim` replaced in place by two dimensions whose sizes multiply to
/// its size, named apart from the operand's dimensions (a name means one
/// size throughout a program; the type keeps the two apart).
LogicalResult SplitDimOp::verify() {
  TensorType input = tensorOf(getInput());
  TensorType result = tensorOf(getResult());
  std::optional<unsigned> index = input.getDimIndex(getDim());
  if (!index)
    return emitOpError() << "operand has no dimension '" << getDim()
                         << "' to split (type " << input << ")";
  if (result.getRank() != input.getRank() + 1)
    return emitOpError() << "result must have one dimension more than the "
                            "operand (type "
                         << input << "), got " << result;
  NamedDim outer = result.getDims()[*index];
  NamedDim inner = result.getDims()[*index + 1];
  if (std::optional<ArrayRef<int64_t>> blocks = getBlocks()) {
    if (failed(verifyBlocks(getOperation(), *blocks, outer, inner,
                            input.getDims()[*index])))
      return failure();
  } else if (outer.size * inner.size != input.getDims()[*index].size)
    return emitOpError() << "splits '" << getDim() << "' of size "
                         << input.getDims()[*index].size << " into '"
                         << outer.name.getValue() << "' (" << outer.size
                         << ") and '" << inner.name.getValue() << "' ("
                         << inner.size
                         << "), whose sizes do not multiply to it";
  for (NamedDim made : {outer, inner})
    if (input.hasDim(made.name.getValue()))
      return emitOpError() << "operand already has a dimension '"
                           << made.name.getValue() << "' (type " << input
                           << ")";
  if (!replacesDims(input, result, *index, 1, {outer, inner}))
    return emitOpError() << "result must be the operand (type " << input
                         << ") with '" << getDim()
                         << "' replaced by two dimensions, got " << result;
  return success();
}

unsigned MergeDimsOp::getOuterIndex() {
  return *tensorOf(getInput()).getDimIndex(getOuter());
}

/// Contract: `outer` is a dimension of the operand with one after it; the
/// result is the operand with the two replaced in place by one dimension of
/// their sizes' product, named apart from the operand's dimensions.
LogicalResult MergeDimsOp::verify() {
  TensorType input = tensorOf(getInput());
  TensorType result = tensorOf(getResult());
  std::optional<unsigned> index = input.getDimIndex(getOuter());
  if (!index || *index + 1 >= input.getRank())
    return emitOpError() << "operand has no dimension '" << getOuter()
                         << "' followed by another to merge it with (type "
                         << input << ")";
  if (result.getRank() + 1 != input.getRank())
    return emitOpError() << "result must have one dimension less than the "
                            "operand (type "
                         << input << "), got " << result;
  NamedDim outer = input.getDims()[*index];
  NamedDim inner = input.getDims()[*index + 1];
  NamedDim merged = result.getDims()[*index];
  if (std::optional<ArrayRef<int64_t>> blocks = getBlocks()) {
    if (failed(verifyBlocks(getOperation(), *blocks, outer, inner, merged)))
      return failure();
  } else if (merged.size != outer.size * inner.size)
    return emitOpError() << "merges '" << getOuter() << "' (" << outer.size
                         << ") and '" << inner.name.getValue() << "' ("
                         << inner.size << ") into '" << merged.name.getValue()
                         << "' of size " << merged.size << ", not "
                         << outer.size * inner.size;
  if (input.hasDim(merged.name.getValue()))
    return emitOpError() << "operand already has a dimension '"
                         << merged.name.getValue() << "' (type " << input
                         << ")";
  if (!replacesDims(input, result, *index, 2, {merged}))
    return emitOpError() << "result must be the operand (type " << input
                         << ") with '" << getOuter()
                         << "' and the dimension after it replaced by one, got "
                         << result;
  return success();
}

//===----------------------------------------------------------------------===//
// ConstrainOp, CastOp
//===----------------------------------------------------------------------===//

/// Contract: the layout splits only dimensions of the operand (and, inside a
/// program with a mesh, only over its axes into equal shards).
LogicalResult ConstrainOp::verify() {
  auto program = (*this)->getParentOfType<ProgramOp>();
  return verifyLayout([&] { return emitOpError(); }, tensorOf(getInput()),
                      getLayout(), program ? program.getMeshAttr() : MeshAttr(),
                      allowsUnequalBlocks(*this));
}

/// Checks that a named and a ranked tensor type describe the same data. A
/// dynamic ranked size stands for the named one: the partitioner leaves the
/// sizes of blocks that differ between devices dynamic in the collectives
/// that move them (their mtf.blocks give each device's).
static LogicalResult verifySameData(Operation *op, TensorType named,
                                    RankedTensorType ranked) {
  bool same = ranked.getRank() == static_cast<int64_t>(named.getRank());
  for (auto [dim, size] : llvm::zip(named.getDims(), ranked.getShape()))
    same &= ShapedType::isDynamic(size) || size == dim.size;
  if (!same || ranked.getElementType() != named.getElementType())
    return op->emitOpError() << "types must have the same shape and element "
                                "type, got "
                             << named << " and " << ranked;
  return success();
}

/// Contract: same sizes in the same order and the same element type.
LogicalResult ToTensorOp::verify() {
  return verifySameData(*this, tensorOf(getInput()),
                        llvm::cast<RankedTensorType>(getResult().getType()));
}

/// Contract: same sizes in the same order and the same element type.
LogicalResult FromTensorOp::verify() {
  return verifySameData(*this, tensorOf(getResult()),
                        llvm::cast<RankedTensorType>(getInput().getType()));
}

/// The checks every combined collective shares: at least two inputs of one
/// element type, as many results, each result of its input's element type
/// and rank. `axes` (gather or scatter dims): one per input, in its rank;
/// result i's dim axes[i] is input i's times a whole factor (`grow`) or a
/// whole part of it, every other dim the same.
static LogicalResult verifyCombined(Operation *op,
                                    std::optional<ArrayRef<int64_t>> axes,
                                    bool grow) {
  if (op->getNumOperands() < 2)
    return op->emitOpError("combines at least two inputs, not ")
           << op->getNumOperands();
  if (op->getNumResults() != op->getNumOperands())
    return op->emitOpError("has ") << op->getNumOperands() << " inputs but "
                                   << op->getNumResults() << " results";
  if (axes && axes->size() != op->getNumOperands())
    return op->emitOpError("has ")
           << axes->size() << " dims for " << op->getNumOperands() << " inputs";
  auto first = llvm::cast<RankedTensorType>(op->getOperand(0).getType());
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    auto in = llvm::cast<RankedTensorType>(op->getOperand(i).getType());
    auto out = llvm::cast<RankedTensorType>(op->getResult(i).getType());
    if (in.getElementType() != first.getElementType())
      return op->emitOpError("input ")
             << i << " has element type " << in.getElementType() << ", input 0 "
             << first.getElementType();
    if (!axes) {
      if (in != out)
        return op->emitOpError("result ")
               << i << " has type " << out << ", input " << i << " " << in;
      continue;
    }
    int64_t dim = (*axes)[i];
    if (dim < 0 || dim >= in.getRank())
      return op->emitOpError("dim ") << dim << " of input " << i
                                     << " is outside its rank " << in.getRank();
    bool fits = in.getElementType() == out.getElementType() &&
                in.getRank() == out.getRank() && in.hasStaticShape() &&
                out.hasStaticShape();
    for (int64_t d = 0; fits && d < in.getRank(); ++d) {
      int64_t small = grow ? in.getDimSize(d) : out.getDimSize(d);
      int64_t large = grow ? out.getDimSize(d) : in.getDimSize(d);
      fits = d == dim ? small > 0 && large % small == 0 : small == large;
    }
    if (!fits)
      return op->emitOpError("result ")
             << i << " of type " << out << " is not input " << i << " " << in
             << (grow ? " gathered" : " scattered") << " along dim " << dim;
  }
  return success();
}

/// A combined collective's reduction: "sum" or "max".
static LogicalResult verifyReduction(Operation *op, StringRef reduction) {
  if (reduction == "sum" || reduction == "max")
    return success();
  return op->emitOpError("reduction '")
         << reduction << "' is neither \"sum\" nor \"max\"";
}

/// Contract: verifyCombined's, results gathered along gather_axes.
LogicalResult CombinedAllGatherOp::verify() {
  return verifyCombined(*this, getGatherAxes(), /*grow=*/true);
}

/// Contract: verifyCombined's, results scattered along scatter_axes, a
/// reduction "sum" or "max".
LogicalResult CombinedReduceScatterOp::verify() {
  if (failed(verifyReduction(*this, getReduction())))
    return failure();
  return verifyCombined(*this, getScatterAxes(), /*grow=*/false);
}

/// Contract: verifyCombined's, result i of input i's type, a reduction
/// "sum" or "max".
LogicalResult CombinedAllReduceOp::verify() {
  if (failed(verifyReduction(*this, getReduction())))
    return failure();
  return verifyCombined(*this, std::nullopt, false);
}

/// Contract: the result has the operand's dimensions, in order.
LogicalResult CastOp::verify() {
  TensorType input = tensorOf(getInput());
  TensorType result = tensorOf(getResult());
  if (input.getDims() != result.getDims())
    return emitOpError() << "must keep the dimensions: operand " << input
                         << ", result " << result;
  return success();
}

//===----------------------------------------------------------------------===//
// Binary elementwise ops
//===----------------------------------------------------------------------===//

/// Contract:
///  - operands and result share the element type (operands only, when
///    `resultKeepsType` is false: mtf.equal);
///  - a dimension name has one size across operands and result;
///  - the result has exactly the union of the operands' dimensions.
static LogicalResult verifyBinary(Operation *op, bool resultKeepsType = true) {
  TensorType lhs = tensorOf(op->getOperand(0));
  TensorType rhs = tensorOf(op->getOperand(1));
  TensorType result = tensorOf(op->getResult(0));
  if (lhs.getElementType() != rhs.getElementType() ||
      (resultKeepsType && lhs.getElementType() != result.getElementType()))
    return op->emitOpError()
           << "element types must match, got " << lhs.getElementType()
           << " and " << rhs.getElementType() << " -> "
           << result.getElementType();
  llvm::StringMap<std::pair<int64_t, std::string>> sizes;
  if (failed(recordDims(op, lhs, "lhs", sizes)) ||
      failed(recordDims(op, rhs, "rhs", sizes)) ||
      failed(recordDims(op, result, "the result", sizes)))
    return failure();
  for (const NamedDim &dim : result.getDims())
    if (!lhs.hasDim(dim.name.getValue()) && !rhs.hasDim(dim.name.getValue()))
      return op->emitOpError() << "result dimension '" << dim.name.getValue()
                               << "' is in neither operand";
  for (TensorType operand : {lhs, rhs})
    for (const NamedDim &dim : operand.getDims())
      if (!result.hasDim(dim.name.getValue()))
        return op->emitOpError()
               << "result lacks operand dimension '" << dim.name.getValue()
               << "'; elementwise ops do not reduce (use mtf.reduce_sum)";
  return success();
}

LogicalResult inferBroadcastType(ValueRange operands, Type elementType,
                                 SmallVectorImpl<Type> &inferred) {
  if (operands.size() != 2)
    return failure();
  auto lhs = llvm::dyn_cast<TensorType>(operands[0].getType());
  auto rhs = llvm::dyn_cast<TensorType>(operands[1].getType());
  if (!lhs || !rhs)
    return failure();
  SmallVector<NamedDim> dims(lhs.getDims());
  for (const NamedDim &dim : rhs.getDims())
    if (!lhs.hasDim(dim.name.getValue()))
      dims.push_back(dim);
  inferred.push_back(
      TensorType::get(lhs.getContext(), dims,
                      elementType ? elementType : lhs.getElementType()));
  return success();
}

bool sameDimsAnyOrder(TypeRange lhs, TypeRange rhs) {
  if (lhs.size() != 1 || rhs.size() != 1)
    return false;
  auto a = llvm::dyn_cast<TensorType>(lhs.front());
  auto b = llvm::dyn_cast<TensorType>(rhs.front());
  if (!a || !b || a.getElementType() != b.getElementType() ||
      a.getRank() != b.getRank())
    return false;
  return llvm::all_of(a.getDims(), [&](const NamedDim &dim) {
    std::optional<unsigned> index = b.getDimIndex(dim.name.getValue());
    return index && b.getDims()[*index].size == dim.size;
  });
}

LogicalResult AddOp::verify() { return verifyBinary(*this); }
LogicalResult SubOp::verify() { return verifyBinary(*this); }
LogicalResult MulOp::verify() { return verifyBinary(*this); }
LogicalResult DivOp::verify() { return verifyBinary(*this); }
LogicalResult MaxOp::verify() { return verifyBinary(*this); }
LogicalResult MinOp::verify() { return verifyBinary(*this); }

//===----------------------------------------------------------------------===//
// Reductions, softmax, cross-entropy
//===----------------------------------------------------------------------===//

/// Contract: same element type; the result's dimensions are operand
/// dimensions, with their sizes, in the operand's order.
static LogicalResult verifyReduce(Operation *op) {
  TensorType input = tensorOf(op->getOperand(0));
  TensorType result = tensorOf(op->getResult(0));
  if (input.getElementType() != result.getElementType())
    return op->emitOpError()
           << "element types must match, got " << input.getElementType()
           << " -> " << result.getElementType();
  int64_t previous = -1;
  for (const NamedDim &dim : result.getDims()) {
    std::optional<unsigned> index = input.getDimIndex(dim.name.getValue());
    if (!index)
      return op->emitOpError()
             << "result dimension '" << dim.name.getValue()
             << "' is not an operand dimension (operand " << input << ")";
    if (input.getDims()[*index].size != dim.size)
      return op->emitOpError()
             << "dimension '" << dim.name.getValue() << "' has size "
             << input.getDims()[*index].size << " in the operand but "
             << dim.size << " in the result";
    if (static_cast<int64_t>(*index) < previous)
      return op->emitOpError() << "result dimensions must keep the operand's "
                                  "order, got "
                               << result << " from " << input;
    previous = *index;
  }
  return success();
}

LogicalResult ReduceSumOp::verify() { return verifyReduce(*this); }
LogicalResult ReduceMeanOp::verify() { return verifyReduce(*this); }
LogicalResult ReduceMaxOp::verify() { return verifyReduce(*this); }

//===----------------------------------------------------------------------===//
// Fused attention
//===----------------------------------------------------------------------===//

static std::string dimList(ArrayRef<NamedDim> dims) {
  std::string text = "[";
  for (auto [i, dim] : llvm::enumerate(dims))
    text += (i ? ", " : "") + dim.name.getValue().str() + "=" +
            std::to_string(dim.size);
  return text + "]";
}

static bool containsDim(ArrayRef<NamedDim> dims, StringRef name) {
  return llvm::any_of(dims, [&](const NamedDim &d) { return d.name == name; });
}

FailureOr<AttentionRoles> attentionRoles(Operation *op, Type queryType,
                                         Type keyType, Type valueType,
                                         StringRef keyDim,
                                         ArrayRef<StringRef> headDims) {
  TensorType q = llvm::cast<TensorType>(queryType);
  TensorType k = llvm::cast<TensorType>(keyType);
  TensorType v = llvm::cast<TensorType>(valueType);
  AttentionRoles roles;
  std::optional<unsigned> keyAt = k.getDimIndex(keyDim);
  if (!keyAt)
    return op->emitOpError()
           << "key has no key dimension '" << keyDim << "' (type " << k << ")";
  roles.key = k.getDims()[*keyAt];
  if (q.hasDim(keyDim))
    return op->emitOpError() << "query must not have the key dimension '"
                             << keyDim << "' (type " << q << ")";
  llvm::StringSet<> heads;
  for (StringRef head : headDims) {
    if (!heads.insert(head).second || head == keyDim)
      return op->emitOpError() << "head dimension '" << head
                               << "' is listed twice or is the key dimension";
    std::optional<unsigned> inQ = q.getDimIndex(head),
                            inK = k.getDimIndex(head);
    if (!inQ || !inK)
      return op->emitOpError() << "head dimension '" << head
                               << "' must be a dimension of the query and the "
                                  "key (types "
                               << q << ", " << k << ")";
    if (q.getDims()[*inQ].size != k.getDims()[*inK].size)
      return op->emitOpError() << "head dimension '" << head << "' has size "
                               << q.getDims()[*inQ].size << " in the query but "
                               << k.getDims()[*inK].size << " in the key";
    roles.head.push_back(q.getDims()[*inQ]);
  }
  for (const NamedDim &dim : k.getDims())
    if (dim.name != keyDim && !heads.contains(dim.name.getValue()))
      roles.group.push_back(dim);
  for (const NamedDim &dim : roles.group) {
    std::optional<unsigned> inQ = q.getDimIndex(dim.name.getValue());
    std::optional<unsigned> inV = v.getDimIndex(dim.name.getValue());
    if (!inQ || !inV || !(q.getDims()[*inQ] == dim) ||
        !(v.getDims()[*inV] == dim))
      return op->emitOpError()
             << "key dimension '" << dim.name.getValue() << "' (size "
             << dim.size
             << ") is neither the key dimension nor a head dimension, so it "
                "must be a group dimension of the query and the value too "
                "(types "
             << q << ", " << v << ")";
  }
  for (const NamedDim &dim : q.getDims())
    if (!heads.contains(dim.name.getValue()) &&
        !containsDim(roles.group, dim.name.getValue()))
      roles.query.push_back(dim);
  std::optional<unsigned> keyInV = v.getDimIndex(keyDim);
  if (!keyInV || !(v.getDims()[*keyInV] == roles.key))
    return op->emitOpError() << "value must have the key dimension "
                             << dimList(roles.key) << " (type " << v << ")";
  for (const NamedDim &dim : v.getDims())
    if (dim.name != keyDim && !containsDim(roles.group, dim.name.getValue())) {
      if (containsDim(roles.query, dim.name.getValue()))
        return op->emitOpError() << "value dimension '" << dim.name.getValue()
                                 << "' is also a query dimension";
      roles.value.push_back(dim);
    }
  return roles;
}

TensorType attentionStatsType(Type queryType, ArrayRef<StringRef> headDims) {
  TensorType q = llvm::cast<TensorType>(queryType);
  SmallVector<NamedDim> dims;
  for (const NamedDim &dim : q.getDims())
    if (!llvm::is_contained(headDims, dim.name.getValue()))
      dims.push_back(dim);
  return TensorType::get(q.getContext(), dims,
                         Float32Type::get(q.getContext()));
}

static SmallVector<StringRef> headNames(ArrayAttr heads) {
  SmallVector<StringRef> names;
  for (Attribute head : heads)
    names.push_back(llvm::cast<StringAttr>(head).getValue());
  return names;
}

FailureOr<AttentionRoles> attentionRolesOf(Operation *op) {
  auto forward = llvm::dyn_cast<AttentionOp>(op);
  auto backward = llvm::dyn_cast<AttentionGradOp>(op);
  if (!forward && !backward)
    return op->emitOpError() << "is not mtf.attention or mtf.attention_grad";
  ArrayAttr heads = forward ? forward.getHeadDims() : backward.getHeadDims();
  StringRef key = forward ? forward.getKeyDim() : backward.getKeyDim();
  return attentionRoles(op, op->getOperand(0).getType(),
                        op->getOperand(1).getType(),
                        op->getOperand(2).getType(), key, headNames(heads));
}

/// Whether `type` has exactly the dims of `groups` (each dim once, any
/// order).
static bool hasExactly(Type type, ArrayRef<ArrayRef<NamedDim>> groups) {
  TensorType tensor = llvm::cast<TensorType>(type);
  size_t count = 0;
  for (ArrayRef<NamedDim> group : groups)
    for (const NamedDim &dim : group) {
      std::optional<unsigned> at = tensor.getDimIndex(dim.name.getValue());
      if (!at || !(tensor.getDims()[*at] == dim))
        return false;
      ++count;
    }
  return count == tensor.getDims().size();
}

/// The checks mtf.attention and its gradient share: the roles of query, key
/// and value, the bias's dims, the result's and logsumexp's dims.
static FailureOr<AttentionRoles>
verifyAttention(Operation *op, Value q, Value k, Value v, Value bias,
                Value result, Value stats, StringRef keyDim, ArrayAttr heads,
                StringRef resultRole) {
  FailureOr<AttentionRoles> roles = attentionRoles(
      op, q.getType(), k.getType(), v.getType(), keyDim, headNames(heads));
  if (failed(roles))
    return failure();
  if (bias)
    for (const NamedDim &dim : tensorOf(bias).getDims())
      if (!(containsDim(roles->group, dim.name.getValue()) ||
            containsDim(roles->query, dim.name.getValue()) ||
            dim.name == keyDim) ||
          !(llvm::is_contained(roles->group, dim) ||
            llvm::is_contained(roles->query, dim) || dim == roles->key))
        return op->emitOpError()
               << "bias dimension " << dimList(dim)
               << " is not a group, query or key dimension of the scores";
  if (!hasExactly(result.getType(), {roles->group, roles->query, roles->value}))
    return op->emitOpError()
           << resultRole << " must have the group dims "
           << dimList(roles->group) << ", the query dims "
           << dimList(roles->query) << " and the value dims "
           << dimList(roles->value) << ", not " << result.getType();
  if (!hasExactly(stats.getType(), {roles->group, roles->query}) ||
      !tensorOf(stats).getElementType().isF32())
    return op->emitOpError()
           << "logsumexp must be f32 with the group dims "
           << dimList(roles->group) << " and the query dims "
           << dimList(roles->query) << ", not " << stats.getType();
  Type element = tensorOf(q).getElementType();
  if (tensorOf(k).getElementType() != element ||
      tensorOf(v).getElementType() != element ||
      tensorOf(result).getElementType() != element)
    return op->emitOpError() << "query, key, value and " << resultRole
                             << " must share one element type";
  return roles;
}

/// Contract: attentionRoles' pattern; the result has the group, query and
/// value dims, logsumexp (f32) the group and query dims.
LogicalResult AttentionOp::verify() {
  return verifyAttention(*this, getQuery(), getKey(), getValue(), getBias(),
                         getResult(), getLogsumexp(), getKeyDim(),
                         getHeadDims(), "the result");
}

/// Contract: as mtf.attention's, for the forward operands, result and
/// logsumexp; `grad` has the result's type; each gradient its operand's.
LogicalResult AttentionGradOp::verify() {
  if (failed(verifyAttention(*this, getQuery(), getKey(), getValue(), getBias(),
                             getResult(), getLogsumexp(), getKeyDim(),
                             getHeadDims(), "the result")))
    return failure();
  if (getGrad().getType() != getResult().getType())
    return emitOpError() << "grad has type " << getGrad().getType()
                         << " but the result " << getResult().getType();
  if (getQueryGrad().getType() != getQuery().getType() ||
      getKeyGrad().getType() != getKey().getType() ||
      getValueGrad().getType() != getValue().getType())
    return emitOpError() << "each gradient must have the type of its operand";
  return success();
}

/// Contract: `dim` is a dimension of the operand.
LogicalResult SoftmaxOp::verify() {
  if (!tensorOf(getInput()).hasDim(getDim()))
    return emitOpError() << "operand has no dimension '" << getDim()
                         << "' (type " << getInput().getType() << ")";
  return success();
}

/// Contract:
///  - `dim` is a dimension of the logits;
///  - the labels have exactly the other logits dimensions (same sizes);
///  - the result has the labels' dimensions and the logits' element type.
LogicalResult SoftmaxCrossEntropyOp::verify() {
  TensorType logits = tensorOf(getLogits());
  TensorType labels = tensorOf(getLabels());
  TensorType result = tensorOf(getResult());
  if (!logits.hasDim(getDim()))
    return emitOpError() << "logits have no class dimension '" << getDim()
                         << "' (type " << logits << ")";
  if (labels.hasDim(getDim()))
    return emitOpError() << "labels must not have the class dimension '"
                         << getDim() << "'";
  llvm::StringMap<std::pair<int64_t, std::string>> sizes;
  if (failed(recordDims(*this, logits, "the logits", sizes)) ||
      failed(recordDims(*this, labels, "the labels", sizes)) ||
      failed(recordDims(*this, result, "the result", sizes)))
    return failure();
  if (labels.getRank() + 1 != logits.getRank())
    return emitOpError() << "labels must have the logits' dimensions except '"
                         << getDim() << "': logits " << logits << ", labels "
                         << labels;
  for (const NamedDim &dim : labels.getDims())
    if (!logits.hasDim(dim.name.getValue()))
      return emitOpError() << "labels dimension '" << dim.name.getValue()
                           << "' is not a logits dimension";
  if (result.getRank() != labels.getRank() ||
      llvm::any_of(labels.getDims(), [&](const NamedDim &dim) {
        return !result.hasDim(dim.name.getValue());
      }))
    return emitOpError() << "result must have the labels' dimensions, got "
                         << result;
  if (result.getElementType() != logits.getElementType())
    return emitOpError() << "result element type must be "
                         << logits.getElementType() << ", got "
                         << result.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// Training and data ops
//===----------------------------------------------------------------------===//

/// Contract: 0 <= rate < 1.
LogicalResult DropoutMaskOp::verify() {
  double rate = getRate().convertToDouble();
  if (!(rate >= 0 && rate < 1))
    return emitOpError() << "rate must be in [0, 1), got " << rate;
  return success();
}

/// Contract: as for the other binary ops, except that the result is float
/// whatever the operands' element type.
LogicalResult EqualOp::verify() {
  return verifyBinary(*this, /*resultKeepsType=*/false);
}

/// Contract: as for mtf.equal.
LogicalResult LessOp::verify() {
  return verifyBinary(*this, /*resultKeepsType=*/false);
}

/// Contract: the result has exactly one dimension.
LogicalResult RangeOp::verify() {
  TensorType result = tensorOf(getResult());
  if (result.getRank() != 1)
    return emitOpError() << "result must have exactly one dimension, got "
                         << result;
  return success();
}

/// Contract: pairs of non-negative ranks; no member is the source, or the
/// target, of two pairs.
LogicalResult CollectivePermuteOp::verify() {
  ArrayRef<int64_t> pairs = getPairs();
  if (pairs.empty() || pairs.size() % 2 != 0)
    return emitOpError() << "pairs must be a non-empty list of [source, "
                            "target] ranks, flattened; got "
                         << pairs.size() << " numbers";
  llvm::SmallDenseSet<int64_t> sources, targets;
  for (size_t i = 0; i < pairs.size(); i += 2) {
    if (pairs[i] < 0 || pairs[i + 1] < 0)
      return emitOpError() << "pair " << i / 2 << " has a negative rank";
    if (!sources.insert(pairs[i]).second)
      return emitOpError() << "member " << pairs[i]
                           << " is the source of two pairs";
    if (!targets.insert(pairs[i + 1]).second)
      return emitOpError() << "member " << pairs[i + 1]
                           << " is the target of two pairs";
  }
  return success();
}

/// Contract: the result is the operand with `from` replaced in place by `to`
/// (which the operand lacks, unless it is `from`), same element type.
LogicalResult WindowOp::verify() {
  TensorType input = tensorOf(getInput());
  TensorType result = tensorOf(getResult());
  if (!input.hasDim(getFrom()))
    return emitOpError() << "operand has no dimension '" << getFrom()
                         << "' (type " << input << ")";
  if (getTo() != getFrom() && input.hasDim(getTo()))
    return emitOpError() << "operand already has dimension '" << getTo()
                         << "' (type " << input << ")";
  // The operand's dims with `from` renamed `to` (its size free), in any
  // order: a window may also transpose.
  bool same = input.getRank() == result.getRank() &&
              input.getElementType() == result.getElementType();
  for (NamedDim in : input.getDims()) {
    StringRef name = in.name.getValue() == getFrom() ? getTo() : in.name;
    std::optional<unsigned> at = result.getDimIndex(name);
    same = same && at &&
           (name == getTo() || result.getDims()[*at].size == in.size);
  }
  if (!same)
    return emitOpError() << "result must be the operand with '" << getFrom()
                         << "' replaced by '" << getTo()
                         << "' (its dims in any order), got " << result
                         << " from " << input;
  return success();
}

/// Contract: `dim` is a dimension of the operand; 1 <= k <= its size.
LogicalResult TopKOp::verify() {
  TensorType input = tensorOf(getInput());
  std::optional<unsigned> index = input.getDimIndex(getDim());
  if (!index)
    return emitOpError() << "operand has no dimension '" << getDim()
                         << "' (type " << input << ")";
  int64_t size = input.getDims()[*index].size;
  int64_t k = static_cast<int64_t>(getK());
  if (k < 1 || k > size)
    return emitOpError() << "k must be in [1, " << size << "] (the size of '"
                         << getDim() << "'), got " << k;
  return success();
}

/// Contract: `dim` is a dimension of the operand.
LogicalResult CumsumOp::verify() {
  if (!tensorOf(getInput()).hasDim(getDim()))
    return emitOpError() << "operand has no dimension '" << getDim()
                         << "' (type " << getInput().getType() << ")";
  return success();
}

/// Contract: the result has the indices' dimensions (same sizes) plus `dim`,
/// which the indices lack.
LogicalResult OneHotOp::verify() {
  TensorType indices = tensorOf(getIndices());
  TensorType result = tensorOf(getResult());
  if (indices.hasDim(getDim()))
    return emitOpError() << "indices already have dimension '" << getDim()
                         << "' (type " << indices << ")";
  if (!result.hasDim(getDim()))
    return emitOpError() << "result has no dimension '" << getDim()
                         << "' (type " << result << ")";
  llvm::StringMap<std::pair<int64_t, std::string>> sizes;
  if (failed(recordDims(*this, indices, "the indices", sizes)) ||
      failed(recordDims(*this, result, "the result", sizes)))
    return failure();
  if (result.getRank() != indices.getRank() + 1 ||
      llvm::any_of(indices.getDims(), [&](const NamedDim &dim) {
        return !result.hasDim(dim.name.getValue());
      }))
    return emitOpError() << "result must have the indices' dimensions plus '"
                         << getDim() << "', got " << result << " from "
                         << indices;
  return success();
}

/// Contract: `dim` is an operand dimension; the result has the others, with
/// their sizes, in the operand's order.
/// Contract: `dim` is a dimension of the operand; the result has the
/// operand's other dimensions, in order.
static LogicalResult verifyDropsDim(Operation *op, StringRef dim) {
  TensorType input = tensorOf(op->getOperand(0));
  TensorType result = tensorOf(op->getResult(0));
  if (!input.hasDim(dim))
    return op->emitOpError()
           << "operand has no dimension '" << dim << "' (type " << input << ")";
  llvm::SmallVector<NamedDim> expected;
  for (const NamedDim &named : input.getDims())
    if (named.name.getValue() != dim)
      expected.push_back(named);
  if (llvm::ArrayRef<NamedDim>(expected) != result.getDims())
    return op->emitOpError() << "result must have the operand's dimensions "
                                "without '"
                             << dim << "' in order, got " << result;
  return success();
}

LogicalResult ArgmaxOp::verify() { return verifyDropsDim(*this, getDim()); }

/// Contract: as argmax, and the result keeps the element type.
LogicalResult LogSumExpOp::verify() {
  if (tensorOf(getInput()).getElementType() !=
      tensorOf(getResult()).getElementType())
    return emitOpError() << "element types must match, got "
                         << tensorOf(getInput()).getElementType() << " -> "
                         << tensorOf(getResult()).getElementType();
  return verifyDropsDim(*this, getDim());
}

//===----------------------------------------------------------------------===//
// TrainOp
//===----------------------------------------------------------------------===//

/// Contract:
///  - the loss is a scalar;
///  - the optimizer is known and every hyper-parameter is one it takes, as a
///    number; `lr` is given and positive.
static constexpr StringLiteral kCommonHyperparams[] = {
    "clip_norm", "warmup_steps", "decay_steps", "min_lr_ratio", "sync_every"};

/// The range each hyper-parameter must lie in: [lo, hi] or [lo, hi).
struct HyperRange {
  StringRef name;
  double lo, hi;
  bool hiOpen;
  bool integral;
};
static constexpr double kInf = 1e300;
static const HyperRange kHyperRanges[] = {
    {"momentum", 0, 1, true, false},
    {"beta1", 0, 1, true, false},
    {"beta2", 0, 1, true, false},
    {"eps", 0, kInf, false, false},
    {"weight_decay", 0, kInf, false, false},
    {"clip_norm", 0, kInf, false, false},
    {"warmup_steps", 0, kInf, false, true},
    {"decay_steps", 0, kInf, false, true},
    {"min_lr_ratio", 0, 1, false, false},
    {"sync_every", 1, kInf, false, true}};

LogicalResult TrainOp::verify() {
  TensorType loss = tensorOf(getLoss());
  if (loss.getRank() != 0)
    return emitOpError() << "loss must be a scalar, got " << loss;
  static const llvm::StringMap<std::vector<StringRef>> known = {
      {"sgd", {"lr"}},
      {"momentum", {"lr", "momentum"}},
      {"adam", {"lr", "beta1", "beta2", "eps"}},
      {"adamw", {"lr", "beta1", "beta2", "eps", "weight_decay"}}};
  auto it = known.find(getOptimizer());
  if (it == known.end())
    return emitOpError() << "unknown optimizer '" << getOptimizer()
                         << "'; expected sgd, momentum, adam or adamw";
  for (NamedAttribute entry : getHyperparams()) {
    StringRef key = entry.getName().getValue();
    bool common = llvm::is_contained(kCommonHyperparams, key);
    if (!common && !llvm::is_contained(it->second, key))
      return emitOpError() << "optimizer '" << getOptimizer()
                           << "' has no hyper-parameter '" << key << "'";
    double value;
    if (auto f = llvm::dyn_cast<FloatAttr>(entry.getValue()))
      value = f.getValueAsDouble();
    else if (auto i = llvm::dyn_cast<IntegerAttr>(entry.getValue()))
      value = static_cast<double>(i.getInt());
    else
      return emitOpError() << "hyper-parameter '" << key
                           << "' must be a number, got " << entry.getValue();
    for (const HyperRange &range : kHyperRanges) {
      if (range.name != key)
        continue;
      bool inside = value >= range.lo &&
                    (range.hiOpen ? value < range.hi : value <= range.hi);
      if (!inside || (range.integral && value != std::trunc(value))) {
        auto number = [](double x) {
          char text[32];
          std::snprintf(text, sizeof(text), "%g", x);
          return std::string(text);
        };
        InFlightDiagnostic diag = emitOpError();
        diag << "hyper-parameter '" << key << "' must be ";
        if (range.integral)
          diag << "an integer ";
        diag << ">= " << number(range.lo);
        if (range.hi < kInf)
          diag << " and " << (range.hiOpen ? "< " : "<= ") << number(range.hi);
        return diag << ", got " << number(value);
      }
    }
  }
  auto lr = getHyperparams().getAs<FloatAttr>("lr");
  if (!lr)
    return emitOpError() << "optimizer '" << getOptimizer()
                         << "' needs a learning rate 'lr' (a float)";
  if (!(lr.getValueAsDouble() > 0))
    return emitOpError() << "learning rate must be positive, got "
                         << lr.getValueAsDouble();
  return success();
}

} // namespace mtf
} // namespace mlir

//===----------------------------------------------------------------------===//
// FusedOp
//===----------------------------------------------------------------------===//

namespace mlir {
namespace mtf {

/// Whether `op` may stand in an mtf.fused body (besides its yield).
bool isFusible(Operation *op) { return llvm::isa<FusibleOpInterface>(op); }

/// The dim names of `type`, as a set.
static llvm::StringSet<> dimSet(TensorType type) {
  llvm::StringSet<> names;
  for (const NamedDim &dim : type.getDims())
    names.insert(dim.name.getValue());
  return names;
}

static std::string joinNames(const llvm::StringSet<> &names) {
  std::vector<std::string> sorted;
  for (const auto &name : names)
    sorted.push_back(name.getKey().str());
  std::sort(sorted.begin(), sorted.end());
  std::string text;
  for (const std::string &name : sorted)
    text += (text.empty() ? "" : ", ") + name;
  return "[" + text + "]";
}

LogicalResult FusedOp::verifyRegions() {
  Block &body = getBodyBlock();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "has " << getInputs().size()
                         << " operands but its body takes "
                         << body.getNumArguments();
  for (auto [index, input, arg] :
       llvm::enumerate(getInputs(), body.getArguments()))
    if (input.getType() != arg.getType())
      return emitOpError() << "operand #" << index << " has type "
                           << input.getType() << " but body argument #" << index
                           << " has type " << arg.getType();
  auto yield = llvm::cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "yields " << yield.getValues().size()
                         << " value(s) whose types differ from its "
                         << getNumResults() << " result type(s)";
  // The iteration space: the dims of the widest body value; every
  // reduction reduces the same dims out of it.
  llvm::StringSet<> space, reduced;
  bool reduces = false;
  llvm::StringMap<std::pair<int64_t, std::string>> sizes;
  for (Operation &op : body.without_terminator()) {
    if (!isFusible(&op))
      return op.emitOpError() << "cannot stand in an mtf.fused body (only "
                                 "f32 elementwise ops, constants and "
                                 "reductions can)";
    for (Value value : op.getResults())
      if (failed(recordDims(&op, tensorOf(value), "the fused body", sizes)))
        return failure();
    if (llvm::isa<ConstantOp>(op))
      continue;
    llvm::StringSet<> dims = dimSet(tensorOf(op.getOperand(0)));
    if (llvm::isa<ReductionOpInterface>(op)) {
      llvm::StringSet<> result = dimSet(tensorOf(op.getResult(0))), gone;
      for (const auto &name : dims)
        if (!result.contains(name.getKey()))
          gone.insert(name.getKey());
      if (reduces && joinNames(gone) != joinNames(reduced))
        return op.emitOpError()
               << "reduces " << joinNames(gone)
               << " but the fused body's other reductions reduce "
               << joinNames(reduced);
      reduces = true;
      reduced = std::move(gone);
    } else {
      dims = dimSet(tensorOf(op.getResult(0)));
    }
    if (dims.size() > space.size())
      space = std::move(dims);
  }
  for (Operation &op : body.without_terminator()) {
    if (llvm::isa<ConstantOp>(op))
      continue;
    llvm::StringSet<> dims = dimSet(tensorOf(op.getResult(0)));
    bool full = joinNames(dims) == joinNames(space);
    bool row = dims.size() + reduced.size() == space.size() &&
               llvm::all_of(dims, [&](const auto &name) {
                 return space.contains(name.getKey()) &&
                        !reduced.contains(name.getKey());
               });
    if (!full && !(reduces && row))
      return op.emitOpError()
             << "has dims " << joinNames(dims)
             << " but every value of the fused body has its dims "
             << joinNames(space)
             << (reduces ? " or those without the reduced " + joinNames(reduced)
                         : std::string());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Started collectives
//===----------------------------------------------------------------------===//

LogicalResult
WaitOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                         ValueRange operands, DictionaryAttr attributes,
                         OpaqueProperties properties, RegionRange regions,
                         SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attributes, properties, regions);
  llvm::append_range(inferred, adaptor.getValues().getTypes());
  return success();
}

Value WaitOp::throughWait(Value value) {
  if (auto wait = value.getDefiningOp<WaitOp>())
    return wait.getValues()[llvm::cast<OpResult>(value).getResultNumber()];
  return value;
}

WaitOp WaitOp::of(Operation *op) {
  if (!op || op->getNumResults() == 0 || !op->getResult(0).hasOneUse())
    return {};
  return llvm::dyn_cast<WaitOp>(*op->getResult(0).getUsers().begin());
}

/// Contract:
///  - `values` are every result of one collective step (one that
///    communicates over a device group), in order, and nothing else uses
///    them;
///  - `kept` are that collective's operands, in order;
///  - the collective comes before the wait in the wait's block.
LogicalResult WaitOp::verify() {
  if (getValues().empty())
    return emitOpError() << "completes no collective: `values` is empty";
  Operation *start = getStart();
  std::optional<meshc::runtime::OpKind> kind =
      start ? stepKindOf(start) : std::nullopt;
  if (!kind ||
      meshc::runtime::stepGroup(*kind) != meshc::runtime::StepGroup::Collective)
    return emitOpError() << "value 0 is not the result of a collective step";
  if (getValues().size() != start->getNumResults() ||
      !llvm::equal(getValues(), start->getResults()))
    return emitOpError() << "`values` must be every result of '"
                         << start->getName() << "' in order ("
                         << start->getNumResults() << "), got "
                         << getValues().size();
  for (Value value : getValues())
    if (!value.hasOneUse())
      return emitOpError() << "a started collective's results are used by "
                              "its wait alone; use the wait's results";
  if (!llvm::equal(getKept(), start->getOperands()))
    return emitOpError() << "`kept` must be the operands of '"
                         << start->getName() << "' in order ("
                         << start->getNumOperands() << "), got "
                         << getKept().size();
  if (start->getBlock() != (*this)->getBlock())
    return emitOpError() << "its collective is in another block";
  if (!getCarried())
    return success();
  // A carried wait: its collective completes in the next iteration.
  auto loop = llvm::dyn_cast_or_null<LoopOp>((*this)->getParentOp());
  if (!loop)
    return emitOpError() << "is carried but not in a loop body";
  if (!resultsOnlyStacked())
    return emitOpError() << "is carried, so its results may only be "
                            "yielded as stacked values (each iteration's "
                            "own slice), through views or not";
  Operation *resume = getResumePoint();
  if (!resume)
    return emitOpError() << "is carried (" << *getCarried()
                         << ") but no op of its block resumes it ('"
                         << MtfDialect::kResumesAttrName << "')";
  if (start->isBeforeInBlock(resume))
    return emitOpError() << "is carried, so it must resume at or before its "
                            "collective";
  return success();
}

bool WaitOp::resultsOnlyStacked() {
  auto loop = llvm::dyn_cast_or_null<LoopOp>((*this)->getParentOp());
  if (!loop)
    return false;
  Operation *yield = (*this)->getBlock()->getTerminator();
  SmallVector<Value> work(getResults());
  while (!work.empty()) {
    Value value = work.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (user->hasTrait<View>() && user->getNumResults() == 1)
        work.push_back(user->getResult(0));
      else if (user != yield ||
               use.getOperandNumber() < loop.getCarried().size())
        return false;
    }
  }
  return true;
}

Operation *WaitOp::getResumePoint() {
  std::optional<uint64_t> number = getCarried();
  if (!number)
    return nullptr;
  for (Operation &op : *(*this)->getBlock())
    if (auto resumes =
            op.getAttrOfType<DenseI64ArrayAttr>(MtfDialect::kResumesAttrName))
      if (llvm::is_contained(resumes.asArrayRef(),
                             static_cast<int64_t>(*number)))
        return &op;
  return nullptr;
}

SmallVector<Operation *> WaitOp::resumedAt(Operation *op) {
  SmallVector<Operation *> waits;
  auto resumes =
      op->getAttrOfType<DenseI64ArrayAttr>(MtfDialect::kResumesAttrName);
  if (!resumes)
    return waits;
  for (auto wait : op->getBlock()->getOps<WaitOp>())
    if (std::optional<uint64_t> number = wait.getCarried();
        number &&
        llvm::is_contained(resumes.asArrayRef(), static_cast<int64_t>(*number)))
      waits.push_back(wait);
  return waits;
}

} // namespace mtf
} // namespace mlir
