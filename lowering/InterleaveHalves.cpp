//===- InterleaveHalves.cpp - mtf-interleave-halves -----------------------===//
//
// A loop body that all-reduces its activations (tensor parallelism) runs
// as two halves of its batch, each op once per half, so that one half's
// all-reduce runs beside the other half's compute (DeepSpeed's Domino;
// lowering/Passes.td states the rule).
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LayoutBridge.h"
#include "dialect/MtfDialect.h"
#include "dialect/PartitionRule.h"
#include "lowering/CollectiveSteps.h"
#include "lowering/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace meshc {
#define GEN_PASS_DEF_MTFINTERLEAVEHALVES
#include "lowering/Passes.h.inc"
} // namespace meshc

using namespace mlir;

namespace {

/// Where dim `dim` is in `type` (an mtf tensor), if it has it.
std::optional<unsigned> dimIndex(Type type, StringRef dim) {
  auto tensor = llvm::dyn_cast<mtf::TensorType>(type);
  return tensor ? tensor.getDimIndex(dim) : std::nullopt;
}

/// How the pass treats one op of the body.
enum class Treatment {
  /// It reads and makes no value with the halved dim: kept once, shared.
  Shared,
  /// Once per half, on the halves, making halves.
  Halved,
  /// Once per half, making partial sums (or maxima) of the whole result,
  /// which are added (or maxed).
  Summed,
  Maxed,
};

class Halver {
public:
  /// With `joinReduces`, each all-reduce of the body runs once for both
  /// halves (one combined all-reduce) instead of once per half.
  Halver(mtf::LoopOp loop, StringRef dim, bool joinReduces)
      : loop(loop), dim(dim), joinReduces(joinReduces) {}

  /// Whether every op of the body can run as two halves along `dim`, and
  /// one all-reduces a value with it (else nothing is gained).
  bool check() {
    Block &body = loop.getBodyBlock();
    unsigned stackedEnd = loop.getCarried().size() + loop.getStacked().size();
    for (BlockArgument arg : body.getArguments())
      if (auto at = dimIndex(arg.getType(), dim)) {
        auto tensor = llvm::cast<mtf::TensorType>(arg.getType());
        int64_t size = tensor.getDims()[*at].size;
        // A carried or invariant operand is cut before the loop (a window:
        // floats); a stacked one comes in halves from the loop that made
        // it (see runOnOperation).
        bool cut = arg.getArgNumber() < loop.getCarried().size() ||
                   arg.getArgNumber() >= stackedEnd;
        if (size % 2 || size < 2 || (half && half != size / 2) ||
            (cut && !llvm::isa<FloatType>(tensor.getElementType())))
          return false;
        half = size / 2;
        axisOf[arg] = *at;
      }
    if (!half)
      return false;
    bool reduces = false;
    for (Operation &op : body.without_terminator()) {
      std::optional<Treatment> treatment = treat(&op);
      if (!treatment)
        return false;
      treatments[&op] = *treatment;
      reduces = reduces || (*treatment == Treatment::Halved &&
                            llvm::isa<shard::AllReduceOp>(op));
    }
    for (BlockArgument arg : loop.getStackedArgs())
      takes.push_back(axisOf.count(arg));
    for (Value value : body.getTerminator()->getOperands().drop_front(
             loop.getCarried().size()))
      stacks.push_back(axisOf.count(value));
    return reduces;
  }

  /// Whether the body's stacked argument `index` (among the stacked ones)
  /// has the dim: the loop takes it in halves.
  bool takesHalves(unsigned index) { return takes[index]; }
  /// Whether the body yields its stacked value `index` with the dim: the
  /// loop stacks its halves.
  bool stacksHalves(unsigned index) { return stacks[index]; }
  mtf::LoopOp getLoop() { return loop; }
  /// Whether `other` cuts the same dim into halves of the same size: a
  /// stacked value in halves passes between the two.
  bool sameCut(const Halver &other) const {
    return dim == other.dim && half == other.half;
  }

