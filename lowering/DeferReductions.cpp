//===- DeferReductions.cpp - mtf-defer-accumulated-reductions -------------===//
//
// With microbatches (compiler/passes/Microbatches.h) the backward steps add
// each microbatch's gradient into an accumulator slot. Where the gradient was
// all-reduced just for that add, the add takes the unreduced partial sum and
// one all-reduce of the accumulated sum moves to the update phase: the same
// values by linearity, one collective per step instead of one per
// microbatch. The slot then holds per-device partial sums, which is what the
// runtime zeroes after every update.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace meshc {
#define GEN_PASS_DEF_MTFDEFERACCUMULATEDREDUCTIONS
#include "lowering/Passes.h.inc"
} // namespace meshc

namespace {

/// A gradient all-reduced on its way to an accumulator: to_tensor, a sum
/// all_reduce and from_tensor, each read only by the next.
struct ReducedGradient {
  mtf::ToTensorOp toTensor;
  shard::AllReduceOp reduce;
  mtf::FromTensorOp fromTensor;
  /// The unreduced gradient.
  Value partial() { return toTensor->getOperand(0); }
};

std::optional<ReducedGradient> reducedGradient(Value value) {
  auto from = value.getDefiningOp<mtf::FromTensorOp>();
  if (!from || !value.hasOneUse())
    return std::nullopt;
  auto reduce = from->getOperand(0).getDefiningOp<shard::AllReduceOp>();
  if (!reduce || !reduce->getResult(0).hasOneUse() ||
      reduce.getReduction() != shard::ReductionKind::Sum)
    return std::nullopt;
  auto to = reduce->getOperand(0).getDefiningOp<mtf::ToTensorOp>();
  if (!to || !to->getResult(0).hasOneUse() ||
      to.getOperand().getType() != value.getType())
    return std::nullopt;
  return ReducedGradient{to, reduce, from};
}

bool isUpdate(Operation *op) {
  auto phase = op->getAttrOfType<StringAttr>(mtf::MtfDialect::kPhaseAttrName);
  return phase && phase.getValue() == "update";
}

/// Defers the reductions of the accumulators of local program `program`.
void deferReductions(mtf::ProgramOp program) {
  auto training = program->getAttrOfType<DictionaryAttr>(
      mtf::MtfDialect::kTrainingAttrName);
  auto names =
      training ? training.getAs<ArrayAttr>("accumulators") : ArrayAttr();
  if (!names)
    return;
  llvm::StringSet<> accumulators;
  for (auto name : names.getAsRange<StringAttr>())
    accumulators.insert(name.getValue());
  Block &block = program.getBodyBlock();
  Operation *firstUpdate = nullptr;
  for (Operation &op : block)
    if (isUpdate(&op)) {
      firstUpdate = &op;
      break;
    }
  if (!firstUpdate)
    return;
  MLIRContext *context = program.getContext();
  auto updatePhase = StringAttr::get(context, "update");

  SmallVector<mtf::ParamOp> slots;
  for (auto param : block.getOps<mtf::ParamOp>())
    if (param.getSlot() && accumulators.contains(param.getName()))
      slots.push_back(param);
  for (mtf::ParamOp slot : slots) {
    // The backward add of the slot and a gradient, and the assign of it.
    mtf::AddOp add;
    for (Operation *user : slot->getUsers())
      if (auto candidate = llvm::dyn_cast<mtf::AddOp>(user))
        add = candidate;
    if (!add || add->getBlock() != &block)
      continue;
    unsigned gradIndex = add.getOperand(0) == slot.getResult() ? 1 : 0;
    Value grad = add->getOperand(gradIndex);
    // The gradient: reduced at the top level, or yielded reduced by a loop's
    // body and stacked.
    std::optional<ReducedGradient> reduced;
    Operation *yield = nullptr;
    unsigned yieldIndex = 0;
    if (auto loop = grad.getDefiningOp<mtf::LoopOp>()) {
      auto result = llvm::cast<OpResult>(grad);
      if (result.getResultNumber() < loop.getFinals().size() ||
          !grad.hasOneUse())
        continue;
      yield = loop.getBodyBlock().getTerminator();
      yieldIndex = result.getResultNumber();
      reduced = reducedGradient(yield->getOperand(yieldIndex));
    } else {
      reduced = reducedGradient(grad);
    }
    if (!reduced)
      continue;
    // The add reads the partial sum; its result (the slot's next value)
    // is all-reduced before the update reads it.
    Value partial = reduced->partial();
    if (yield)
      yield->setOperand(yieldIndex, partial);
    else
      add->setOperand(gradIndex, partial);
    OpBuilder builder(firstUpdate);
    Value sum = add.getResult();
    auto to = llvm::cast<mtf::ToTensorOp>(builder.clone(*reduced->toTensor));
    auto reduce =
        llvm::cast<shard::AllReduceOp>(builder.clone(*reduced->reduce));
    auto from =
        llvm::cast<mtf::FromTensorOp>(builder.clone(*reduced->fromTensor));
    auto named = llvm::cast<mtf::TensorType>(sum.getType());
    SmallVector<int64_t> shape;
    for (const mtf::NamedDim &dim : named.getDims())
      shape.push_back(dim.size);
    auto ranked = RankedTensorType::get(shape, named.getElementType());
    to->setOperand(0, sum);
    to->getResult(0).setType(ranked);
    reduce->setOperand(0, to.getResult());
    reduce->getResult(0).setType(ranked);
    from->setOperand(0, reduce->getResult(0));
    from->getResult(0).setType(sum.getType());
    std::string reason = "sum over the microbatches' partial gradients, once "
                         "per step";
    if (auto why = reduced->reduce->getAttrOfType<StringAttr>(
            mtf::MtfDialect::kReasonAttrName))
      reason = why.getValue().str() + ", once per step after the microbatches";
    reduce->setAttr(mtf::MtfDialect::kReasonAttrName,
                    StringAttr::get(context, reason));
    for (Operation *op :
         {to.getOperation(), reduce.getOperation(), from.getOperation()})
      op->setAttr(mtf::MtfDialect::kPhaseAttrName, updatePhase);
    sum.replaceUsesWithIf(from.getResult(), [&](OpOperand &use) {
      return isUpdate(use.getOwner()) && use.getOwner() != to;
    });
    reduced->fromTensor->erase();
    reduced->reduce->erase();
    reduced->toTensor->erase();
  }
}

struct MtfDeferAccumulatedReductionsPass
    : public meshc::impl::MtfDeferAccumulatedReductionsBase<
          MtfDeferAccumulatedReductionsPass> {
  void runOnOperation() override {
    for (auto program : getOperation().getOps<mtf::ProgramOp>())
      if (program.getLocal())
        deferReductions(program);
  }
};

} // namespace
