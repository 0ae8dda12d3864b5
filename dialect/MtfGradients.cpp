//===- MtfGradients.cpp - The gradient rule of every mtf op ---------------===//
//
// GradientOpInterface, one rule per op: given g, the gradient of the loss
// with respect to the op's result y, send each operand the loss depends on
// its vector-Jacobian product, written as mtf ops. The sink sums a gradient
// over the dims its operand lacks (the gradient of broadcasting by name).
// docs/training.md tables the rules.
//
//===----------------------------------------------------------------------===//

#include "dialect/MtfDialect.h"
#include "dialect/OpEmitter.h"

using namespace mlir;

namespace mlir {
namespace mtf {

namespace {

/// The error of an op that cannot lie between a parameter and the loss.
LogicalResult noGradient(Operation *op) {
  return op->emitError() << "cannot differentiate '" << op->getName()
                         << "', which lies between a parameter and the loss";
}

/// The scalar 1 in the element type of `like`.
Value ones(OpEmitter &emit, Value like) {
  return emit.scalar(1.0, tensorType(like).getElementType());
}

} // namespace

//===----------------------------------------------------------------------===//
// Sources: nothing to send (a parameter's gradient is its result's).
//===----------------------------------------------------------------------===//

LogicalResult InputOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return success();
}
LogicalResult ParamOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return success();
}
LogicalResult ConstantOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return success();
}
LogicalResult DropoutMaskOp::buildGradients(OpEmitter &, Value,
                                            GradientSink &) {
  return success();
}
LogicalResult RangeOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return success();
}

//===----------------------------------------------------------------------===//
// Piecewise constant (StopsGradient): autodiff never asks them.
//===----------------------------------------------------------------------===//

LogicalResult PositiveOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return success();
}
LogicalResult EqualOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return success();
}
LogicalResult LessOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return success();
}
LogicalResult TopKOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return success();
}
LogicalResult OneHotOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return success();
}
LogicalResult ArgmaxOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return success();
}

//===----------------------------------------------------------------------===//
// No gradient: sinks, the container, ops of local programs, second order.
//===----------------------------------------------------------------------===//

LogicalResult ProgramOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return noGradient(*this);
}
LogicalResult OutputOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return noGradient(*this);
}
LogicalResult AssignOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return noGradient(*this);
}
LogicalResult FusedOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return noGradient(*this);
}
// A loop's gradient is a backward loop, built by mtf-autodiff itself
// (differentiateLoop in compiler/passes/Autodiff.cpp), which differentiates
// the body with its own accumulator.
LogicalResult LoopOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return emitOpError() << "is differentiated by mtf-autodiff as a whole "
                          "(a backward loop), not through a gradient rule";
}
LogicalResult YieldOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return noGradient(*this);
}
LogicalResult TrainOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return noGradient(*this);
}
LogicalResult ToTensorOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return noGradient(*this);
}
LogicalResult FromTensorOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return noGradient(*this);
}
LogicalResult CombinedAllReduceOp::buildGradients(OpEmitter &, Value,
                                                  GradientSink &) {
  return noGradient(*this);
}
LogicalResult CombinedAllGatherOp::buildGradients(OpEmitter &, Value,
                                                  GradientSink &) {
  return noGradient(*this);
}
LogicalResult CombinedReduceScatterOp::buildGradients(OpEmitter &, Value,
                                                      GradientSink &) {
  return noGradient(*this);
}
LogicalResult CollectivePermuteOp::buildGradients(OpEmitter &, Value,
                                                  GradientSink &) {
  return noGradient(*this);
}
LogicalResult WaitOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return noGradient(*this);
}
LogicalResult GeluGradOp::buildGradients(OpEmitter &, Value, GradientSink &) {
  return noGradient(*this);
}

//===----------------------------------------------------------------------===//
// Contraction and layout changes
//===----------------------------------------------------------------------===//

