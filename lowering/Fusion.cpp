//===- Fusion.cpp - mtf-fuse ----------------------------------------------===//
//
// Groups the float elementwise ops of a local program (and of each loop's
// body, once), and the reductions they feed, into mtf.fused ops (see
// Passes.td for the rules). Ops join groups
// in program order; a join that would make the contracted program cyclic,
// or move a parameter read past its assign, is refused. Ops that read a
// group's values before its last member are moved after it, so that each
// group can become one op at the position of its last member.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>

using namespace mlir;

namespace meshc {
#define GEN_PASS_DEF_MTFFUSE
#include "lowering/Passes.h.inc"
} // namespace meshc

namespace {

constexpr size_t kMaxOps = 32;
constexpr size_t kMaxInputs = 16;
constexpr size_t kMaxResults = 8;
/// How many ops the acyclicity search of one join may visit.
constexpr size_t kSearchLimit = 4096;
/// The spacing of op positions: more than the ops one join can move.
constexpr int64_t kGap = int64_t(1) << 20;

mtf::TensorType tensorOf(Value value) {
  return llvm::dyn_cast<mtf::TensorType>(value.getType());
}

/// A set of dim names as a key: sorted, comma-separated.
std::string keyOf(const std::vector<std::string> &names) {
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  std::string key;
  for (const std::string &name : sorted)
    key += name + ",";
  return key;
}

std::vector<std::string> namesOf(mtf::TensorType type) {
  std::vector<std::string> names;
  for (const mtf::NamedDim &dim : type.getDims())
    names.push_back(dim.name.getValue().str());
  return names;
}

bool isReduction(Operation *op) {
  return llvm::isa<mtf::ReductionOpInterface>(op);
}

/// Whether `op` (not a cast) reads or writes 16-bit floats: alone, its own
/// step would stage each such operand whole in f32 in the scratch (the
/// kernels compute in f32), where a fused step widens and rounds them as it
/// streams them (a whole-batch bf16 add had staged 58 GiB on GPT-3 175B).
bool readsOrWritesHalf(Operation *op) {
  if (llvm::isa<mtf::CastOp>(op))
    return false;
  return llvm::any_of(
      llvm::concat<Value>(op->getOperands(), op->getResults()),
      [](Value value) {
        auto type = llvm::dyn_cast<mtf::TensorType>(value.getType());
        return type &&
               llvm::isa<BFloat16Type, Float16Type>(type.getElementType());
      });
}

/// Constants are copied into every group that reads them, never grouped.
bool isConstant(Operation *op) {
  return llvm::isa_and_nonnull<mtf::ConstantOp>(op);
}

/// What a group needs of an op's dims: its iteration space and, when it
/// reduces, the reduced dims and the space without them (the row dims).
struct Space {
  std::string full;
  bool reduces = false;
  std::string reduced;
  std::string row;
};

struct Group {
  SmallVector<Operation *> members;
  Space space;
  StringRef phase;
  bool alive = true;
};

class Fuser {
public:
  /// Fuses the ops of `block`: a local program's, or a loop body's.
  explicit Fuser(Block &block) : block(block) {}
  void run();

private:
  /// Whether `op` may join a group at all.
  bool candidate(Operation *op) const;
  /// Whether `op` (with operand/result dims) fits group `space`, as a full
  /// value, a row value or a reduction.
  bool fits(Operation *op, const Space &space) const;
  /// The space of a group made of `op` alone.
  Space spaceOf(Operation *op) const;
  /// Tries to make `op` and groups `merge` one group; true on success.
  bool tryJoin(Operation *op, ArrayRef<int> merge);
  /// The ops before `last` that depend on `members` (whole groups), or
  /// failure when `members` would depend on itself through them or the
  /// search is too long.
  FailureOr<SmallVector<Operation *>>
  dependents(const llvm::DenseSet<Operation *> &members, Operation *last);
  void build(Group &group);
  /// Whether `a` comes before `b` in the block. Positions are kept here, not
  /// asked of MLIR, whose order cache every move would invalidate: ops start
  /// kGap apart, and ops moved after X take X's position plus 1, 2, ...
  bool before(Operation *a, Operation *b) const {
    return position.lookup(a) < position.lookup(b);
  }

