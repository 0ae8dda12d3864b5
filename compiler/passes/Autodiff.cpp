//===- Autodiff.cpp - reverse-mode differentiation of mtf programs --------===//
//
// Walks the program backwards from the loss, giving each value that depends
// on a parameter the sum of the gradients its users send it: the
// vector-Jacobian product each op states through GradientOpInterface
// (dialect/MtfGradients.cpp). Only ops on a path from a trainable parameter
// to the loss are differentiated.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/Autodiff.h"

#include "compiler/passes/OneFOneB.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Sequence.h"

using namespace mlir;

namespace meshc {
namespace {

bool isFloat(Value value) {
  auto type = llvm::dyn_cast<mtf::TensorType>(value.getType());
  return type && llvm::isa<FloatType>(type.getElementType());
}

/// Accumulates the gradients the ops' rules send to their operands.
class Differentiator : public mtf::GradientSink {
public:
  Differentiator(OpEmitter &emit) : emit(emit) {}

  /// Sends the gradient of `op`'s result, `g`, to its operands by the op's
  /// GradientOpInterface.
  LogicalResult backprop(Operation *op, Value g) {
    auto rule = llvm::dyn_cast<mtf::GradientOpInterface>(op);
    if (!rule)
      return op->emitError()
             << "cannot differentiate '" << op->getName()
             << "', which lies between a parameter and the loss";
    return rule.buildGradients(emit, g, *this);
  }

  bool wants(Value operand) const override { return active.contains(operand); }

  void send(Value operand, Value grad) override {
    if (!active.contains(operand))
      return;
    grad = emit.sumTo(grad, tensorType(operand));
    auto [it, inserted] = grads.try_emplace(operand, grad);
    if (!inserted)
      it->second = emit.add(it->second, grad);
  }

  llvm::DenseSet<Value> active;
  llvm::DenseMap<Value, Value> grads;

private:
  OpEmitter &emit;
};

/// The ops whose value the loss can depend on through a parameter: forward
/// from the trainable parameters (or values already in `active`), over
/// float values, through the ops of `block`.
void markActive(Block &block, llvm::DenseSet<Value> &active) {
  for (Operation &op : block) {
    if (auto param = llvm::dyn_cast<mtf::ParamOp>(op)) {
      if (!param.getSlot())
        active.insert(param.getResult());
      continue;
    }
    // Piecewise-constant ops stop gradients.
    if (op.hasTrait<mtf::StopsGradient>())
      continue;
    bool anyActive = llvm::any_of(op.getOperands(),
                                  [&](Value v) { return active.contains(v); });
    if (!anyActive)
      continue;
    for (Value result : op.getResults())
      if (isFloat(result))
        active.insert(result);
  }
}

/// Sends to `ops` (in order, their values' activity in `diff`) the
/// gradient of each result `diff` holds one for, last op first; a loop goes
/// through differentiateLoop.
LogicalResult backpropagate(ArrayRef<Operation *> ops, Differentiator &diff,
                            OpEmitter &emit, Remat remat);

/// The values of `body` that change from one iteration to the next: those
/// computed from the carried or stacked arguments (`moving`).
llvm::DenseSet<Value> varyingValues(Block &body, ValueRange moving) {
  llvm::DenseSet<Value> varying(moving.begin(), moving.end());
  for (Operation &op : body.without_terminator())
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return varying.contains(v); }))
      for (Value result : op.getResults())
        varying.insert(result);
  return varying;
}

/// Whether the backward loop computes forward op `op` again rather than
/// reading its stacked result: under Remat::Repeat every op; else views
/// (free), ops that read nothing that varies per iteration (no stacked copy
/// of a value that is the same in every layer), and under Marked the ops of
/// a `checkpoint(...)`.
bool recomputedInBackward(Operation *op, Remat remat,
                          const llvm::DenseSet<Value> &varying) {
  if (remat == Remat::Repeat || op->hasTrait<mtf::View>())
    return true;
  if (llvm::none_of(op->getOperands(),
                    [&](Value v) { return varying.contains(v); }))
    return true;
  return remat == Remat::Marked &&
         op->hasAttr(mtf::MtfDialect::kCheckpointAttrName);
}

