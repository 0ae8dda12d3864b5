//===- NameCheck.cpp - Name resolution for .mtf ---------------------------===//
//
// Looking up dimensions, tensors, functions, element types and initializers,
// with "did you mean" suggestions, and checking a function body when it is
// defined: every name it uses must resolve, whether or not the function is
// ever called. Types inside a body depend on the arguments, so they are
// checked per instance by MLIRGenExpr.cpp.
//
//===----------------------------------------------------------------------===//

#include "frontend/Builtins.h"
#include "frontend/MLIRGen.h"

#include "llvm/ADT/StringSwitch.h"

using namespace meshc::frontend;
using llvm::failure;
using llvm::FailureOr;
using llvm::LogicalResult;
using llvm::success;
namespace mtf = mlir::mtf;

namespace {
template <typename T>
std::vector<llvm::StringRef> keysOf(const llvm::StringMap<T> &map) {
  std::vector<llvm::StringRef> keys;
  for (const auto &entry : map)
    keys.push_back(entry.getKey());
  // StringMap iterates in hash order; sort so suggestions are deterministic.
  llvm::sort(keys);
  return keys;
}

/// What each initializer's arguments mean, for messages.
llvm::StringRef initUsage(mtf::InitKind kind) {
  switch (kind) {
  case mtf::InitKind::zeros:
  case mtf::InitKind::ones:
    return "";
  case mtf::InitKind::constant:
    return " (value)";
  case mtf::InitKind::normal:
    return " (mean, stddev)";
  case mtf::InitKind::uniform:
    return " (low, high)";
  }
  llvm_unreachable("unknown initializer");
}

size_t initArity(mtf::InitKind kind) {
  switch (kind) {
  case mtf::InitKind::zeros:
  case mtf::InitKind::ones:
    return 0;
  case mtf::InitKind::constant:
    return 1;
  case mtf::InitKind::normal:
  case mtf::InitKind::uniform:
    return 2;
  }
  llvm_unreachable("unknown initializer");
}
} // namespace

const MLIRGen::DimInfo *MLIRGen::lookupDim(const Ident &dim) const {
  auto it = dims.find(dim.name);
  if (it != dims.end())
    return &it->second;
  std::string hint = didYouMean(dim.name, keysOf(dims));
  if (hint.empty())
    hint = ("; declare it with 'dim " + dim.name + " = <size>'").str();
  error(dim.loc) << "unknown dimension '" << dim.name << "'" << hint;
  return nullptr;
}

const MLIRGen::Binding *MLIRGen::lookupTensor(const Ident &name,
                                              const Scope &scope) const {
  auto it = scope.tensors.find(name.name);
  if (it != scope.tensors.end())
    return &it->second;
  Error diag = error(name.loc);
  diag << "undefined tensor '" << name.name << "'";
  if (scope.function) {
    diag << " in function '" << scope.function->name.name << "'";
    if (globals.tensors.count(name.name)) {
      diag << "; a function sees only its arguments, parameters and locals, "
              "so pass '"
           << name.name << "' as an argument";
      return nullptr;
    }
  }
  diag << didYouMean(name.name, keysOf(scope.tensors));
  return nullptr;
}

MLIRGen::FunctionInfo *MLIRGen::lookupFunction(const Ident &callee,
                                               const Scope &scope) {
  if (scope.function && scope.function->name.name == callee.name) {
    error(callee.loc) << "function '" << callee.name
                      << "' calls itself; recursion is not supported";
    return nullptr;
  }
  auto it = functions.find(callee.name);
  if (it != functions.end())
    return &it->second;
  std::vector<llvm::StringRef> candidates = keysOf(functions);
  for (const BuiltinInfo &info : getBuiltins())
    candidates.push_back(info.name);
  error(callee.loc) << "unknown function '" << callee.name << "'"
                    << didYouMean(callee.name, candidates);
  return nullptr;
}

FailureOr<mlir::Type> MLIRGen::resolveElementType(const Ident &name) const {
  mlir::Type type = llvm::StringSwitch<mlir::Type>(name.name)
                        .Case("f32", mlir::Float32Type::get(context))
                        .Case("bf16", mlir::BFloat16Type::get(context))
                        .Case("f16", mlir::Float16Type::get(context))
                        .Case("i32", mlir::IntegerType::get(context, 32))
                        .Default(mlir::Type());
  if (type)
    return type;
  return error(name.loc) << "unknown element type '" << name.name
                         << "'; expected f32, bf16, f16 or i32";
}

FailureOr<mtf::TensorType> MLIRGen::resolveType(const TypeSpec &spec) {
  FailureOr<mlir::Type> elementType = resolveElementType(spec.elementType);
  if (failed(elementType))
    return failure();
  llvm::SmallVector<mtf::NamedDim> namedDims;
  llvm::StringMap<Loc> seen;
  for (const Ident &dim : spec.dims) {
    const DimInfo *info = lookupDim(dim);
    if (!info)
      return failure();
    auto [it, inserted] = seen.try_emplace(dim.name, dim.loc);
    if (!inserted) {
      Error diag = error(dim.loc);
      diag << "dimension '" << dim.name << "' appears twice in the type";
      diag.note(it->second) << "first listed here";
      return failure();
    }
    namedDims.push_back(mtf::NamedDim{stringAttr(dim.name), info->size});
  }
  return makeTensorType(namedDims, *elementType, spec.elementType.loc);
}

