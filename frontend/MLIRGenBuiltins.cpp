//===- MLIRGenBuiltins.cpp - Builtin calls of .mtf to the mtf dialect -----===//
//
// One case per builtin: the checks its operands must pass (element types,
// dimensions it names) and the type of its result.
//
//===----------------------------------------------------------------------===//

#include "frontend/MLIRGen.h"

#include "llvm/ADT/StringMap.h"

using namespace meshc::frontend;
using llvm::failure;
using llvm::FailureOr;
using llvm::LogicalResult;
using llvm::success;
namespace mtf = mlir::mtf;

namespace {
mtf::TensorType tensorType(mlir::Value value) {
  return llvm::cast<mtf::TensorType>(value.getType());
}

/// "[batch, hidden]".
std::string formatDims(llvm::ArrayRef<mtf::NamedDim> dims) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(
      dims, os, [&](const mtf::NamedDim &dim) { os << dim.name.getValue(); });
  return text + "]";
}
} // namespace

FailureOr<MLIRGen::Operand> MLIRGen::genBuiltin(const BuiltinExpr &call,
                                                Scope &scope) {
  Operand result;
  result.loc = call.getLoc();
  std::string user = ("'" + call.name + "'").str();
  if (call.builtin == Builtin::Maximum || call.builtin == Builtin::Minimum ||
      call.builtin == Builtin::Equal || call.builtin == Builtin::Less) {
    FailureOr<Operand> lhs = genExpr(*call.operands[0], scope);
    if (failed(lhs))
      return failure();
    FailureOr<Operand> rhs = genExpr(*call.operands[1], scope);
    if (failed(rhs))
      return failure();
    BinaryKind kind = call.builtin == Builtin::Maximum   ? BinaryKind::Max
                      : call.builtin == Builtin::Minimum ? BinaryKind::Min
                      : call.builtin == Builtin::Equal   ? BinaryKind::Equal
                                                         : BinaryKind::Less;
    return genBinary(kind, call.getLoc(), *lhs, *rhs);
  }

  if (call.builtin == Builtin::Slice || call.builtin == Builtin::Pad ||
      call.builtin == Builtin::Shift || call.builtin == Builtin::Concat)
    return genWindow(call, scope);
  if (call.builtin == Builtin::TopK) {
    FailureOr<mlir::Value> input = genTensor(*call.operands[0], scope);
    if (failed(input) ||
        failed(requireFloat(*input, "'top_k'", call.getLoc())) ||
        failed(requireDim(*input, call.dims[0], "take 'top_k' along")))
      return failure();
    FailureOr<int64_t> k =
        integerArg(*call.operands[1], scope, "the k of 'top_k'");
    if (failed(k))
      return failure();
    int64_t size = lookupDim(call.dims[0])->size;
    if (*k < 1 || *k > size)
      return error(call.operands[1]->getLoc())
             << "the k of 'top_k' must be in [1, " << size << "] (the size of '"
             << call.dims[0].name << "'), got " << *k;
    result.value = create<mtf::TopKOp>(location(call.getLoc()), *input,
                                       call.dims[0].name, *k)
                       .getResult();
    return result;
  }

  // range(d): no tensor operand.
  if (call.builtin == Builtin::Range) {
    const DimInfo *info = lookupDim(call.dims[0]);
    if (!info)
      return failure();
    if (failed(checkTensorBytes(mtf::RangeOp::inferResultType(
                                    context, call.dims[0].name, info->size),
                                call.getLoc())))
      return failure();
    result.value = create<mtf::RangeOp>(location(call.getLoc()),
                                        call.dims[0].name, info->size)
                       .getResult();
    return result;
  }

  // dropout(x, rate): the rate is a number, not a tensor.
  std::optional<double> dropoutRate;
  if (call.builtin == Builtin::Dropout) {
    auto *rate = llvm::dyn_cast<NumberExpr>(call.operands[1].get());
    if (!rate || !(rate->value >= 0) || !(rate->value < 1))
      return error(call.operands[1]->getLoc())
             << "the rate of 'dropout' must be a number in [0, 1)";
    dropoutRate = rate->value;
  }
  llvm::SmallVector<mlir::Value> operands;
  for (const ExprPtr &operand : call.operands) {
    if (dropoutRate && operand == call.operands[1])
      break;
    FailureOr<mlir::Value> value = genTensor(*operand, scope);
    if (failed(value))
      return failure();
    operands.push_back(*value);
  }
  mlir::Location loc = location(call.getLoc());
  mlir::Value input = operands.front();
  auto unary = [&](auto opTag) -> FailureOr<Operand> {
    using OpT = decltype(opTag);
    if (failed(requireFloat(input, user, call.getLoc())))
      return failure();
    result.value = create<OpT>(loc, input);
    return result;
  };
  FailureOr<mlir::Value> value;
  switch (call.builtin) {
#define MESHC_UNARY_BUILTIN(E, NAME, OP)                                       \
  case Builtin::E:                                                             \
    return unary(OP());
#include "frontend/Builtins.def"
  case Builtin::Cast: {
    FailureOr<mlir::Type> elementType = resolveElementType(call.elementType);
    if (failed(elementType))
      return failure();
    value = create<mtf::CastOp>(loc, input, *elementType).getResult();
    break;
  }
  case Builtin::Softmax:
    if (failed(requireFloat(input, user, call.getLoc())) ||
        failed(requireDim(input, call.dims[0], "take the softmax over")))
      return failure();
    value = create<mtf::SoftmaxOp>(loc, input, call.dims[0].name).getResult();
    break;
  case Builtin::Cumsum:
    if (failed(requireFloat(input, user, call.getLoc())) ||
        failed(requireDim(input, call.dims[0], "take the running sum over")))
      return failure();
    value =
        create<mtf::CumsumOp>(loc, input, call.dims[0].name, false).getResult();
    break;
  case Builtin::Einsum:
    value = genEinsum(call, operands);
    break;
  case Builtin::Sum:
  case Builtin::Mean:
  case Builtin::Max:
    value = genReduce(call, input);
    break;
  case Builtin::SoftmaxCrossEntropy:
    value = genSoftmaxCrossEntropy(call, operands[0], operands[1]);
    break;
  case Builtin::Rename:
    value = genRename(call, input);
    break;
  case Builtin::Constrain:
    value = genConstrain(call, input);
    break;
  case Builtin::OneHot: {
    if (!tensorType(input).getElementType().isInteger(32))
      return error(call.operands[0]->getLoc())
             << "the indices of 'one_hot' must be i32, got "
             << formatType(tensorType(input));
    const Ident &dim = call.dims[0];
    if (tensorType(input).hasDim(dim.name))
      return error(dim.loc) << "the indices of 'one_hot' already have "
                               "dimension '"
                            << dim.name << "'";
    const DimInfo *info = lookupDim(dim);
    if (!info)
      return failure();
    if (failed(checkTensorBytes(
            mtf::OneHotOp::inferResultType(input, dim.name, info->size),
            call.getLoc())))
      return failure();
    value = create<mtf::OneHotOp>(loc, input, dim.name, info->size).getResult();
    break;
  }
  case Builtin::LogSumExp: {
    if (failed(requireFloat(input, user, call.getLoc())) ||
        failed(requireDim(input, call.dims[0], "take the logsumexp over")))
      return failure();
    value = create<mtf::LogSumExpOp>(loc, input, call.dims[0].name).getResult();
    break;
  }
  case Builtin::Argmax: {
    if (failed(requireFloat(input, user, call.getLoc())) ||
        failed(requireDim(input, call.dims[0], "take the argmax over")))
      return failure();
    value = create<mtf::ArgmaxOp>(loc, input, call.dims[0].name).getResult();
    break;
  }
  case Builtin::Dropout: {
    if (failed(requireFloat(input, user, call.getLoc())))
      return failure();
    std::string name = "dropout_" + std::to_string(nextDropout++);
    mlir::Value mask =
        create<mtf::DropoutMaskOp>(
            loc, tensorType(input), stringAttr(name),
            mlir::FloatAttr::get(mlir::Float64Type::get(context), *dropoutRate))
            .getResult();
    result.value = create<mtf::MulOp>(loc, input, mask).getResult();
    return result;
  }
  case Builtin::Maximum:
  case Builtin::Minimum:
  case Builtin::Equal:
  case Builtin::Less:
  case Builtin::Range:
  case Builtin::Slice:
  case Builtin::Pad:
  case Builtin::Shift:
  case Builtin::Concat:
  case Builtin::TopK:
    llvm_unreachable("handled above");
  }
  if (failed(value))
    return failure();
  result.value = *value;
  return result;
}

