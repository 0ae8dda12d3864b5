//===- MLIRGen.cpp - Statements of .mtf to the mtf dialect ----------------===//
//
// The statement half of MLIRGen: dimensions, inputs, parameters,
// assignments, outputs, `train`, function definitions and function
// instances, and the naming of what they create (NameLoc on every bound
// value, `<function>_<k>.` prefixes inside instances).
//
//===----------------------------------------------------------------------===//

#include "frontend/MLIRGen.h"

#include "frontend/Builtins.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"

using namespace meshc::frontend;
using llvm::failure;
using llvm::FailureOr;
using llvm::LogicalResult;
using llvm::success;
namespace mtf = mlir::mtf;

namespace {
/// Call frames listed as notes under an error; deeper ones are summarised.
constexpr size_t kMaxCallNotes = 8;

/// The optimizers `train` accepts and their own hyper-parameters.
struct OptimizerInfo {
  llvm::StringLiteral name;
  std::vector<llvm::StringRef> hyperParams;
};

const std::vector<OptimizerInfo> &getOptimizers() {
  static const std::vector<OptimizerInfo> optimizers = {
      {"sgd", {"lr"}},
      {"momentum", {"lr", "momentum"}},
      {"adam", {"lr", "beta1", "beta2", "eps"}},
      {"adamw", {"lr", "beta1", "beta2", "eps", "weight_decay"}},
  };
  return optimizers;
}

/// Hyper-parameters every optimizer takes.
constexpr llvm::StringLiteral kCommonHyperParams[] = {
    "clip_norm", "warmup_steps", "decay_steps", "min_lr_ratio", "sync_every"};
} // namespace

std::string meshc::frontend::formatType(mtf::TensorType type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type.getElementType() << "[";
  llvm::interleaveComma(type.getDims(), os, [&](const mtf::NamedDim &dim) {
    os << dim.name.getValue();
  });
  os << "]";
  return text;
}