  Block &block;
  llvm::DenseMap<Operation *, int64_t> position;
  std::vector<Group> groups;
  llvm::DenseMap<Operation *, int> groupOf;
};

/// Whether `value` is a collective's result, or a cast of one: the
/// partitioner rounds a 16-bit gradient's reduced total through two casts
/// (roundTotal).
static bool isReducedTotal(Value value) {
  Operation *def = value.getDefiningOp();
  if (auto cast = llvm::dyn_cast_or_null<mtf::CastOp>(def))
    def = cast.getInput().getDefiningOp();
  // Through the view that turns the collective's ranked result into mtf's.
  if (def && def->hasTrait<mtf::View>() && def->getNumOperands() == 1)
    def = def->getOperand(0).getDefiningOp();
  return def && !llvm::isa<mtf::MtfDialect>(def->getDialect());
}

bool Fuser::candidate(Operation *op) const {
  if (!mtf::isFusible(op) || isConstant(op))
    return false;
  // A cast rounding a collective's total stays its own step:
  // mtf-combine-collectives moves such casts after a combined collective,
  // a fused step it cannot (the layer norms' bf16 gradients, four per
  // layer, would each get an all-reduce of their own).
  if (llvm::isa<mtf::CastOp>(op) && isReducedTotal(op->getOperand(0)))
    return false;
  // f32, bf16 and f16 alike: the kernels compute in f32, widening 16-bit
  // operands as they read them and rounding each 16-bit value as the
  // unfused step would store it ("round").
  for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults())) {
    mtf::TensorType type = tensorOf(value);
    if (!type || !llvm::isa<Float32Type, BFloat16Type, Float16Type>(
                     type.getElementType()))
      return false;
  }
  return true;
}

Space Fuser::spaceOf(Operation *op) const {
  Space space;
  if (!isReduction(op)) {
    space.full = keyOf(namesOf(tensorOf(op->getResult(0))));
    return space;
  }
  std::vector<std::string> in = namesOf(tensorOf(op->getOperand(0)));
  std::vector<std::string> out = namesOf(tensorOf(op->getResult(0))), gone;
  for (const std::string &name : in)
    if (std::find(out.begin(), out.end(), name) == out.end())
      gone.push_back(name);
  space.full = keyOf(in);
  space.reduces = true;
  space.reduced = keyOf(gone);
  space.row = keyOf(out);
  return space;
}

bool Fuser::fits(Operation *op, const Space &space) const {
  Space own = spaceOf(op);
  if (own.reduces)
    return own.full == space.full &&
           (!space.reduces || own.reduced == space.reduced);
  return own.full == space.full || (space.reduces && own.full == space.row);
}

FailureOr<SmallVector<Operation *>>
Fuser::dependents(const llvm::DenseSet<Operation *> &members, Operation *last) {
  llvm::DenseSet<Operation *> seen;
  SmallVector<Operation *> found, worklist;
  auto pushUsers = [&](Operation *op) -> LogicalResult {
    for (Operation *user : op->getUsers()) {
      if (members.contains(user))
        return failure();
      if (!seen.contains(user) && before(user, last))
        worklist.push_back(user);
    }
    return success();
  };
  for (Operation *member : members)
    for (Operation *user : member->getUsers())
      if (!members.contains(user) && before(user, last))
        worklist.push_back(user);
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (seen.contains(op))
      continue;
    // A group becomes one op: all of it depends on what one member does.
    SmallVector<Operation *> unit{op};
    auto it = groupOf.find(op);
    if (it != groupOf.end())
      unit.assign(groups[it->second].members.begin(),
                  groups[it->second].members.end());
    for (Operation *node : unit)
      if (seen.insert(node).second)
        found.push_back(node);
    for (Operation *node : unit)
      if (failed(pushUsers(node)))
        return failure();
    if (found.size() > kSearchLimit)
      return failure();
  }
  return found;
}

