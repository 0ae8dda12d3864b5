//===- MtfDecompositions.cpp - ops that need a dimension whole, rewritten -===//
//
// DecomposeOpInterface: softmax, logsumexp, softmax-cross-entropy and argmax
// as reductions and elementwise ops, so that a dimension split over the mesh
// (a vocabulary over the model-parallel axis) is reduced in blocks and only
// per-row statistics cross devices. mtf-partition uses these where the
// layout splits the dimension (docs/spmd.md).
//
//===----------------------------------------------------------------------===//

#include "dialect/MtfDialect.h"
#include "dialect/OpEmitter.h"

using namespace mlir;

namespace mlir {
namespace mtf {

/// `type` without dimension `dim`, the other dims in order.
static TensorType without(TensorType type, StringRef dim) {
  SmallVector<NamedDim> kept;
  for (const NamedDim &named : type.getDims())
    if (named.name.getValue() != dim)
      kept.push_back(named);
  return TensorType::get(type.getContext(), kept, type.getElementType());
}

/// The reduction `Op` of `value` to `type`.
template <typename Op>
static Value reduce(OpEmitter &emit, Value value, TensorType type) {
  return emit.tag(Op::create(emit.builder(), emit.getLoc(), type, value))
      ->getResult(0);
}

/// log(sum exp(x)) over `dim` as m + log(sum exp(x - m)) with m the row
/// maximum: both reductions combine blocks (maximum, sum).
static Value logSumExp(OpEmitter &emit, Value x, StringRef dim) {
  TensorType rows = without(tensorType(x), dim);
  Value max = reduce<ReduceMaxOp>(emit, x, rows);
  Value sum =
      reduce<ReduceSumOp>(emit, emit.unary<ExpOp>(emit.sub(x, max)), rows);
  return emit.add(emit.unary<LogOp>(sum), max);
}

/// exp(x - m) / sum exp(x - m), m the row maximum.
Value SoftmaxOp::decompose(OpEmitter &emit) {
  Value x = getInput();
  TensorType rows = without(tensorType(x), getDim());
  Value max = reduce<ReduceMaxOp>(emit, x, rows);
  Value exps = emit.unary<ExpOp>(emit.sub(x, max));
  return emit.div(exps, reduce<ReduceSumOp>(emit, exps, rows));
}

Value LogSumExpOp::decompose(OpEmitter &emit) {
  return logSumExp(emit, getInput(), getDim());
}

/// logsumexp(logits) - sum(logits * one_hot(labels)): the logit of the label
/// is picked by the device whose block holds it and summed over the others.
/// one_hot keeps its check that every label lies in the class dimension.
Value SoftmaxCrossEntropyOp::decompose(OpEmitter &emit) {
  Value logits = getLogits();
  TensorType type = tensorType(logits);
  Value hot = emit.tag(OneHotOp::create(emit.builder(), emit.getLoc(), type,
                                        getLabels(), getDim()))
                  ->getResult(0);
  Value picked =
      reduce<ReduceSumOp>(emit, emit.mul(logits, hot), without(type, getDim()));
  Value loss = emit.sub(logSumExp(emit, logits, getDim()), picked);
  // The result has the labels' dims, which may be ordered differently.
  return emit.sumTo(loss, tensorType(getResult()));
}

/// The first position of the row maximum: with m the maximum, the largest
/// of (n - position) where x == m gives n minus the first such position; a
/// row where nothing equals m gives 0. A row without NaN gives the argmax
/// step's index; a row holding NaN may not (the step skips NaN, while the
/// maximum of a block whose first element is NaN is NaN).
Value ArgmaxOp::decompose(OpEmitter &emit) {
  Value x = getInput();
  TensorType type = tensorType(x);
  TensorType rows = without(type, getDim());
  Type f32 = Float32Type::get(emit.context());
  int64_t n = type.getDims()[*type.getDimIndex(getDim())].size;
  Value max = reduce<ReduceMaxOp>(emit, x, rows);
  Value hit = emit.tag(EqualOp::create(
                           emit.builder(), emit.getLoc(),
                           TensorType::get(emit.context(), type.getDims(), f32),
                           x, max))
                  ->getResult(0);
  SmallVector<NamedDim> along;
  for (const NamedDim &named : type.getDims())
    if (named.name.getValue() == getDim())
      along.push_back(named);
  Value positions =
      emit.tag(RangeOp::create(emit.builder(), emit.getLoc(),
                               TensorType::get(emit.context(), along, f32)))
          ->getResult(0);
  Value fromEnd = emit.sub(emit.scalar(double(n), f32), positions);
  Value best =
      reduce<ReduceMaxOp>(emit, emit.mul(hit, fromEnd),
                          TensorType::get(emit.context(), rows.getDims(), f32));
  Value first = emit.sub(emit.scalar(double(n), f32), best);
  // No match: best 0, first n; the index is 0.
  Value inRange =
      emit.tag(LessOp::create(emit.builder(), emit.getLoc(), tensorType(first),
                              first, emit.scalar(double(n), f32)))
          ->getResult(0);
  Value index = emit.mul(first, inRange);
  return emit
      .tag(CastOp::create(emit.builder(), emit.getLoc(), getResult().getType(),
                          index))
      ->getResult(0);
}

} // namespace mtf
} // namespace mlir