/// The gradient of a loop, given the gradients `diff` holds for its
/// results (carried values x_k and stacked results):
/// - a backward loop, last iteration first, carries the gradient of each
///   x_k (a final's gradient, or zeros) and one sum per invariant operand
///   the loss depends on, and reads each stacked operand's slice and each
///   stacked result's gradient slice. Its body is first the layer again (a
///   clone of the forward body) and then the layer's gradient, seeded from
///   the carried gradients and the stacked results' slices;
/// - then each value of that clone the gradient reads is either kept
///   (recomputed: recomputedInBackward) or replaced by a slice of a new
///   stacked result of the forward loop (the activation, saved), and what
///   is left of the clone unread is erased; x_k's value at the start of
///   each iteration is stacked when the backward body still reads it;
/// - each x_k, the stacked operands and the invariant ones get the loop's
///   gradients.
LogicalResult differentiateLoop(mtf::LoopOp loop, Differentiator &diff,
                                OpEmitter &emit, Remat remat) {
  if (loop.getReverse())
    return loop.emitOpError() << "runs its iterations in reverse; only a "
                                 "forward loop is differentiated";
  StringRef dim = loop.getDim();
  int64_t count = loop.getCount();
  Block &forwardBody = loop.getBodyBlock();
  Operation *yield = forwardBody.getTerminator();
  size_t carriedCount = loop.getCarried().size();
  Location loc = loop.getLoc();

  // Which operands the loss depends on, and so need a gradient.
  SmallVector<Value> stackedWanted, invariantWanted;
  for (Value operand : loop.getStacked())
    if (diff.wants(operand))
      stackedWanted.push_back(operand);
  for (Value operand : loop.getInvariant())
    if (diff.wants(operand))
      invariantWanted.push_back(operand);
  // The stacked results the loss depends on, with their gradients.
  SmallVector<std::pair<size_t, Value>> stackedGrads;
  for (auto [index, result] : llvm::enumerate(loop.getStackedResults()))
    if (Value grad = diff.grads.lookup(result))
      stackedGrads.emplace_back(index, grad);

  // The backward body's arguments: carried (the gradients of the x_k, the
  // sums of the invariants' gradients), stacked (the x_k at each
  // iteration's start, the forward's stacked operands, the stacked results'
  // gradients, then the saved activations, added below), invariant (the
  // forward's).
  SmallVector<Value> carried;
  for (Value final : loop.getFinals()) {
    Value grad = diff.grads.lookup(final);
    carried.push_back(grad ? grad : emit.constant(0.0, tensorType(final)));
  }
  for (Value operand : invariantWanted)
    carried.push_back(emit.constant(0.0, tensorType(operand)));
  // (Built in a region of its own, the loop's, until the backward loop,
  // whose types it decides, takes it.)
  Region scratch(loop.getOperation());
  Block *body = new Block();
  scratch.push_back(body);
  for (Value value : carried)
    body->addArgument(value.getType(), loc);
  size_t inputAt = carried.size();
  IRMapping mapping;
  for (BlockArgument arg : loop.getCarriedArgs())
    mapping.map(arg, body->addArgument(arg.getType(), loc));
  for (Value arg : loop.getStackedArgs())
    mapping.map(arg, body->addArgument(arg.getType(), loc));
  SmallVector<Value> stackedGradArgs;
  for (auto [index, grad] : stackedGrads)
    stackedGradArgs.push_back(body->addArgument(
        yield->getOperand(carriedCount + index).getType(), loc));
  size_t invariantAt = body->getNumArguments();
  for (Value arg : loop.getInvariantArgs())
    mapping.map(arg, body->addArgument(arg.getType(), loc));

  // The layer again, from the x_k.
  OpEmitter inner(*body, "backward");
  llvm::DenseMap<Operation *, Operation *> forwardOf;
  SmallVector<Operation *> recomputed;
  // The clones carry the layer dim as their repeat instance, so the memory
  // plan counts what stays of them as recomputed activations.
  StringAttr instance = StringAttr::get(loop.getContext(), dim);
  for (Operation &op : forwardBody.without_terminator()) {
    Operation *clone = inner.tag(inner.builder().clone(op, mapping));
    clone->setAttr(mtf::MtfDialect::kInstanceAttrName, instance);
    forwardOf[clone] = &op;
    recomputed.push_back(clone);
  }

  // Its gradient, seeded where the layer's yields reach the loss.
  Differentiator layer(inner);
  for (BlockArgument arg : loop.getCarriedArgs())
    layer.active.insert(mapping.lookup(arg));
  for (auto [operand, arg] :
       llvm::zip(loop.getStacked(), loop.getStackedArgs()))
    if (diff.wants(operand))
      layer.active.insert(mapping.lookup(arg));
  for (auto [operand, arg] :
       llvm::zip(loop.getInvariant(), loop.getInvariantArgs()))
    if (diff.wants(operand))
      layer.active.insert(mapping.lookup(arg));
  markActive(*body, layer.active);
  SmallVector<std::pair<Value, Value>> seeds;
  for (size_t k = 0; k < carriedCount; ++k)
    seeds.emplace_back(mapping.lookupOrDefault(yield->getOperand(k)),
                       body->getArgument(k));
  for (auto [seed, arg] : llvm::zip(stackedGrads, stackedGradArgs))
    seeds.emplace_back(
        mapping.lookupOrDefault(yield->getOperand(carriedCount + seed.first)),
        arg);
  for (auto [value, grad] : seeds)
    layer.send(value, grad);
  if (failed(backpropagate(recomputed, layer, inner, remat)))
    return failure();
  auto gradOf = [&](Value value) {
    auto it = layer.grads.find(value);
    return it != layer.grads.end() ? it->second
                                   : inner.constant(0.0, tensorType(value));
  };
  SmallVector<Value> yielded;
  for (BlockArgument arg : loop.getCarriedArgs())
    yielded.push_back(gradOf(mapping.lookup(arg)));
  size_t sum = carriedCount;
  for (auto [operand, arg] :
       llvm::zip(loop.getInvariant(), loop.getInvariantArgs()))
    if (diff.wants(operand)) {
      yielded.push_back(
          inner.add(body->getArgument(sum), gradOf(mapping.lookup(arg))));
      ++sum;
    }
  for (auto [operand, arg] :
       llvm::zip(loop.getStacked(), loop.getStackedArgs()))
    if (diff.wants(operand))
      yielded.push_back(gradOf(mapping.lookup(arg)));
  inner.tag(mtf::YieldOp::create(inner.builder(), loc, yielded));

  // Recompute or read each activation, last op first, so that an op's
  // readers are settled before it: what nothing reads is erased.
  SmallVector<Value> moving(loop.getCarriedArgs().begin(),
                            loop.getCarriedArgs().end());
  llvm::append_range(moving, loop.getStackedArgs());
  llvm::DenseSet<Value> varying = varyingValues(forwardBody, moving);
  SmallVector<Value> saved;
  // (A reverse iterator would point past the op it yields: erasing that op
  // would break it, hence the walk by previous nodes.)
  Operation *previous = body->getTerminator()->getPrevNode();
  while (previous) {
    Operation &op = *previous;
    previous = op.getPrevNode();
    auto it = forwardOf.find(&op);
    if (it == forwardOf.end()) {
      if (op.use_empty() && isMemoryEffectFree(&op))
        op.erase();
      continue;
    }
    if (!op.use_empty() && recomputedInBackward(it->second, remat, varying))
      continue;
    for (auto [result, original] :
         llvm::zip(op.getResults(), it->second->getResults())) {
      if (result.use_empty())
        continue;
      result.replaceAllUsesWith(body->insertArgument(invariantAt + saved.size(),
                                                     result.getType(), loc));
      saved.push_back(original);
    }
    op.erase();
  }
  // The x_k the backward body reads, stacked by the forward loop.
  SmallVector<Value> inputsRead;
  for (size_t k = carriedCount; k-- > 0;) {
    if (body->getArgument(inputAt + k).use_empty())
      body->eraseArgument(inputAt + k);
    else
      inputsRead.push_back(loop.getCarriedArgs()[k]);
  }
  std::reverse(inputsRead.begin(), inputsRead.end());

  // The forward loop, also stacking the x_k read and the activations after
  // its own stacked results.
  SmallVector<Value> stackedYields(inputsRead);
  llvm::append_range(stackedYields, saved);
  SmallVector<Type> stackedTypes(loop.getStackedResults().getTypes());
  for (Value value : stackedYields)
    stackedTypes.push_back(
        mtf::LoopOp::stackedType(tensorType(value), dim, count));
  OpBuilder before(loop);
  auto forward = mtf::LoopOp::create(before, loc, loop.getFinals().getTypes(),
                                     stackedTypes, dim, count,
                                     loop.getCarried(), loop.getStacked(),
                                     loop.getInvariant(), loop.getReverse());
  forward->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
  forward.getBody().takeBody(loop.getBody());
  yield->insertOperands(yield->getNumOperands(), stackedYields);
  for (auto [old, now] : llvm::zip(loop.getResults(), forward.getResults()))
    old.replaceAllUsesWith(now);
  size_t ownStacked = loop.getStackedResults().size();

  // The backward loop.
  SmallVector<Value> stacked;
  ValueRange stackedResults =
      forward.getStackedResults().drop_front(ownStacked);
  llvm::append_range(stacked, stackedResults.take_front(inputsRead.size()));
  llvm::append_range(stacked, forward.getStacked());
  for (auto [index, grad] : stackedGrads)
    stacked.push_back(grad);
  llvm::append_range(stacked, stackedResults.drop_front(inputsRead.size()));
  SmallVector<Type> stackedResultTypes;
  for (Value operand : stackedWanted)
    stackedResultTypes.push_back(operand.getType());
  SmallVector<Type> finalTypes;
  for (Value value : carried)
    finalTypes.push_back(value.getType());
  if (forward->hasAttr(mtf::MtfDialect::kOneFOneBAttrName)) {
    // A pipeline under 1F1B: the backward runs inside the ticks.
    SmallVector<Value> forwardCarried(forward.getCarried());
    LoopGradient gradient{forward, ownStacked,         body,         carried,
                          stacked, stackedResultTypes, stackedWanted};
    FailureOr<LoopGradientValues> values = scheduleOneFOneB(gradient);
    if (failed(values))
      return failure();
    for (auto [operand, total] : llvm::zip(forwardCarried, values->finals))
      diff.send(operand, total);
    for (auto [operand, total] :
         llvm::zip(invariantWanted,
                   ArrayRef(values->finals).drop_front(carriedCount)))
      diff.send(operand, total);
    for (auto [operand, grads] :
         llvm::zip(stackedWanted, values->stackedResults))
      diff.send(operand, grads);
    loop.erase();
    return success();
  }
  auto backward = mtf::LoopOp::create(
      emit.builder(), loc, finalTypes, stackedResultTypes, dim, count, carried,
      stacked, forward.getInvariant(), /*reverse=*/true);
  emit.tag(backward);
  backward.getBody().takeBody(scratch);

  for (auto [operand, total] :
       llvm::zip(forward.getCarried(), backward.getFinals()))
    diff.send(operand, total);
  for (auto [operand, total] : llvm::zip(
           invariantWanted, backward.getFinals().drop_front(carriedCount)))
    diff.send(operand, total);
  for (auto [operand, grads] :
       llvm::zip(stackedWanted, backward.getStackedResults()))
    diff.send(operand, grads);
  loop.erase();
  return success();
}

