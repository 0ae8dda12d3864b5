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

#include "llvm/ADT/DenseSet.h"

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
/// from the trainable parameters, over float values.
void markActive(mtf::ProgramOp program, llvm::DenseSet<Value> &active) {
  for (Operation &op : program.getBodyBlock()) {
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

} // namespace

FailureOr<llvm::MapVector<Operation *, Value>>
differentiate(mtf::ProgramOp program, Value loss, OpEmitter &emit) {
  Differentiator diff(emit);
  markActive(program, diff.active);

  SmallVector<Operation *> ops;
  for (Operation &op : program.getBodyBlock())
    ops.push_back(&op);

  emit.setLoc(loss.getLoc());
  if (diff.active.contains(loss))
    diff.grads[loss] = emit.constant(1.0, tensorType(loss));
  for (Operation *op : llvm::reverse(ops)) {
    if (op->getNumResults() != 1)
      continue;
    auto it = diff.grads.find(op->getResult(0));
    if (it == diff.grads.end() || llvm::isa<mtf::ParamOp>(op))
      continue;
    emit.setLoc(op->getLoc());
    if (failed(diff.backprop(op, it->second)))
      return failure();
  }

  llvm::MapVector<Operation *, Value> result;
  for (Operation *op : ops) {
    auto param = llvm::dyn_cast<mtf::ParamOp>(op);
    if (!param || param.getSlot())
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
