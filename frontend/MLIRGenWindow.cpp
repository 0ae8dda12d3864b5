//===- MLIRGenWindow.cpp - slice, pad, shift and concat of .mtf -----------===//
//
// The builtins that move elements along one dimension all become
// mtf.window (a window of one dimension at an offset, zeros outside):
//
//   slice(x, d, begin, new)      d -> new, offset begin      (new shorter)
//   pad(x, d, before, new)       d -> new, offset -before    (new longer)
//   shift(x, d, k)               d -> d,   offset -k         (zeros enter)
//   concat(a, da, b, db, new)    pad(a, da, 0, new) + pad(b, db, |da|, new)
//
//===----------------------------------------------------------------------===//

#include "frontend/MLIRGen.h"

#include <cmath>

using namespace meshc::frontend;
using llvm::failure;
using llvm::FailureOr;
namespace mtf = mlir::mtf;

namespace {
mtf::TensorType tensorType(mlir::Value value) {
  return llvm::cast<mtf::TensorType>(value.getType());
}
} // namespace

FailureOr<int64_t> MLIRGen::integerArg(const Expr &expr, Scope &scope,
                                       llvm::StringRef what) {
  FailureOr<Operand> operand = genExpr(expr, scope);
  if (failed(operand))
    return failure();
  if (!operand->isNumber() || operand->number != std::trunc(operand->number) ||
      std::fabs(operand->number) > 1e15)
    return error(expr.getLoc()) << what << " must be an integer number";
  return static_cast<int64_t>(operand->number);
}

FailureOr<mlir::Value> MLIRGen::genWindowOp(mlir::Value input,
                                            const Ident &from, const Ident &to,
                                            int64_t offset, Loc loc) {
  const DimInfo *toInfo = lookupDim(to);
  if (!toInfo)
    return failure();
  mtf::TensorType type = tensorType(input);
  if (to.name != from.name && type.hasDim(to.name))
    return error(to.loc) << "the tensor already has dimension '" << to.name
                         << "' (its type is " << formatType(type) << ")";
  if (failed(checkTensorBytes(mtf::WindowOp::inferResultType(
                                  input, from.name, to.name, toInfo->size),
                              loc)))
    return failure();
  return create<mtf::WindowOp>(location(loc), input, from.name, to.name,
                               toInfo->size, offset)
      .getResult();
}

FailureOr<MLIRGen::Operand> MLIRGen::genWindow(const BuiltinExpr &call,
                                               Scope &scope) {
  std::string user = ("'" + call.name + "'").str();
  FailureOr<mlir::Value> input = genTensor(*call.operands[0], scope);
  if (failed(input) || failed(requireFloat(*input, user, call.getLoc())))
    return failure();
  const Ident &dim = call.dims[0];
  if (failed(requireDim(*input, dim, "take " + user + " along")))
    return failure();
  int64_t size = lookupDim(dim)->size;
  Operand result;
  result.loc = call.getLoc();
  FailureOr<mlir::Value> value;
  switch (call.builtin) {
  case Builtin::Shift: {
    FailureOr<int64_t> k =
        integerArg(*call.operands[1], scope, "the offset of 'shift'");
    if (failed(k))
      return failure();
    value = genWindowOp(*input, dim, dim, -*k, call.getLoc());
    break;
  }
  case Builtin::Slice:
  case Builtin::Pad: {
    bool slice = call.builtin == Builtin::Slice;
    FailureOr<int64_t> start = integerArg(
        *call.operands[1], scope,
        slice ? "the start of 'slice'" : "the zeros before, in 'pad',");
    const DimInfo *to = lookupDim(call.dims[1]);
    if (failed(start) || !to)
      return failure();
    if (slice && (*start < 0 || *start + to->size > size))
      return error(call.operands[1]->getLoc())
             << "slice [" << *start << ", " << *start + to->size << ") of '"
             << call.dims[1].name << "' (size " << to->size
             << ") does not fit in '" << dim.name << "' (size " << size << ")";
    if (!slice && (*start < 0 || size + *start > to->size))
      return error(call.operands[1]->getLoc())
             << "'" << dim.name << "' (size " << size << ") with " << *start
             << " zeros before does not fit in '" << call.dims[1].name
             << "' (size " << to->size << ")";
    value = genWindowOp(*input, dim, call.dims[1], slice ? *start : -*start,
                        call.getLoc());
    break;
  }
  default: { // concat(a, da, b, db, new)
    FailureOr<mlir::Value> other = genTensor(*call.operands[1], scope);
    const Ident &otherDim = call.dims[1], &to = call.dims[2];
    if (failed(other) || failed(requireFloat(*other, user, call.getLoc())) ||
        failed(requireDim(*other, otherDim, "take " + user + " along",
                          "the second tensor")))
      return failure();
    int64_t otherSize = lookupDim(otherDim)->size;
    const DimInfo *toInfo = lookupDim(to);
    if (!toInfo)
      return failure();
    if (size + otherSize != toInfo->size)
      return error(to.loc) << "'" << to.name << "' (size " << toInfo->size
                           << ") must be the sum of the sizes of '" << dim.name
                           << "' (" << size << ") and '" << otherDim.name
                           << "' (" << otherSize << ")";
    FailureOr<mlir::Value> first =
        genWindowOp(*input, dim, to, 0, call.getLoc());
    FailureOr<mlir::Value> second =
        genWindowOp(*other, otherDim, to, -size, call.getLoc());
    if (failed(first) || failed(second))
      return failure();
    if (tensorType(*first) != tensorType(*second))
      return error(call.getLoc())
             << "'concat' needs tensors that differ only in the joined "
                "dimension, got "
             << formatType(tensorType(*input)) << " and "
             << formatType(tensorType(*other));
    value = create<mtf::AddOp>(location(call.getLoc()), tensorType(*first),
                               *first, *second)
                .getResult();
    break;
  }
  }
  if (failed(value))
    return failure();
  result.value = *value;
  return result;
}
