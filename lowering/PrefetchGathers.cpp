//===- PrefetchGathers.cpp - mtf-prefetch-gathers -------------------------===//
//
// A loop body's all-gathers of its layer's stacked arguments (a layer's
// weights under --shard-params, which mtf-combine-collectives hoisted to
// the top of the body) gather the next iteration's layer instead, into a
// carried value: iteration i reads the weights iteration i-1 gathered (the
// first iteration those a gather before the loop made), so that
// mtf-overlap-collectives can run each gather beside a whole iteration
// (lowering/Passes.td states the rule).
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LayoutBridge.h"
#include "dialect/MtfDialect.h"
#include "lowering/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

#include <set>

using namespace mlir;

namespace meshc {
#define GEN_PASS_DEF_MTFPREFETCHGATHERS
#include "lowering/Passes.h.inc"
} // namespace meshc

namespace {

/// A gather of a loop's body that the pass prefetches: the ops that make
/// its inputs from the body's arguments (views and casts, in block order)
/// and the type each result is read as (its mtf.from_tensor views').
struct Prefetch {
  Operation *gather = nullptr;
  SmallVector<Operation *> chain;
  SmallVector<Type> readAs;
};

/// `gather` as a Prefetch where it is an all-gather (plain or combined) of
/// equal blocks whose inputs come from the body's stacked arguments (one at
/// least) and invariant ones alone, through single-operand views and casts
/// of floats, and whose results are read by mtf.from_tensor views alone,
/// each result's of one type.
std::optional<Prefetch> prefetchOf(mtf::LoopOp loop, Operation *gather) {
  if (!llvm::isa<shard::AllGatherOp, mtf::CombinedAllGatherOp>(gather) ||
      gather->hasAttr(mtf::MtfDialect::kBlocksAttrName))
    return std::nullopt;
  Block &body = loop.getBodyBlock();
  unsigned carried = loop.getCarried().size();
  unsigned stackedEnd = carried + loop.getStacked().size();
  llvm::SetVector<Operation *> chain;
  bool readsStacked = false;
  SmallVector<Value> work(gather->getOperands());
  while (!work.empty()) {
    Value value = work.pop_back_val();
    if (auto arg = llvm::dyn_cast<BlockArgument>(value)) {
      if (arg.getOwner() != &body || arg.getArgNumber() < carried)
        return std::nullopt;
      if (arg.getArgNumber() < stackedEnd) {
        // The shift before the loop is a window, of floats only.
        auto type = llvm::dyn_cast<mtf::TensorType>(arg.getType());
        if (!type || !llvm::isa<FloatType>(type.getElementType()))
          return std::nullopt;
        readsStacked = true;
      }
      continue;
    }
    Operation *def = value.getDefiningOp();
    if (def->getBlock() != &body || def->getNumOperands() != 1 ||
        def->getNumResults() != 1 || def->getNumRegions() ||
        def->hasAttr(mtf::MtfDialect::kBlocksAttrName) ||
        !(def->hasTrait<mtf::View>() || llvm::isa<mtf::CastOp>(def)))
      return std::nullopt;
    if (chain.insert(def))
      work.push_back(def->getOperand(0));
  }
  if (!readsStacked)
    return std::nullopt;
  Prefetch prefetch;
  prefetch.gather = gather;
  prefetch.chain.assign(chain.begin(), chain.end());
  llvm::sort(prefetch.chain,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  for (Value result : gather->getResults()) {
    Type readAs;
    for (Operation *user : result.getUsers()) {
      if (!llvm::isa<mtf::FromTensorOp>(user) ||
          (readAs && readAs != user->getResult(0).getType()))
        return std::nullopt;
      readAs = user->getResult(0).getType();
    }
    if (!readAs)
      return std::nullopt;
    prefetch.readAs.push_back(readAs);
  }
  return prefetch;
}

class Prefetcher {
public:
  Prefetcher(mtf::ProgramOp program, mtf::LoopOp loop)
      : program(program), loop(loop) {}

  void run() {
    if (loop.getCount() < 2)
      return;
    SmallVector<Prefetch> prefetches;
    for (Operation &op : loop.getBodyBlock())
      if (std::optional<Prefetch> prefetch = prefetchOf(loop, &op))
        prefetches.push_back(std::move(*prefetch));
    if (prefetches.empty())
      return;
    Block &body = loop.getBodyBlock();
    unsigned carried = loop.getCarried().size();
    unsigned stacked = loop.getStacked().size();

    // The stacked arguments the gathers read, and before the loop each
    // operand's first slice and its copy moved by one iteration.
    llvm::SetVector<BlockArgument> read;
    for (const Prefetch &prefetch : prefetches)
      for (Operation *op : prefetch.chain)
        if (auto arg = llvm::dyn_cast<BlockArgument>(op->getOperand(0)))
          if (arg.getArgNumber() < carried + stacked)
            read.insert(arg);
    OpBuilder before(loop);
    IRMapping outside;
    SmallVector<Value> moved;
    std::string one =
        meshc::freshDimName(program, loop.getDim().str() + "_first");
    int64_t first = loop.getReverse() ? loop.getCount() - 1 : 0;
    for (BlockArgument arg : read) {
      Value operand = loop->getOperand(arg.getArgNumber());
      Operation *slice = mtf::WindowOp::create(before, loop.getLoc(), operand,
                                               loop.getDim(), one, 1, first);
      tag(slice, operand);
      Operation *whole = mtf::ReduceSumOp::create(
          before, loop.getLoc(), slice->getResult(0), ArrayRef<StringRef>{one});
      tag(whole, operand);
      outside.map(Value(arg), whole->getResult(0));
      // Iteration i reads the next iteration's slice: i + 1, or i - 1 in a
      // reverse loop (the last iteration reads zeros, never used).
      Operation *shift = mtf::WindowOp::create(
          before, loop.getLoc(), operand, loop.getDim(), loop.getDim(),
          loop.getCount(), loop.getReverse() ? -1 : 1);
      tag(shift, operand);
      moved.push_back(shift->getResult(0));
    }
    for (auto [arg, operand] :
         llvm::zip(loop.getInvariantArgs(), loop.getInvariant()))
      outside.map(Value(arg), operand);

    // The first iteration's gathers, before the loop.
    SmallVector<Value> initial;
    for (const Prefetch &prefetch : prefetches) {
      for (Operation *op : prefetch.chain)
        if (!outside.contains(op))
          before.clone(*op, outside)
              ->removeAttr(mtf::MtfDialect::kHalfAttrName);
      Operation *gather = before.clone(*prefetch.gather, outside);
      // (Outside the body no op computes a half: mtf-interleave-halves.)
      gather->removeAttr(mtf::MtfDialect::kHalfAttrName);
      for (auto [result, type] :
           llvm::zip(gather->getResults(), prefetch.readAs))
        initial.push_back(
            mtf::FromTensorOp::create(before, loop.getLoc(), type, result));
    }

    // The body: the new carried arguments after the old, the moved stacked
    // ones after the old; the gathers' readers read the carried ones, and
    // the gathers, of the moved arguments, make the next carried values.
    SmallVector<BlockArgument> carriedArgs, movedArgs;
    for (Value value : initial)
      carriedArgs.push_back(body.insertArgument(
          carried + carriedArgs.size(), value.getType(), loop.getLoc()));
    for (Value value : moved)
      movedArgs.push_back(body.insertArgument(
          carried + initial.size() + stacked + movedArgs.size(),
          mtf::LoopOp::sliceType(value.getType(), loop.getDim(),
                                 loop.getCount()),
          loop.getLoc()));
    IRMapping inside;
    for (auto [arg, next] : llvm::zip(read, movedArgs))
      inside.map(Value(arg), Value(next));
    OpBuilder builder(&body, body.begin());
    SmallVector<Value> next;
    size_t index = 0;
    for (const Prefetch &prefetch : prefetches) {
      for (Operation *op : prefetch.chain)
        if (!inside.contains(op))
          builder.clone(*op, inside);
      Operation *gather = builder.clone(*prefetch.gather, inside);
      for (auto [old, result, type] :
           llvm::zip(prefetch.gather->getResults(), gather->getResults(),
                     prefetch.readAs)) {
        BlockArgument arg = carriedArgs[index++];
        for (Operation *user : llvm::make_early_inc_range(old.getUsers())) {
          user->getResult(0).replaceAllUsesWith(arg);
          user->erase();
        }
        next.push_back(
            mtf::FromTensorOp::create(builder, loop.getLoc(), type, result));
      }
    }
    Operation *yield = body.getTerminator();
    yield->insertOperands(carried, next);
    // The old gathers and what made their inputs, where nothing else reads
    // them (the forward's casts may also be stacked for the backward).
    for (const Prefetch &prefetch : prefetches) {
      prefetch.gather->erase();
      for (Operation *op : llvm::reverse(prefetch.chain))
        if (op->use_empty())
          op->erase();
    }
    loop = loop.extend(initial, moved, {});
  }

private:
  /// Gives `op`, made before the loop from `operand`, the loop's phase and
  /// the operand's layout (the layer dim is whole: the same axes).
  void tag(Operation *op, Value operand) {
    if (Attribute phase = loop->getAttr(mtf::MtfDialect::kPhaseAttrName))
      op->setAttr(mtf::MtfDialect::kPhaseAttrName, phase);
    if (mtf::LayoutAttr layout = meshc::resultLayoutAttr(operand))
      op->setAttr(mtf::MtfDialect::kLayoutAttrName, layout);
  }

  mtf::ProgramOp program;
  mtf::LoopOp loop;
};

struct MtfPrefetchGathersPass
    : public meshc::impl::MtfPrefetchGathersBase<MtfPrefetchGathersPass> {
  using MtfPrefetchGathersBase::MtfPrefetchGathersBase;

  void runOnOperation() override {
    for (auto program : getOperation().getOps<mtf::ProgramOp>()) {
      if (!program.getLocal())
        continue;
      SmallVector<mtf::LoopOp> loops(
          program.getBodyBlock().getOps<mtf::LoopOp>());
      for (mtf::LoopOp loop : loops)
        Prefetcher(program, loop).run();
    }
  }
};

} // namespace
