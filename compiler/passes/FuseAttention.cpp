//===- FuseAttention.cpp - mtf-fuse-attention -----------------------------===//
//
// Softmax attention written as einsum, scale, mask add, softmax and einsum
// becomes one mtf.attention (Passes.td: MtfFuseAttention), so the scores
// `[..., key]` are never stored: FlashAttention's forward, and through its
// gradient rule FlashAttention-2's backward.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/Passes.h"
#include "dialect/MtfDialect.h"
#include "runtime/core/HalfFloat.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace meshc {
#define GEN_PASS_DEF_MTFFUSEATTENTION
#include "compiler/passes/Passes.h.inc"
} // namespace meshc

namespace {

/// The ops of one matched attention, from scores to context.
struct Match {
  mtf::EinsumOp scores;
  mtf::MulOp scaled;      // null without a scale
  mtf::AddOp biased;      // null without a bias
  mtf::ConstantOp factor; // the scale's constant
  Value bias;
  mtf::SoftmaxOp softmax;
  mtf::EinsumOp context;
  Value query, key, value;
  SmallVector<StringRef> heads;
  double scale = 1.0;
};

mtf::TensorType tensorOf(Value value) {
  return llvm::dyn_cast<mtf::TensorType>(value.getType());
}

Operation *soleUser(Value value) {
  return value.hasOneUse() ? *value.getUsers().begin() : nullptr;
}

/// Whether a parameter reaches `value` (so it would need a gradient).
/// A loop body's carried argument counts as reached (its value changes per
/// iteration); a piecewise-constant op (a comparison, a mask) stops it.
class ParamReach {
public:
  bool reaches(Value value) {
    auto it = memo.find(value);
    if (it != memo.end())
      return it->second;
    memo[value] = true; // cycles (none in SSA) stay conservative
    bool result = compute(value);
    memo[value] = result;
    return result;
  }

private:
  bool compute(Value value) {
    if (auto arg = llvm::dyn_cast<BlockArgument>(value)) {
      auto loop = llvm::dyn_cast<mtf::LoopOp>(arg.getOwner()->getParentOp());
      if (!loop || arg.getArgNumber() < loop.getCarried().size())
        return true;
      return reaches(loop->getOperand(arg.getArgNumber()));
    }
    Operation *def = value.getDefiningOp();
    if (auto param = llvm::dyn_cast<mtf::ParamOp>(def))
      return !param.getSlot();
    if (def->hasTrait<mtf::StopsGradient>())
      return false;
    return llvm::any_of(def->getOperands(),
                        [&](Value operand) { return reaches(operand); });
  }

