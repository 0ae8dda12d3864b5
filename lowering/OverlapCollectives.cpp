//===- OverlapCollectives.cpp - mtf-overlap-collectives -------------------===//
//
// Each collective that communicates becomes a start (the op itself, moved
// up) and an mtf.wait (moved down) around the ops that touch none of its
// buffers (lowering/Passes.td states the rule). One walk per block in
// program order; each collective sees the waits the earlier ones made, so
// a later collective never moves past an earlier one's wait when they share
// a buffer.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LayoutBridge.h"
#include "dialect/MtfDialect.h"
#include "lowering/Passes.h"
#include "lowering/ScheduleForOverlap.h"
#include "lowering/StepOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace meshc {
#define GEN_PASS_DEF_MTFOVERLAPCOLLECTIVES
#include "lowering/Passes.h.inc"
} // namespace meshc

using namespace mlir;

namespace {

using meshc::buffersOf;
using meshc::communicates;

/// Whether `op` is a step that computes (neither a collective, a wait nor
/// an op that becomes no step).
bool computes(Operation *op) {
  std::optional<meshc::runtime::OpKind> kind = mtf::stepKindOf(op);
  return kind && !meshc::runtime::usesGroup(*kind) &&
         *kind != meshc::runtime::OpKind::Wait;
}

class Overlap {
public:
  Overlap(Block &block, int64_t limit) : block(block), limit(limit) {}

  void run() {
    // Carried waits already there (IR read back) keep their numbers.
    for (auto wait : block.getOps<mtf::WaitOp>())
      if (std::optional<uint64_t> number = wait.getCarried())
        carried = std::max(carried, *number + 1);
    SmallVector<Operation *> collectives;
    // (One started already, in IR read back, stays as it is.)
    for (Operation &op : block)
      if (communicates(&op) && !mtf::WaitOp::of(&op))
        collectives.push_back(&op);
    for (Operation *op : collectives)
      overlap(op);
  }

private:
  /// The ops of the block that touch `buffers`: define, read or write one
  /// (at any depth of their regions), but `collective`.
  llvm::DenseSet<Operation *> touchingOf(const llvm::DenseSet<Value> &buffers,
                                         Operation *collective) {
    llvm::DenseSet<Operation *> touching;
    for (Value value : buffers) {
      if (Operation *def = value.getDefiningOp())
        if (Operation *at = block.findAncestorOpInBlock(*def))
          touching.insert(at);
      for (Operation *user : value.getUsers())
        if (Operation *at = block.findAncestorOpInBlock(*user))
          touching.insert(at);
    }
    touching.erase(collective);
    return touching;
  }

  void overlap(Operation *collective) {
    SmallVector<Value> all(collective->getOperands());
    llvm::append_range(all, collective->getResults());
    SmallVector<Value> results(collective->getResults());
    // What touches its buffers before it starts, and after: a collective
    // that copies its inputs into its scratch where it starts
    // (readsInputsAtStart) leaves them free after its start.
    llvm::DenseSet<Operation *> touching =
        touchingOf(buffersOf(all), collective);
    std::optional<meshc::runtime::OpKind> kind = mtf::stepKindOf(collective);
    bool packs = kind && meshc::runtime::readsInputsAtStart(*kind);
    llvm::DenseSet<Value> busyBuffers = buffersOf(packs ? results : all);
    llvm::DenseSet<Operation *> touchingAfter =
        packs ? touchingOf(busyBuffers, collective) : touching;
    int64_t bytes = 0;
    for (Value value : collective->getOperands())
      bytes += meshc::largestLocalBytes(value);
    for (Value value : collective->getResults())
      bytes += meshc::largestLocalBytes(value);
    StringRef phase = mtf::phaseOf(collective);
    // (An assign writes its parameter's buffer by name, not through a value
    // the collective could share: no end moves past one. Nor past where a
    // carried wait resumes: what moved above it would run beside that
    // collective of the iteration before.)
    auto passesWith = [&](const llvm::DenseSet<Operation *> &touches,
                          Operation *op) {
      return !touches.contains(op) && !op->hasTrait<OpTrait::IsTerminator>() &&
             mtf::phaseOf(op) == phase && !llvm::isa<mtf::AssignOp>(op) &&
             !op->hasAttr(mtf::MtfDialect::kResumesAttrName) &&
             inFlight.lookup(op) + bytes <= limit;
    };
    auto passesUp = [&](Operation *op) { return passesWith(touching, op); };
    auto passes = [&](Operation *op) { return passesWith(touchingAfter, op); };

    // The earliest start and the latest wait: the views of the inputs
    // move up with the start, those of the results down after the wait
    // (they compute nothing); each end stops at the first other op that
    // does not pass.
    SmallVector<Operation *> lifted, carried;
    Operation *first = reach(collective, /*up=*/true,
                             viewChain(collective->getOperands(), /*up=*/true),
                             passesUp, lifted);
    Operation *last = reach(collective, /*up=*/false,
                            viewChain(collective->getResults(), /*up=*/false),
                            passes, carried);
    // Worth it only with compute to run beside it.
    bool any = false;
    for (Operation *op = first; op && !any; op = op->getNextNode()) {
      any = op != collective && computes(op);
      if (op == last)
        break;
    }
    if (!any)
      return;

    if (first != collective) {
      collective->moveBefore(first);
      for (Operation *view : llvm::reverse(lifted))
        view->moveBefore(collective);
    }
    OpBuilder builder(collective->getContext());
    builder.setInsertionPointAfter(last);
    auto wait =
        mtf::WaitOp::create(builder, collective->getLoc(),
                            collective->getResults(), collective->getOperands(),
                            /*carried=*/nullptr);
    if (auto phaseAttr = collective->getAttr(mtf::MtfDialect::kPhaseAttrName))
      wait->setAttr(mtf::MtfDialect::kPhaseAttrName, phaseAttr);
    for (auto [value, result] :
         llvm::zip(collective->getResults(), wait.getResults()))
      value.replaceUsesWithIf(result, [&](OpOperand &use) {
        return use.getOwner() != wait.getOperation();
      });
    Operation *after = wait;
    for (Operation *view : carried) {
      view->moveAfter(after);
      after = view;
    }
    for (Operation *op = collective->getNextNode(); op != wait.getOperation();
         op = op->getNextNode())
      inFlight[op] += bytes;
    carry(collective, wait, busyBuffers, bytes, passes);
  }

