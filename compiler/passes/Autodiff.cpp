//===- Autodiff.cpp - reverse-mode differentiation of mtf programs --------===//
//
// Walks the program backwards from the loss, giving each value that depends
// on a parameter the sum of the gradients its users send it (vector-Jacobian
// products, one rule per op below). Only ops on a path from a trainable
// parameter to the loss are differentiated.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/Autodiff.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace meshc {
namespace {

bool isFloat(Value value) {
  auto type = llvm::dyn_cast<mtf::TensorType>(value.getType());
  return type && llvm::isa<FloatType>(type.getElementType());
}

class Differentiator {
public:
  Differentiator(OpEmitter &emit) : emit(emit) {}

  /// Sends the gradient of `op`'s result, `g`, to its operands.
  LogicalResult backprop(Operation *op, Value g);

  void accumulate(Value value, Value grad) {
    if (!active.contains(value))
      return;
    auto [it, inserted] = grads.try_emplace(value, grad);
    if (!inserted)
      it->second = emit.add(it->second, emit.sumTo(grad, tensorType(value)));
  }

  llvm::DenseSet<Value> active;
  llvm::DenseMap<Value, Value> grads;

private:
  /// Sends `g` (with the dims of `result`) to a broadcasting operand.
  void toOperand(Value operand, Value g) {
    if (active.contains(operand))
      accumulate(operand, emit.sumTo(g, tensorType(operand)));
  }
  LogicalResult einsum(mtf::EinsumOp op, Value g);

