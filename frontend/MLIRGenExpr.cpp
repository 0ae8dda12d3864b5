//===- MLIRGenExpr.cpp - Expressions of .mtf to the mtf dialect -----------===//
//
// The expression half of MLIRGen, where the type rules live:
// - numbers stay numbers (folded with each other) until combined with a
//   tensor, then become `mtf.constant` scalars of that tensor's element type;
// - a binary operation's result has the left operand's dimensions followed
//   by the right operand's other dimensions (broadcasting by name);
// - einsum's result has the dimensions listed after `->`, each taken from an
//   operand; the others are summed;
// - a reduction keeps the dimensions it does not list, in order.
// Names were resolved by checkExpr before any of this runs.
//
//===----------------------------------------------------------------------===//

#include "frontend/MLIRGen.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

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
} // namespace

FailureOr<mtf::TensorType>
MLIRGen::makeTensorType(llvm::ArrayRef<mtf::NamedDim> namedDims,
                        mlir::Type elementType, Loc loc) const {
  auto type = mtf::TensorType::get(context, namedDims, elementType);
  if (failed(checkTensorBytes(type, loc)))
    return failure();
  return type;
}

LogicalResult MLIRGen::checkTensorBytes(mtf::TensorType type, Loc loc) const {
  int64_t bytes = type.getElementType().getIntOrFloatBitWidth() / 8;
  for (const mtf::NamedDim &dim : type.getDims())
    if (llvm::MulOverflow(bytes, dim.size, bytes))
      return error(loc) << "the tensor type " << formatType(type)
                        << " is too large: its size in bytes does not fit "
                           "in 64 bits";
  return success();
}

LogicalResult MLIRGen::requireFloat(mlir::Value value, llvm::StringRef user,
                                    Loc loc) {
  if (llvm::isa<mlir::FloatType>(tensorType(value).getElementType()))
    return success();
  return error(loc) << user << " needs a floating-point tensor, got "
                    << formatType(tensorType(value));
}

LogicalResult MLIRGen::requireDim(mlir::Value value, const Ident &dim,
                                  llvm::StringRef action,
                                  llvm::StringRef what) {
  if (tensorType(value).hasDim(dim.name))
    return success();
  return error(dim.loc) << "cannot " << action << " '" << dim.name
                        << "': " << what
                        << " has no such dimension (its type is "
                        << formatType(tensorType(value)) << ")";
}

FailureOr<mlir::Value> MLIRGen::materialize(const Operand &number,
                                            mlir::Type elementType) {
  if (elementType.isInteger(32)) {
    if (number.number != std::trunc(number.number))
      return error(number.loc)
             << "the number " << formatNumber(number.number)
             << " is not an integer, but it is combined with an i32 tensor";
    if (std::fabs(number.number) > std::numeric_limits<int32_t>::max())
      return error(number.loc) << "the number " << formatNumber(number.number)
                               << " does not fit in i32";
  }
  auto type = mtf::TensorType::get(context, {}, elementType);
  return create<mtf::ConstantOp>(location(number.loc), type,
                                 builder.getF64FloatAttr(number.number))
      .getResult();
}

