//===- PipelineHead.cpp - 1F1B: the loss's head in the ticks --------------===//
//
// Under the 1F1B schedule (docs/pipeline.md#1f1b) the ops after the repeat
// that compute the trained loss run in the ticks, microbatch by microbatch:
// which ops they are (refused where the loss is not a mean over the batch),
// and the per-example values they read, laid per tick for the last stage.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/Pipeliner.h"

namespace meshc::pipeline {

LogicalResult Pipeliner::findHead() {
  auto program = loop->getParentOfType<mtf::ProgramOp>();
  for (auto op : program.getBodyBlock().getOps<mtf::TrainOp>())
    train = op;
  auto refuse = [&](const Twine &why) {
    return loop.emitError()
           << "the 1F1B schedule runs each microbatch's loss inside the "
              "pipeline's ticks, but "
           << why;
  };
  if (!train)
    return refuse("the model trains no loss (--schedule 1f1b is for "
                  "training)");
  // The ops the loop's results reach, and those the loss is computed from.
  llvm::DenseSet<Operation *> reached;
  llvm::SmallVector<Value> work(loop.getFinals());
  while (!work.empty()) {
    Value value = work.pop_back_val();
    for (Operation *user : value.getUsers())
      if (user->getBlock() == loop->getBlock() && reached.insert(user).second)
        llvm::append_range(work, user->getResults());
  }
  llvm::DenseSet<Operation *> feeds;
  work.assign({train.getLoss()});
  while (!work.empty()) {
    Operation *op = work.pop_back_val().getDefiningOp();
    if (!op || op == loop.getOperation() || !feeds.insert(op).second)
      continue;
    llvm::append_range(work, op->getOperands());
  }
  for (Operation &op : *loop->getBlock())
    if (reached.contains(&op) && feeds.contains(&op))
      head.push_back(&op);
  if (head.empty())
    return refuse("the trained loss does not depend on the pipeline's "
                  "results");
  // The loss: a mean over the batch (through casts), of which each
  // microbatch's is 1/M.
  Value loss = train.getLoss();
  while (auto cast = loss.getDefiningOp<mtf::CastOp>())
    loss = cast.getInput();
  auto mean = loss.getDefiningOp<mtf::ReduceMeanOp>();
  if (!mean || !tensorType(mean.getInput()).hasDim(s.batch.getValue()) ||
      tensorType(train.getLoss()).getRank() != 0)
    return refuse("the trained loss is not a scalar mean over '" +
                  s.batch.getValue() +
                  "', which a sum of the microbatches' means divided by " +
                  Twine(s.microbatches) + " equals");
  for (Operation *op : head) {
    if (op->getNumRegions() != 0)
      return op->emitError() << "holds a region; the 1F1B schedule runs "
                                "what computes the loss inside the "
                                "pipeline's ticks, which takes plain ops";
    if (op == mean.getOperation())
      continue;
    for (NamedAttribute attr : op->getAttrs())
      if (auto name = llvm::dyn_cast<StringAttr>(attr.getValue());
          name && name == s.batch &&
          !attr.getName().getValue().starts_with("mtf."))
        return op->emitError()
               << "works along '" << s.batch.getValue()
               << "', which the 1F1B schedule cuts into microbatches to "
                  "compute the loss of each in the pipeline's ticks";
    bool reads = llvm::any_of(op->getOperandTypes(), [&](Type type) {
      auto tensor = llvm::dyn_cast<TensorType>(type);
      return tensor && tensor.hasDim(s.batch.getValue());
    });
    bool keeps = llvm::all_of(op->getResultTypes(), [&](Type type) {
      auto tensor = llvm::dyn_cast<TensorType>(type);
      return !tensor || tensor.hasDim(s.batch.getValue());
    });
    if (reads && !keeps && !llvm::isa<mtf::CastOp>(op))
      return op->emitError()
             << "reduces over '" << s.batch.getValue()
             << "' before the loss's mean, which mixes the examples that the "
                "1F1B schedule computes the loss of microbatch by microbatch";
  }
  for (Operation *op : head)
    for (Value operand : op->getOperands()) {
      Operation *from = operand.getDefiningOp();
      if (from == loop.getOperation() || llvm::is_contained(head, from))
        continue;
      TensorType type = tensorType(operand);
      if (!type.hasDim(s.batch.getValue()))
        continue;
      int64_t size = type.getDims()[*type.getDimIndex(s.batch.getValue())].size;
      if (size % s.microbatches != 0)
        return refuse("'" + s.batch.getValue() + "' (" + Twine(size) +
                      ") does not cut into " + Twine(s.microbatches) +
                      " microbatches of equal size");
    }
  return success();
}

Value Pipeliner::lastStageTicks(OpEmitter &emit, Value value) {
  OpBuilder &b = emit.builder();
  if (!llvm::isa<FloatType>(tensorType(value).getElementType()))
    value = mtf::CastOp::create(b, loop.getLoc(), value, b.getF32Type())
                .getResult();
  Value ticks = alongTicks(emit, value, s.stages - 1);
  // On every stage (the head runs on each; the last one's counts), so that
  // the ticks keep it per stage like everything else.
  SmallVector<NamedDim> staged{{s.ticksDim, s.ticks}};
  llvm::append_range(staged,
                     inner(tensorType(value), /*staged=*/true).getDims());
  return emit.broadcastTo(ticks, withDims(tensorType(value), staged));
}

} // namespace meshc::pipeline
