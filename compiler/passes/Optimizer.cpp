//===- Optimizer.cpp - parameter updates as mtf ops -----------------------===//
//
// With t the number of updates made before this step (slot `opt/step`):
//
//   lr_t  = lr · min(1, (t+1)/warmup_steps)
//              · max(min_lr_ratio, 1 - max(0, t+1-warmup_steps)/decay_steps)
//   g     = g · clip_norm / max(‖g‖, clip_norm)      (‖·‖ over all params)
//   sgd:      p -= lr_t g
//   momentum: v = μ v + g;  p -= lr_t v
//   adam:     m = β1 m + (1-β1) g;  v = β2 v + (1-β2) g²
//             p -= lr_t (m / (1-β1^(t+1))) / (sqrt(v / (1-β2^(t+1))) + eps)
//   adamw:    adam, plus p -= lr_t · weight_decay · p (decoupled)
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/Optimizer.h"

#include <cmath>

using namespace mlir;

namespace meshc {

double hyperparam(mtf::TrainOp train, StringRef name, double fallback) {
  Attribute attr = train.getHyperparams().get(name);
  if (auto f = llvm::dyn_cast_or_null<FloatAttr>(attr))
    return f.getValueAsDouble();
  if (auto i = llvm::dyn_cast_or_null<IntegerAttr>(attr))
    return static_cast<double>(i.getInt());
  return fallback;
}

/// A zero-initialised slot named `name` with `type`, defined before `before`.
Value makeSlot(OpBuilder &builder, Operation *before, StringRef name, Type type,
               Location loc) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(before);
  auto init = mtf::InitAttr::get(builder.getContext(), mtf::InitKind::zeros,
                                 ArrayRef<double>{});
  auto slot = mtf::ParamOp::create(builder, loc, type, name, init,
                                   /*slot=*/true);
  return slot.getResult();
}

void assign(OpEmitter &emit, StringRef name, Value value) {
  emit.tag(mtf::AssignOp::create(emit.builder(), emit.getLoc(), name, value));
}

namespace {

/// base^(exponent) for a scalar tensor exponent and 0 <= base < 1.
Value power(OpEmitter &emit, double base, Value exponent) {
  Type f32 = tensorType(exponent).getElementType();
  if (base == 0)
    return emit.scalar(0.0, f32);
  return emit.unary<mtf::ExpOp>(emit.scale(exponent, std::log(base)));
}

} // namespace

void emitOptimizer(mtf::TrainOp train,
                   const llvm::MapVector<Operation *, Value> &grads,
                   OpEmitter &emit) {
  emit.setLoc(train.getLoc());
  OpBuilder &builder = emit.builder();
  Block &block = *train->getBlock();
  Type f32 = builder.getF32Type();
  auto scalarType = mtf::TensorType::get(emit.context(), {}, f32);
  StringRef optimizer = train.getOptimizer();

  // The step counter t and t + 1.
  Value step =
      makeSlot(builder, &block.front(), "opt/step", scalarType, train.getLoc());
  Value next = emit.add(step, emit.scalar(1.0, f32));

  // Learning-rate schedule.
  Value lr = emit.scalar(hyperparam(train, "lr", 0), f32);
  double warmup = hyperparam(train, "warmup_steps", 0);
  double decay = hyperparam(train, "decay_steps", 0);
  if (warmup > 0)
    lr = emit.mul(
        lr, emit.min(emit.scalar(1.0, f32), emit.scale(next, 1.0 / warmup)));
  if (decay > 0) {
    Value since = emit.max(emit.scalar(0.0, f32),
                           emit.sub(next, emit.scalar(warmup, f32)));
    Value factor =
        emit.sub(emit.scalar(1.0, f32), emit.scale(since, 1.0 / decay));
    lr = emit.mul(
        lr, emit.max(emit.scalar(hyperparam(train, "min_lr_ratio", 0), f32),
                     factor));
  }

  // Clipping by the global norm of all gradients.
  llvm::MapVector<Operation *, Value> clipped = grads;
  double clipNorm = hyperparam(train, "clip_norm", 0);
  if (clipNorm > 0 && !grads.empty()) {
    Value squares;
    for (auto &[param, g] : grads) {
      Value sum = emit.sumAll(emit.mul(g, g));
      squares = squares ? emit.add(squares, sum) : sum;
    }
    Value norm = emit.unary<mtf::SqrtOp>(squares);
    Value factor = emit.div(emit.scalar(clipNorm, f32),
                            emit.max(norm, emit.scalar(clipNorm, f32)));
    for (auto &[param, g] : clipped)
      g = emit.mul(g, factor);
  }

  double beta1 = hyperparam(train, "beta1", 0.9);
  double beta2 = hyperparam(train, "beta2", 0.999);
  double eps = hyperparam(train, "eps", 1e-8);
  Value correction1, correction2;
  if (optimizer == "adam" || optimizer == "adamw") {
    correction1 = emit.sub(emit.scalar(1.0, f32), power(emit, beta1, next));
    correction2 = emit.sub(emit.scalar(1.0, f32), power(emit, beta2, next));
  }

  for (auto &[op, g] : clipped) {
    auto param = llvm::cast<mtf::ParamOp>(op);
    Value p = param.getResult();
    StringRef name = param.getName();
    Type type = p.getType();
    emit.setLoc(train.getLoc());
    Value delta; // what lr_t multiplies
    if (optimizer == "sgd") {
      delta = g;
    } else if (optimizer == "momentum") {
      Value v = makeSlot(builder, op->getNextNode(), (name + "/momentum").str(),
                         type, param.getLoc());
      Value v2 = emit.add(emit.scale(v, hyperparam(train, "momentum", 0.9)), g);
      assign(emit, (name + "/momentum").str(), v2);
      delta = v2;
    } else {
      std::string mName = (name + "/adam_m").str();
      std::string vName = (name + "/adam_v").str();
      Value m =
          makeSlot(builder, op->getNextNode(), mName, type, param.getLoc());
      Value v = makeSlot(builder, m.getDefiningOp()->getNextNode(), vName, type,
                         param.getLoc());
      Value m2 = emit.add(emit.scale(m, beta1), emit.scale(g, 1 - beta1));
      Value v2 =
          emit.add(emit.scale(v, beta2), emit.scale(emit.mul(g, g), 1 - beta2));
      assign(emit, mName, m2);
      assign(emit, vName, v2);
      Value mHat = emit.div(m2, correction1);
      Value vHat = emit.div(v2, correction2);
      delta = emit.div(
          mHat, emit.add(emit.unary<mtf::SqrtOp>(vHat), emit.scalar(eps, f32)));
      double decayRate = hyperparam(train, "weight_decay", 0);
      if (optimizer == "adamw" && decayRate > 0)
        delta = emit.add(delta, emit.scale(p, decayRate));
    }
    assign(emit, name, emit.sub(p, emit.mul(delta, lr)));
  }
  assign(emit, "opt/step", next);
}

} // namespace meshc