  /// A wait that reached the end of a loop body, whose results are only
  /// yielded as stacked values (each iteration's own slice), becomes a
  /// carried wait: its collective also runs beside the next iteration's
  /// ops up to the first that does not pass (one that touches its busy
  /// buffers, `busyBuffers`: the ops that make its inputs again, unless it
  /// copies them where it starts; another phase, an assign, the limit), and
  /// completes before that one.
  void carry(Operation *collective, mtf::WaitOp wait,
             const llvm::DenseSet<Value> &busyBuffers, int64_t bytes,
             llvm::function_ref<bool(Operation *)> passes) {
    auto loop = llvm::dyn_cast_or_null<mtf::LoopOp>(block.getParentOp());
    if (!loop || loop.getCount() < 2 || !wait.resultsOnlyStacked())
      return;
    // It reached the body's end: only views and other waits after it.
    for (Operation *op = wait->getNextNode();
         !op->hasTrait<OpTrait::IsTerminator>(); op = op->getNextNode())
      if (!op->hasTrait<mtf::View>() && !llvm::isa<mtf::WaitOp>(op))
        return;
    // Its buffers are the body's own: an argument's is the loop's, written
    // between iterations.
    for (Value value : busyBuffers)
      if (llvm::isa<BlockArgument>(value))
        return;
    Operation *resume = &block.front();
    bool any = false;
    while (resume != collective && passes(resume)) {
      any = any || computes(resume);
      resume = resume->getNextNode();
    }
    if (!any)
      return;
    auto number = static_cast<int64_t>(carried++);
    wait.setCarried(number);
    SmallVector<int64_t> resumes;
    if (auto listed = resume->getAttrOfType<DenseI64ArrayAttr>(
            mtf::MtfDialect::kResumesAttrName))
      llvm::append_range(resumes, listed.asArrayRef());
    resumes.push_back(number);
    resume->setAttr(
        mtf::MtfDialect::kResumesAttrName,
        DenseI64ArrayAttr::get(block.getParentOp()->getContext(), resumes));
    for (Operation *op = &block.front(); op != resume; op = op->getNextNode())
      inFlight[op] += bytes;
  }

  /// The views in the block reached from `from` through any chain of
  /// views: toward their sources (`up`) or toward their users.
  llvm::DenseSet<Operation *> viewChain(ValueRange from, bool up) {
    llvm::DenseSet<Operation *> views;
    SmallVector<Value> work(from.begin(), from.end());
    auto note = [&](Operation *op) {
      if (op && op->hasTrait<mtf::View>() && op->getBlock() == &block &&
          views.insert(op).second)
        work.push_back(up ? op->getOperand(0) : op->getResult(0));
    };
    while (!work.empty()) {
      Value value = work.pop_back_val();
      if (up)
        note(value.getDefiningOp());
      else
        for (Operation *user : value.getUsers())
          note(user);
    }
    return views;
  }

  /// The furthest op from `from`, up or down the block, up to which every
  /// op passes or is one of `views` (those are listed in `moved`, in the
  /// order met).
  static Operation *reach(Operation *from, bool up,
                          const llvm::DenseSet<Operation *> &views,
                          llvm::function_ref<bool(Operation *)> passes,
                          SmallVectorImpl<Operation *> &moved) {
    Operation *end = from;
    while (Operation *next = up ? end->getPrevNode() : end->getNextNode()) {
      if (views.contains(next))
        moved.push_back(next);
      else if (!passes(next))
        break;
      end = next;
    }
    return end;
  }

  Block &block;
  int64_t limit;
  /// The carried waits numbered so far in the block.
  uint64_t carried = 0;
  /// The bytes of the collectives in flight at each op of the block.
  llvm::DenseMap<Operation *, int64_t> inFlight;
};

struct MtfOverlapCollectivesPass
    : meshc::impl::MtfOverlapCollectivesBase<MtfOverlapCollectivesPass> {
  using MtfOverlapCollectivesBase::MtfOverlapCollectivesBase;

  void runOnOperation() override {
    if (inFlightBytes <= 0)
      return;
    for (auto program : getOperation().getOps<mtf::ProgramOp>()) {
      Overlap(program.getBodyBlock(), inFlightBytes).run();
      program.getBodyBlock().walk([&](mtf::LoopOp loop) {
        if (schedule)
          meshc::scheduleForOverlap(loop.getBodyBlock());
        Overlap(loop.getBodyBlock(), inFlightBytes).run();
      });
    }
  }
};

} // namespace