/// d/dx_i = einsum(g, x_j for j != i) over the dims of x_i that g or another
/// operand has; x_i's other dims were summed in the forward einsum, so the
/// gradient is constant along them.
LogicalResult EinsumOp::buildGradients(OpEmitter &emit, Value g,
                                       GradientSink &sink) {
  OperandRange inputs = getInputs();
  for (auto [i, input] : llvm::enumerate(inputs)) {
    if (!sink.wants(input))
      continue;
    TensorType target = tensorType(input);
    SmallVector<Value> operands{g};
    for (auto [j, other] : llvm::enumerate(inputs))
      if (j != i)
        operands.push_back(other);
    SmallVector<NamedDim> available, missing;
    for (const NamedDim &dim : target.getDims()) {
      bool found = llvm::any_of(operands, [&](Value v) {
        return tensorType(v).hasDim(dim.name.getValue());
      });
      (found ? available : missing).push_back(dim);
    }
    auto partial =
        TensorType::get(emit.context(), available, target.getElementType());
    Value grad = operands.size() == 1
                     ? emit.sumTo(g, partial)
                     : emit.tag(EinsumOp::create(emit.builder(), emit.getLoc(),
                                                 partial, operands))
                           ->getResult(0);
    sink.send(input, emit.broadcastTo(grad, target));
  }
  return success();
}

LogicalResult RenameOp::buildGradients(OpEmitter &emit, Value g,
                                       GradientSink &sink) {
  sink.send(getInput(), emit.tag(RenameOp::create(emit.builder(), emit.getLoc(),
                                                  getInput().getType(), g,
                                                  getTo(), getFrom()))
                            ->getResult(0));
  return success();
}

LogicalResult SplitDimOp::buildGradients(OpEmitter &emit, Value g,
                                         GradientSink &sink) {
  sink.send(getInput(),
            emit.tag(MergeDimsOp::create(
                         emit.builder(), emit.getLoc(), getInput().getType(), g,
                         getOuter().name.getValue(), getBlocksAttr()))
                ->getResult(0));
  return success();
}

LogicalResult MergeDimsOp::buildGradients(OpEmitter &emit, Value g,
                                          GradientSink &sink) {
  auto type = llvm::cast<TensorType>(getResult().getType());
  StringRef merged = type.getDims()[getOuterIndex()].name.getValue();
  sink.send(getInput(),
            emit.tag(SplitDimOp::create(emit.builder(), emit.getLoc(),
                                        getInput().getType(), g, merged,
                                        getBlocksAttr()))
                ->getResult(0));
  return success();
}

LogicalResult ConstrainOp::buildGradients(OpEmitter &emit, Value g,
                                          GradientSink &sink) {
  sink.send(getInput(),
            emit.tag(ConstrainOp::create(emit.builder(), emit.getLoc(),
                                         g.getType(), g, getLayout()))
                ->getResult(0));
  return success();
}

LogicalResult LocalGradOp::buildGradients(OpEmitter &, Value g,
                                          GradientSink &sink) {
  sink.send(getInput(), g);
  return success();
}

/// The window back where it came from.
LogicalResult WindowOp::buildGradients(OpEmitter &emit, Value g,
                                       GradientSink &sink) {
  sink.send(getInput(),
            emit.tag(WindowOp::create(emit.builder(), emit.getLoc(),
                                      getInput().getType(), g, getTo(),
                                      getFrom(), -getOffset()))
                ->getResult(0));
  return success();
}