  /// Rewrites the loop as one over halves: each carried or invariant
  /// operand with the dim cut in two before it, each stacked one taken from
  /// `stackedHalves` (the halves of an earlier loop's stacked result), each
  /// final value with the dim joined after it, each stacked result with it
  /// stacked in halves (noted in `stackedHalves`). The old loop stays, its
  /// body emptied, for the caller to erase once nothing reads it.
  mtf::LoopOp
  rewrite(llvm::DenseMap<Value, std::array<Value, 2>> &stackedHalves) {
    auto program = loop->getParentOfType<mtf::ProgramOp>();
    // (A window's step sizes its dims by name: the half is another dim,
    // renamed, a view.)
    halfDim = meshc::freshDimName(program, dim + "_half");
    Block &body = loop.getBodyBlock();
    OpBuilder before(loop);
    auto *block = new Block();
    SmallVector<Value> operands[3];
    auto kindOf = [&](unsigned number) {
      unsigned carried = loop.getCarried().size();
      return number < carried                              ? 0
             : number < carried + loop.getStacked().size() ? 1
                                                           : 2;
    };
    for (BlockArgument arg : body.getArguments()) {
      Value operand = loop->getOperand(arg.getArgNumber());
      int kind = kindOf(arg.getArgNumber());
      if (!axisOf.count(arg)) {
        operands[kind].push_back(operand);
        arg.replaceAllUsesWith(block->addArgument(arg.getType(), arg.getLoc()));
        continue;
      }
      std::array<Value, 2> parts =
          kind == 1 ? stackedHalves.lookup(operand) : cut(before, operand);
      for (int part = 0; part < 2; ++part) {
        operands[kind].push_back(parts[part]);
        halves[part].map(
            Value(arg),
            block->addArgument(halved(arg.getType(), axisOf.lookup(arg)),
                               arg.getLoc()));
      }
    }
    block->getOperations().splice(block->end(), body.getOperations());

    // (The block has no region yet: the builder takes the loop's context.)
    OpBuilder builder(loop->getContext());
    SmallVector<Operation *> replaced;
    for (Operation &op :
         llvm::make_early_inc_range(block->without_terminator())) {
      Treatment treatment = treatments.lookup(&op);
      if (treatment == Treatment::Shared)
        continue;
      builder.setInsertionPoint(&op);
      Operation *parts[2];
      for (int part = 0; part < 2; ++part) {
        parts[part] = builder.clone(op, halves[part]);
        tagged(parts[part], part);
        if (treatment == Treatment::Halved)
          for (auto [old, result] :
               llvm::zip(op.getResults(), parts[part]->getResults()))
            if (axisOf.count(old))
              result.setType(halved(result.getType(), axisOf.lookup(old)));
      }
      if (treatment != Treatment::Halved) {
        // The partial results, added (or maxed) into the whole.
        Value a = parts[0]->getResult(0), b = parts[1]->getResult(0);
        Operation *joined =
            treatment == Treatment::Summed
                ? mtf::AddOp::create(builder, op.getLoc(), a.getType(), a, b)
                      .getOperation()
                : mtf::MaxOp::create(builder, op.getLoc(), a.getType(), a, b)
                      .getOperation();
        copyTags(&op, joined);
        op.getResult(0).replaceAllUsesWith(joined->getResult(0));
      }
      if (joinReduces && llvm::isa<shard::AllReduceOp>(op))
        joinHalves(builder, &op, parts);
      replaced.push_back(&op);
    }
    // The yield: each value with the dim as its two halves.
    Operation *yield = block->getTerminator();
    SmallVector<Value> yielded;
    SmallVector<Type> finalTypes, stackedTypes;
    unsigned carried = loop.getCarried().size();
    for (OpOperand &operand : yield->getOpOperands()) {
      Value value = operand.get();
      bool isCarried = operand.getOperandNumber() < carried;
      SmallVector<Value, 2> values;
      if (axisOf.count(value))
        values = {halves[0].lookup(value), halves[1].lookup(value)};
      else
        values = {value};
      for (Value each : values) {
        yielded.push_back(each);
        auto type = llvm::cast<mtf::TensorType>(each.getType());
        if (isCarried)
          finalTypes.push_back(type);
        else
          stackedTypes.push_back(
              mtf::LoopOp::stackedType(type, loop.getDim(), loop.getCount()));
      }
    }
    builder.setInsertionPoint(yield);
    mtf::YieldOp::create(builder, yield->getLoc(), yielded);
    yield->erase();
    for (Operation *op : llvm::reverse(replaced))
      op->erase();

    auto halvedLoop =
        mtf::LoopOp::create(before, loop.getLoc(), finalTypes, stackedTypes,
                            loop.getDim(), loop.getCount(), operands[0],
                            operands[1], operands[2], loop.getReverse());
    halvedLoop->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
    halvedLoop.getBody().push_back(block);

    // The old results from the new: finals joined after the loop, stacked
    // results noted in halves.
    OpBuilder after(loop->getBlock(), std::next(Block::iterator(loop)));
    after.setInsertionPointAfter(halvedLoop);
    unsigned next = 0;
    for (auto [final, operand] :
         llvm::zip(loop.getFinals(), loop.getCarried())) {
      if (auto at = dimIndex(final.getType(), dim)) {
        Value a = halvedLoop.getFinals()[next],
              b = halvedLoop.getFinals()[next + 1];
        final.replaceAllUsesWith(join(after, a, b, final.getType(),
                                      meshc::resultLayoutAttr(operand)));
        next += 2;
      } else {
        final.replaceAllUsesWith(halvedLoop.getFinals()[next++]);
      }
    }
    next = 0;
    for (auto [index, result] : llvm::enumerate(loop.getStackedResults())) {
      if (stacksHalves(index)) {
        stackedHalves[result] = {halvedLoop.getStackedResults()[next],
                                 halvedLoop.getStackedResults()[next + 1]};
        next += 2;
      } else {
        result.replaceAllUsesWith(halvedLoop.getStackedResults()[next++]);
      }
    }
    return halvedLoop;
  }

