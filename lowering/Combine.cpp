//===- Combine.cpp - mtf-combine-collectives ------------------------------===//
//
// Buckets of independent all-reduces, all-gathers or reduce-scatters become
// one mtf.combined_all_reduce, combined_all_gather or combined_reduce_scatter
// (lowering/Passes.td states the rule). One walk per block in program
// order: a bucket per (op, mesh, axes, reduction, phase, element type)
// stays open until an op reads one of its results or it would overflow.
//
//===----------------------------------------------------------------------===//

#include "dialect/MtfDialect.h"
#include "lowering/CollectiveSteps.h"
#include "lowering/Passes.h"

#include "mlir/IR/Builders.h"

#include <algorithm>
#include <map>
#include <tuple>

using namespace mlir;

namespace meshc {
#define GEN_PASS_DEF_MTFCOMBINECOLLECTIVES
#include "lowering/Passes.h.inc"
} // namespace meshc

namespace {

/// The bytes of a static ranked tensor, or nullopt where it has a dynamic
/// size (unequal blocks) or an element type without a byte size.
std::optional<int64_t> staticBytes(Type type) {
  auto ranked = llvm::dyn_cast<RankedTensorType>(type);
  if (!ranked || !ranked.hasStaticShape() ||
      !ranked.getElementType().isIntOrFloat())
    return std::nullopt;
  return ranked.getNumElements() *
         static_cast<int64_t>(ranked.getElementTypeBitWidth() / 8);
}

/// What collectives must share to be combined: the op, mesh, axes,
/// reduction, phase, element type and half (mtf-interleave-halves: the
/// halves' collectives exist to run beside each other's compute; -1 for
/// none).
using BucketKey = std::tuple<std::string, std::string, std::vector<int16_t>,
                             int, std::string, std::string, int64_t>;

struct Bucket {
  SmallVector<Operation *> members;
  int64_t bytes = 0;
  /// The ops of the block that read a member's result.
  llvm::DenseSet<Operation *> readers;
};

/// A collective the pass may combine: its key and packed bytes (the
/// larger side: an all-gather's result, a reduce-scatter's input).
struct Candidate {
  BucketKey key;
  int64_t bytes = 0;
};

std::string typeName(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

template <typename Collective> std::vector<int16_t> axesOf(Collective op) {
  return std::vector<int16_t>(op.getGridAxes().begin(), op.getGridAxes().end());
}

/// The key and bytes of `op` where it is a combinable collective: an
/// all-reduce, all-gather or reduce-scatter of static blocks, equal on
/// every device (no mtf.blocks).
std::optional<Candidate> candidateOf(Operation &op) {
  if (op.getNumOperands() != 1 || op.getNumResults() != 1)
    return std::nullopt;
  auto halfAttr = op.getAttrOfType<IntegerAttr>(mtf::MtfDialect::kHalfAttrName);
  int64_t half = halfAttr ? halfAttr.getInt() : -1;
  // Under device weights a local type holds the largest block and
  // mtf.blocks each device's (the emitter writes them per device); a
  // combined op has no place for its members' blocks.
  if (op.hasAttr(mtf::MtfDialect::kBlocksAttrName))
    return std::nullopt;
  std::optional<int64_t> in = staticBytes(op.getOperand(0).getType());
  std::optional<int64_t> out = staticBytes(op.getResult(0).getType());
  if (!in || !out)
    return std::nullopt;
  Type element =
      llvm::cast<RankedTensorType>(op.getOperand(0).getType()).getElementType();
  if (llvm::cast<RankedTensorType>(op.getResult(0).getType())
          .getElementType() != element)
    return std::nullopt;
  std::string name = op.getName().getStringRef().str();
  if (auto reduce = llvm::dyn_cast<shard::AllReduceOp>(op))
    return Candidate{{name, reduce.getGrid().str(), axesOf(reduce),
                      static_cast<int>(reduce.getReduction()),
                      mtf::phaseOf(&op).str(), typeName(element), half},
                     *in};
  if (auto gather = llvm::dyn_cast<shard::AllGatherOp>(op))
    return Candidate{{name, gather.getGrid().str(), axesOf(gather), 0,
                      mtf::phaseOf(&op).str(), typeName(element), half},
                     *out};
  if (auto scatter = llvm::dyn_cast<shard::ReduceScatterOp>(op))
    return Candidate{{name, scatter.getGrid().str(), axesOf(scatter),
                      static_cast<int>(scatter.getReduction()),
                      mtf::phaseOf(&op).str(), typeName(element), half},
                     *in};
  return std::nullopt;
}

class Combiner {
public:
  Combiner(Block &block, int64_t limit, mtf::LoopOp loop = nullptr)
      : block(block), limit(limit), loop(loop) {}

  void run() {
    hoistReduceScatters();
    if (loop)
      hoistArgumentGathers();
    for (Operation &op : llvm::make_early_inc_range(block)) {
      for (auto &[key, bucket] : open)
        if (bucket.readers.contains(&op))
          flush(bucket);
      std::optional<Candidate> candidate = candidateOf(op);
      // One that fills a bucket alone is bandwidth-bound already: it stays
      // as it is and leaves the open bucket open for the small ones.
      if (!candidate || candidate->bytes >= limit)
        continue;
      Bucket &bucket = open[candidate->key];
      // One alike a member (a parameter gathered for two ops of one fused
      // step) is that member: a combined collective takes each buffer once.
      if (auto same = llvm::find_if(
              bucket.members,
              [&](Operation *member) { return alike(&op, member); });
          same != bucket.members.end()) {
        op.replaceAllUsesWith(*same);
        op.erase();
        noteReaders((*same)->getResult(0), bucket);
        continue;
      }
      if (!bucket.members.empty() && bucket.bytes + candidate->bytes > limit)
        flush(bucket);
      bucket.members.push_back(&op);
      bucket.bytes += candidate->bytes;
      noteReaders(op.getResult(0), bucket);
    }
    for (auto &[key, bucket] : open)
      flush(bucket);
  }

private:
  /// Moves each reduce-scatter (with the view that feeds it) up to just
  /// after the op that makes its input: the partitioner puts a gradient's
  /// reduce-scatter just before the update that first reads it, between
  /// the updates of other parameters, so no two would share a bucket. A
  /// reduce-scatter's result is smaller than its input, which it then
  /// frees earlier; all-gathers (larger results) stay where they are.
  void hoistReduceScatters() {
    SmallVector<shard::ReduceScatterOp> scatters(
        block.getOps<shard::ReduceScatterOp>());
    for (shard::ReduceScatterOp scatter : scatters) {
      Operation *view = scatter.getInput().getDefiningOp();
      if (!view || view->getBlock() != &block || !view->hasTrait<mtf::View>() ||
          view->getNumOperands() != 1)
        continue;
      Value source = view->getOperand(0);
      Operation *def = source.getDefiningOp();
      if (def && def->getBlock() != &block)
        def = block.findAncestorOpInBlock(*def);
      if (def && def->getBlock() != &block)
        continue;
      if (def)
        view->moveAfter(def);
      else
        view->moveBefore(&block.front());
      scatter->moveAfter(view);
    }
  }

  /// Moves each all-gather of a loop's body whose input is made from the
  /// body's stacked or invariant arguments alone, through views and casts
  /// (a layer's parameter slice under --shard-params), to the top of the
  /// body with the ops that make its input, in their order: the partitioner
  /// puts each just before the op that reads it, between the layer's
  /// compute, so no two would share a bucket; hoisted, a layer's weights
  /// are gathered together as the iteration starts. Hoisted ops alike but
  /// for their reason become one: the backward loop gathers a weight for
  /// the recomputed forward and again for its own einsum.
  void hoistArgumentGathers() {
    size_t carried = loop.getCarried().size();
    SmallVector<shard::AllGatherOp> gathers(block.getOps<shard::AllGatherOp>());
    llvm::DenseSet<Operation *> moved;
    SmallVector<Operation *> hoisted;
    Operation *last = nullptr;
    for (shard::AllGatherOp gather : gathers) {
      SmallVector<Operation *> chain{gather};
      Value value = gather.getInput();
      while (Operation *def = value.getDefiningOp()) {
        if (def->getBlock() != &block || def->getNumOperands() != 1 ||
            !(def->hasTrait<mtf::View>() || llvm::isa<mtf::CastOp>(def)))
          break;
        chain.push_back(def);
        value = def->getOperand(0);
      }
      auto arg = llvm::dyn_cast<BlockArgument>(value);
      if (!arg || arg.getOwner() != &block || arg.getArgNumber() < carried)
        continue;
      for (Operation *op : llvm::reverse(chain)) {
        if (!moved.insert(op).second)
          continue;
        auto same = llvm::find_if(
            hoisted, [&](Operation *kept) { return alike(op, kept); });
        if (same != hoisted.end()) {
          op->replaceAllUsesWith(*same);
          op->erase();
          continue;
        }
        if (last)
          op->moveAfter(last);
        else
          op->moveBefore(&block.front());
        last = op;
        hoisted.push_back(op);
      }
    }
  }

  /// Whether `a` and `b` compute the same: the same op on the same
  /// operands (or alike views of them), with the same attributes but their
  /// reasons.
  static bool alike(Operation *a, Operation *b) {
    if (a->getName() != b->getName() ||
        a->getNumOperands() != b->getNumOperands() ||
        a->getResultTypes() != b->getResultTypes() || a->getNumRegions() ||
        b->getNumRegions())
      return false;
    // The same value, or alike views of it (the partitioner makes a view of
    // a buffer for each collective that reads it).
    for (auto [x, y] : llvm::zip(a->getOperands(), b->getOperands())) {
      Operation *xDef = x.getDefiningOp(), *yDef = y.getDefiningOp();
      if (x != y &&
          !(xDef && yDef && xDef->hasTrait<mtf::View>() && alike(xDef, yDef)))
        return false;
    }
    NamedAttrList left(a->getAttrDictionary()), right(b->getAttrDictionary());
    left.erase(mtf::MtfDialect::kReasonAttrName);
    right.erase(mtf::MtfDialect::kReasonAttrName);
    return left.getDictionary(a->getContext()) ==
               right.getDictionary(b->getContext()) &&
           a->getPropertiesAsAttribute() == b->getPropertiesAsAttribute();
  }

  /// Whether `op` may move later in the block when it reads a member's
  /// result: a view (the `mtf.from_tensor` after each collective), a cast
  /// (a bf16 gradient's total is rounded through two, roundTotal), or an
  /// `mtf.assign` or `mtf.output`, which only keep a value (a parameter's
  /// reads all come before its assign, so a later assign moves none past it).
  static bool movesWithBucket(Operation *op) {
    return op->hasTrait<mtf::View>() ||
           llvm::isa<mtf::CastOp, mtf::AssignOp, mtf::OutputOp>(op);
  }

  /// Notes the ops of the block that read `value`, through views; those
  /// and the assigns and outputs move with the bucket.
  void noteReaders(Value value, Bucket &bucket) {
    for (Operation *user : value.getUsers()) {
      Operation *reader = block.findAncestorOpInBlock(*user);
      if (!reader)
        continue;
      if (reader == user && movesWithBucket(user)) {
        for (Value result : user->getResults())
          noteReaders(result, bucket);
        continue;
      }
      bucket.readers.insert(reader);
    }
  }

  /// Moves the views, casts, assigns and outputs of `value` (transitively)
  /// that come before `point` to just after it, in their order; returns the
  /// last op moved (or `point`).
  static Operation *moveViewsAfter(Value value, Operation *point) {
    SmallVector<Operation *> views;
    SmallVector<Value> work{value};
    while (!work.empty()) {
      Value next = work.pop_back_val();
      for (Operation *user : next.getUsers())
        if (user->getBlock() == point->getBlock() && movesWithBucket(user) &&
            user->isBeforeInBlock(point)) {
          views.push_back(user);
          llvm::append_range(work, user->getResults());
        }
    }
    llvm::sort(views, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    for (Operation *view : views) {
      view->moveAfter(point);
      point = view;
    }
    return point;
  }

  /// The one op that does the work of `members` (all of one kind), built
  /// after the last.
  static Operation *combine(OpBuilder &builder, Location loc,
                            ArrayRef<Operation *> members) {
    SmallVector<Value> inputs;
    SmallVector<Type> types;
    for (Operation *member : members) {
      inputs.push_back(member->getOperand(0));
      types.push_back(member->getResult(0).getType());
    }
    Operation *last = members.back();
    if (auto reduce = llvm::dyn_cast<shard::AllReduceOp>(last))
      return mtf::CombinedAllReduceOp::create(
          builder, loc, types, inputs, reduce.getGridAttr(),
          reduce.getGridAxesAttr(),
          builder.getStringAttr(meshc::reductionName(reduce.getReduction())));
    // Each member's gathered or scattered dim.
    SmallVector<int64_t> dims;
    for (Operation *member : members) {
      IntegerAttr axis =
          llvm::isa<shard::AllGatherOp>(member)
              ? llvm::cast<shard::AllGatherOp>(member).getGatherAxisAttr()
              : llvm::cast<shard::ReduceScatterOp>(member).getScatterAxisAttr();
      dims.push_back(axis.getInt());
    }
    if (auto gather = llvm::dyn_cast<shard::AllGatherOp>(last))
      return mtf::CombinedAllGatherOp::create(
          builder, loc, types, inputs, gather.getGridAttr(),
          gather.getGridAxesAttr(), builder.getDenseI64ArrayAttr(dims));
    auto scatter = llvm::cast<shard::ReduceScatterOp>(last);
    return mtf::CombinedReduceScatterOp::create(
        builder, loc, types, inputs, scatter.getGridAttr(),
        scatter.getGridAxesAttr(), builder.getDenseI64ArrayAttr(dims),
        builder.getStringAttr(meshc::reductionName(scatter.getReduction())));
  }

  /// Replaces a bucket of two or more by one combined op after its last
  /// member (the members' views moved after it); empties the bucket.
  void flush(Bucket &bucket) {
    if (bucket.members.size() >= 2) {
      Operation *last = bucket.members.back();
      OpBuilder builder(last->getContext());
      builder.setInsertionPointAfter(last);
      SmallVector<Location> locations;
      std::string reason;
      for (Operation *member : bucket.members) {
        locations.push_back(member->getLoc());
        auto why =
            member->getAttrOfType<StringAttr>(mtf::MtfDialect::kReasonAttrName);
        if (why && reason.find(why.getValue().str()) == std::string::npos)
          reason += (reason.empty() ? "" : "; ") + why.getValue().str();
      }
      Operation *combined =
          combine(builder, builder.getFusedLoc(locations), bucket.members);
      if (auto phase = last->getAttr("mtf.phase"))
        combined->setAttr("mtf.phase", phase);
      std::string kind = last->getName().stripDialect().str();
      std::replace(kind.begin(), kind.end(), '_', '-');
      combined->setAttr(
          mtf::MtfDialect::kReasonAttrName,
          builder.getStringAttr(std::to_string(bucket.members.size()) + " " +
                                kind + "s combined: " + reason));
      Operation *point = combined;
      for (auto [member, result] :
           llvm::zip(bucket.members, combined->getResults())) {
        member->getResult(0).replaceAllUsesWith(result);
        member->erase();
        point = moveViewsAfter(result, point);
      }
    }
    bucket = Bucket();
  }

  Block &block;
  int64_t limit;
  /// The loop whose body `block` is, if it is one.
  mtf::LoopOp loop;
  std::map<BucketKey, Bucket> open;
};

struct MtfCombineCollectivesPass
    : public meshc::impl::MtfCombineCollectivesBase<MtfCombineCollectivesPass> {
  using MtfCombineCollectivesBase::MtfCombineCollectivesBase;

  void runOnOperation() override {
    if (bucketBytes <= 0)
      return;
    for (auto program : getOperation().getOps<mtf::ProgramOp>()) {
      if (!program.getLocal())
        continue;
      Combiner(program.getBodyBlock(), bucketBytes).run();
      // Each loop's body once, as every iteration runs it.
      program.walk([&](mtf::LoopOp loop) {
        Combiner(loop.getBodyBlock(), bucketBytes, loop).run();
      });
    }
  }
};

} // namespace