bool Fuser::tryJoin(Operation *op, ArrayRef<int> merge) {
  llvm::DenseSet<Operation *> members{op};
  SmallVector<Operation *> ordered;
  for (int index : merge)
    for (Operation *member : groups[index].members) {
      members.insert(member);
      ordered.push_back(member);
    }
  ordered.push_back(op);
  if (ordered.size() > kMaxOps)
    return false;
  llvm::SetVector<Value> inputs;
  for (Operation *member : ordered)
    for (Value operand : member->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || (!members.contains(def) && !isConstant(def)))
        inputs.insert(operand);
    }
  if (inputs.size() > kMaxInputs)
    return false;
  // The values read outside the group (all users are known already).
  size_t results = 0;
  for (Operation *member : ordered)
    results += llvm::any_of(member->getUsers(), [&](Operation *user) {
      return !members.contains(user);
    });
  if (results > kMaxResults)
    return false;

  FailureOr<SmallVector<Operation *>> moved = dependents(members, op);
  if (failed(moved))
    return false;
  llvm::sort(*moved, [&](Operation *a, Operation *b) { return before(a, b); });
  if (!moved->empty()) {
    // Moving a read of parameter P after an assign of P would make it read
    // the new value.
    llvm::DenseSet<Operation *> movedSet(moved->begin(), moved->end());
    llvm::StringMap<Operation *> lastAssign;
    for (Operation *at = moved->front(); at != op; at = at->getNextNode())
      if (auto assign = llvm::dyn_cast<mtf::AssignOp>(at))
        if (!movedSet.contains(at))
          lastAssign[assign.getName()] = at;
    for (Operation *reader : *moved)
      for (Value operand : reader->getOperands())
        if (auto param = operand.getDefiningOp<mtf::ParamOp>()) {
          auto it = lastAssign.find(param.getName());
          if (it != lastAssign.end() && before(reader, it->second))
            return false;
        }
  }

  int target = merge.empty() ? -1 : merge.front();
  if (target < 0) {
    target = groups.size();
    groups.push_back(Group{{}, spaceOf(op), mtf::phaseOf(op)});
  }
  Group &group = groups[target];
  for (int index : merge.drop_front(merge.empty() ? 0 : 1)) {
    Group &other = groups[index];
    group.members.append(other.members.begin(), other.members.end());
    if (other.space.reduces)
      group.space = other.space;
    for (Operation *member : other.members)
      groupOf[member] = target;
    other.alive = false;
    other.members.clear();
  }
  if (isReduction(op))
    group.space = spaceOf(op);
  group.members.push_back(op);
  groupOf[op] = target;
  llvm::sort(group.members,
             [&](Operation *a, Operation *b) { return before(a, b); });
  Operation *anchor = op;
  int64_t next = position.lookup(op);
  for (Operation *later : *moved) {
    later->moveAfter(anchor);
    anchor = later;
    position[later] = ++next;
  }
  return true;
}

void Fuser::run() {
  SmallVector<Operation *> order;
  for (Operation &op : block) {
    position[&op] = static_cast<int64_t>(order.size()) * kGap;
    order.push_back(&op);
  }
  for (Operation *op : order) {
    if (!candidate(op))
      continue;
    SmallVector<int> fitting;
    for (Value operand : op->getOperands()) {
      auto it = groupOf.find(operand.getDefiningOp());
      if (it == groupOf.end() || llvm::is_contained(fitting, it->second))
        continue;
      Group &group = groups[it->second];
      if (group.alive && group.phase == mtf::phaseOf(op) &&
          fits(op, group.space))
        fitting.push_back(it->second);
    }
    // All fitting groups of one space with at most one set of reduced dims;
    // else each alone; else a group of its own.
    SmallVector<int> together;
    for (int index : fitting) {
      const Space &space = groups[index].space;
      bool agrees = llvm::all_of(together, [&](int other) {
        const Space &have = groups[other].space;
        return have.full == space.full && (!have.reduces || !space.reduces ||
                                           have.reduced == space.reduced);
      });
      if (agrees)
        together.push_back(index);
    }
    if (together.size() > 1 && tryJoin(op, together))
      continue;
    bool joined = false;
    for (int index : fitting)
      if ((joined = tryJoin(op, {index})))
        break;
    if (!joined)
      tryJoin(op, {});
  }
  for (Group &group : groups)
    if (group.alive &&
        (group.members.size() > 1 || readsOrWritesHalf(group.members.front())))
      build(group);
}

