//===- ScheduleForOverlap.cpp - A loop body's ops ordered for overlap -----===//
//
// A list scheduler in the manner of XLA's latency-hiding scheduler, without
// times: it reorders a loop body's ops, keeping every use after its
// definition, so that each collective whose result the body reads starts as
// soon as it can and the ops that do not need that result run between its
// start and its first use. mtf-overlap-collectives then puts the start and
// the wait around them. The order only: every op computes what it did.
//
//===----------------------------------------------------------------------===//

#include "lowering/ScheduleForOverlap.h"
#include "lowering/StepOps.h"

#include "dialect/MtfDialect.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

namespace meshc {

using namespace mlir;

namespace {

/// Whether the scheduler may move `op`: it has no effect but its results
/// (a collective's effect is its results too), and nothing already tied to
/// its place (a wait, a resume point of a carried one, a nested loop).
bool movable(Operation *op) {
  if (op->hasTrait<OpTrait::IsTerminator>() || llvm::isa<mtf::WaitOp>(op) ||
      llvm::isa<mtf::LoopOp>(op) ||
      op->hasAttr(mtf::MtfDialect::kResumesAttrName) || mtf::WaitOp::of(op))
    return false;
  return communicates(op) || isMemoryEffectFree(op);
}

/// One run of movable ops between two that stay where they are.
class Segment {
public:
  explicit Segment(ArrayRef<Operation *> ops) : ops(ops) {
    for (auto [index, op] : llvm::enumerate(ops))
      position[op] = index;
    users.resize(ops.size());
    pending.assign(ops.size(), 0);
    for (size_t index = 0; index < ops.size(); ++index)
      for (size_t def : defsOf(index))
        addEdge(def, index);
    keepInputsReadersFirst();
  }

  /// The ops in their new order.
  SmallVector<Operation *> order() {
    markUrgent();
    // Each op's key: the earliest (in the old order) urgent collective it
    // leads to, through its users; an op that leads to none has none.
    constexpr size_t none = std::numeric_limits<size_t>::max();
    SmallVector<size_t> key(ops.size(), none);
    SmallVector<size_t> topological = topologicalOrder();
    for (size_t i : llvm::reverse(topological))
      for (size_t user : users[i])
        key[i] = std::min(key[i], urgent[user] ? user : key[user]);

    SmallVector<Operation *> result;
    // The collectives started and not yet read: an op that reads one (or a
    // view of one) waits for it.
    llvm::DenseSet<size_t> inFlight;
    auto waitsFor = [&](size_t index) {
      for (size_t def : defsOf(index))
        if (inFlight.contains(def))
          return true;
      return false;
    };
    llvm::SetVector<size_t> ready;
    for (size_t i = 0; i < ops.size(); ++i)
      if (pending[i] == 0)
        ready.insert(i);
    while (!ready.empty()) {
      // 1. a collective, as soon as its inputs are made; 2. an op that
      // needs no collective in flight and leads to the earliest urgent
      // collective; 3. any op that needs none in flight; 4. the first in
      // the old order (it waits for a collective).
      std::optional<size_t> pick;
      auto better = [&](size_t candidate, auto rank) {
        if (!pick || rank(candidate) < rank(*pick))
          pick = candidate;
      };
      for (size_t i : ready)
        if (communicates(ops[i]))
          better(i, [](size_t index) { return index; });
      if (!pick)
        for (size_t i : ready)
          if (!waitsFor(i) && key[i] != none)
            better(i, [&](size_t index) {
              return std::make_pair(key[index], index);
            });
      if (!pick)
        for (size_t i : ready)
          if (!waitsFor(i))
            better(i, [](size_t index) { return index; });
      if (!pick)
        for (size_t i : ready)
          better(i, [](size_t index) { return index; });
      size_t index = *pick;
      ready.remove(index);
      result.push_back(ops[index]);
      // Reading a collective's result (through any views) completes it.
      if (!ops[index]->hasTrait<mtf::View>())
        for (size_t def : viewSourcesOf(index))
          inFlight.erase(def);
      if (communicates(ops[index]))
        inFlight.insert(index);
      for (size_t user : users[index])
        if (--pending[user] == 0)
          ready.insert(user);
    }
    // (Every op is placed: the edges keepInputsReadersFirst adds make no
    // cycle. Were one left out, the old order stands.)
    if (result.size() != ops.size())
      return SmallVector<Operation *>(ops.begin(), ops.end());
    return result;
  }

private:
  /// The ops in an order that keeps every edge (Kahn's), or fewer of them
  /// if the edges had a cycle.
  SmallVector<size_t> topologicalOrder() {
    SmallVector<size_t> left(pending), order;
    for (size_t i = 0; i < ops.size(); ++i)
      if (left[i] == 0)
        order.push_back(i);
    for (size_t next = 0; next < order.size(); ++next)
      for (size_t user : users[order[next]])
        if (--left[user] == 0)
          order.push_back(user);
    return order;
  }