LogicalResult backpropagate(ArrayRef<Operation *> ops, Differentiator &diff,
                            OpEmitter &emit, Remat remat) {
  for (Operation *op : llvm::reverse(ops)) {
    // A loop the loss depends on through any of its results is
    // differentiated (or refused) as a whole, never skipped.
    if (auto loop = llvm::dyn_cast<mtf::LoopOp>(op)) {
      if (llvm::none_of(loop.getResults(),
                        [&](Value r) { return diff.grads.count(r); }))
        continue;
      emit.setLoc(op->getLoc());
      if (failed(differentiateLoop(loop, diff, emit, remat)))
        return failure();
      continue;
    }
    if (op->getNumResults() == 0)
      continue;
    // An op with several results (fused attention) is differentiated
    // through its first; the others (statistics its gradient reads) must
    // not reach the loss.
    for (Value other : op->getResults().drop_front())
      if (diff.grads.count(other))
        return op->emitOpError()
               << "result #" << llvm::cast<OpResult>(other).getResultNumber()
               << " reaches the loss, but only result #0 has a gradient";
    auto it = diff.grads.find(op->getResult(0));
    if (it == diff.grads.end() || llvm::isa<mtf::ParamOp>(op))
      continue;
    emit.setLoc(op->getLoc());
    if (failed(diff.backprop(op, it->second)))
      return failure();
  }
  return success();
}

} // namespace

