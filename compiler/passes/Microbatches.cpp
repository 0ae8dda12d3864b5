//===- Microbatches.cpp - gradient accumulation over microbatches ---------===//

#include "compiler/passes/Microbatches.h"

#include "compiler/passes/Optimizer.h"

using namespace mlir;

namespace meshc {

namespace {

bool hasDim(Type type, StringRef dim) {
  auto tensor = llvm::dyn_cast<mtf::TensorType>(type);
  return tensor && tensor.hasDim(dim);
}

/// Whether `value` is read only by outputs, mtf.train and casts of it that
/// are.
bool onlyReported(Value value) {
  for (Operation *user : value.getUsers()) {
    if (llvm::isa<mtf::OutputOp, mtf::TrainOp>(user))
      continue;
    if (auto cast = llvm::dyn_cast<mtf::CastOp>(user))
      if (onlyReported(cast.getResult()))
        continue;
    return false;
  }
  return true;
}

/// The mean over `dim` that `value` is (through casts), or null.
mtf::ReduceMeanOp meanOver(Value value, StringRef dim) {
  while (auto cast = value.getDefiningOp<mtf::CastOp>())
    value = cast->getOperand(0);
  auto mean = value.getDefiningOp<mtf::ReduceMeanOp>();
  if (mean && hasDim(mean->getOperand(0).getType(), dim) &&
      !hasDim(mean.getResult().getType(), dim))
    return mean;
  return {};
}

} // namespace

MicrobatchSpec microbatchesOf(mtf::ProgramOp program) {
  MicrobatchSpec spec;
  if (auto dict = program->getAttrOfType<DictionaryAttr>(
          mtf::MtfDialect::kMicrobatchesAttrName)) {
    spec.count = dict.getAs<IntegerAttr>("count").getInt();
    spec.dim = dict.getAs<StringAttr>("dim").str();
  }
  return spec;
}

LogicalResult checkMicrobatchable(mtf::ProgramOp program, mtf::TrainOp train,
                                  const MicrobatchSpec &spec) {
  StringRef dim = spec.dim;
  std::string flag = "--microbatches " + std::to_string(spec.count);
  auto mixes =
      [&](Operation *op) {
        return op->emitError()
               << "'" << op->getName().getStringRef()
               << "' mixes the examples of '" << dim << "', which " << flag
               << " cuts into microbatches that never see each other";
      };
  WalkResult walk = program->walk([&](Operation *op) {
    if (op == program.getOperation() ||
        llvm::isa<mtf::OutputOp, mtf::TrainOp, mtf::YieldOp, mtf::LoopOp>(op))
      return WalkResult::advance();
    for (StringRef name : {"dim", "from", "to", "key_dim"})
      if (auto attr = op->getAttrOfType<StringAttr>(name);
          attr && attr.getValue() == dim) {
        mixes(op) << ": it works along '" << dim << "'";
        return WalkResult::interrupt();
      }
    if (llvm::isa<mtf::RangeOp>(op) &&
        hasDim(op->getResult(0).getType(), dim)) {
      mixes(op) << ": it numbers the positions of '" << dim
                << "', and a microbatch's are not the batch's";
      return WalkResult::interrupt();
    }
    bool reads = llvm::any_of(op->getOperandTypes(),
                              [&](Type type) { return hasDim(type, dim); });
    bool makes = llvm::any_of(op->getResultTypes(),
                              [&](Type type) { return hasDim(type, dim); });
    // Only inputs bring examples in; a constant is the same everywhere and
    // a dropout mask is drawn per microbatch (docs).
    if (makes && !reads &&
        !llvm::isa<mtf::InputOp, mtf::ConstantOp, mtf::DropoutMaskOp>(op)) {
      mixes(op) << ": it makes a tensor with '" << dim
                << "' that no input's examples come into (a param, a slice, "
                   "pad or rename into it), so each microbatch would see the "
                   "same "
                << dim << "-sized part of it";
      return WalkResult::interrupt();
    }
    bool drops = llvm::any_of(op->getResultTypes(),
                              [&](Type type) { return !hasDim(type, dim); });
    if (!reads || !drops)
      return WalkResult::advance();
    if (llvm::isa<mtf::ReduceMeanOp>(op) && meanOver(op->getResult(0), dim) &&
        onlyReported(op->getResult(0)))
      return WalkResult::advance();
    mixes(op) << ": its result has no '" << dim
              << "'; only a mean over it that is output or trained (a loss, "
                 "an accuracy) may drop it, since the mean of the "
                 "microbatches' means is the batch's";
    return WalkResult::interrupt();
  });
  if (walk.wasInterrupted())
    return failure();
  for (auto input : program.getBodyBlock().getOps<mtf::InputOp>()) {
    auto type = llvm::cast<mtf::TensorType>(input.getType());
    if (type.getRank() == 0 || type.getDims()[0].name.getValue() != dim) {
      input.emitError() << "input '" << input.getName() << "' does not have '"
                        << dim << "' as its first dim: with " << flag
                        << " meshrun cuts every input into microbatches "
                           "along its first dim";
      return failure();
    }
  }
  for (auto output : program.getBodyBlock().getOps<mtf::OutputOp>())
    if (!meanOver(output.getValue(), dim) ||
        llvm::cast<mtf::TensorType>(output.getValue().getType()).getRank()) {
      output.emitError() << "output '" << output.getName()
                         << "' is not a scalar mean over '" << dim << "': with "
                         << flag
                         << " a step reports the mean of the microbatches' "
                            "values, which is the batch's only for a mean "
                            "over it (a loss, an accuracy)";
      return failure();
    }
  if (!meanOver(train.getLoss(), dim)) {
    train.emitError() << "the trained loss is not a mean over '" << dim
                      << "': " << flag
                      << " sums the microbatches' gradients and divides by "
                      << spec.count
                      << ", which is the batch's gradient only for a mean "
                         "over the batch";
    return failure();
  }
  return success();
}

std::vector<std::string>
accumulateGradients(llvm::MapVector<Operation *, Value> &grads,
                    const MicrobatchSpec &spec, OpEmitter &backward,
                    OpEmitter &update) {
  std::vector<std::string> names;
  llvm::SmallVector<Value> sums;
  // Every sum before any scale: the update steps follow all backward ones.
  for (auto &[op, g] : grads) {
    auto param = llvm::cast<mtf::ParamOp>(op);
    std::string name = (param.getName() + "/grad_sum").str();
    Value sum = makeSlot(backward.builder(), op->getNextNode(), name,
                         g.getType(), param.getLoc());
    backward.setLoc(param.getLoc());
    sum = backward.add(sum, g);
    assign(backward, name, sum);
    sums.push_back(sum);
    names.push_back(name);
  }
  for (auto [entry, sum] : llvm::zip(grads, sums)) {
    update.setLoc(entry.first->getLoc());
    entry.second = update.scale(sum, 1.0 / static_cast<double>(spec.count));
  }
  return names;
}

} // namespace meshc