  OpEmitter &emit;
};

LogicalResult Differentiator::einsum(mtf::EinsumOp op, Value g) {
  OperandRange inputs = op.getInputs();
  for (auto [i, input] : llvm::enumerate(inputs)) {
    if (!active.contains(input))
      continue;
    mtf::TensorType target = tensorType(input);
    // d/dx_i = einsum(g, x_j for j != i) over the dims of x_i that g or
    // another operand has; x_i's other dims were summed in the forward
    // einsum, so the gradient is constant along them.
    SmallVector<Value> operands{g};
    for (auto [j, other] : llvm::enumerate(inputs))
      if (j != i)
        operands.push_back(other);
    SmallVector<mtf::NamedDim> available, missing;
    for (const mtf::NamedDim &dim : target.getDims()) {
      bool found = llvm::any_of(operands, [&](Value v) {
        return tensorType(v).hasDim(dim.name.getValue());
      });
      (found ? available : missing).push_back(dim);
    }
    auto partial = mtf::TensorType::get(emit.context(), available,
                                        target.getElementType());
    Value grad =
        operands.size() == 1
            ? emit.sumTo(g, partial)
            : emit.tag(mtf::EinsumOp::create(emit.builder(), emit.getLoc(),
                                             partial, operands))
                  ->getResult(0);
    accumulate(input, emit.broadcastTo(grad, target));
  }
  return success();
}

LogicalResult Differentiator::backprop(Operation *op, Value g) {
  Value y = op->getNumResults() == 1 ? op->getResult(0) : Value();
  auto unaryInput = [&]() { return op->getOperand(0); };
  auto ones = [&](Value like) {
    return emit.scalar(1.0, tensorType(like).getElementType());
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](mtf::EinsumOp einsumOp) { return einsum(einsumOp, g); })
      .Case([&](mtf::RenameOp rename) {
        auto type = tensorType(rename.getInput());
        accumulate(
            rename.getInput(),
            emit.tag(mtf::RenameOp::create(emit.builder(), emit.getLoc(), type,
                                           g, rename.getTo(), rename.getFrom()))
                ->getResult(0));
        return success();
      })
      .Case([&](mtf::ConstrainOp constrain) {
        accumulate(constrain.getInput(),
                   emit.tag(mtf::ConstrainOp::create(emit.builder(),
                                                     emit.getLoc(), g.getType(),
                                                     g, constrain.getLayout()))
                       ->getResult(0));
        return success();
      })
      .Case([&](mtf::LocalGradOp) {
        accumulate(unaryInput(), g);
        return success();
      })
      .Case([&](mtf::ReluOp) {
        accumulate(unaryInput(),
                   emit.mul(g, emit.unary<mtf::PositiveOp>(unaryInput())));
        return success();
      })
      .Case([&](mtf::GeluOp) {
        accumulate(unaryInput(),
                   emit.mul(g, emit.unary<mtf::GeluGradOp>(unaryInput())));
        return success();
      })
      .Case([&](mtf::ExpOp) {
        accumulate(unaryInput(), emit.mul(g, y));
        return success();
      })
      .Case([&](mtf::LogOp) {
        accumulate(unaryInput(), emit.div(g, unaryInput()));
        return success();
      })
      .Case([&](mtf::TanhOp) { // 1 - y^2
        accumulate(unaryInput(),
                   emit.mul(g, emit.sub(ones(y), emit.mul(y, y))));
        return success();
      })
      .Case([&](mtf::SqrtOp) { // 0.5 / y
        accumulate(unaryInput(), emit.div(emit.scale(g, 0.5), y));
        return success();
      })
      .Case([&](mtf::RsqrtOp) { // -0.5 y^3
        accumulate(unaryInput(),
                   emit.mul(emit.scale(g, -0.5), emit.mul(y, emit.mul(y, y))));
        return success();
      })
      .Case([&](mtf::NegateOp) {
        accumulate(unaryInput(), emit.unary<mtf::NegateOp>(g));
        return success();
      })
      .Case([&](mtf::CastOp cast) {
        Value input = cast.getInput();
        if (isFloat(input))
          accumulate(input,
                     emit.tag(mtf::CastOp::create(emit.builder(), emit.getLoc(),
                                                  input.getType(), g))
                         ->getResult(0));
        return success();
      })
      .Case([&](mtf::AddOp add) {
        toOperand(add.getLhs(), g);
        toOperand(add.getRhs(), g);
        return success();
      })
      .Case([&](mtf::SubOp sub) {
        toOperand(sub.getLhs(), g);
        if (active.contains(sub.getRhs()))
          toOperand(sub.getRhs(), emit.unary<mtf::NegateOp>(g));
        return success();
      })
      .Case([&](mtf::MulOp mul) {
        if (active.contains(mul.getLhs()))
          toOperand(mul.getLhs(), emit.mul(g, mul.getRhs()));
        if (active.contains(mul.getRhs()))
          toOperand(mul.getRhs(), emit.mul(g, mul.getLhs()));
        return success();
      })
      .Case([&](mtf::DivOp div) { // y = l / r: dl = g / r, dr = -g y / r
        if (active.contains(div.getLhs()))
          toOperand(div.getLhs(), emit.div(g, div.getRhs()));
        if (active.contains(div.getRhs()))
          toOperand(div.getRhs(), emit.unary<mtf::NegateOp>(
                                      emit.div(emit.mul(g, y), div.getRhs())));
        return success();
      })
      .Case<mtf::MaxOp, mtf::MinOp>([&](auto minmax) {
        // max: lhs wins ties (l >= r), so the two masks sum to one.
        bool isMax = llvm::isa<mtf::MaxOp>(op);
        Value l = minmax.getLhs(), r = minmax.getRhs();
        Value rhsWins = emit.unary<mtf::PositiveOp>(isMax ? emit.sub(r, l)
                                                          : emit.sub(l, r));
        if (active.contains(l))
          toOperand(l, emit.mul(g, emit.sub(ones(y), rhsWins)));
        if (active.contains(r))
          toOperand(r, emit.mul(g, rhsWins));
        return success();
      })
      .Case([&](mtf::ReduceSumOp reduce) {
        accumulate(reduce.getInput(),
                   emit.broadcastTo(g, tensorType(reduce.getInput())));
        return success();
      })
      .Case([&](mtf::ReduceMeanOp reduce) {
        mtf::TensorType input = tensorType(reduce.getInput());
        double count = static_cast<double>(input.getNumElements()) /
                       static_cast<double>(tensorType(y).getNumElements());
        accumulate(reduce.getInput(),
                   emit.broadcastTo(emit.scale(g, 1.0 / count), input));
        return success();
      })
      .Case([&](mtf::ReduceMaxOp reduce) {
        // Every element equal to the maximum gets the gradient.
        Value x = reduce.getInput();
        mtf::TensorType input = tensorType(x);
        Value below = emit.unary<mtf::PositiveOp>(
            emit.sub(emit.broadcastTo(y, input), x));
        accumulate(
            x, emit.mul(emit.broadcastTo(g, input), emit.sub(ones(y), below)));
        return success();
      })
      .Case([&](mtf::SoftmaxOp softmax) { // y * (g - sum_d(g * y))
        mtf::TensorType type = tensorType(y);
        SmallVector<mtf::NamedDim> kept;
        for (const mtf::NamedDim &dim : type.getDims())
          if (dim.name.getValue() != softmax.getDim())
            kept.push_back(dim);
        Value gy = emit.mul(g, y);
        Value sum = emit.tag(mtf::ReduceSumOp::create(
                                 emit.builder(), emit.getLoc(),
                                 mtf::TensorType::get(emit.context(), kept,
                                                      type.getElementType()),
                                 gy))
                        ->getResult(0);
        accumulate(softmax.getInput(), emit.mul(y, emit.sub(g, sum)));
        return success();
      })
      .Case([&](mtf::WindowOp window) { // the window back where it came from
        accumulate(
            window.getInput(),
            emit.tag(mtf::WindowOp::create(emit.builder(), emit.getLoc(),
                                           tensorType(window.getInput()), g,
                                           window.getTo(), window.getFrom(),
                                           -window.getOffset()))
                ->getResult(0));
        return success();
      })
      .Case([&](mtf::CumsumOp cumsum) { // the running sum the other way
        accumulate(cumsum.getInput(),
                   emit.tag(mtf::CumsumOp::create(
                                emit.builder(), emit.getLoc(), tensorType(y), g,
                                cumsum.getDim(), !cumsum.getReverse()))
                       ->getResult(0));
        return success();
      })
      .Case([&](mtf::SoftmaxCrossEntropyOp sce) {
        // g * (softmax(logits) - one_hot(labels))
        Value logits = sce.getLogits();
        mtf::TensorType type = tensorType(logits);
        Value probs =
            emit.tag(mtf::SoftmaxOp::create(emit.builder(), emit.getLoc(), type,
                                            logits, sce.getDim()))
                ->getResult(0);
        Value hot =
            emit.tag(mtf::OneHotOp::create(emit.builder(), emit.getLoc(), type,
                                           sce.getLabels(), sce.getDim()))
                ->getResult(0);
        accumulate(logits, emit.mul(emit.sub(probs, hot), g));
        return success();
      })
      .Default([&](Operation *other) -> LogicalResult {
        return other->emitError()
               << "cannot differentiate '" << other->getName()
               << "', which lies between a parameter and the loss";
      });
}

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
    if (llvm::isa<mtf::PositiveOp, mtf::EqualOp, mtf::LessOp, mtf::ArgmaxOp,
                  mtf::OneHotOp, mtf::TopKOp>(op))
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
