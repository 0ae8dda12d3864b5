//===- Remat.cpp - mtf-remat ----------------------------------------------===//
//
// Activation recomputation per group (Passes.td: MtfRemat). Each
// `checkpoint(...)` expression, and with `repeat` each instance of a `repeat`,
// is a group of forward ops (the frontend's mtf.checkpoint, mtf.instance);
// the values of a group that the backward pass or the update reads are
// computed again right before the first of those reads, from what the group
// reads from outside, so the group's own activations need not live through
// the forward pass's end.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/Passes.h"
#include "dialect/MtfDialect.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace meshc {
#define GEN_PASS_DEF_MTFREMAT
#include "compiler/passes/Passes.h.inc"
} // namespace meshc

namespace {

/// Whether `op` runs after the forward pass (backward or update).
bool afterForward(Operation *op) {
  return op->hasAttr(mtf::MtfDialect::kPhaseAttrName);
}

/// Whether `op` may be computed a second time: a forward op of a group
/// whose results depend on its operands alone.
bool recomputable(Operation *op) {
  return op->getNumResults() > 0 && op->getNumRegions() == 0 &&
         !afterForward(op) && !llvm::isa<mtf::ParamOp, mtf::InputOp>(op) &&
         isMemoryEffectFree(op);
}

struct MtfRematPass : public meshc::impl::MtfRematBase<MtfRematPass> {
  using MtfRematBase::MtfRematBase;

  void runOnOperation() override {
    mtf::ProgramOp program = getOperation();
    Block &block = program.getBodyBlock();

    // The recomputable ops of each group, in program order, keyed by the
    // tag's name and value (hand-written IR may reuse a value across tags).
    llvm::MapVector<std::pair<StringRef, StringAttr>, SmallVector<Operation *>>
        groups;
    for (Operation &op : block) {
      StringRef kind = mtf::MtfDialect::kInstanceAttrName;
      auto group = op.getAttrOfType<StringAttr>(kind);
      if (!repeat || !group) {
        kind = mtf::MtfDialect::kCheckpointAttrName;
        group = op.getAttrOfType<StringAttr>(kind);
      }
      if (group && recomputable(&op))
        groups[{kind, group}].push_back(&op);
    }

    StringAttr backward = StringAttr::get(&getContext(), "backward");
    for (auto &[group, ops] : groups) {
      llvm::SmallPtrSet<Operation *, 32> inGroup(ops.begin(), ops.end());
      // The group's values read after the forward pass, and the first op
      // that reads one. A value a forward op outside the group reads (the
      // instance's output, the next one's input) is a checkpoint: it lives
      // on anyway, so the backward pass reads it as it is.
      llvm::SetVector<Value> kept;
      Operation *firstReader = nullptr;
      for (Operation *op : ops)
        for (Value result : op->getResults()) {
          bool checkpoint = llvm::any_of(result.getUsers(), [&](Operation *u) {
            return !afterForward(u) && !inGroup.contains(u);
          });
          if (checkpoint)
            continue;
          for (Operation *user : result.getUsers())
            if (afterForward(user)) {
              kept.insert(result);
              if (!firstReader || user->isBeforeInBlock(firstReader))
                firstReader = user;
            }
        }
      if (kept.empty())
        continue;

      // The ops the kept values need, within the group.
      llvm::SmallPtrSet<Operation *, 32> needed;
      SmallVector<Operation *> work;
      for (Value value : kept)
        work.push_back(value.getDefiningOp());
      while (!work.empty()) {
        Operation *op = work.pop_back_val();
        if (!needed.insert(op).second)
          continue;
        for (Value operand : op->getOperands())
          if (Operation *def = operand.getDefiningOp())
            if (inGroup.contains(def))
              work.push_back(def);
      }

      // Clone them in program order before the first reader; the readers
      // after the forward pass take the clones.
      OpBuilder builder(firstReader);
      IRMapping clones;
      for (Operation *op : ops) {
        if (!needed.contains(op))
          continue;
        Operation *clone = builder.clone(*op, clones);
        clone->setAttr(mtf::MtfDialect::kPhaseAttrName, backward);
      }
      for (Value value : kept)
        value.replaceUsesWithIf(clones.lookup(value), [&](OpOperand &use) {
          return afterForward(use.getOwner());
        });
    }
  }
};

} // namespace