void Fuser::build(Group &group) {
  llvm::DenseSet<Operation *> members(group.members.begin(),
                                      group.members.end());
  llvm::SetVector<Value> inputs;
  SmallVector<Value> results;
  SmallVector<Location> locs;
  for (Operation *member : group.members) {
    locs.push_back(member->getLoc());
    for (Value operand : member->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || (!members.contains(def) && !isConstant(def)))
        inputs.insert(operand);
    }
    for (Value result : member->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return !members.contains(user);
          }))
        results.push_back(result);
  }
  if (inputs.size() > kMaxInputs || results.size() > kMaxResults ||
      results.empty())
    return;

  Operation *last = group.members.back();
  OpBuilder builder(last->getContext());
  builder.setInsertionPointAfter(last);
  SmallVector<Type> resultTypes;
  for (Value result : results)
    resultTypes.push_back(result.getType());
  Location loc = builder.getFusedLoc(locs);
  auto fused =
      mtf::FusedOp::create(builder, loc, resultTypes, inputs.getArrayRef());
  if (group.phase != "forward")
    fused->setAttr(mtf::MtfDialect::kPhaseAttrName,
                   builder.getStringAttr(group.phase));
  // A group of one repeat instance's (or checkpoint's) ops keeps the tag
  // (what the memory plan calls recomputed activations in the backward
  // pass).
  for (StringRef name : mtf::MtfDialect::kGroupAttrNames) {
    StringAttr shared;
    bool one = true;
    for (Operation *op : group.members) {
      auto tag = op->getAttrOfType<StringAttr>(name);
      one &= tag && (!shared || tag == shared);
      shared = tag ? tag : shared;
    }
    if (one && shared)
      fused->setAttr(name, shared);
  }
  Block *body = new Block();
  fused.getBody().push_back(body);
  IRMapping mapping;
  for (Value input : inputs)
    mapping.map(input, body->addArgument(input.getType(), input.getLoc()));
  builder.setInsertionPointToStart(body);
  llvm::SetVector<Operation *> constants;
  for (Operation *member : group.members) {
    for (Value operand : member->getOperands())
      if (!mapping.contains(operand))
        if (auto constant = operand.getDefiningOp<mtf::ConstantOp>()) {
          mapping.map(operand, builder.clone(*constant)->getResult(0));
          constants.insert(constant);
        }
    builder.clone(*member, mapping);
  }
  SmallVector<Value> yielded;
  for (Value result : results)
    yielded.push_back(mapping.lookup(result));
  mtf::YieldOp::create(builder, loc, yielded);

  for (auto [result, replacement] : llvm::zip(results, fused.getResults()))
    result.replaceUsesWithIf(replacement, [&](OpOperand &use) {
      return !members.contains(use.getOwner());
    });
  for (Operation *member : llvm::reverse(group.members))
    member->erase();
  for (Operation *constant : constants)
    if (constant->use_empty())
      constant->erase();
}

/// A one-operand einsum that sums its operand's trailing dims (a row sum:
/// the layer norms' backward makes four per layer) is a reduce_sum, which
/// can join the group that computes its operand. Sums over leading dims
/// (column sums) stay einsums: a fused step reduces along its inner run,
/// which would walk them with a stride.
void rowSumsAsReductions(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto einsum = llvm::dyn_cast<mtf::EinsumOp>(op);
    if (!einsum || einsum.getInputs().size() != 1)
      continue;
    mtf::TensorType in = tensorOf(einsum.getInputs()[0]);
    mtf::TensorType out = tensorOf(einsum.getResult());
    if (!in || !out || out.getRank() >= in.getRank())
      continue;
    ArrayRef<mtf::NamedDim> inDims = in.getDims(), outDims = out.getDims();
    bool prefix = true;
    for (size_t d = 0; d < outDims.size(); ++d)
      prefix &= inDims[d].name == outDims[d].name;
    if (!prefix)
      continue;
    OpBuilder builder(&op);
    SmallVector<StringRef> reduced;
    for (const mtf::NamedDim &dim : inDims.drop_front(outDims.size()))
      reduced.push_back(dim.name.getValue());
    auto sum = mtf::ReduceSumOp::create(builder, op.getLoc(),
                                        einsum.getInputs()[0], reduced);
    sum->setAttrs(op.getAttrs());
    einsum.getResult().replaceAllUsesWith(sum.getResult());
    op.erase();
  }
}

struct MtfFusePass : public meshc::impl::MtfFuseBase<MtfFusePass> {
  void runOnOperation() override {
    for (auto program : getOperation().getOps<mtf::ProgramOp>()) {
      if (!program.getLocal())
        continue;
      rowSumsAsReductions(program.getBodyBlock());
      program.walk(
          [](mtf::LoopOp loop) { rowSumsAsReductions(loop.getBodyBlock()); });
      Fuser(program.getBodyBlock()).run();
      // Each loop's body once, as every iteration runs it.
      program.walk([](mtf::LoopOp loop) { Fuser(loop.getBodyBlock()).run(); });
    }
  }
};

} // namespace