  /// Replaces the halves `parts` of all-reduce `op` by one combined
  /// all-reduce of both, where the second was.
  void joinHalves(OpBuilder &builder, Operation *op, Operation *parts[2]) {
    auto reduce = llvm::cast<shard::AllReduceOp>(op);
    Value inputs[] = {parts[0]->getOperand(0), parts[1]->getOperand(0)};
    Type types[] = {parts[0]->getResult(0).getType(),
                    parts[1]->getResult(0).getType()};
    auto combined = mtf::CombinedAllReduceOp::create(
        builder, op->getLoc(), types, inputs, reduce.getGridAttr(),
        reduce.getGridAxesAttr(),
        builder.getStringAttr(meshc::reductionName(reduce.getReduction())));
    copyTags(op, combined);
    inPhase(combined);
    std::string reason = "both halves of the batch at once";
    if (auto own =
            op->getAttrOfType<StringAttr>(mtf::MtfDialect::kReasonAttrName))
      reason = own.str() + " (" + reason + ")";
    combined->setAttr(mtf::MtfDialect::kReasonAttrName,
                      builder.getStringAttr(reason));
    for (int part = 0; part < 2; ++part) {
      halves[part].map(op->getResult(0), combined.getResult(part));
      parts[part]->getResult(0).replaceAllUsesWith(combined.getResult(part));
      parts[part]->erase();
    }
  }