/// The running sum the other way.
LogicalResult CumsumOp::buildGradients(OpEmitter &emit, Value g,
                                       GradientSink &sink) {
  sink.send(getInput(),
            emit.tag(CumsumOp::create(emit.builder(), emit.getLoc(), getType(),
                                      g, getDim(), !getReverse()))
                ->getResult(0));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

LogicalResult ReluOp::buildGradients(OpEmitter &emit, Value g,
                                     GradientSink &sink) {
  sink.send(getInput(), emit.mul(g, emit.unary<PositiveOp>(getInput())));
  return success();
}

LogicalResult GeluOp::buildGradients(OpEmitter &emit, Value g,
                                     GradientSink &sink) {
  sink.send(getInput(), emit.mul(g, emit.unary<GeluGradOp>(getInput())));
  return success();
}

/// s + x s (1 - s) with s = sigmoid(x).
LogicalResult SiluOp::buildGradients(OpEmitter &emit, Value g,
                                     GradientSink &sink) {
  Value x = getInput();
  Value s = emit.unary<SigmoidOp>(x);
  Value slope =
      emit.add(s, emit.mul(emit.mul(x, s), emit.sub(ones(emit, s), s)));
  sink.send(x, emit.mul(g, slope));
  return success();
}

/// y (1 - y).
LogicalResult SigmoidOp::buildGradients(OpEmitter &emit, Value g,
                                        GradientSink &sink) {
  Value y = getResult();
  sink.send(getInput(), emit.mul(g, emit.mul(y, emit.sub(ones(emit, y), y))));
  return success();
}

LogicalResult ExpOp::buildGradients(OpEmitter &emit, Value g,
                                    GradientSink &sink) {
  sink.send(getInput(), emit.mul(g, getResult()));
  return success();
}

LogicalResult LogOp::buildGradients(OpEmitter &emit, Value g,
                                    GradientSink &sink) {
  sink.send(getInput(), emit.div(g, getInput()));
  return success();
}

/// 1 - y^2.
LogicalResult TanhOp::buildGradients(OpEmitter &emit, Value g,
                                     GradientSink &sink) {
  Value y = getResult();
  sink.send(getInput(), emit.mul(g, emit.sub(ones(emit, y), emit.mul(y, y))));
  return success();
}

/// 0.5 / y.
LogicalResult SqrtOp::buildGradients(OpEmitter &emit, Value g,
                                     GradientSink &sink) {
  sink.send(getInput(), emit.div(emit.scale(g, 0.5), getResult()));
  return success();
}

/// -0.5 y^3.
LogicalResult RsqrtOp::buildGradients(OpEmitter &emit, Value g,
                                      GradientSink &sink) {
  Value y = getResult();
  sink.send(getInput(),
            emit.mul(emit.scale(g, -0.5), emit.mul(y, emit.mul(y, y))));
  return success();
}

LogicalResult NegateOp::buildGradients(OpEmitter &emit, Value g,
                                       GradientSink &sink) {
  sink.send(getInput(), emit.unary<NegateOp>(g));
  return success();
}

/// Back to the float type it came from; an integer operand gets none.
LogicalResult CastOp::buildGradients(OpEmitter &emit, Value g,
                                     GradientSink &sink) {
  Value input = getInput();
  if (llvm::isa<FloatType>(tensorType(input).getElementType()))
    sink.send(input, emit.tag(CastOp::create(emit.builder(), emit.getLoc(),
                                             input.getType(), g))
                         ->getResult(0));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise binary (the sink sums over broadcast dims)
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildGradients(OpEmitter &, Value g, GradientSink &sink) {
  sink.send(getLhs(), g);
  sink.send(getRhs(), g);
  return success();
}

LogicalResult SubOp::buildGradients(OpEmitter &emit, Value g,
                                    GradientSink &sink) {
  sink.send(getLhs(), g);
  if (sink.wants(getRhs()))
    sink.send(getRhs(), emit.unary<NegateOp>(g));
  return success();
}

LogicalResult MulOp::buildGradients(OpEmitter &emit, Value g,
                                    GradientSink &sink) {
  if (sink.wants(getLhs()))
    sink.send(getLhs(), emit.mul(g, getRhs()));
  if (sink.wants(getRhs()))
    sink.send(getRhs(), emit.mul(g, getLhs()));
  return success();
}

/// y = l / r: dl = g / r, dr = -g y / r.
LogicalResult DivOp::buildGradients(OpEmitter &emit, Value g,
                                    GradientSink &sink) {
  if (sink.wants(getLhs()))
    sink.send(getLhs(), emit.div(g, getRhs()));
  if (sink.wants(getRhs()))
    sink.send(getRhs(), emit.unary<NegateOp>(
                            emit.div(emit.mul(g, getResult()), getRhs())));
  return success();
}

/// The lhs wins ties (l >= r for max, l <= r for min), so the two masks sum
/// to one.
static LogicalResult minMaxGradients(OpEmitter &emit, Value g, Value y, Value l,
                                     Value r, bool isMax, GradientSink &sink) {
  Value rhsWins =
      emit.unary<PositiveOp>(isMax ? emit.sub(r, l) : emit.sub(l, r));
  if (sink.wants(l))
    sink.send(l, emit.mul(g, emit.sub(ones(emit, y), rhsWins)));
  if (sink.wants(r))
    sink.send(r, emit.mul(g, rhsWins));
  return success();
}

LogicalResult MaxOp::buildGradients(OpEmitter &emit, Value g,
                                    GradientSink &sink) {
  return minMaxGradients(emit, g, getResult(), getLhs(), getRhs(), true, sink);
}

LogicalResult MinOp::buildGradients(OpEmitter &emit, Value g,
                                    GradientSink &sink) {
  return minMaxGradients(emit, g, getResult(), getLhs(), getRhs(), false, sink);
}

//===----------------------------------------------------------------------===//
// Reductions and normalisation
//===----------------------------------------------------------------------===//

LogicalResult ReduceSumOp::buildGradients(OpEmitter &emit, Value g,
                                          GradientSink &sink) {
  sink.send(getInput(), emit.broadcastTo(g, tensorType(getInput())));
  return success();
}

LogicalResult ReduceMeanOp::buildGradients(OpEmitter &emit, Value g,
                                           GradientSink &sink) {
  TensorType input = tensorType(getInput());
  double count = static_cast<double>(input.getNumElements()) /
                 static_cast<double>(tensorType(getResult()).getNumElements());
  sink.send(getInput(), emit.broadcastTo(emit.scale(g, 1.0 / count), input));
  return success();
}

/// Every element equal to the maximum gets the gradient.
LogicalResult ReduceMaxOp::buildGradients(OpEmitter &emit, Value g,
                                          GradientSink &sink) {
  Value x = getInput(), y = getResult();
  TensorType input = tensorType(x);
  Value below = emit.unary<PositiveOp>(emit.sub(emit.broadcastTo(y, input), x));
  sink.send(
      x, emit.mul(emit.broadcastTo(g, input), emit.sub(ones(emit, y), below)));
  return success();
}

/// y * (g - sum_d(g * y)).
LogicalResult SoftmaxOp::buildGradients(OpEmitter &emit, Value g,
                                        GradientSink &sink) {
  Value y = getResult();
  TensorType type = tensorType(y);
  SmallVector<NamedDim> kept;
  for (const NamedDim &dim : type.getDims())
    if (dim.name.getValue() != getDim())
      kept.push_back(dim);
  Value gy = emit.mul(g, y);
  Value sum =
      emit
          .tag(ReduceSumOp::create(
              emit.builder(), emit.getLoc(),
              TensorType::get(emit.context(), kept, type.getElementType()), gy))
          ->getResult(0);
  sink.send(getInput(), emit.mul(y, emit.sub(g, sum)));
  return success();
}

/// g * softmax(x, dim), g repeated along dim.
LogicalResult LogSumExpOp::buildGradients(OpEmitter &emit, Value g,
                                          GradientSink &sink) {
  Value x = getInput();
  Value probs = emit.tag(SoftmaxOp::create(emit.builder(), emit.getLoc(),
                                           x.getType(), x, getDim()))
                    ->getResult(0);
  sink.send(x, emit.mul(probs, g));
  return success();
}

/// g * (softmax(logits) - one_hot(labels)); the labels get none.
LogicalResult SoftmaxCrossEntropyOp::buildGradients(OpEmitter &emit, Value g,
                                                    GradientSink &sink) {
  Value logits = getLogits();
  TensorType type = tensorType(logits);
  Value probs = emit.tag(SoftmaxOp::create(emit.builder(), emit.getLoc(), type,
                                           logits, getDim()))
                    ->getResult(0);
  Value hot = emit.tag(OneHotOp::create(emit.builder(), emit.getLoc(), type,
                                        getLabels(), getDim()))
                  ->getResult(0);
  sink.send(logits, emit.mul(emit.sub(probs, hot), g));
  return success();
}

} // namespace mtf
} // namespace mlir