std::string meshc::frontend::formatElementType(mlir::Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

MLIRGen::MLIRGen(const DiagnosticEmitter &diagnostics, mtf::ProgramOp program,
                 const ImportOptions &options)
    : diagnostics(diagnostics), context(program.getContext()),
      builder(program.getContext()), options(options) {
  builder.setInsertionPointToEnd(&program.getBodyBlock());
}

MLIRGen::Error::~Error() {
  if (!diag.getUnderlyingDiagnostic())
    return;
  const std::vector<CallFrame> &frames = gen.callStack;
  size_t shown = std::min(frames.size(), kMaxCallNotes);
  for (size_t i = 0; i < shown; ++i) {
    const CallFrame &frame = frames[frames.size() - 1 - i];
    diag.attachNote(gen.location(frame.loc))
        << "in '" << frame.instance << "', the instance of '" << frame.function
        << "' called here";
  }
  if (frames.size() > shown)
    diag.attachNote(gen.location(frames.front().loc))
        << "and " << frames.size() - shown << " more enclosing calls, the "
        << "outermost here";
}

mlir::Diagnostic &MLIRGen::Error::note(Loc loc) {
  return diag.attachNote(gen.location(loc));
}

LogicalResult MLIRGen::generate(StmtPtr stmt) {
  LogicalResult result = success();
  switch (stmt->getKind()) {
  case Stmt::Kind::Dim:
    result = genDim(llvm::cast<DimStmt>(*stmt));
    break;
  case Stmt::Kind::Input:
    result = genInput(llvm::cast<InputStmt>(*stmt));
    break;
  case Stmt::Kind::Param:
    result = genParam(llvm::cast<ParamStmt>(*stmt), globals);
    break;
  case Stmt::Kind::Assign:
    result = genAssign(llvm::cast<AssignStmt>(*stmt), globals);
    break;
  case Stmt::Kind::Output:
    result = genOutput(llvm::cast<OutputStmt>(*stmt));
    break;
  case Stmt::Kind::Train:
    result = genTrain(llvm::cast<TrainStmt>(*stmt));
    break;
  case Stmt::Kind::Def:
    return genDef(
        std::unique_ptr<DefStmt>(llvm::cast<DefStmt>(stmt.release())));
  }
  if (failed(result))
    return failure();
  return checkBudget(stmt->getLoc());
}

LogicalResult MLIRGen::checkBudget(Loc loc) const {
  if (operationCount <= kMaxOperations)
    return success();
  return error(loc) << "the program is too large: more than " << kMaxOperations
                    << " operations once function calls are expanded";
}

void MLIRGen::nameValue(mlir::Value value, llvm::StringRef name) {
  if (!namedValues.insert(value).second)
    return;
  // A loop body's argument (`y = x` in a repeated function) has no op to
  // name (found by fuzz-mtf: it crashed meshc).
  mlir::Operation *op = value.getDefiningOp();
  if (!op)
    return;
  op->setLoc(mlir::NameLoc::get(stringAttr(name), op->getLoc()));
}

LogicalResult MLIRGen::checkNewTensorName(const Ident &name,
                                          const Scope &scope) const {
  auto it = scope.tensors.find(name.name);
  if (it == scope.tensors.end())
    return success();
  Error diag = error(name.loc);
  diag << "redefinition of tensor '" << name.name << "'";
  if (scope.function)
    diag << " in function '" << scope.function->name.name << "'";
  diag.note(it->second.loc) << "previous definition is here";
  return failure();
}

LogicalResult MLIRGen::genDim(const DimStmt &stmt) {
  int64_t size = stmt.size;
  if (options.microbatches > 1 && stmt.name.name == options.microbatchDim &&
      !dims.count(stmt.name.name)) {
    int64_t count = options.microbatches;
    if (size % count != 0) {
      Error diag = error(stmt.sizeLoc);
      diag << "--microbatches " << count << " does not divide dim '"
           << stmt.name.name << "' = " << size
           << ": every microbatch must hold the same number of examples";
      diag.note(stmt.name.loc) << "give a count that divides " << size
                               << ", or name another dim with --microbatch-dim";
      return failure();
    }
    size /= count;
    microbatchDimDeclared = true;
  }
  auto [it, inserted] =
      dims.try_emplace(stmt.name.name, DimInfo{size, stmt.name.loc});
  if (inserted)
    return success();
  Error diag = error(stmt.name.loc);
  diag << "redefinition of dimension '" << stmt.name.name << "'";
  diag.note(it->second.loc) << "previous definition is here";
  return failure();
}

LogicalResult MLIRGen::genInput(const InputStmt &stmt) {
  if (failed(checkNewTensorName(stmt.name, globals)))
    return failure();
  FailureOr<mtf::TensorType> type = resolveType(stmt.type);
  if (failed(type))
    return failure();
  mlir::Location loc =
      mlir::NameLoc::get(stringAttr(stmt.name.name), location(stmt.name.loc));
  auto input = create<mtf::InputOp>(loc, *type, stringAttr(stmt.name.name));
  namedValues.insert(input.getResult());
  globals.tensors[stmt.name.name] = Binding{input.getResult(), stmt.name.loc};
  return success();
}

LogicalResult MLIRGen::genParam(const ParamStmt &stmt, Scope &scope) {
  if (failed(checkNewTensorName(stmt.name, scope)))
    return failure();
  FailureOr<mtf::TensorType> type = resolveType(stmt.type);
  if (failed(type))
    return failure();
  if (!llvm::isa<mlir::FloatType>(type->getElementType()))
    return error(stmt.type.elementType.loc)
           << "parameter '" << stmt.name.name
           << "' must have a floating-point element type, got "
           << formatElementType(type->getElementType());
  FailureOr<mtf::InitAttr> init = resolveInit(stmt.init);
  if (failed(init))
    return failure();
  std::string name = scope.prefix + stmt.name.name.str();
  mlir::Location loc =
      mlir::NameLoc::get(stringAttr(name), location(stmt.name.loc));
  if (activeLoop) {
    // One parameter for every layer: stacked along the loop's dim before
    // the loop, the body seeing its layer's slice.
    if (type->hasDim(activeLoop->dim))
      return error(stmt.name.loc)
             << "parameter '" << stmt.name.name << "' has the dim '"
             << activeLoop->dim
             << "' that its repeat loops over; a parameter of a repeated "
                "function is stacked along that dim already";
    FailureOr<mtf::TensorType> stackedType = makeTensorType(
        mtf::LoopOp::stackedType(*type, activeLoop->dim, activeLoop->count)
            .getDims(),
        type->getElementType(), stmt.name.loc);
    if (failed(stackedType))
      return failure();
    mlir::OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(activeLoop->outside);
    auto param =
        create<mtf::ParamOp>(loc, *stackedType, stringAttr(name), *init);
    namedValues.insert(param.getResult());
    activeLoop->stacked.push_back(param.getResult());
    // After the carried argument and the stacked ones before it.
    mlir::Value slice = activeLoop->body->insertArgument(
        activeLoop->stacked.size(), *type, loc);
    scope.tensors[stmt.name.name] = Binding{slice, stmt.name.loc};
    return success();
  }
  auto param = create<mtf::ParamOp>(loc, *type, stringAttr(name), *init);
  namedValues.insert(param.getResult());
  scope.tensors[stmt.name.name] = Binding{param.getResult(), stmt.name.loc};
  return success();
}

LogicalResult MLIRGen::genAssign(const AssignStmt &stmt, Scope &scope) {
  if (failed(checkNewTensorName(stmt.name, scope)) ||
      failed(checkExpr(*stmt.value, scope)))
    return failure();
  FailureOr<mlir::Value> value = genTensor(*stmt.value, scope);
  if (failed(value))
    return failure();
  nameValue(*value, scope.prefix + stmt.name.name.str());
  scope.tensors[stmt.name.name] = Binding{*value, stmt.name.loc};
  return success();
}

LogicalResult MLIRGen::genOutput(const OutputStmt &stmt) {
  for (const Ident &name : stmt.names) {
    const Binding *binding = lookupTensor(name, globals);
    if (!binding)
      return failure();
    auto [it, inserted] = outputs.try_emplace(name.name, name.loc);
    if (!inserted) {
      Error diag = error(name.loc);
      diag << "tensor '" << name.name << "' is already an output";
      diag.note(it->second) << "first listed here";
      return failure();
    }
    mlir::Location loc =
        mlir::NameLoc::get(stringAttr(name.name), location(name.loc));
    create<mtf::OutputOp>(loc, stringAttr(name.name), binding->value);
  }
  return success();
}

LogicalResult MLIRGen::genTrain(const TrainStmt &stmt) {
  if (trainLoc) {
    Error diag = error(stmt.getLoc());
    diag << "the program already has a 'train' statement";
    diag.note(*trainLoc) << "previous 'train' is here";
    return failure();
  }
  const Binding *loss = lookupTensor(stmt.loss, globals);
  if (!loss)
    return failure();
  auto lossType = llvm::cast<mtf::TensorType>(loss->value.getType());
  if (lossType.getRank() != 0 ||
      !llvm::isa<mlir::FloatType>(lossType.getElementType()))
    return error(stmt.loss.loc)
           << "the loss '" << stmt.loss.name
           << "' must be a floating-point scalar, got " << formatType(lossType)
           << "; reduce it with sum or mean";

  const auto &optimizers = getOptimizers();
  auto optimizer = llvm::find_if(optimizers, [&](const OptimizerInfo &info) {
    return info.name == stmt.optimizer.name;
  });
  if (optimizer == optimizers.end()) {
    std::vector<llvm::StringRef> names;
    for (const OptimizerInfo &info : optimizers)
      names.push_back(info.name);
    return error(stmt.optimizer.loc)
           << "unknown optimizer '" << stmt.optimizer.name
           << "'; expected sgd, momentum, adam or adamw"
           << didYouMean(stmt.optimizer.name, names);
  }
  llvm::SmallVector<mlir::NamedAttribute> attrs;
  llvm::StringMap<Loc> seen;
  for (const HyperParam &param : stmt.hyperParams) {
    llvm::StringRef key = param.name.name;
    if (!llvm::is_contained(optimizer->hyperParams, key) &&
        !llvm::is_contained(kCommonHyperParams, key)) {
      std::vector<llvm::StringRef> known(optimizer->hyperParams);
      known.insert(known.end(), std::begin(kCommonHyperParams),
                   std::end(kCommonHyperParams));
      return error(param.name.loc)
             << "optimizer '" << optimizer->name << "' has no hyper-parameter '"
             << key << "'; it takes " << llvm::join(known, ", ");
    }
    auto [it, inserted] = seen.try_emplace(key, param.name.loc);
    if (!inserted) {
      Error diag = error(param.name.loc);
      diag << "hyper-parameter '" << key << "' is given twice";
      diag.note(it->second) << "first given here";
      return failure();
    }
    if (key == "lr" && !(param.value.value > 0))
      return error(param.value.loc)
             << "the learning rate must be positive, got "
             << formatNumber(param.value.value);
    attrs.push_back(
        builder.getNamedAttr(key, builder.getF64FloatAttr(param.value.value)));
  }
  if (!seen.count("lr"))
    return error(stmt.optimizer.loc) << "optimizer '" << optimizer->name
                                     << "' needs a learning rate; write "
                                     << optimizer->name << "(lr = 1e-3)";
  trainLoc = stmt.getLoc();
  create<mtf::TrainOp>(location(stmt.getLoc()), loss->value,
                       stringAttr(optimizer->name),
                       builder.getDictionaryAttr(attrs));
  return success();
}

LogicalResult MLIRGen::genDef(std::unique_ptr<DefStmt> def) {
  const Ident &name = def->name;
  if (lookupBuiltin(name.name))
    return error(name.loc) << "function '" << name.name
                           << "' has the name of a builtin";
  auto it = functions.find(name.name);
  if (it != functions.end()) {
    Error diag = error(name.loc);
    diag << "redefinition of function '" << name.name << "'";
    diag.note(it->second.def->name.loc) << "previous definition is here";
    return failure();
  }
  if (failed(checkFunction(*def)))
    return failure();
  functions[name.name].def = std::move(def);
  return success();
}

FailureOr<mlir::Value> MLIRGen::instantiate(FunctionInfo &function,
                                            llvm::ArrayRef<mlir::Value> args,
                                            Loc callLoc,
                                            llvm::StringRef named) {
  ++operationCount;
  if (failed(checkBudget(callLoc)))
    return failure();
  const DefStmt &def = *function.def;
  Scope scope;
  scope.function = &def;
  // Instances in a loop's body are counted and named inside the loop.
  std::string instance =
      !named.empty() ? named.str()
      : activeLoop
          ? activeLoop->prefix + def.name.name.str() + "_" +
                std::to_string(activeLoop->instances[def.name.name]++)
          : def.name.name.str() + "_" + std::to_string(function.nextInstance++);
  scope.prefix = instance + ".";
  for (auto [arg, value] : llvm::zip_equal(def.args, args))
    scope.tensors[arg.name] = Binding{value, arg.loc};

  callStack.push_back(CallFrame{callLoc, instance, def.name.name});
  llvm::scope_exit popFrame([&] { callStack.pop_back(); });
  for (const StmtPtr &stmt : def.body) {
    LogicalResult result =
        llvm::isa<ParamStmt>(*stmt)
            ? genParam(llvm::cast<ParamStmt>(*stmt), scope)
            : genAssign(llvm::cast<AssignStmt>(*stmt), scope);
    if (failed(result) || failed(checkBudget(stmt->getLoc())))
      return failure();
  }
  FailureOr<mlir::Value> result = genTensor(*def.result, scope);
  // After the body, whose own calls set it too.
  lastInstance = instance;
  return result;
}