  /// `value`'s halves along the dim, before the loop: a window of each
  /// (copies), renamed back.
  std::array<Value, 2> cut(OpBuilder &builder, Value value) {
    std::array<Value, 2> parts;
    for (int part = 0; part < 2; ++part) {
      Operation *window = mtf::WindowOp::create(
          builder, loop.getLoc(), value, dim, halfDim, half, part * half);
      Operation *renamed = mtf::RenameOp::create(
          builder, loop.getLoc(), window->getResult(0), halfDim, dim);
      inPhase(window);
      inPhase(renamed);
      // (The halves keep the whole's layout: the same dims, split alike.)
      if (mtf::LayoutAttr layout = meshc::resultLayoutAttr(value))
        renamed->setAttr(mtf::MtfDialect::kLayoutAttrName, layout);
      parts[part] = renamed->getResult(0);
    }
    return parts;
  }

  /// The whole of type `type` from halves `a` and `b` along the dim: a
  /// window of each into the whole size, added (in `layout`, that of the
  /// loop's operand it stands for).
  Value join(OpBuilder &builder, Value a, Value b, Type type,
             mtf::LayoutAttr layout) {
    Value padded[2];
    for (auto [part, value] : llvm::enumerate(std::array<Value, 2>{a, b})) {
      Operation *renamed =
          mtf::RenameOp::create(builder, loop.getLoc(), value, dim, halfDim);
      Operation *window = mtf::WindowOp::create(
          builder, loop.getLoc(), renamed->getResult(0), halfDim, dim, 2 * half,
          -static_cast<int64_t>(part) * half);
      inPhase(renamed);
      inPhase(window);
      padded[part] = window->getResult(0);
    }
    Operation *joined =
        mtf::AddOp::create(builder, loop.getLoc(), type, padded[0], padded[1]);
    inPhase(joined);
    if (layout)
      joined->setAttr(mtf::MtfDialect::kLayoutAttrName, layout);
    return joined->getResult(0);
  }

private:
  /// Where `dim` is in `value`: an mtf tensor's own, a builtin tensor's
  /// from the value it was made from (to_tensor, collectives).
  std::optional<unsigned> axisOfValue(Value value) {
    if (auto at = axisOf.find(value); at != axisOf.end())
      return at->second;
    return std::nullopt;
  }

  /// `type` with its `axis` halved.
  Type halved(Type type, unsigned axis) {
    if (auto tensor = llvm::dyn_cast<mtf::TensorType>(type)) {
      SmallVector<mtf::NamedDim> dims(tensor.getDims());
      dims[axis].size = half;
      return mtf::TensorType::get(type.getContext(), dims,
                                  tensor.getElementType());
    }
    auto ranked = llvm::cast<RankedTensorType>(type);
    SmallVector<int64_t> shape(ranked.getShape());
    shape[axis] = half;
    return RankedTensorType::get(shape, ranked.getElementType());
  }