FailureOr<MLIRGen::Operand> MLIRGen::genExpr(const Expr &expr, Scope &scope) {
  ++expansionDepth;
  llvm::scope_exit restoreDepth([&] { --expansionDepth; });
  if (expansionDepth > kMaxExpandedNesting)
    return error(expr.getLoc())
           << "expression nests deeper than " << kMaxExpandedNesting
           << " levels once function calls are expanded";

  Operand result;
  result.loc = expr.getLoc();
  switch (expr.getKind()) {
  case Expr::Kind::Number:
    result.number = llvm::cast<NumberExpr>(expr).value;
    return result;
  case Expr::Kind::Name:
    result.value =
        scope.tensors.find(llvm::cast<NameExpr>(expr).name)->second.value;
    return result;
  case Expr::Kind::Negate: {
    FailureOr<Operand> operand =
        genExpr(*llvm::cast<NegateExpr>(expr).operand, scope);
    if (failed(operand))
      return failure();
    if (operand->isNumber()) {
      result.number = -operand->number;
      return result;
    }
    if (failed(requireFloat(operand->value, "'-'", expr.getLoc())))
      return failure();
    result.value =
        create<mtf::NegateOp>(location(expr.getLoc()), operand->value);
    return result;
  }
  case Expr::Kind::Binary: {
    const auto &binary = llvm::cast<BinaryExpr>(expr);
    FailureOr<Operand> lhs = genExpr(*binary.lhs, scope);
    if (failed(lhs))
      return failure();
    FailureOr<Operand> rhs = genExpr(*binary.rhs, scope);
    if (failed(rhs))
      return failure();
    BinaryKind kind = binary.op == '+'   ? BinaryKind::Add
                      : binary.op == '-' ? BinaryKind::Sub
                      : binary.op == '*' ? BinaryKind::Mul
                                         : BinaryKind::Div;
    return genBinary(kind, expr.getLoc(), *lhs, *rhs);
  }
  case Expr::Kind::Builtin:
    return genBuiltin(llvm::cast<BuiltinExpr>(expr), scope);
  case Expr::Kind::Call: {
    FailureOr<mlir::Value> value = genCall(llvm::cast<CallExpr>(expr), scope);
    if (failed(value))
      return failure();
    result.value = *value;
    return result;
  }
  case Expr::Kind::Repeat: {
    FailureOr<mlir::Value> value =
        genRepeat(llvm::cast<RepeatExpr>(expr), scope);
    if (failed(value))
      return failure();
    result.value = *value;
    return result;
  }
  case Expr::Kind::Checkpoint:
    return genCheckpoint(llvm::cast<CheckpointExpr>(expr), scope);
  }
  llvm_unreachable("unknown expression kind");
}

FailureOr<mlir::Value> MLIRGen::genTensor(const Expr &expr, Scope &scope) {
  FailureOr<Operand> operand = genExpr(expr, scope);
  if (failed(operand))
    return failure();
  if (operand->isNumber())
    return error(operand->loc)
           << "expected a tensor, got the number "
           << formatNumber(operand->number)
           << "; a number takes its element type from a tensor it is "
              "combined with, as in x * 3";
  return operand->value;
}

FailureOr<MLIRGen::Operand> MLIRGen::genBinary(BinaryKind kind, Loc loc,
                                               Operand lhs, Operand rhs) {
  static constexpr llvm::StringLiteral kSpellings[] = {
      "'+'",       "'-'",       "'*'",     "'/'",
      "'maximum'", "'minimum'", "'equal'", "'less'"};
  llvm::StringRef spelling = kSpellings[static_cast<int>(kind)];
  Operand result;
  result.loc = loc;
  if (lhs.isNumber() && rhs.isNumber()) {
    double a = lhs.number, b = rhs.number;
    switch (kind) {
    case BinaryKind::Add:
      result.number = a + b;
      break;
    case BinaryKind::Sub:
      result.number = a - b;
      break;
    case BinaryKind::Mul:
      result.number = a * b;
      break;
    case BinaryKind::Div:
      result.number = a / b;
      break;
    case BinaryKind::Max:
      result.number = std::max(a, b);
      break;
    case BinaryKind::Min:
      result.number = std::min(a, b);
      break;
    case BinaryKind::Equal:
      result.number = a == b ? 1.0 : 0.0;
      break;
    case BinaryKind::Less:
      result.number = a < b ? 1.0 : 0.0;
      break;
    }
    if (!std::isfinite(result.number))
      return error(loc) << "the constant expression is not finite (division "
                           "by zero or overflow)";
    return result;
  }
  for (auto [number, other] : {std::pair(&lhs, &rhs), std::pair(&rhs, &lhs)})
    if (number->isNumber()) {
      FailureOr<mlir::Value> constant =
          materialize(*number, tensorType(other->value).getElementType());
      if (failed(constant))
        return failure();
      number->value = *constant;
    }

  mtf::TensorType lhsType = tensorType(lhs.value);
  mtf::TensorType rhsType = tensorType(rhs.value);
  if (lhsType.getElementType() != rhsType.getElementType())
    return error(loc) << "operands of " << spelling
                      << " have different element types, "
                      << formatType(lhsType) << " and " << formatType(rhsType)
                      << "; convert one with cast(x, "
                      << formatElementType(lhsType.getElementType()) << ")";
  // The result type is the op's own inference (InferTypeOpInterface): the
  // union of the dims, lhs first; f32 for equal and less.
  mlir::Location opLoc = location(loc);
  switch (kind) {
  case BinaryKind::Add:
    result.value = create<mtf::AddOp>(opLoc, lhs.value, rhs.value);
    break;
  case BinaryKind::Sub:
    result.value = create<mtf::SubOp>(opLoc, lhs.value, rhs.value);
    break;
  case BinaryKind::Mul:
    result.value = create<mtf::MulOp>(opLoc, lhs.value, rhs.value);
    break;
  case BinaryKind::Div:
    result.value = create<mtf::DivOp>(opLoc, lhs.value, rhs.value);
    break;
  case BinaryKind::Max:
    result.value = create<mtf::MaxOp>(opLoc, lhs.value, rhs.value);
    break;
  case BinaryKind::Min:
    result.value = create<mtf::MinOp>(opLoc, lhs.value, rhs.value);
    break;
  case BinaryKind::Equal:
    result.value = create<mtf::EqualOp>(opLoc, lhs.value, rhs.value);
    break;
  case BinaryKind::Less:
    result.value = create<mtf::LessOp>(opLoc, lhs.value, rhs.value);
    break;
  }
  if (failed(checkTensorBytes(tensorType(result.value), loc)))
    return failure();
  return result;
}

