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

#include "mlir/IR/IRMapping.h"
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
                            OpEmitter &emit);

/// The gradient of a loop with one carried value `x` (the frontend's):
/// - the forward loop is rebuilt to also stack each iteration's input x_i;
/// - a backward loop, last layer first, carries the gradient of x and one
///   sum per invariant operand the loss depends on, and reads x_i and each
///   stacked operand's slice: it recomputes the layer from x_i (as
///   --remat=repeat does for unrolled repeats), differentiates it, and
///   stacks the gradient of each stacked operand;
/// - x, the stacked operands and the invariant ones get the loop's
///   gradients.
LogicalResult differentiateLoop(mtf::LoopOp loop, Value g, Differentiator &diff,
                                OpEmitter &emit) {
  if (!g || loop.getCarried().size() != 1 || !loop.getStackedResults().empty())
    return loop.emitOpError() << "is differentiated only with one carried "
                                 "value and nothing stacked (as a repeat)";
  StringRef dim = loop.getDim();
  int64_t count = loop.getCount();
  Block &forwardBody = loop.getBodyBlock();
  Value carriedArg = loop.getCarriedArgs().front();
  auto carriedType = tensorType(carriedArg);

  // The forward loop, also stacking each iteration's input.
  OpBuilder before(loop);
  auto forward = mtf::LoopOp::create(
      before, loop.getLoc(), loop.getFinals().getTypes(),
      TypeRange{mtf::LoopOp::stackedType(carriedType, dim, count)}, dim, count,
      loop.getCarried(), loop.getStacked(), loop.getInvariant(),
      loop.getReverse());
  forward->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
  forward.getBody().takeBody(loop.getBody());
  Operation *yield = forward.getBodyBlock().getTerminator();
  yield->insertOperands(yield->getNumOperands(), ValueRange{carriedArg});
  loop.getFinals().front().replaceAllUsesWith(forward.getFinals().front());
  Value saved = forward.getStackedResults().front();

  // Which operands the loss depends on, and so need a gradient.
  SmallVector<Value> stackedWanted, invariantWanted;
  for (Value operand : loop.getStacked())
    if (diff.wants(operand))
      stackedWanted.push_back(operand);
  for (Value operand : loop.getInvariant())
    if (diff.wants(operand))
      invariantWanted.push_back(operand);

  // The backward loop's operands: carried (the gradient, the sums of the
  // invariants' gradients), stacked (the inputs, the forward's stacked),
  // invariant (the forward's).
  SmallVector<Value> carried{g};
  for (Value operand : invariantWanted)
    carried.push_back(emit.constant(0.0, tensorType(operand)));
  SmallVector<Value> stacked{saved};
  llvm::append_range(stacked, forward.getStacked());
  SmallVector<Type> stackedResultTypes;
  for (Value operand : stackedWanted)
    stackedResultTypes.push_back(operand.getType());
  SmallVector<Type> finalTypes;
  for (Value value : carried)
    finalTypes.push_back(value.getType());
  auto backward = mtf::LoopOp::create(
      emit.builder(), loop.getLoc(), finalTypes, stackedResultTypes, dim, count,
      carried, stacked, forward.getInvariant(), /*reverse=*/true);
  emit.tag(backward);
  Block *body = new Block();
  backward.getBody().push_back(body);
  Location loc = loop.getLoc();
  for (Value value : carried)
    body->addArgument(value.getType(), loc);
  body->addArgument(carriedType, loc);
  for (Value arg : forward.getStackedArgs())
    body->addArgument(arg.getType(), loc);
  for (Value arg : forward.getInvariantArgs())
    body->addArgument(arg.getType(), loc);

  // The layer again, from the saved input.
  OpEmitter inner(*body, "backward");
  IRMapping mapping;
  size_t at = carried.size();
  mapping.map(carriedArg, body->getArgument(at));
  for (auto [arg, index] : llvm::zip(
           forward.getStackedArgs(),
           llvm::seq<size_t>(at + 1, at + 1 + forward.getStacked().size())))
    mapping.map(arg, body->getArgument(index));
  size_t invariantAt = at + 1 + forward.getStacked().size();
  for (auto [arg, index] :
       llvm::zip(forward.getInvariantArgs(),
                 llvm::seq<size_t>(invariantAt, body->getNumArguments())))
    mapping.map(arg, body->getArgument(index));
  SmallVector<Operation *> recomputed;
  for (Operation &op : forward.getBodyBlock().without_terminator())
    recomputed.push_back(inner.tag(inner.builder().clone(op, mapping)));
  Value layerOut = mapping.lookupOrDefault(yield->getOperand(0));

  // Its gradient.
  Differentiator layer(inner);
  Value x = mapping.lookup(carriedArg);
  layer.active.insert(x);
  for (auto [operand, arg] :
       llvm::zip(forward.getStacked(), forward.getStackedArgs()))
    if (diff.wants(operand))
      layer.active.insert(mapping.lookup(arg));
  for (auto [operand, arg] :
       llvm::zip(forward.getInvariant(), forward.getInvariantArgs()))
    if (diff.wants(operand))
      layer.active.insert(mapping.lookup(arg));
  markActive(*body, layer.active);
  if (layer.active.contains(layerOut))
    layer.grads[layerOut] = body->getArgument(0);
  if (failed(backpropagate(recomputed, layer, inner)))
    return failure();
  auto gradOf = [&](Value value) {
    auto it = layer.grads.find(value);
    return it != layer.grads.end() ? it->second
                                   : inner.constant(0.0, tensorType(value));
  };
  SmallVector<Value> yielded{gradOf(x)};
  size_t sum = 1;
  for (auto [operand, arg] :
       llvm::zip(forward.getInvariant(), forward.getInvariantArgs()))
    if (diff.wants(operand)) {
      yielded.push_back(
          inner.add(body->getArgument(sum), gradOf(mapping.lookup(arg))));
      ++sum;
    }
  for (auto [operand, arg] :
       llvm::zip(forward.getStacked(), forward.getStackedArgs()))
    if (diff.wants(operand))
      yielded.push_back(gradOf(mapping.lookup(arg)));
  inner.tag(mtf::YieldOp::create(inner.builder(), loc, yielded));

  diff.send(forward.getCarried().front(), backward.getFinals().front());
  for (auto [operand, total] :
       llvm::zip(invariantWanted, backward.getFinals().drop_front()))
    diff.send(operand, total);
  for (auto [operand, grads] :
       llvm::zip(stackedWanted, backward.getStackedResults()))
    diff.send(operand, grads);
  loop.erase();
  return success();
}

LogicalResult backpropagate(ArrayRef<Operation *> ops, Differentiator &diff,
                            OpEmitter &emit) {
  for (Operation *op : llvm::reverse(ops)) {
    // A loop the loss depends on through any of its results is
    // differentiated (or refused) as a whole, never skipped.
    if (auto loop = llvm::dyn_cast<mtf::LoopOp>(op)) {
      if (llvm::none_of(loop.getResults(),
                        [&](Value r) { return diff.grads.count(r); }))
        continue;
      emit.setLoc(op->getLoc());
      if (failed(differentiateLoop(loop, diff.grads.lookup(loop.getResult(0)),
                                   diff, emit)))
        return failure();
      continue;
    }
    if (op->getNumResults() != 1)
      continue;
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
differentiate(mtf::ProgramOp program, Value loss, OpEmitter &emit) {
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
  if (failed(backpropagate(ops, diff, emit)))
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