  /// How `op` runs in halves, noting where the dim is in its results;
  /// nullopt where it cannot.
  std::optional<Treatment> treat(Operation *op) {
    if (op->getNumRegions() || op->hasAttr(mtf::MtfDialect::kBlocksAttrName))
      return llvm::none_of(
                 op->getOperands(),
                 [&](Value v) { return axisOfValue(v).has_value(); }) &&
                     llvm::none_of(op->getResultTypes(),
                                   [&](Type type) {
                                     return dimIndex(type, dim).has_value();
                                   })
                 ? std::optional(Treatment::Shared)
                 : std::nullopt;
    SmallVector<unsigned> inputAxes;
    bool reads = false;
    for (Value operand : op->getOperands())
      if (std::optional<unsigned> at = axisOfValue(operand)) {
        reads = true;
        inputAxes.push_back(*at);
      }
    bool makes = llvm::any_of(op->getResultTypes(), [&](Type type) {
      return dimIndex(type, dim).has_value();
    });
    if (!reads && !makes)
      return Treatment::Shared;
    auto noteResults = [&]() {
      for (Value result : op->getResults())
        if (auto at = dimIndex(result.getType(), dim))
          axisOf[result] = *at;
    };
    // Views and collectives of builtin tensors: the dim keeps its axis.
    if (llvm::isa<mtf::ToTensorOp, mtf::FromTensorOp, shard::AllReduceOp,
                  shard::AllGatherOp>(op) &&
        !reads)
      return std::nullopt;
    if (llvm::isa<mtf::ToTensorOp>(op)) {
      axisOf[op->getResult(0)] = inputAxes.front();
      return Treatment::Halved;
    }
    if (llvm::isa<mtf::FromTensorOp>(op)) {
      if (dimIndex(op->getResult(0).getType(), dim) != inputAxes.front())
        return std::nullopt;
      noteResults();
      return Treatment::Halved;
    }
    if (llvm::isa<shard::AllReduceOp>(op)) {
      axisOf[op->getResult(0)] = inputAxes.front();
      return Treatment::Halved;
    }
    if (auto gather = llvm::dyn_cast<shard::AllGatherOp>(op)) {
      if (gather.getGatherAxis().getZExtValue() == inputAxes.front())
        return std::nullopt;
      axisOf[op->getResult(0)] = inputAxes.front();
      return Treatment::Halved;
    }
    // Values made from a global index, or from nothing, differ by half.
    if (!reads) {
      if (!llvm::isa<mtf::ConstantOp>(op))
        return std::nullopt;
      noteResults();
      return Treatment::Halved;
    }
    auto ruled = llvm::dyn_cast<mtf::PartitionRuleOpInterface>(op);
    if (!ruled || llvm::isa<mtf::DropoutMaskOp, mtf::RangeOp>(op))
      return std::nullopt;
    mtf::PartitionRule rule = ruled.getPartitionRule();
    switch (rule.kind) {
    case mtf::PartitionKind::Dims: {
      mtf::DimRole role = rule.roleOf(dim);
      if (role == mtf::DimRole::Parallel && makes) {
        noteResults();
        return Treatment::Halved;
      }
      if (op->getNumResults() != 1 || makes || rule.mean)
        return std::nullopt;
      if (role == mtf::DimRole::Summed)
        return Treatment::Summed;
      if (role == mtf::DimRole::Maxed)
        return Treatment::Maxed;
      return std::nullopt;
    }
    case mtf::PartitionKind::Rename:
      if (rule.from == dim || rule.to == dim)
        return std::nullopt;
      noteResults();
      return Treatment::Halved;
    case mtf::PartitionKind::Attention: {
      // A batch dim: in every result, neither the key dim nor a head dim
      // (an operand without it, the bias, is shared).
      StringAttr keyDim = op->getAttrOfType<StringAttr>("key_dim");
      auto headDims = op->getAttrOfType<ArrayAttr>("head_dims");
      if (!keyDim || !headDims || keyDim.getValue() == dim ||
          llvm::any_of(headDims,
                       [&](Attribute head) {
                         return llvm::cast<StringAttr>(head).getValue() == dim;
                       }) ||
          !llvm::all_of(op->getResultTypes(), [&](Type type) {
            return dimIndex(type, dim).has_value();
          }))
        return std::nullopt;
      noteResults();
      return Treatment::Halved;
    }
    default:
      return std::nullopt;
    }
  }

  /// Marks `op` as half `part`'s, in the loop's phase.
  void tagged(Operation *op, int part) {
    op->setAttr(mtf::MtfDialect::kHalfAttrName,
                IntegerAttr::get(IntegerType::get(op->getContext(), 64), part));
    inPhase(op);
  }
  void inPhase(Operation *op) {
    if (!op->hasAttr(mtf::MtfDialect::kPhaseAttrName))
      if (Attribute phase = loop->getAttr(mtf::MtfDialect::kPhaseAttrName))
        op->setAttr(mtf::MtfDialect::kPhaseAttrName, phase);
  }

  static void copyTags(Operation *from, Operation *to) {
    for (StringRef name :
         {mtf::MtfDialect::kPhaseAttrName, mtf::MtfDialect::kLayoutAttrName})
      if (Attribute attr = from->getAttr(name))
        to->setAttr(name, attr);
  }

