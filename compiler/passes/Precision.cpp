//===- Precision.cpp - mtf-precision --------------------------------------===//
//
// Mixed precision (Passes.td: MtfPrecision). One walk over the forward
// program in order gives each op's results an element type by the op's
// Precision trait (PrecisionRule, MtfDialect.h) and casts the operands that
// differ; the backward pass that mtf-autodiff
// derives afterwards follows the same types (the gradient of a cast is the
// cast back), so parameter gradients arrive in f32 at the optimizer.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/Passes.h"
#include "dialect/MtfDialect.h"
#include "dialect/OpEmitter.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <functional>
#include <tuple>

using namespace mlir;

namespace meshc {
#define GEN_PASS_DEF_MTFPRECISION
#include "compiler/passes/Passes.h.inc"
} // namespace meshc

namespace {

using mtf::PrecisionRule;

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
        made = mtf::CastOp::create(builder, user->getLoc(), value, element);
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

    // Casts go in before the op being visited, never after it. A loop's
    // body is typed like the program, from its arguments' new types.
    std::function<LogicalResult(Block &)> typeBlock = [&](Block &block) {
      for (Operation &each :
           llvm::make_early_inc_range(block.without_terminator())) {
        Operation *op = &each;
        SmallVector<PrecisionRule, 1> rules =
            mtf::precisionRulesOf(op->getName());
        if (rules.size() != 1 || rules.front() == PrecisionRule::Refuse) {
          op->emitOpError() << "has no mixed-precision rule (mtf-precision)";
          return failure();
        }
        switch (rules.front()) {
        case PrecisionRule::Keep:
        case PrecisionRule::Refuse:
          break;
        case PrecisionRule::Region: {
          auto loop = llvm::cast<mtf::LoopOp>(op);
          Block &body = loop.getBodyBlock();
          size_t carried = loop.getCarried().size();
          for (auto [index, arg, operand] :
               llvm::enumerate(body.getArguments(), loop.getOperands())) {
            bool stacked =
                index >= carried && index < carried + loop.getStacked().size();
            arg.setType(stacked ? mtf::LoopOp::sliceType(operand.getType(),
                                                         loop.getDim(),
                                                         loop.getCount())
                                : operand.getType());
          }
          if (failed(typeBlock(body)))
            return failure();
          Operation *yield = body.getTerminator();
          for (auto [index, operand] :
               llvm::enumerate(yield->getOpOperands())) {
            if (index < carried) {
              if (isFloatTensor(operand.get()))
                operand.set(convert(yield, operand.get(),
                                    elementOf(body.getArgument(index))));
              loop.getResult(index).setType(body.getArgument(index).getType());
              continue;
            }
            loop.getResult(index).setType(mtf::LoopOp::stackedType(
                llvm::cast<mtf::TensorType>(operand.get().getType()),
                loop.getDim(), loop.getCount()));
          }
          break;
        }
        case PrecisionRule::Low:
          convertOperands(op, low);
          retypeResults(op, low);
          break;
        case PrecisionRule::Full:
          convertOperands(op, full);
          retypeResults(op, full);
          break;
        case PrecisionRule::Follow: {
          bool anyLow = llvm::any_of(op->getOperands(), [&](Value operand) {
            return isFloatTensor(operand) && elementOf(operand) == low;
          });
          if (!anyLow)
            break;
          convertOperands(op, low);
          retypeResults(op, low);
          break;
        }
        case PrecisionRule::Sink:
          convertOperands(op, full);
          break;
        }
      }
      return success();
    };
    if (failed(typeBlock(program.getBodyBlock())))
      return signalPassFailure();
  }
};

} // namespace
