//===- HoistLoopReductions.cpp - mtf-hoist-loop-reductions ----------------===//
//
// A loop body that all-reduces a small gradient only to stack it (the layer
// norms' parameter gradients, 16 KiB per layer) pays the collective's
// latency once per iteration. The all-reduce and the casts after it act on
// each element alone, so they can as well act on the stacked tensor once,
// after the loop: the body yields the partial sum. Likewise a sum carried
// from zero that adds one all-reduced value per iteration (a weight's
// gradient summed over a pipeline's ticks) adds the partial sums and is
// all-reduced once, after the loop; also where the all-reduced value reaches
// the sum through an einsum with a value the same on every member of the
// all-reduce (an interleaved pipeline's weight gradient, scattered to its
// round by a 0/1 per tick): the einsum takes the partial sum. See
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LayoutBridge.h"
#include "lowering/Passes.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace meshc {
#define GEN_PASS_DEF_MTFHOISTLOOPREDUCTIONS
#include "lowering/Passes.h.inc"
} // namespace meshc

namespace {

/// A stacked value's all-reduce: to_tensor, a sum all_reduce, from_tensor
/// and casts, each read only by the next and the last by the body's yield.
struct StackedReduction {
  mtf::ToTensorOp toTensor;
  shard::AllReduceOp reduce;
  mtf::FromTensorOp fromTensor;
  /// In program order.
  SmallVector<mtf::CastOp> casts;
};

bool singleUse(Operation *op) { return op->getResult(0).hasOneUse(); }

/// The casts that end `yielded` (each read only by the next, the last by
/// the yield), in program order; `yielded` goes back to the value before
/// them.
SmallVector<mtf::CastOp> castTail(Value &yielded) {
  SmallVector<mtf::CastOp> casts;
  while (auto cast = yielded.getDefiningOp<mtf::CastOp>()) {
    if (!singleUse(cast))
      break;
    casts.insert(casts.begin(), cast);
    yielded = cast.getInput();
  }
  return casts;
}

std::optional<StackedReduction> stackedReduction(Value yielded) {
  StackedReduction found;
  Value value = yielded;
  found.casts = castTail(value);
  if (value.getDefiningOp<mtf::CastOp>())
    return std::nullopt; // a cast read twice
  found.fromTensor = value.getDefiningOp<mtf::FromTensorOp>();
  if (!found.fromTensor || !singleUse(found.fromTensor))
    return std::nullopt;
  found.reduce =
      found.fromTensor->getOperand(0).getDefiningOp<shard::AllReduceOp>();
  if (!found.reduce || !singleUse(found.reduce) ||
      found.reduce.getReduction() != shard::ReductionKind::Sum)
    return std::nullopt;
  found.toTensor = found.reduce->getOperand(0).getDefiningOp<mtf::ToTensorOp>();
  if (!found.toTensor || !singleUse(found.toTensor))
    return std::nullopt;
  // The stacked result keeps its type: the partial sum has the yielded
  // value's (a cast pair f32 -> bf16 -> f32 rounds a total).
  if (found.toTensor->getOperand(0).getType() != yielded.getType())
    return std::nullopt;
  // Unequal blocks (device weights) are cut per op; leave them be.
  SmallVector<Operation *> ops{found.toTensor, found.reduce, found.fromTensor};
  ops.append(found.casts.begin(), found.casts.end());
  for (Operation *op : ops)
    if (op->hasAttr(mtf::MtfDialect::kBlocksAttrName))
      return std::nullopt;
  return found;
}

int64_t bytesOf(mtf::TensorType type) {
  return type.getNumElements() *
         int64_t(type.getElementType().getIntOrFloatBitWidth() / 8);
}

/// `op` cloned after the loop with result type `type`, in the loop's phase,
/// without the body's instance tag.
Operation *cloneAfter(OpBuilder &builder, Operation *op, Type type,
                      mtf::LoopOp loop) {
  Operation *copy = builder.clone(*op);
  copy->getResult(0).setType(type);
  for (StringRef name : mtf::MtfDialect::kGroupAttrNames)
    copy->removeAttr(name);
  if (auto phase = loop->getAttr(mtf::MtfDialect::kPhaseAttrName))
    copy->setAttr(mtf::MtfDialect::kPhaseAttrName, phase);
  else
    copy->removeAttr(mtf::MtfDialect::kPhaseAttrName);
  return copy;
}

/// `casts` cloned after `after` (in `loop`'s phase) onto `value`, a stacked
/// tensor of `loop`: each takes the stacked form of its type. Returns the
/// last one's result, and the first cast (the one new reader of `value`) in
/// `first`.
Value castAfter(ArrayRef<mtf::CastOp> casts, Operation *after, Value value,
                mtf::LoopOp loop, Operation *&first) {
  OpBuilder builder(loop->getContext());
  builder.setInsertionPointAfter(after);
  first = nullptr;
  for (mtf::CastOp cast : casts) {
    auto type =
        mtf::LoopOp::stackedType(llvm::cast<mtf::TensorType>(cast.getType()),
                                 loop.getDim(), loop.getCount());
    Operation *copy = cloneAfter(builder, cast, type, loop);
    copy->setOperand(0, value);
    first = first ? first : copy;
    value = copy->getResult(0);
  }
  return value;
}

/// `found`'s all-reduce cloned after `loop` onto `value` (of type `type`):
/// to_tensor, the sum all_reduce with its reason and `how` it moved, and
/// from_tensor; returns the from_tensor, and the to_tensor (the one new
/// reader of `value`) in `to`.
Operation *reduceAfter(const StackedReduction &found, mtf::LoopOp loop,
                       Value value, mtf::TensorType type, StringRef how,
                       Operation *&to) {
  OpBuilder builder(loop->getContext());
  builder.setInsertionPointAfter(loop);
  SmallVector<int64_t> shape;
  for (const mtf::NamedDim &named : type.getDims())
    shape.push_back(named.size);
  auto ranked = RankedTensorType::get(shape, type.getElementType());
  to = cloneAfter(builder, found.toTensor, ranked, loop);
  to->setOperand(0, value);
  Operation *reduce = cloneAfter(builder, found.reduce, ranked, loop);
  reduce->setOperand(0, to->getResult(0));
  std::string reason = "once after the loop over '" + loop.getDim().str() +
                       "', " + how.str() + " (mtf-hoist-loop-reductions)";
  if (auto why = found.reduce->getAttrOfType<StringAttr>(
          mtf::MtfDialect::kReasonAttrName))
    reason = why.getValue().str() + ", " + reason;
  reduce->setAttr(mtf::MtfDialect::kReasonAttrName,
                  builder.getStringAttr(reason));
  Operation *from = cloneAfter(builder, found.fromTensor, type, loop);
  from->setOperand(0, reduce->getResult(0));
  return from;
}

void hoist(mtf::LoopOp loop, int64_t bucketBytes) {
  Operation *yield = loop.getBodyBlock().getTerminator();
  size_t carried = loop.getFinals().size();
  StringRef dim = loop.getDim();
  int64_t count = loop.getCount();
  for (size_t i = 0; i < loop.getStackedResults().size(); ++i) {
    Value stacked = loop.getStackedResults()[i];
    auto stackedType = llvm::cast<mtf::TensorType>(stacked.getType());
    if (bytesOf(stackedType) > bucketBytes)
      continue;
    std::optional<StackedReduction> found =
        stackedReduction(yield->getOperand(carried + i));
    if (!found)
      continue;
    yield->setOperand(carried + i, found->toTensor->getOperand(0));

    auto reducedType = mtf::LoopOp::stackedType(
        llvm::cast<mtf::TensorType>(found->fromTensor.getType()), dim, count);
    Operation *to = nullptr;
    Operation *from =
        reduceAfter(*found, loop, stacked, reducedType, "stacked", to);
    Operation *firstCast = nullptr;
    Value last =
        castAfter(found->casts, from, from->getResult(0), loop, firstCast);
    stacked.replaceAllUsesExcept(last, to);
    for (auto cast : llvm::reverse(found->casts))
      cast->erase();
    found->fromTensor->erase();
    found->reduce->erase();
    found->toTensor->erase();
  }
}

/// Casts that end a stacked value (the bf16 rounding of a gradient after its
/// collective): each acts on each element alone, so the stacked tensor is
/// cast once after the loop instead, and the body stacks the value before
/// them. The collective's results are then only stacked: its wait may be
/// carried into the next iteration (mtf-overlap-collectives). Only where
/// the stacked result keeps its type (a pair f32 -> bf16 -> f32).
void sinkStackedCasts(mtf::LoopOp loop) {
  Operation *yield = loop.getBodyBlock().getTerminator();
  size_t carried = loop.getFinals().size();
  for (size_t i = 0; i < loop.getStackedResults().size(); ++i) {
    Value yielded = yield->getOperand(carried + i);
    Value value = yielded;
    SmallVector<mtf::CastOp> casts = castTail(value);
    // In the body, on equal blocks (device weights cut per op).
    if (casts.empty() || value.getType() != yielded.getType() ||
        llvm::any_of(casts, [&](mtf::CastOp cast) {
          return cast->getBlock() != &loop.getBodyBlock() ||
                 cast->hasAttr(mtf::MtfDialect::kBlocksAttrName);
        }))
      continue;
    yield->setOperand(carried + i, value);
    Value stacked = loop.getStackedResults()[i];
    Operation *first = nullptr;
    Value last = castAfter(casts, loop, stacked, loop, first);
    stacked.replaceAllUsesExcept(last, first);
    for (auto cast : llvm::reverse(casts))
      cast->erase();
  }
}

/// Whether `value` is a zero constant.
bool isZero(Value value) {
  auto constant = value.getDefiningOp<mtf::ConstantOp>();
  return constant && constant.getValue().isZero();
}

/// Whether `value` is the same on every member of `reduce`'s group: its
/// layout (a result's, or a loop body argument's operand's) splits it over
/// none of the all-reduce's axes. Unknown layouts are not.
bool replicatedOver(Value value, shard::AllReduceOp reduce,
                    const meshc::layout::Mesh &mesh) {
  if (auto arg = llvm::dyn_cast<BlockArgument>(value)) {
    auto loop = llvm::dyn_cast<mtf::LoopOp>(arg.getOwner()->getParentOp());
    if (!loop)
      return false;
    auto find = [&](ValueRange args, ValueRange operands) -> Value {
      for (auto [a, operand] : llvm::zip(args, operands))
        if (a == arg)
          return operand;
      return {};
    };
    Value operand = find(loop.getStackedArgs(), loop.getStacked());
    if (!operand)
      operand = find(loop.getInvariantArgs(), loop.getInvariant());
    if (!operand)
      return false;
    value = operand;
  }
  mtf::LayoutAttr layout = meshc::resultLayoutAttr(value);
  if (!layout)
    return false;
  for (const mtf::DimSplit &split : layout.getSplits())
    for (Attribute axis : split.axes)
      if (std::optional<size_t> index =
              mesh.axisIndex(llvm::cast<StringAttr>(axis).getValue().str()))
        if (llvm::is_contained(reduce.getGridAxes(),
                               static_cast<int16_t>(*index)))
          return false;
  return true;
}

/// A carried sum: carried value i starts at zero, the body adds one sum
/// all-reduce's result to it and the sum is all it is read by. The body
/// then adds the partial sums, and the final is all-reduced after the loop
/// (the sum of the totals is the total of the sums; the order of the
/// additions changes, as in any all-reduce).
void hoistCarriedSums(mtf::LoopOp loop, const meshc::layout::Mesh &mesh) {
  Operation *yield = loop.getBodyBlock().getTerminator();
  for (size_t i = 0; i < loop.getFinals().size(); ++i) {
    BlockArgument arg = loop.getCarriedArgs()[i];
    auto add = yield->getOperand(i).getDefiningOp<mtf::AddOp>();
    if (!add || !isZero(loop.getCarried()[i]) || !arg.hasOneUse() ||
        !add->hasOneUse() || add.getType() != arg.getType())
      continue;
    Value other = add.getLhs() == arg ? add.getRhs() : add.getLhs();
    if (other == arg || (add.getLhs() != arg && add.getRhs() != arg))
      continue;
    std::optional<StackedReduction> found = stackedReduction(other);
    // Through an einsum of the all-reduced value with one the same on every
    // member: the einsum is linear in it, so it may take the partial sum.
    mtf::EinsumOp through;
    if (!found)
      if (auto einsum = other.getDefiningOp<mtf::EinsumOp>();
          einsum && einsum->hasOneUse() && einsum->getNumOperands() == 2 &&
          einsum.getType() == add.getType())
        for (unsigned k = 0; k < 2 && !found; ++k) {
          std::optional<StackedReduction> inner =
              stackedReduction(einsum->getOperand(k));
          if (inner && inner->casts.empty() &&
              einsum->getOperand(0) != einsum->getOperand(1) &&
              replicatedOver(einsum->getOperand(1 - k), inner->reduce, mesh)) {
            found = inner;
            through = einsum;
          }
        }
    if (!found || !found->casts.empty())
      continue;
    Value final = loop.getFinals()[i];
    Operation *to = nullptr;
    Operation *from =
        reduceAfter(*found, loop, final,
                    llvm::cast<mtf::TensorType>(final.getType()), "summed", to);
    final.replaceAllUsesExcept(from->getResult(0), to);

    if (through)
      through->replaceUsesOfWith(found->fromTensor->getResult(0),
                                 found->toTensor->getOperand(0));
    else
      add->replaceUsesOfWith(other, found->toTensor->getOperand(0));
    found->fromTensor->erase();
    found->reduce->erase();
    found->toTensor->erase();
  }
}

struct MtfHoistLoopReductionsPass
    : public meshc::impl::MtfHoistLoopReductionsBase<
          MtfHoistLoopReductionsPass> {
  using MtfHoistLoopReductionsBase::MtfHoistLoopReductionsBase;
  void runOnOperation() override {
    if (bucketBytes <= 0)
      return;
    for (auto program : getOperation().getOps<mtf::ProgramOp>())
      if (program.getLocal())
        program.walk(
            [&, mesh = meshc::toMesh(program.getMeshAttr())](mtf::LoopOp loop) {
              hoist(loop, bucketBytes);
              hoistCarriedSums(loop, mesh);
              sinkStackedCasts(loop);
            });
  }
};

} // namespace