  mtf::LoopOp loop;
  std::string dim, halfDim;
  bool joinReduces = false;
  int64_t half = 0;
  /// Where the dim is in each value that has it (the halved ones).
  llvm::DenseMap<Value, unsigned> axisOf;
  llvm::DenseMap<Operation *, Treatment> treatments;
  /// Per stacked argument and stacked yield: whether it has the dim.
  std::vector<bool> takes, stacks;
  IRMapping halves[2];
};

struct MtfInterleaveHalvesPass
    : public meshc::impl::MtfInterleaveHalvesBase<MtfInterleaveHalvesPass> {
  using MtfInterleaveHalvesBase::MtfInterleaveHalvesBase;

  void runOnOperation() override {
    for (auto program : getOperation().getOps<mtf::ProgramOp>())
      if (program.getLocal())
        run(program);
  }

  void run(mtf::ProgramOp program) {
    // The loops that can run in halves: the batch is the first dim of the
    // first carried value (a layer's activations or their gradient).
    std::vector<std::unique_ptr<Halver>> halvers;
    llvm::DenseMap<Operation *, Halver *> byLoop;
    for (mtf::LoopOp loop : program.getBodyBlock().getOps<mtf::LoopOp>()) {
      if (loop.getCarried().empty())
        continue;
      auto first =
          llvm::dyn_cast<mtf::TensorType>(loop.getCarried()[0].getType());
      if (!first || first.getRank() == 0)
        continue;
      auto halver =
          std::make_unique<Halver>(loop, first.getDims()[0].name.getValue(),
                                   joinReverse && loop.getReverse());
      if (!halver->check())
        continue;
      byLoop[loop] = halver.get();
      halvers.push_back(std::move(halver));
    }
    // A stacked operand with the batch comes in halves from the loop that
    // stacked it (the forward's layer inputs, read by the backward), and a
    // stacked result with it goes to loops that take it in halves: where
    // either does not hold, the loop stays whole (cutting or joining a
    // tensor of every layer would cost its size again).
    for (bool changed = true; changed;) {
      changed = false;
      for (auto &[op, halver] : llvm::make_early_inc_range(byLoop)) {
        mtf::LoopOp loop = halver->getLoop();
        bool fits = true;
        for (auto [index, operand] : llvm::enumerate(loop.getStacked())) {
          if (!halver->takesHalves(index))
            continue;
          auto result = llvm::dyn_cast<OpResult>(operand);
          auto producer = result ? byLoop.lookup(result.getOwner()) : nullptr;
          unsigned finals =
              producer ? producer->getLoop().getCarried().size() : 0;
          fits = fits && producer && producer->sameCut(*halver) &&
                 result.getResultNumber() >= finals &&
                 producer->stacksHalves(result.getResultNumber() - finals);
        }
        for (auto [index, result] : llvm::enumerate(loop.getStackedResults())) {
          if (!halver->stacksHalves(index))
            continue;
          for (OpOperand &use : result.getUses()) {
            auto consumer = byLoop.lookup(use.getOwner());
            auto reader = llvm::dyn_cast<mtf::LoopOp>(use.getOwner());
            unsigned first = reader ? reader.getCarried().size() : 0;
            fits =
                fits && consumer && consumer->sameCut(*halver) &&
                use.getOperandNumber() >= first &&
                use.getOperandNumber() < first + reader.getStacked().size() &&
                consumer->takesHalves(use.getOperandNumber() - first);
          }
        }
        if (!fits) {
          byLoop.erase(op);
          changed = true;
        }
      }
    }
    // In program order, so a stacked result's halves exist before the loop
    // that reads them is rewritten.
    llvm::DenseMap<Value, std::array<Value, 2>> stackedHalves;
    SmallVector<mtf::LoopOp> old;
    for (auto &halver : halvers)
      if (byLoop.count(halver->getLoop())) {
        old.push_back(halver->getLoop());
        halver->rewrite(stackedHalves);
      }
    for (mtf::LoopOp loop : llvm::reverse(old))
      loop.erase();
  }
};

} // namespace