FailureOr<mtf::InitAttr> MLIRGen::resolveInit(const InitSpec &init) {
  std::optional<mtf::InitKind> kind = mtf::symbolizeInitKind(init.kind.name);
  if (!kind)
    return error(init.kind.loc)
           << "unknown initializer '" << init.kind.name
           << "'; expected zeros, ones, constant, normal or uniform"
           << didYouMean(init.kind.name,
                         {"zeros", "ones", "constant", "normal", "uniform"});
  size_t arity = initArity(*kind);
  if (init.args.size() != arity)
    return error(init.kind.loc)
           << "initializer '" << init.kind.name << "' takes " << arity
           << (arity == 1 ? " argument" : " arguments") << initUsage(*kind)
           << ", got " << init.args.size();
  if (*kind == mtf::InitKind::normal && !(init.args[1].value > 0))
    return error(init.args[1].loc)
           << "initializer 'normal' needs a positive standard deviation, got "
           << formatNumber(init.args[1].value);
  if (*kind == mtf::InitKind::uniform &&
      !(init.args[0].value < init.args[1].value))
    return error(init.args[0].loc)
           << "initializer 'uniform' needs low < high, got low "
           << formatNumber(init.args[0].value) << " and high "
           << formatNumber(init.args[1].value);
  llvm::SmallVector<double> args;
  for (const NumberLiteral &arg : init.args)
    args.push_back(arg.value);
  return mtf::InitAttr::get(context, *kind, llvm::ArrayRef<double>(args));
}

LogicalResult MLIRGen::checkFunction(const DefStmt &def) {
  Scope scope;
  scope.function = &def;
  auto define = [&](const Ident &name) {
    if (failed(checkNewTensorName(name, scope)))
      return failure();
    scope.tensors[name.name] = Binding{mlir::Value(), name.loc};
    return success();
  };
  for (const Ident &arg : def.args)
    if (failed(define(arg)))
      return failure();
  for (const StmtPtr &stmt : def.body) {
    if (auto *param = llvm::dyn_cast<ParamStmt>(stmt.get())) {
      if (failed(resolveType(param->type)) ||
          failed(resolveInit(param->init)) || failed(define(param->name)))
        return failure();
      continue;
    }
    auto &assign = llvm::cast<AssignStmt>(*stmt);
    if (failed(checkExpr(*assign.value, scope)) || failed(define(assign.name)))
      return failure();
  }
  return checkExpr(*def.result, scope);
}

LogicalResult MLIRGen::checkExpr(const Expr &expr, const Scope &scope) {
  switch (expr.getKind()) {
  case Expr::Kind::Number:
    return success();
  case Expr::Kind::Name: {
    const auto &name = llvm::cast<NameExpr>(expr);
    return success(lookupTensor(Ident{name.name, name.getLoc()}, scope));
  }
  case Expr::Kind::Negate:
    return checkExpr(*llvm::cast<NegateExpr>(expr).operand, scope);
  case Expr::Kind::Binary: {
    const auto &binary = llvm::cast<BinaryExpr>(expr);
    return success(succeeded(checkExpr(*binary.lhs, scope)) &&
                   succeeded(checkExpr(*binary.rhs, scope)));
  }
  case Expr::Kind::Builtin: {
    const auto &call = llvm::cast<BuiltinExpr>(expr);
    for (const ExprPtr &operand : call.operands)
      if (failed(checkExpr(*operand, scope)))
        return failure();
    for (const Ident &dim : call.dims)
      if (!lookupDim(dim))
        return failure();
    for (const SplitSpec &split : call.splits)
      if (!lookupDim(split.dim))
        return failure();
    if (call.builtin == Builtin::Cast)
      return success(succeeded(resolveElementType(call.elementType)));
    return success();
  }
  case Expr::Kind::Call: {
    const auto &call = llvm::cast<CallExpr>(expr);
    return checkCall(call.callee, call.args, scope);
  }
  case Expr::Kind::Repeat: {
    const auto &repeat = llvm::cast<RepeatExpr>(expr);
    if (repeat.dim && !lookupDim(*repeat.dim))
      return failure();
    return checkCall(repeat.callee, repeat.args, scope);
  }
  case Expr::Kind::Checkpoint:
    return checkExpr(*llvm::cast<CheckpointExpr>(expr).inner, scope);
  }
  llvm_unreachable("unknown expression kind");
}

LogicalResult MLIRGen::checkCall(const Ident &callee,
                                 llvm::ArrayRef<ExprPtr> args,
                                 const Scope &scope) {
  FunctionInfo *function = lookupFunction(callee, scope);
  if (!function)
    return failure();
  size_t arity = function->def->args.size();
  if (args.size() != arity) {
    Error diag = error(callee.loc);
    diag << "function '" << callee.name << "' takes " << arity
         << (arity == 1 ? " argument" : " arguments") << ", got "
         << args.size();
    diag.note(function->def->name.loc)
        << "'" << callee.name << "' is defined here";
    return failure();
  }
  for (const ExprPtr &arg : args)
    if (failed(checkExpr(*arg, scope)))
      return failure();
  return success();
}