FailureOr<mlir::Value> MLIRGen::genCall(const CallExpr &call, Scope &scope) {
  llvm::SmallVector<mlir::Value> args;
  for (const ExprPtr &arg : call.args) {
    FailureOr<mlir::Value> value = genTensor(*arg, scope);
    if (failed(value))
      return failure();
    args.push_back(*value);
  }
  return instantiate(*lookupFunction(call.callee, scope), args,
                     call.callee.loc);
}

FailureOr<MLIRGen::Operand>
MLIRGen::genCheckpoint(const CheckpointExpr &checkpoint, Scope &scope) {
  mlir::Operation *last = lastEmitted();
  FailureOr<Operand> result = genExpr(*checkpoint.inner, scope);
  if (failed(result))
    return failure();
  // Every op the expression emitted, function instances and repeats inside
  // it included, forms one recomputation group (mtf-remat); an enclosing
  // checkpoint retags them into its own.
  tagEmittedSince(last, mlir::mtf::MtfDialect::kCheckpointAttrName,
                  ("checkpoint_" + llvm::Twine(nextCheckpoint++)).str());
  return result;
}

void MLIRGen::tagEmittedSince(mlir::Operation *last, llvm::StringRef name,
                              llvm::StringRef value) {
  mlir::Block *block = builder.getInsertionBlock();
  if (block->empty())
    return;
  mlir::StringAttr tag = stringAttr(value);
  for (mlir::Operation *op = last ? last->getNextNode() : &block->front(); op;
       op = op->getNextNode())
    op->setAttr(name, tag);
}

LogicalResult MLIRGen::checkRepeatResult(const RepeatExpr &repeat,
                                         const FunctionInfo &function,
                                         mlir::Value input,
                                         mlir::Value output) {
  if (output.getType() == input.getType())
    return success();
  Error diag = error(repeat.callee.loc);
  diag << "'repeat' needs '" << repeat.callee.name
       << "' to return a tensor of the type of its first argument, but it "
          "turns "
       << formatType(tensorType(input)) << " into "
       << formatType(tensorType(output));
  diag.note(function.def->name.loc)
      << "'" << repeat.callee.name << "' is defined here";
  return failure();
}

