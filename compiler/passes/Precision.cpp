//===- Precision.cpp - mtf-precision --------------------------------------===//
//
// Mixed precision (Passes.td: MtfPrecision). One walk over the forward
// program in order gives each op's results an element type by the op's kind
// and casts the operands that differ; the backward pass that mtf-autodiff
// derives afterwards follows the same types (the gradient of a cast is the
// cast back), so parameter gradients arrive in f32 at the optimizer.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/Passes.h"
#include "dialect/MtfDialect.h"
#include "dialect/OpEmitter.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <tuple>

using namespace mlir;

namespace meshc {
#define GEN_PASS_DEF_MTFPRECISION
#include "compiler/passes/Passes.h.inc"
} // namespace meshc

namespace {

/// How an op's element type is chosen.
enum class Rule {
  /// As written: the op's results keep their types, operands are not cast.
  Keep,
  /// Float operands and results in the low precision (einsum).
  Low,
  /// Float operands and results in f32 (reductions, the loss).
  Full,
  /// The low precision when a float operand has it, else as written.
  Follow,
  /// A sink (output, train): float operands cast to f32.
  Sink,
};

/// The rule of `op`; none for an op this pass does not know.
std::optional<Rule> ruleOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<Rule>>(op)
      .Case<mtf::InputOp, mtf::ParamOp, mtf::ConstantOp, mtf::CastOp,
            mtf::DropoutMaskOp, mtf::OneHotOp, mtf::RangeOp, mtf::EqualOp,
            mtf::LessOp, mtf::ArgmaxOp>([](Operation *) { return Rule::Keep; })
      .Case<mtf::EinsumOp>([](Operation *) { return Rule::Low; })
      .Case<mtf::ReduceSumOp, mtf::ReduceMeanOp, mtf::ReduceMaxOp,
            mtf::LogSumExpOp, mtf::SoftmaxCrossEntropyOp>(
          [](Operation *) { return Rule::Full; })
      .Case<mtf::ReluOp, mtf::GeluOp, mtf::SiluOp, mtf::SigmoidOp, mtf::ExpOp,
            mtf::LogOp, mtf::TanhOp, mtf::SqrtOp, mtf::RsqrtOp, mtf::NegateOp,
            mtf::PositiveOp, mtf::GeluGradOp, mtf::AddOp, mtf::SubOp,
            mtf::MulOp, mtf::DivOp, mtf::MaxOp, mtf::MinOp, mtf::SoftmaxOp,
            mtf::CumsumOp, mtf::WindowOp, mtf::TopKOp, mtf::LocalGradOp,
            mtf::RenameOp, mtf::ConstrainOp>(
          [](Operation *) { return Rule::Follow; })
      .Case<mtf::OutputOp, mtf::TrainOp>([](Operation *) { return Rule::Sink; })
      .Default([](Operation *) { return std::nullopt; });
}

bool isFloatTensor(Value value) {
  auto type = llvm::dyn_cast<mtf::TensorType>(value.getType());
  return type && llvm::isa<FloatType>(type.getElementType());
}

Type elementOf(Value value) {
  return llvm::cast<mtf::TensorType>(value.getType()).getElementType();
}

struct MtfPrecisionPass
    : public meshc::impl::MtfPrecisionBase<MtfPrecisionPass> {
  using MtfPrecisionBase::MtfPrecisionBase;

  void runOnOperation() override {
    mtf::ProgramOp program = getOperation();
    Type low = BFloat16Type::get(&getContext());
    Type full = Float32Type::get(&getContext());
    // One conversion of a value to a type per recomputation group (repeat
    // instance, checkpoint), tagged like the group.
    llvm::DenseMap<std::tuple<Value, Type, Attribute>, Value> converted;
    auto convert = [&](Operation *user, Value value, Type element) -> Value {
      if (elementOf(value) == element)
        return value;
      DictionaryAttr group = mtf::groupTagsOf(user);
      Value &done = converted[{value, element, group}];
      if (done)
        return done;
      OpBuilder builder(user);
      auto type =
          llvm::cast<mtf::TensorType>(value.getType()).withElementType(element);
      Operation *made;
      if (auto constant = value.getDefiningOp<mtf::ConstantOp>())
        made = mtf::ConstantOp::create(builder, constant.getLoc(), type,
                                       constant.getValueAttr());
      else
        made = mtf::CastOp::create(builder, user->getLoc(), type, value);
      mtf::setGroupTags(made, group);
      return done = made->getResult(0);
    };
    auto convertOperands = [&](Operation *op, Type element) {
      for (OpOperand &operand : op->getOpOperands())
        if (isFloatTensor(operand.get()))
          operand.set(convert(op, operand.get(), element));
    };
    auto retypeResults = [&](Operation *op, Type element) {
      for (Value result : op->getResults())
        if (isFloatTensor(result))
          result.setType(llvm::cast<mtf::TensorType>(result.getType())
                             .withElementType(element));
    };

    // Casts go in before the op being visited, never after it.
    for (Operation &each : llvm::make_early_inc_range(program.getBodyBlock())) {
      Operation *op = &each;
      std::optional<Rule> rule = ruleOf(op);
      if (!rule) {
        op->emitOpError() << "has no mixed-precision rule (mtf-precision)";
        return signalPassFailure();
      }
      switch (*rule) {
      case Rule::Keep:
        break;
      case Rule::Low:
        convertOperands(op, low);
        retypeResults(op, low);
        break;
      case Rule::Full:
        convertOperands(op, full);
        retypeResults(op, full);
        break;
      case Rule::Follow: {
        bool anyLow = llvm::any_of(op->getOperands(), [&](Value operand) {
          return isFloatTensor(operand) && elementOf(operand) == low;
        });
        if (!anyLow)
          break;
        convertOperands(op, low);
        retypeResults(op, low);
        break;
      }
      case Rule::Sink:
        convertOperands(op, full);
        break;
      }
    }
  }
};

} // namespace