  llvm::DenseMap<Value, bool> memo;
};

/// The scale of `mul` when one operand is a scalar constant: its value as
/// the op computes with it (rounded to a 16-bit constant's type).
std::optional<std::pair<double, Value>> scaleOf(mtf::MulOp mul) {
  for (int side = 0; side < 2; ++side) {
    auto constant = mul->getOperand(side).getDefiningOp<mtf::ConstantOp>();
    mtf::TensorType type =
        constant ? tensorOf(constant.getResult()) : mtf::TensorType();
    if (!type || type.getRank() != 0)
      continue;
    double value = constant.getValue().convertToDouble();
    if (type.getElementType().isBF16())
      value = meshc::half::roundToBf16(static_cast<float>(value));
    else if (type.getElementType().isF16())
      value = meshc::half::roundToF16(static_cast<float>(value));
    return std::make_pair(value, mul->getOperand(1 - side));
  }
  return std::nullopt;
}

/// The dims of `type` by name.
llvm::StringSet<> namesOf(mtf::TensorType type) {
  llvm::StringSet<> names;
  for (const mtf::NamedDim &dim : type.getDims())
    names.insert(dim.name.getValue());
  return names;
}

/// Matches the attention that ends in `softmax`, or fails (changing
/// nothing, saying nothing: an unmatched softmax simply stays).
std::optional<Match> match(mtf::SoftmaxOp softmax, ParamReach &reach) {
  Match m;
  m.softmax = softmax;
  StringRef key = softmax.getDim();
  Type element = tensorOf(softmax.getResult()).getElementType();
  // weights -> context: a two-operand einsum that sums exactly `key`.
  m.context =
      llvm::dyn_cast_or_null<mtf::EinsumOp>(soleUser(softmax.getResult()));
  if (!m.context || m.context.getInputs().size() != 2 ||
      m.context.getInputs()[0] == m.context.getInputs()[1])
    return std::nullopt;
  m.value = m.context.getInputs()[0] == softmax.getResult()
                ? m.context.getInputs()[1]
                : m.context.getInputs()[0];
  mtf::TensorType weights = tensorOf(softmax.getResult());
  mtf::TensorType context = tensorOf(m.context.getResult());
  for (const mtf::NamedDim &dim : llvm::concat<const mtf::NamedDim>(
           weights.getDims(), tensorOf(m.value).getDims()))
    if (!context.hasDim(dim.name.getValue()) && dim.name != key)
      return std::nullopt;
  if (context.hasDim(key))
    return std::nullopt;

  // scores [* c] [+ bias] -> softmax.
  Value chain = softmax.getInput();
  if (auto add = chain.getDefiningOp<mtf::AddOp>()) {
    if (!chain.hasOneUse())
      return std::nullopt;
    for (int side = 0; side < 2 && !m.biased; ++side) {
      Value other = add->getOperand(1 - side);
      Operation *def = add->getOperand(side).getDefiningOp();
      if (def && llvm::isa<mtf::EinsumOp, mtf::MulOp>(def) &&
          add->getOperand(side) != other && !reach.reaches(other)) {
        m.biased = add;
        m.bias = other;
        chain = add->getOperand(side);
      }
    }
    if (!m.biased)
      return std::nullopt;
  }
  double scale = 1.0;
  if (auto mul = chain.getDefiningOp<mtf::MulOp>()) {
    std::optional<std::pair<double, Value>> found = scaleOf(mul);
    if (!chain.hasOneUse() || !found)
      return std::nullopt;
    m.scaled = mul;
    m.factor = mul->getOperand(0) == found->second
                   ? mul->getOperand(1).getDefiningOp<mtf::ConstantOp>()
                   : mul->getOperand(0).getDefiningOp<mtf::ConstantOp>();
    scale = found->first;
    chain = found->second;
  }
  m.scores = chain.getDefiningOp<mtf::EinsumOp>();
  if (!m.scores || !chain.hasOneUse() || m.scores.getInputs().size() != 2)
    return std::nullopt;
  // Every op of the chain has the scores' dims (in any order: a bias on
  // the left of the add puts its dims first) and element type.
  auto likeWeights = [&](Value value) {
    return mtf::sameDimsAnyOrder(TypeRange{value.getType()},
                                 TypeRange{Type(weights)});
  };
  if (!likeWeights(m.scores.getResult()) || !likeWeights(softmax.getInput()) ||
      (m.scaled && !likeWeights(m.scaled.getResult())))
    return std::nullopt;

  // q . k: the operand with `key` is the key; the dims both have and the
  // scores drop are the heads; nothing else is summed.
  Value a = m.scores.getInputs()[0], b = m.scores.getInputs()[1];
  if (tensorOf(a).hasDim(key) == tensorOf(b).hasDim(key))
    return std::nullopt;
  m.query = tensorOf(a).hasDim(key) ? b : a;
  m.key = tensorOf(a).hasDim(key) ? a : b;
  llvm::StringSet<> keyNames = namesOf(tensorOf(m.key));
  for (const mtf::NamedDim &dim : tensorOf(m.query).getDims()) {
    bool inKey = keyNames.contains(dim.name.getValue());
    if (weights.hasDim(dim.name.getValue()))
      continue;
    if (!inKey)
      return std::nullopt;
    m.heads.push_back(dim.name.getValue());
  }
  for (const mtf::NamedDim &dim : tensorOf(m.key).getDims())
    if (!weights.hasDim(dim.name.getValue()) &&
        !llvm::is_contained(m.heads, dim.name.getValue()))
      return std::nullopt;

  for (Value value : {m.query, m.key, m.value, m.context.getResult()})
    if (tensorOf(value).getElementType() != element)
      return std::nullopt;
  if (m.bias && !llvm::isa<FloatType>(tensorOf(m.bias).getElementType()))
    return std::nullopt;

  // The roles must fit mtf.attention (checked quietly: no match, no error).
  {
    ScopedDiagnosticHandler quiet(softmax->getContext(),
                                  [](Diagnostic &) { return success(); });
    if (failed(mtf::attentionRoles(softmax, m.query.getType(), m.key.getType(),
                                   m.value.getType(), key, m.heads)))
      return std::nullopt;
  }
  // The scores have the group, query and key dims: q's and k's dims
  // without the heads.
  size_t expected = tensorOf(m.query).getRank() + tensorOf(m.key).getRank() -
                    2 * m.heads.size() -
                    (tensorOf(m.key).getRank() - 1 - m.heads.size());
  if (weights.getRank() != static_cast<int64_t>(expected))
    return std::nullopt;
  m.scale = scale;
  return m;
}

struct MtfFuseAttentionPass
    : public meshc::impl::MtfFuseAttentionBase<MtfFuseAttentionPass> {
  using MtfFuseAttentionBase::MtfFuseAttentionBase;

  void runOnOperation() override {
    ParamReach reach;
    SmallVector<mtf::SoftmaxOp> softmaxes;
    getOperation().walk([&](mtf::SoftmaxOp op) { softmaxes.push_back(op); });
    for (mtf::SoftmaxOp softmax : softmaxes) {
      std::optional<Match> m = match(softmax, reach);
      if (!m)
        continue;
      fuse(*m);
      // Erased values' entries must not answer for new ones.
      reach = ParamReach();
    }
  }

  static void fuse(Match &m) {
    OpBuilder builder(m.context);
    mtf::EinsumOp context = m.context;
    auto fused = mtf::AttentionOp::create(
        builder, context.getLoc(), context.getResult().getType(),
        mtf::attentionStatsType(m.query.getType(), m.heads), m.query, m.key,
        m.value, m.bias, builder.getStringAttr(m.softmax.getDim()),
        builder.getStrArrayAttr(m.heads), builder.getF64FloatAttr(m.scale));
    // The context's tags (repeat instance, checkpoint) carry over.
    for (NamedAttribute attr : context->getDiscardableAttrs())
      fused->setAttr(attr.getName(), attr.getValue());
    context.getResult().replaceAllUsesWith(fused.getResult());
    context->erase();
    m.softmax->erase();
    if (m.biased)
      m.biased->erase();
    if (m.scaled)
      m.scaled->erase();
    m.scores->erase();
    if (m.factor && m.factor->use_empty())
      m.factor->erase();
  }
};

} // namespace