FailureOr<mlir::Value> MLIRGen::genRepeat(const RepeatExpr &repeat,
                                          Scope &scope) {
  FunctionInfo &function = *lookupFunction(repeat.callee, scope);
  llvm::SmallVector<mlir::Value> args;
  for (const ExprPtr &arg : repeat.args) {
    FailureOr<mlir::Value> value = genTensor(*arg, scope);
    if (failed(value))
      return failure();
    args.push_back(*value);
  }
  int64_t count = repeat.count;
  if (repeat.dim)
    count = lookupDim(*repeat.dim)->size;
  Loc loc = repeat.getLoc();
  if (auto it = options.repeatCounts.find({loc.line, loc.column});
      it != options.repeatCounts.end())
    count = it->second;
  if (options.repeats) {
    auto site = llvm::find_if(*options.repeats, [&](const RepeatSite &s) {
      return s.line == loc.line && s.column == loc.column;
    });
    if (site == options.repeats->end())
      options.repeats->push_back(
          {loc.line, loc.column, count, activeRepeats > 0});
    else
      site->nested |= activeRepeats > 0;
  }
  if (options.loops && activeRepeats == 0 && !activeLoop)
    return genLoop(repeat, function, args, count);
  ++activeRepeats;
  llvm::scope_exit leave([&] { --activeRepeats; });
  for (int64_t i = 0; i < count; ++i) {
    mlir::Operation *last = lastEmitted();
    FailureOr<mlir::Value> next =
        instantiate(function, args, repeat.callee.loc);
    if (failed(next))
      return failure();
    // The ops of an outermost repeat's instance carry its name (mtf-remat
    // recomputes per instance).
    std::string instance = lastInstance;
    if (activeRepeats == 1 && !activeLoop)
      tagEmittedSince(last, mlir::mtf::MtfDialect::kInstanceAttrName, instance);
    if (failed(checkRepeatResult(repeat, function, args.front(), *next)))
      return failure();
    // The results of all but the last instance have no name otherwise.
    if (i + 1 < count)
      nameValue(*next, instance);
    args.front() = *next;
  }
  return args.front();
}

FailureOr<mlir::Value> MLIRGen::genLoop(const RepeatExpr &repeat,
                                        FunctionInfo &function,
                                        llvm::ArrayRef<mlir::Value> args,
                                        int64_t count) {
  // The layer dim: the one named, else "<f>_layers" (then "_2", "_3", ...
  // when that name has another size).
  std::string dim;
  if (repeat.dim) {
    dim = repeat.dim->name.str();
  } else {
    std::string base = repeat.callee.name.str() + "_layers";
    dim = base;
    for (int k = 2;; ++k) {
      auto declared = dims.find(dim);
      auto looped = loopDims.find(dim);
      if ((declared == dims.end() || declared->second.size == count) &&
          (looped == loopDims.end() || looped->second == count))
        break;
      dim = base + "_" + std::to_string(k);
    }
  }
  loopDims[dim] = count;
  for (mlir::Value arg : args)
    if (tensorType(arg).hasDim(dim))
      return error(repeat.callee.loc)
             << "'repeat' loops over the dim '" << dim << "' but argument "
             << formatType(tensorType(arg)) << " has it";

  mlir::Location loc = location(repeat.callee.loc);
  auto body = std::make_unique<mlir::Block>();
  for (mlir::Value arg : args)
    body->addArgument(arg.getType(), loc);
  LoopFrame frame;
  frame.dim = dim;
  frame.count = count;
  frame.body = body.get();
  frame.outside = builder.getInsertionBlock();
  // The loop is one instance of its function, whose layers the stacked
  // parameters hold: block_0.w [layers, ...], and block_0.ln_0.scale for
  // the instances its body calls.
  std::string instance =
      repeat.callee.name.str() + "_" + std::to_string(function.nextInstance++);
  frame.prefix = instance + ".";
  FailureOr<mlir::Value> result;
  {
    mlir::OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(body.get());
    activeLoop = &frame;
    llvm::scope_exit leave([&] { activeLoop = nullptr; });
    llvm::SmallVector<mlir::Value> inner(body->getArguments().begin(),
                                         body->getArguments().end());
    // Stacked parameters' slices go between the carried value and the
    // invariant ones; `inner` holds the arguments as they are now.
    result = instantiate(function, inner, repeat.callee.loc, instance);
    if (failed(result))
      return failure();
    if (failed(checkRepeatResult(repeat, function, args.front(), *result)))
      return failure();
    create<mtf::YieldOp>(loc, mlir::ValueRange{*result});
  }
  auto loop = create<mtf::LoopOp>(
      loc, mlir::TypeRange{args.front().getType()}, mlir::TypeRange{}, dim,
      count, mlir::ValueRange{args.front()}, frame.stacked, args.drop_front(),
      /*reverse=*/false);
  loop.getBody().push_back(body.release());
  return loop.getFinals().front();
}
