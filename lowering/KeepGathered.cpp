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
/// it (its reason, phase, half, instance, a remat mark). Its layout counts:
/// an op that reads a global index (a dropout mask, a one-hot) computes
/// its block by it.
NamedAttrList meaning(Operation *op) {
  NamedAttrList attrs;
  for (NamedAttribute attr : op->getAttrs())
    if (!llvm::is_contained(
            {mtf::MtfDialect::kReasonAttrName, mtf::MtfDialect::kPhaseAttrName,
             mtf::MtfDialect::kHalfAttrName, mtf::MtfDialect::kInstanceAttrName,
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
  if (la == lb && a == b)
    return true;
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

/// Where `earlier`'s body gathers what `input`, of `loop`'s body, gathers:
/// the same way, into the same type, read as the same type (one per
/// result: mtf-prefetch-gathers takes no other), from the same value.
std::optional<std::pair<Operation *, unsigned>>
sourceOf(mtf::LoopOp earlier, mtf::LoopOp loop, const GatherInput &input) {
  Value result = input.gather->getResult(input.index);
  Type type = readAs(result);
  if (!type)
    return std::nullopt;
  for (Operation &op : earlier.getBodyBlock())
    for (const GatherInput &candidate : inputsOf(&op)) {
      Value gathered = op.getResult(candidate.index);
      if (candidate.grid == input.grid &&
          candidate.gridAxes == input.gridAxes &&
          candidate.gatherAxis == input.gatherAxis &&
          gathered.getType() == result.getType() && readAs(gathered) == type &&
          sameValue(earlier, candidate.input, loop, input.input))
        return std::make_pair(&op, candidate.index);
    }
  return std::nullopt;
}

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
      std::optional<std::pair<Operation *, unsigned>> source =
          sourceOf(earlier, loop, input);
      if (!source)
        break;
      kept.sources.push_back(*source);
    }
    if (kept.sources.size() == inputs.size())
      return kept;
  }
  return std::nullopt;
}

/// Makes `kept.gather`'s readers read what `kept.earlier` gathered, stacked
/// by it, and erases the gather and what only it read.
void keep(mtf::LoopOp loop, const Kept &kept) {
  mtf::LoopOp earlier = kept.earlier;
  // The earlier body yields each gathered value (as its readers read it:
  // one type, keptOf checked) as a stacked result, a new one unless it
  // yields it so already (a weight gathered twice, --bucket-size 0).
  Operation *yield = earlier.getBodyBlock().getTerminator();
  unsigned carried = earlier.getCarried().size();
  auto yieldedAt = [&](Value value) -> std::optional<unsigned> {
    for (auto [index, operand] :
         llvm::enumerate(yield->getOperands().drop_front(carried)))
      if (operand == value)
        return index;
    return std::nullopt;
  };
  SmallVector<Type> stackedTypes;
  SmallVector<unsigned> positions;
  for (auto [gather, number] : kept.sources) {
    Value read = (*gather->getResult(number).getUsers().begin())->getResult(0);
    if (!yieldedAt(read)) {
      yield->insertOperands(yield->getNumOperands(), read);
      stackedTypes.push_back(
          mtf::LoopOp::stackedType(llvm::cast<mtf::TensorType>(read.getType()),
                                   earlier.getDim(), earlier.getCount()));
    }
    positions.push_back(*yieldedAt(read));
  }
  earlier = earlier.extend({}, {}, stackedTypes);
  SmallVector<Value> results;
  for (unsigned position : positions)
    results.push_back(earlier.getStackedResults()[position]);

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
  loop.extend({}, stacked, {});
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