FailureOr<mlir::Value>
MLIRGen::genEinsum(const BuiltinExpr &call,
                   llvm::ArrayRef<mlir::Value> operands) {
  mtf::TensorType first = tensorType(operands.front());
  std::string types;
  for (auto [operand, expr] : llvm::zip_equal(operands, call.operands)) {
    mtf::TensorType type = tensorType(operand);
    if (failed(requireFloat(operand, "'einsum'", expr->getLoc())))
      return failure();
    if (type.getElementType() != first.getElementType())
      return error(expr->getLoc())
             << "operands of 'einsum' have different element types, "
             << formatType(first) << " and " << formatType(type)
             << "; convert one with cast(x, "
             << formatElementType(first.getElementType()) << ")";
    types += (types.empty() ? "" : ", ") + formatType(type);
  }
  llvm::SmallVector<llvm::StringRef> resultDims;
  llvm::StringMap<Loc> seen;
  for (const Ident &dim : call.dims) {
    auto [it, inserted] = seen.try_emplace(dim.name, dim.loc);
    if (!inserted) {
      Error diag = error(dim.loc);
      diag << "dimension '" << dim.name
           << "' appears twice in the output of 'einsum'";
      diag.note(it->second) << "first listed here";
      return failure();
    }
    auto owner = llvm::find_if(operands, [&](mlir::Value operand) {
      return tensorType(operand).hasDim(dim.name);
    });
    if (owner == operands.end())
      return error(dim.loc)
             << "output dimension '" << dim.name
             << "' of 'einsum' is in none of its operands (" << types << ")";
    resultDims.push_back(dim.name);
  }
  if (failed(checkTensorBytes(
          mtf::EinsumOp::inferResultType(operands, resultDims), call.getLoc())))
    return failure();
  return create<mtf::EinsumOp>(location(call.getLoc()), operands, resultDims)
      .getResult();
}