FailureOr<llvm::MapVector<Operation *, Value>>
differentiate(mtf::ProgramOp program, Value loss, OpEmitter &emit,
              Remat remat) {
  Differentiator diff(emit);
  markActive(program.getBodyBlock(), diff.active);

  SmallVector<Operation *> ops;
  SmallVector<mtf::ParamOp> params;
  for (Operation &op : program.getBodyBlock()) {
    ops.push_back(&op);
    if (auto param = llvm::dyn_cast<mtf::ParamOp>(op))
      params.push_back(param);
  }

  emit.setLoc(loss.getLoc());
  if (diff.active.contains(loss))
    diff.grads[loss] = emit.constant(1.0, tensorType(loss));
  // (A loop is rebuilt as it is differentiated: `ops` is not read again.)
  if (failed(backpropagate(ops, diff, emit, remat)))
    return failure();

  llvm::MapVector<Operation *, Value> result;
  for (mtf::ParamOp param : params) {
    Operation *op = param;
    if (param.getSlot())
      continue;
    auto it = diff.grads.find(param.getResult());
    if (it != diff.grads.end()) {
      result[op] = it->second;
      continue;
    }
    param.emitWarning() << "parameter '" << param.getName()
                        << "' does not affect the loss; its gradient is zero";
    emit.setLoc(param.getLoc());
    result[op] = emit.constant(0.0, tensorType(param.getResult()));
  }
  return result;
}

} // namespace meshc