  /// `before` must come before `after`.
  void addEdge(size_t before, size_t after) {
    if (!edges.insert({before, after}).second)
      return;
    users[before].push_back(after);
    ++pending[after];
  }

  /// The op of the segment that holds `op` (itself, or an ancestor of an op
  /// in one of its regions), if any.
  std::optional<size_t> segmentOpOf(Operation *op) {
    for (; op; op = op->getParentOp())
      if (auto at = position.find(op); at != position.end())
        return at->second;
    return std::nullopt;
  }

  /// A collective that reads its inputs until its wait (an all-reduce, a
  /// collective permute: not runtime::readsInputsAtStart) waits for the
  /// other ops that read or view its inputs, unless they depend on it:
  /// mtf-overlap-collectives lets no such op between its start and its
  /// wait, so one placed after the start would leave it blocking.
  void keepInputsReadersFirst() {
    for (size_t index = 0; index < ops.size(); ++index) {
      std::optional<runtime::OpKind> kind = mtf::stepKindOf(ops[index]);
      if (!communicates(ops[index]) || runtime::readsInputsAtStart(*kind))
        continue;
      // What depends on it, through the edges so far (an edge from one of
      // those would close a cycle).
      llvm::DenseSet<size_t> after;
      SmallVector<size_t> work{index};
      while (!work.empty())
        for (size_t user : users[work.pop_back_val()])
          if (after.insert(user).second)
            work.push_back(user);
      SmallVector<Value> inputs(ops[index]->getOperands());
      for (Value value : buffersOf(inputs))
        for (Operation *user : value.getUsers())
          if (std::optional<size_t> reader = segmentOpOf(user);
              reader && *reader != index && !after.contains(*reader))
            addEdge(*reader, index);
    }
  }

  /// The ops of the segment whose results `index` reads.
  SmallVector<size_t> defsOf(size_t index) {
    SmallVector<size_t> defs;
    ops[index]->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (auto at = position.find(def);
              at != position.end() && at->second != index)
            defs.push_back(at->second);
    });
    return defs;
  }

  /// The ops whose results `index` reads, looking through views to what
  /// they view.
  SmallVector<size_t> viewSourcesOf(size_t index) {
    SmallVector<size_t> sources, work = defsOf(index);
    llvm::DenseSet<size_t> seen;
    while (!work.empty()) {
      size_t def = work.pop_back_val();
      if (!seen.insert(def).second)
        continue;
      sources.push_back(def);
      if (ops[def]->hasTrait<mtf::View>())
        llvm::append_range(work, defsOf(def));
    }
    return sources;
  }

  /// A collective is urgent when an op of the body that computes reads its
  /// result (through views): the body waits for it; or when the body
  /// yields it as a carried value, which the next iteration reads from its
  /// start (a layer's weights, mtf-prefetch-gathers). One whose results
  /// only leave the body (a gradient's reduce-scatter, stacked) is not.
  void markUrgent() {
    urgent.assign(ops.size(), false);
    for (size_t i = 0; i < ops.size(); ++i) {
      if (!communicates(ops[i]))
        continue;
      SmallVector<Operation *> work{ops[i]};
      llvm::DenseSet<Operation *> seen;
      while (!work.empty() && !urgent[i]) {
        Operation *op = work.pop_back_val();
        for (OpOperand &use : op->getUses()) {
          Operation *user = use.getOwner();
          if (carriedYield(use))
            urgent[i] = true;
          if (!seen.insert(user).second)
            continue;
          if (user->hasTrait<mtf::View>())
            work.push_back(user);
          else if (!user->hasTrait<OpTrait::IsTerminator>() &&
                   !llvm::isa<mtf::WaitOp>(user))
            urgent[i] = true;
        }
      }
    }
  }

  /// Whether `use` yields a loop body's value as a carried one.
  static bool carriedYield(OpOperand &use) {
    auto yield = llvm::dyn_cast<mtf::YieldOp>(use.getOwner());
    auto loop = yield ? llvm::dyn_cast<mtf::LoopOp>(yield->getParentOp())
                      : mtf::LoopOp();
    return loop && use.getOperandNumber() < loop.getCarried().size();
  }

  ArrayRef<Operation *> ops;
  llvm::DenseMap<Operation *, size_t> position;
  SmallVector<SmallVector<size_t>> users;
  SmallVector<size_t> pending;
  llvm::DenseSet<std::pair<size_t, size_t>> edges;
  SmallVector<bool> urgent;
};

} // namespace

void scheduleForOverlap(Block &body) {
  SmallVector<Operation *> run;
  auto flush = [&](Operation *before) {
    if (run.size() > 1) {
      for (Operation *op : Segment(run).order()) {
        if (before)
          op->moveBefore(before);
        else
          op->moveBefore(body.getTerminator());
      }
    }
    run.clear();
  };
  SmallVector<Operation *> all;
  for (Operation &op : body)
    all.push_back(&op);
  for (Operation *op : all) {
    if (movable(op)) {
      run.push_back(op);
      continue;
    }
    flush(op);
  }
  flush(nullptr);
}

} // namespace meshc
