//===- PartitionAttention.cpp - fused attention on per-device blocks ------===//
//
// mtf.attention and mtf.attention_grad (PartitionRule::attention): the key
// and head dims are whole on every device (their splits are gathered: the
// keys and values of a split key dim are all-gathered, as context
// parallelism by all-gathering keys and values does), the group dims
// (batch, heads) and the query dims keep the query's split, and the value
// dims the value's (whole in the gradient). The forward op is then local.
// Its gradient sums over the query positions for the key and value
// gradients: where the query dims are split, those are partial sums, added
// up over the query dims' axes when something reads them (an all-reduce,
// or a reduce-scatter into a sharded optimizer's layout).
//
//===----------------------------------------------------------------------===//

#include "lowering/Partitioner.h"

#include "compiler/passes/LayoutBridge.h"

#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <set>

using namespace mlir;

namespace meshc {

LogicalResult Partitioner::partitionAttention(Operation &op) {
  auto forward = llvm::dyn_cast<mtf::AttentionOp>(op);
  auto backward = llvm::dyn_cast<mtf::AttentionGradOp>(op);
  if (!forward && !backward)
    return op.emitOpError() << "has the attention partitioning rule but is "
                               "not mtf.attention or mtf.attention_grad";
  Value query = op.getOperand(0), value = op.getOperand(2);
  FailureOr<mtf::AttentionRoles> roles = mtf::attentionRolesOf(&op);
  if (failed(roles))
    return failure();
  StringRef keyDim = roles->key.name.getValue();
  SmallVector<StringRef> heads;
  for (const mtf::NamedDim &head : roles->head)
    heads.push_back(head.name.getValue());

  auto typeOf = [](Value v) {
    return llvm::cast<mtf::TensorType>(v.getType());
  };
  auto currentAxes = [&](Value v) {
    return axesByName(typeOf(v), layouts[locals.lookup(v).second]);
  };
  // The group and query dims as the query has them; the key and head dims
  // whole; the value dims as the value has them (forward), on axes the
  // others leave free and under names that are not also head dims.
  AxisMap target;
  AxisMap fromQuery = currentAxes(query);
  std::set<size_t> used;
  std::vector<size_t> queryAxes;
  for (const mtf::NamedDim &dim :
       llvm::concat<const mtf::NamedDim>(roles->group, roles->query)) {
    std::vector<size_t> axes = fromQuery[dim.name.getValue().str()];
    target[dim.name.getValue().str()] = axes;
    used.insert(axes.begin(), axes.end());
  }
  for (const mtf::NamedDim &dim : roles->query)
    for (size_t axis : fromQuery[dim.name.getValue().str()])
      queryAxes.push_back(axis);
  target[keyDim.str()] = {};
  for (StringRef head : heads)
    target[head.str()] = {};
  AxisMap fromValue = currentAxes(value);
  for (const mtf::NamedDim &dim : roles->value) {
    std::string name = dim.name.getValue().str();
    if (llvm::is_contained(heads, dim.name.getValue()) || backward) {
      target[name] = {};
      continue;
    }
    std::vector<size_t> axes = fromValue[name];
    if (llvm::any_of(axes, [&](size_t a) { return used.count(a) != 0; }))
      axes.clear();
    target[name] = axes;
    used.insert(axes.begin(), axes.end());
  }

  IRMapping mapping;
  for (Value operand : op.getOperands())
    mapping.map(operand,
                operandAs(operand, layoutFor(typeOf(operand), target), &op));
  Operation *clone = builder.clone(op, mapping);
  // The key and value gradients sum over the query positions: where those
  // are split, each device holds the sums over its block.
  std::sort(queryAxes.begin(), queryAxes.end());
  std::string positions;
  for (auto [i, dim] : llvm::enumerate(roles->query))
    positions += (i ? ", '" : "'") + dim.name.getValue().str() + "'";
  // Every result cuts a dim name alike, so one mtf.blocks (by name, from
  // all the results' dims) serves them all.
  SmallVector<mtf::NamedDim> allDims;
  for (Value global : op.getResults())
    for (const mtf::NamedDim &dim : typeOf(global).getDims())
      if (llvm::none_of(allDims, [&](const mtf::NamedDim &d) {
            return d.name == dim.name;
          }))
        allDims.push_back(dim);
  auto allType = mtf::TensorType::get(op.getContext(), allDims,
                                      typeOf(query).getElementType());
  // Each result's local type, and its layout where a reader (an output)
  // looks for it: mtf.layouts (the global op's held the rules' layouts).
  SmallVector<Attribute> resultLayouts;
  for (auto [global, local] : llvm::zip(op.getResults(), clone->getResults())) {
    Layout layout = layoutFor(typeOf(global), target);
    local.setType(localType(typeOf(global), layout));
    resultLayouts.push_back(toLayoutAttr(typeOf(global), layout, mesh));
  }
  clone->setAttr(mtf::MtfDialect::kLayoutsAttrName,
                 ArrayAttr::get(op.getContext(), resultLayouts));
  track(clone->getResult(0), allType, layoutFor(allType, target));
  for (auto [global, local] : llvm::zip(op.getResults(), clone->getResults())) {
    mtf::TensorType type = typeOf(global);
    Layout layout = layoutFor(type, target);
    bool partial =
        backward && !queryAxes.empty() &&
        (global == backward.getKeyGrad() || global == backward.getValueGrad());
    define(global, local, layout, partial);
    if (partial)
      pending[global] = {
          queryAxes,
          "the attention gradient of the " +
              std::string(global == backward.getKeyGrad() ? "keys" : "values") +
              " sums over the query positions " + positions +
              ", split across devices",
          op.getLoc()};
  }
  return success();
}

} // namespace meshc
