//===- KeepGathered.cpp - mtf-keep-gathered -------------------------------===//
//
// A later loop's all-gathers of values an earlier loop over the same layers
// gathers already (the backward's gathers of a layer's weights under
// --shard-params, the same as the forward's) read the earlier loop's
// results instead, stacked along the layer dim: each layer is gathered once
// per step (lowering/Passes.td states the rule).
//
//===----------------------------------------------------------------------===//

#include "dialect/MtfDialect.h"
#include "lowering/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace meshc {
#define GEN_PASS_DEF_MTFKEEPGATHERED
#include "lowering/Passes.h.inc"
} // namespace meshc

namespace {

/// One input of an all-gather (plain or combined): what it gathers and how.
struct GatherInput {
  Operation *gather = nullptr;
  unsigned index = 0;
  Value input;
  FlatSymbolRefAttr grid;
  SmallVector<int16_t> gridAxes;
  int64_t gatherAxis = 0;
};

SmallVector<GatherInput> inputsOf(Operation *op) {
  SmallVector<GatherInput> inputs;
  if (op->hasAttr(mtf::MtfDialect::kBlocksAttrName))
    return inputs;
  if (auto gather = llvm::dyn_cast<shard::AllGatherOp>(op)) {
    inputs.push_back({op, 0, gather.getInput(), gather.getGridAttr(),
                      SmallVector<int16_t>(gather.getGridAxes()),
                      gather.getGatherAxis().getSExtValue()});
  } else if (auto combined = llvm::dyn_cast<mtf::CombinedAllGatherOp>(op)) {
    for (auto [index, input] : llvm::enumerate(combined.getInputs()))
      inputs.push_back({op, unsigned(index), input, combined.getGridAttr(),
                        SmallVector<int16_t>(combined.getGridAxes()),
                        combined.getGatherAxes()[index]});
  }
  return inputs;
}

/// The attributes that say what `op` computes: all but those that explain
/// it (its reason, phase, half, instance, layouts, a remat mark).
NamedAttrList meaning(Operation *op) {
  NamedAttrList attrs;
  for (NamedAttribute attr : op->getAttrs())
    if (!llvm::is_contained(
            {mtf::MtfDialect::kReasonAttrName, mtf::MtfDialect::kPhaseAttrName,
             mtf::MtfDialect::kHalfAttrName, mtf::MtfDialect::kInstanceAttrName,
             mtf::MtfDialect::kLayoutAttrName,
             mtf::MtfDialect::kLayoutsAttrName,
             mtf::MtfDialect::kCheckpointAttrName},
            attr.getName().getValue()))
      attrs.push_back(attr);
  return attrs;
}

/// Whether `a`, a value of loop `la`'s body, and `b`, one of `lb`'s, are the
/// same in every iteration: the same slice of the same stacked operand, the
/// same invariant operand, or made from such by the same ops (without
/// regions, of the body's top level).
bool sameValue(mtf::LoopOp la, Value a, mtf::LoopOp lb, Value b) {
  auto argA = llvm::dyn_cast<BlockArgument>(a);
  auto argB = llvm::dyn_cast<BlockArgument>(b);
  // A slice of what `la` stacks (the forward's casts of its weights, kept
  // for the backward) is the value its body yields.
  if (argB && la != lb && argB.getOwner() == &lb.getBodyBlock() &&
      argB.getArgNumber() >= lb.getCarried().size() &&
      argB.getArgNumber() < lb.getCarried().size() + lb.getStacked().size())
    if (auto result =
            llvm::dyn_cast<OpResult>(lb->getOperand(argB.getArgNumber()));
        result && result.getOwner() == la.getOperation() &&
        result.getResultNumber() >= la.getFinals().size())
      return sameValue(la, a, la,
                       la.getBodyBlock().getTerminator()->getOperand(
                           la.getCarried().size() + result.getResultNumber() -
                           la.getFinals().size()));
  if (argA || argB) {
    if (!argA || !argB || argA.getOwner() != &la.getBodyBlock() ||
        argB.getOwner() != &lb.getBodyBlock())
      return false;
    unsigned carriedA = la.getCarried().size();
    unsigned carriedB = lb.getCarried().size();
    unsigned numA = argA.getArgNumber(), numB = argB.getArgNumber();
    if (numA < carriedA || numB < carriedB)
      return false;
    bool stackedA = numA < carriedA + la.getStacked().size();
    bool stackedB = numB < carriedB + lb.getStacked().size();
    return stackedA == stackedB && la->getOperand(numA) == lb->getOperand(numB);
  }
  Operation *opA = a.getDefiningOp(), *opB = b.getDefiningOp();
  if (opA->getBlock() != &la.getBodyBlock() ||
      opB->getBlock() != &lb.getBodyBlock() ||
      opA->getName() != opB->getName() || opA->getNumRegions() ||
      opB->getNumRegions() ||
      llvm::cast<OpResult>(a).getResultNumber() !=
          llvm::cast<OpResult>(b).getResultNumber() ||
      opA->getResultTypes() != opB->getResultTypes() ||
      opA->getNumOperands() != opB->getNumOperands() ||
      meaning(opA) != meaning(opB) || !isMemoryEffectFree(opA))
    return false;
  for (auto [x, y] : llvm::zip(opA->getOperands(), opB->getOperands()))
    if (!sameValue(la, x, lb, y))
      return false;
  return true;
}

/// The one type every reader of `result` reads it as (each an
/// mtf.from_tensor), or null.
Type readAs(Value result) {
  Type type;
  for (Operation *user : result.getUsers()) {
    if (!llvm::isa<mtf::FromTensorOp>(user) ||
        (type && type != user->getResult(0).getType()))
      return {};
    type = user->getResult(0).getType();
  }
  return type;
}

/// A gather of a later loop's body each of whose inputs an earlier loop's
/// body gathers the same way: where each input's gathered value is.
struct Kept {
  mtf::LoopOp earlier;
  Operation *gather = nullptr;
  /// Per result of `gather`: the earlier body's gather and result.
  SmallVector<std::pair<Operation *, unsigned>> sources;
};

std::optional<Kept> keptOf(ArrayRef<mtf::LoopOp> earlierLoops, mtf::LoopOp loop,
                           Operation *gather) {
  SmallVector<GatherInput> inputs = inputsOf(gather);
  if (inputs.empty())
    return std::nullopt;
  for (mtf::LoopOp earlier : earlierLoops) {
    if (earlier.getDim() != loop.getDim() ||
        earlier.getCount() != loop.getCount())
      continue;
    Kept kept{earlier, gather, {}};
    for (const GatherInput &input : inputs) {
      Type type = readAs(gather->getResult(input.index));
      if (!type)
        return std::nullopt;
      for (Operation &op : earlier.getBodyBlock()) {
        for (const GatherInput &candidate : inputsOf(&op))
          if (candidate.grid == input.grid &&
              candidate.gridAxes == input.gridAxes &&
              candidate.gatherAxis == input.gatherAxis &&
              op.getResult(candidate.index).getType() ==
                  gather->getResult(input.index).getType() &&
              sameValue(earlier, candidate.input, loop, input.input)) {
            kept.sources.push_back({&op, candidate.index});
            break;
          }
        if (kept.sources.size() > input.index)
          break;
      }
      if (kept.sources.size() <= input.index)
        break;
    }
    if (kept.sources.size() == inputs.size())
      return kept;
  }
  return std::nullopt;
}

/// `loop` rebuilt with `stacked` stacked after its own stacked operands
/// (the body's arguments made already) and `stackedTypes` stacked results
/// after its own (the body yields them last).
mtf::LoopOp rebuild(mtf::LoopOp loop, ArrayRef<Value> stacked,
                    ArrayRef<Type> stackedTypes) {
  SmallVector<Value> stackedOperands(loop.getStacked());
  llvm::append_range(stackedOperands, stacked);
  SmallVector<Type> resultTypes(loop.getStackedResults().getTypes());
  llvm::append_range(resultTypes, stackedTypes);
  OpBuilder builder(loop);
  auto replaced = mtf::LoopOp::create(
      builder, loop.getLoc(), loop.getFinals().getTypes(), resultTypes,
      loop.getDim(), loop.getCount(), loop.getCarried(), stackedOperands,
      loop.getInvariant(), loop.getReverse());
  replaced->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
  replaced.getBody().takeBody(loop.getBody());
  for (auto [old, now] : llvm::zip(loop.getFinals(), replaced.getFinals()))
    old.replaceAllUsesWith(now);
  for (auto [old, now] :
       llvm::zip(loop.getStackedResults(), replaced.getStackedResults()))
    old.replaceAllUsesWith(now);
  loop.erase();
  return replaced;
}

/// Makes `kept.gather`'s readers read what `kept.earlier` gathered, stacked
/// by it, and erases the gather and what only it read.
void keep(mtf::LoopOp loop, const Kept &kept) {
  mtf::LoopOp earlier = kept.earlier;
  // The earlier body yields each gathered value (as its readers read it)
  // as a new stacked result.
  Operation *yield = earlier.getBodyBlock().getTerminator();
  SmallVector<Type> stackedTypes;
  for (auto [index, source] : llvm::enumerate(kept.sources)) {
    auto [gather, number] = source;
    Type type = readAs(kept.gather->getResult(index));
    Value gathered = gather->getResult(number);
    Value read;
    for (Operation *user : gathered.getUsers())
      if (llvm::isa<mtf::FromTensorOp>(user) &&
          user->getResult(0).getType() == type)
        read = user->getResult(0);
    if (!read) {
      OpBuilder builder(gather->getContext());
      builder.setInsertionPointAfter(gather);
      read =
          mtf::FromTensorOp::create(builder, gather->getLoc(), type, gathered);
    }
    yield->insertOperands(yield->getNumOperands(), read);
    stackedTypes.push_back(
        mtf::LoopOp::stackedType(llvm::cast<mtf::TensorType>(type),
                                 earlier.getDim(), earlier.getCount()));
  }
  unsigned before = earlier.getStackedResults().size();
  earlier = rebuild(earlier, {}, stackedTypes);
  auto results = earlier.getStackedResults().drop_front(before);

  // The later body reads them as new stacked arguments.
  Block &body = loop.getBodyBlock();
  unsigned end = loop.getCarried().size() + loop.getStacked().size();
  SmallVector<Value> stacked;
  Operation *gather = kept.gather;
  for (auto [index, result] : llvm::enumerate(results)) {
    BlockArgument arg = body.insertArgument(
        end + index,
        mtf::LoopOp::sliceType(result.getType(), loop.getDim(),
                               loop.getCount()),
        loop.getLoc());
    for (Operation *user :
         llvm::make_early_inc_range(gather->getResult(index).getUsers())) {
      user->getResult(0).replaceAllUsesWith(arg);
      user->erase();
    }
    stacked.push_back(result);
  }
  SmallVector<Operation *> dead{gather};
  while (!dead.empty()) {
    Operation *op = dead.pop_back_val();
    SmallVector<Value> operands(op->getOperands());
    op->erase();
    for (Value operand : operands)
      if (Operation *def = operand.getDefiningOp())
        if (def->use_empty() && isMemoryEffectFree(def) &&
            !llvm::is_contained(dead, def))
          dead.push_back(def);
  }
  rebuild(loop, stacked, {});
}

struct MtfKeepGatheredPass
    : public meshc::impl::MtfKeepGatheredBase<MtfKeepGatheredPass> {
  using MtfKeepGatheredBase::MtfKeepGatheredBase;

  void runOnOperation() override {
    for (auto program : getOperation().getOps<mtf::ProgramOp>()) {
      if (!program.getLocal())
        continue;
      // One gather at a time: each rewrite rebuilds two loops.
      while (std::optional<std::pair<mtf::LoopOp, Kept>> next =
                 findKept(program))
        keep(next->first, next->second);
    }
  }

  static std::optional<std::pair<mtf::LoopOp, Kept>>
  findKept(mtf::ProgramOp program) {
    SmallVector<mtf::LoopOp> loops(
        program.getBodyBlock().getOps<mtf::LoopOp>());
    for (auto [index, loop] : llvm::enumerate(loops))
      for (Operation &op : loop.getBodyBlock())
        if (std::optional<Kept> kept = keptOf(
                ArrayRef<mtf::LoopOp>(loops).take_front(index), loop, &op))
          return std::make_pair(loop, *kept);
    return std::nullopt;
  }
};

} // namespace
