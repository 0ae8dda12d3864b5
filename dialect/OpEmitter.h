//===- OpEmitter.h - Building mtf ops for gradients and optimizers -*- C++
//-*-===//
//
// A small builder of mtf ops that infers result types by dimension name
// (broadcasting like the binary ops do), tags every op it makes with a
// training phase (`mtf.phase`) and gives it a location. The ops' gradients
// (GradientOpInterface, MtfGradients.cpp) and the optimizer update write
// their math with it; a GradientSink receives the gradients an op sends to
// its operands.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_DIALECT_OPEMITTER_H
#define MESHC_DIALECT_OPEMITTER_H

#include "dialect/MtfDialect.h"

namespace mlir {
namespace mtf {

class OpEmitter {
public:
  /// Builds at the end of `block` with phase `phase` ("backward", "update";
  /// "" for forward ops, which carry none).
  OpEmitter(mlir::Block &block, llvm::StringRef phase);
  /// Builds before `op`, at its location, and gives every op it makes the
  /// phase and recomputation group tags (repeat instance, checkpoint) `op`
  /// has (if any).
  explicit OpEmitter(mlir::Operation *op);

  /// The location of the ops built from now on.
  void setLoc(mlir::Location loc) { loc_ = loc; }
  mlir::Location getLoc() const { return loc_; }
  mlir::OpBuilder &builder() { return b; }
  mlir::MLIRContext *context() { return b.getContext(); }

  /// Tags `op` with the phase (and group tags) and returns it.
  mlir::Operation *tag(mlir::Operation *op);

  /// A scalar constant of element type `elementType`.
  mlir::Value scalar(double value, mlir::Type elementType);
  /// A constant of type `type`.
  mlir::Value constant(double value, mlir::mtf::TensorType type);

  // Elementwise binary ops; the result type is the op's inferred one (the
  // union of the operands' dims, lhs dims first, and the lhs element type).
  mlir::Value add(mlir::Value lhs, mlir::Value rhs);
  mlir::Value sub(mlir::Value lhs, mlir::Value rhs);
  mlir::Value mul(mlir::Value lhs, mlir::Value rhs);
  mlir::Value div(mlir::Value lhs, mlir::Value rhs);
  mlir::Value max(mlir::Value lhs, mlir::Value rhs);
  mlir::Value min(mlir::Value lhs, mlir::Value rhs);
  /// `value * factor` for a compile-time factor.
  mlir::Value scale(mlir::Value value, double factor);

  /// An elementwise unary op `Op` of `value`.
  template <typename Op> mlir::Value unary(mlir::Value value) {
    return tag(Op::create(b, loc_, value.getType(), value))->getResult(0);
  }

  /// Sums `value` over the dims `type` lacks and orders its dims like
  /// `type`'s (one single-operand einsum, or nothing when already equal).
  mlir::Value sumTo(mlir::Value value, mlir::mtf::TensorType type);
  /// Repeats `value` along the dims of `type` it lacks, in `type`'s order.
  /// `value`'s dims must be a subset of `type`'s.
  mlir::Value broadcastTo(mlir::Value value, mlir::mtf::TensorType type);
  /// Sums `value` to a scalar.
  mlir::Value sumAll(mlir::Value value);

private:
  template <typename Op> mlir::Value binary(mlir::Value lhs, mlir::Value rhs);

  mlir::OpBuilder b;
  mlir::StringAttr phase;
  mlir::DictionaryAttr groupTags;
  mlir::Location loc_;
};

/// The recomputation group tags `op` carries (MtfDialect::kGroupAttrNames:
/// repeat instance, checkpoint) as one uniqued dictionary, so ops of one
/// group compare equal; empty outside any group.
mlir::DictionaryAttr groupTagsOf(mlir::Operation *op);
/// Gives `op` the tags of groupTagsOf().
void setGroupTags(mlir::Operation *op, mlir::DictionaryAttr tags);

inline mlir::mtf::TensorType tensorType(mlir::Value value) {
  return llvm::cast<mlir::mtf::TensorType>(value.getType());
}

/// Where an op's gradient rule (GradientOpInterface::buildGradients) sends
/// the gradient of each operand: autodiff's accumulator.
class GradientSink {
public:
  virtual ~GradientSink();
  /// True when the loss depends on `operand` through a parameter: only
  /// those operands need a gradient.
  virtual bool wants(mlir::Value operand) const = 0;
  /// Adds `grad` to the gradient of `operand`, first summed over the dims
  /// `grad` has and `operand` lacks (the gradient of broadcasting). Does
  /// nothing for an operand the sink does not want.
  virtual void send(mlir::Value operand, mlir::Value grad) = 0;
};

} // namespace mtf
} // namespace mlir

#endif // MESHC_DIALECT_OPEMITTER_H