namespace mlir {
namespace mtf {

/// FlashAttention's backward: one mtf.attention_grad gives the gradients of
/// the query, key and value from the forward operands, result and
/// logsumexp. The bias gets none: mtf-fuse-attention fuses only a bias no
/// parameter reaches.
LogicalResult AttentionOp::buildGradients(OpEmitter &emit, Value g,
                                          GradientSink &sink) {
  if (getBias() && sink.wants(getBias()))
    return emitOpError() << "has a bias the loss depends on through a "
                            "parameter; its gradient is not computed";
  if (!sink.wants(getQuery()) && !sink.wants(getKey()) &&
      !sink.wants(getValue()))
    return success();
  auto grad = llvm::cast<AttentionGradOp>(emit.tag(AttentionGradOp::create(
      emit.builder(), emit.getLoc(), getQuery().getType(), getKey().getType(),
      getValue().getType(), getQuery(), getKey(), getValue(), getResult(),
      getLogsumexp(), g, getBias(), getKeyDimAttr(), getHeadDimsAttr(),
      getScaleAttr())));
  sink.send(getQuery(), grad.getQueryGrad());
  sink.send(getKey(), grad.getKeyGrad());
  sink.send(getValue(), grad.getValueGrad());
  return success();
}

LogicalResult AttentionGradOp::buildGradients(OpEmitter &, Value,
                                              GradientSink &) {
  return emitOpError() << "has no gradient of its own (a second derivative "
                          "of fused attention is not supported)";
}

} // namespace mtf
} // namespace mlir