FailureOr<mlir::Value> MLIRGen::genReduce(const BuiltinExpr &call,
                                          mlir::Value input) {
  if (failed(requireFloat(input, ("'" + call.name + "'").str(), call.getLoc())))
    return failure();
  mtf::TensorType inputType = tensorType(input);
  llvm::StringMap<Loc> reduced;
  for (const Ident &dim : call.dims) {
    if (failed(requireDim(input, dim, "reduce over")))
      return failure();
    auto [it, inserted] = reduced.try_emplace(dim.name, dim.loc);
    if (!inserted) {
      Error diag = error(dim.loc);
      diag << "dimension '" << dim.name << "' is listed twice";
      diag.note(it->second) << "first listed here";
      return failure();
    }
  }
  // Without a dim list: over every dim.
  llvm::SmallVector<llvm::StringRef> names;
  for (const mtf::NamedDim &dim : inputType.getDims())
    if (!call.hasDimList || reduced.count(dim.name.getValue()))
      names.push_back(dim.name.getValue());
  mlir::Location loc = location(call.getLoc());
  if (call.builtin == Builtin::Sum)
    return create<mtf::ReduceSumOp>(loc, input, names).getResult();
  if (call.builtin == Builtin::Mean)
    return create<mtf::ReduceMeanOp>(loc, input, names).getResult();
  return create<mtf::ReduceMaxOp>(loc, input, names).getResult();
}

FailureOr<mlir::Value> MLIRGen::genSoftmaxCrossEntropy(const BuiltinExpr &call,
                                                       mlir::Value logits,
                                                       mlir::Value labels) {
  mtf::TensorType logitsType = tensorType(logits);
  mtf::TensorType labelsType = tensorType(labels);
  const Ident &dim = call.dims[0];
  if (!llvm::isa<mlir::FloatType>(logitsType.getElementType()))
    return error(call.operands[0]->getLoc())
           << "the logits of 'softmax_cross_entropy' must be floating-point, "
              "got "
           << formatType(logitsType);
  if (!labelsType.getElementType().isInteger(32))
    return error(call.operands[1]->getLoc())
           << "the labels of 'softmax_cross_entropy' must be i32 class "
              "indices, got "
           << formatType(labelsType);
  if (failed(requireDim(logits, dim, "take the cross-entropy over",
                        "the logits tensor")))
    return failure();
  llvm::SmallVector<mtf::NamedDim> expected;
  for (const mtf::NamedDim &logitsDim : logitsType.getDims())
    if (logitsDim.name.getValue() != dim.name)
      expected.push_back(logitsDim);
  bool matches = labelsType.getRank() == expected.size() &&
                 llvm::all_of(expected, [&](const mtf::NamedDim &d) {
                   return labelsType.hasDim(d.name.getValue());
                 });
  if (!matches)
    return error(call.operands[1]->getLoc())
           << "the labels of 'softmax_cross_entropy' must have the "
              "dimensions of the logits without '"
           << dim.name << "', " << formatDims(expected) << ", got "
           << formatType(labelsType);
  return create<mtf::SoftmaxCrossEntropyOp>(location(call.getLoc()), logits,
                                            labels, dim.name)
      .getResult();
}

FailureOr<mlir::Value> MLIRGen::genRename(const BuiltinExpr &call,
                                          mlir::Value input) {
  const Ident &from = call.dims[0];
  const Ident &to = call.dims[1];
  if (failed(requireDim(input, from, "rename")))
    return failure();
  mtf::TensorType inputType = tensorType(input);
  if (from.name != to.name && inputType.hasDim(to.name))
    return error(to.loc) << "cannot rename '" << from.name << "' to '"
                         << to.name << "': the tensor already has a dimension '"
                         << to.name << "' (its type is "
                         << formatType(inputType) << ")";
  int64_t fromSize =
      inputType.getDims()[*inputType.getDimIndex(from.name)].size;
  int64_t toSize = dims.find(to.name)->second.size;
  if (fromSize != toSize)
    return error(to.loc) << "cannot rename '" << from.name << "' (size "
                         << fromSize << ") to '" << to.name << "' (size "
                         << toSize << "): the sizes differ";
  return create<mtf::RenameOp>(location(call.getLoc()), input, from.name,
                               to.name)
      .getResult();
}

FailureOr<mlir::Value> MLIRGen::genConstrain(const BuiltinExpr &call,
                                             mlir::Value input) {
  llvm::SmallVector<mtf::DimSplit> splits;
  llvm::StringMap<Loc> seenDims, seenAxes;
  for (const SplitSpec &split : call.splits) {
    if (failed(requireDim(input, split.dim, "constrain")))
      return failure();
    auto [dimIt, newDim] = seenDims.try_emplace(split.dim.name, split.dim.loc);
    if (!newDim) {
      Error diag = error(split.dim.loc);
      diag << "dimension '" << split.dim.name << "' is constrained twice";
      diag.note(dimIt->second) << "first constrained here";
      return failure();
    }
    llvm::SmallVector<mlir::Attribute> axes;
    for (const Ident &axis : split.axes) {
      auto [axisIt, newAxis] = seenAxes.try_emplace(axis.name, axis.loc);
      if (!newAxis) {
        Error diag = error(axis.loc);
        diag << "mesh axis '" << axis.name
             << "' is used twice in one constraint; a mesh axis splits one "
                "dimension of a tensor at most";
        diag.note(axisIt->second) << "first used here";
        return failure();
      }
      axes.push_back(stringAttr(axis.name));
    }
    splits.push_back(
        mtf::DimSplit{stringAttr(split.dim.name), builder.getArrayAttr(axes)});
  }
  auto layout = mtf::LayoutAttr::get(context, splits);
  return create<mtf::ConstrainOp>(location(call.getLoc()), input.getType(),
                                  input, layout)
      .getResult();
}
