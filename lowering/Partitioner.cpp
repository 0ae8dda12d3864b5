//===- Partitioner.cpp - SPMD partitioning of one program -----------------===//
//
// Per-op SPMD rules. An op is rebuilt on local blocks after its operands are
// resharded to the layouts it needs; contractions over split dimensions add
// the reductions of their partial results.
//
//===----------------------------------------------------------------------===//

#include "lowering/Partitioner.h"

#include "compiler/passes/LayoutBridge.h"
#include "runtime/core/layout/ReshardPlan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"

#include <algorithm>
#include <cstring>
#include <set>

using namespace mlir;
namespace shard = mlir::shard;

namespace meshc {

/// Clones `op` with `mapping`; the clone's layout attribute is dropped (its
/// block may be a partial result or not yet in the final layout): define()
/// sets the layout on the op that produces the final local value.
static Operation *cloneLocal(OpBuilder &builder, Operation &op,
                             IRMapping &mapping) {
  Operation *clone = builder.clone(op, mapping);
  clone->removeAttr(mtf::MtfDialect::kLayoutAttrName);
  return clone;
}

Partitioner::Partitioner(mtf::ProgramOp global, FlatSymbolRefAttr grid)
    : global(global), mesh(toMesh(global.getMeshAttr())),
      weights(axisWeightsOf(global, mesh)), grid(grid), builder(global) {}

std::vector<size_t> dataParallelAxes(mtf::ProgramOp program,
                                     const layout::Mesh &mesh) {
  std::set<size_t> axes;
  for (auto input : program.getBodyBlock().getOps<mtf::InputOp>()) {
    auto type = llvm::cast<mtf::TensorType>(input.getType());
    auto attr =
        input->getAttrOfType<mtf::LayoutAttr>(mtf::MtfDialect::kLayoutAttrName);
    if (!attr || type.getRank() == 0)
      continue;
    for (StringAttr axis : attr.getAxesFor(type.getDims()[0].name.getValue()))
      if (std::optional<size_t> index = mesh.axisIndex(axis.getValue().str()))
        axes.insert(*index);
  }
  return std::vector<size_t>(axes.begin(), axes.end());
}

void Partitioner::PhaseListener::notifyOperationInserted(
    Operation *op, OpBuilder::InsertPoint) {
  if (phase && !op->hasAttr(mtf::MtfDialect::kPhaseAttrName))
    op->setAttr(mtf::MtfDialect::kPhaseAttrName, phase);
}

mtf::ProgramOp Partitioner::run() {
  // Layouts are checked again with the program's weights, so that IR whose
  // mtf.axis_weights do not allow a split is refused, not replicated.
  for (Operation &op : global.getBodyBlock()) {
    auto attr =
        op.getAttrOfType<mtf::LayoutAttr>(mtf::MtfDialect::kLayoutAttrName);
    auto type = op.getNumResults() == 1
                    ? llvm::dyn_cast<mtf::TensorType>(op.getResult(0).getType())
                    : mtf::TensorType();
    if (!attr || !type)
      continue;
    layout::Result<Layout> checked =
        fromLayoutAttr(tensorName(&op), type, attr, mesh, &weights);
    if (!checked.ok()) {
      emitLayoutError(op.getLoc(), checked.error());
      return {};
    }
  }
  auto local =
      mtf::ProgramOp::create(builder, global.getLoc(), global.getSymName());
  local.setMeshAttr(global.getMeshAttr());
  local.setLocal(true);
  setAxisWeights(local, weights, mesh);
  if (Attribute training = global->getAttr(mtf::MtfDialect::kTrainingAttrName))
    local->setAttr(mtf::MtfDialect::kTrainingAttrName, training);
  // The params' dims as the model declares them (the .mprog's model_dims).
  if (Attribute model = global->getAttr(mtf::MtfDialect::kModelDimsAttrName))
    local->setAttr(mtf::MtfDialect::kModelDimsAttrName, model);
  dataAxes = dataParallelAxes(global, mesh);
  for (auto param : global.getBodyBlock().getOps<mtf::ParamOp>())
    params[param.getName()] = param.getResult();
  builder.setInsertionPointToStart(&local.getBodyBlock());
  builder.setListener(&phaseListener);
  for (Operation &op : global.getBodyBlock()) {
    phaseListener.phase =
        op.getAttrOfType<StringAttr>(mtf::MtfDialect::kPhaseAttrName);
    LogicalResult done = partition(op);
    if (succeeded(done) && refusal) {
      emitLayoutError(refusal->first, refusal->second);
      done = failure();
    }
    if (failed(done)) {
      local.erase();
      return {};
    }
  }
  builder.setListener(nullptr);
  return local;
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

LogicalResult Partitioner::partition(Operation &op) {
  auto ruled = llvm::dyn_cast<mtf::PartitionRuleOpInterface>(op);
  if (!ruled)
    return op.emitOpError()
           << "has no partitioning rule (mtf-partition partitions only ops "
              "that implement the mtf PartitionRuleOpInterface)";
  if (auto window = llvm::dyn_cast<mtf::WindowOp>(op))
    if (partitionShift(window))
      return success();
  mtf::PartitionRule rule = ruled.getPartitionRule();
  switch (rule.kind) {
  case mtf::PartitionKind::Dims:
    if (rule.reduces())
      return partitionContraction(op, rule);
    return partitionDims(op, rule);
  case mtf::PartitionKind::Forward: {
    Layout layout = resultLayout(&op);
    define(op.getResult(0), operandAs(op.getOperand(0), layout, &op), layout);
    return success();
  }
  case mtf::PartitionKind::Rename:
    return partitionRename(op, rule);
  case mtf::PartitionKind::Reshape:
    return partitionReshape(op);
  case mtf::PartitionKind::Output: {
    Value value = op.getOperand(0);
    materialize(value);
    IRMapping mapping;
    mapping.map(value, locals.lookup(value).first);
    builder.clone(op, mapping);
    return success();
  }
  case mtf::PartitionKind::Assign:
    return partitionAssign(op, rule);
  case mtf::PartitionKind::LocalGrad:
    return partitionLocalGrad(op);
  case mtf::PartitionKind::Loop:
    return partitionLoop(llvm::cast<mtf::LoopOp>(op));
  case mtf::PartitionKind::Attention:
    return partitionAttention(op);
  case mtf::PartitionKind::Refuse:
    return op.emitOpError() << rule.refusal;
  }
  return op.emitOpError() << "has an unknown partitioning kind";
}

/// Ops without reduced dimensions: every operand takes the result's layout
/// restricted to its own dimensions (a dimension the result splits but the
/// operand lacks is simply repeated along), except that Whole dimensions are
/// whole in operands and in the local result, which is then sliced to the
/// result's layout.
LogicalResult Partitioner::partitionDims(Operation &op,
                                         const mtf::PartitionRule &rule) {
  if (op.getNumResults() != 1 ||
      !llvm::isa<mtf::TensorType>(op.getResult(0).getType()))
    return op.emitOpError()
           << "has a dimension rule but not one !mtf.tensor result";
  auto resultType = llvm::cast<mtf::TensorType>(op.getResult(0).getType());
  for (Value operand : op.getOperands())
    for (const mtf::NamedDim &dim :
         llvm::cast<mtf::TensorType>(operand.getType()).getDims())
      if (!resultType.hasDim(dim.name.getValue()) &&
          rule.roleOf(dim.name.getValue()) == mtf::DimRole::Parallel)
        return op.emitOpError()
               << "partitioning rule leaves operand dimension '"
               << dim.name.getValue()
               << "' parallel, but the result lacks it (it must be summed, "
                  "maxed or whole)";
  Layout layout = resultLayout(&op);
  AxisMap target = axesByName(resultType, layout);
  if ((rule.linear || isWidening(op)) &&
      succeeded(addPartialSums(op, layout, target)))
    return success();
  std::string gathered;
  for (const auto &[dim, role] : rule.roles) {
    auto it = target.find(dim);
    if (role != mtf::DimRole::Whole || it == target.end() || it->second.empty())
      continue;
    gathered += (gathered.empty() ? "'" : ", '") + dim + "'";
    it->second.clear();
  }
  IRMapping mapping;
  for (Value operand : op.getOperands()) {
    auto type = llvm::cast<mtf::TensorType>(operand.getType());
    mapping.map(operand, operandAs(operand, layoutFor(type, target), &op));
  }
  Layout compute = layoutFor(resultType, target);
  Operation *clone = cloneLocal(builder, op, mapping);
  Value result = setLocalType(clone->getResult(0), resultType, compute);
  if (!gathered.empty())
    result = reshard(result, resultType, compute, layout, op.getLoc(),
                     "the " + op.getName().stripDialect().str() +
                         " result's layout splits " + gathered);
  define(op.getResult(0), result, layout);
  return success();
}

/// Whether `op` widens a 16-bit float to f32 (exactly, element by element).
bool Partitioner::isWidening(Operation &op) {
  auto cast = llvm::dyn_cast<mtf::CastOp>(op);
  if (!cast)
    return false;
  Type from =
      llvm::cast<mtf::TensorType>(cast.getInput().getType()).getElementType();
  Type to = llvm::cast<mtf::TensorType>(cast.getType()).getElementType();
  return to.isF32() && (from.isBF16() || from.isF16());
}

/// Sums are linear: the sum or difference of two partial sums over the same
/// mesh axes is the partial sum of the result, so it is computed locally and
/// reduced once, later (Mesh-TensorFlow's lazy all-reduce). Applies when both
/// operands are pending over the same axes and already in the layout the op
/// needs; fails (changing nothing) otherwise. A widening cast (bf16 to f32)
/// of a partial sum is likewise a partial sum, summed in f32 and then
/// rounded through bf16 (roundTotal), as the program rounds the bf16 sum
/// before widening it: so a bf16 gradient is reduced (and under
/// --shard-optimizer reduce-scattered) in f32, as Megatron reduces its main
/// gradients. Such a sum is not added lazily to another (each is rounded
/// first).
LogicalResult Partitioner::addPartialSums(Operation &op, const Layout &layout,
                                          const AxisMap &target) {
  if (op.getNumOperands() == 1 && isWidening(op)) {
    auto input = pending.find(op.getOperand(0));
    if (input == pending.end())
      return failure();
    auto [local, index] = locals.lookup(op.getOperand(0));
    auto type = llvm::cast<mtf::TensorType>(op.getOperand(0).getType());
    if (layouts[index] != layoutFor(type, target))
      return failure();
    IRMapping mapping;
    mapping.map(op.getOperand(0), local);
    auto resultType = llvm::cast<mtf::TensorType>(op.getResult(0).getType());
    Operation *clone = cloneLocal(builder, op, mapping);
    setLocalType(clone->getResult(0), resultType, layout);
    define(op.getResult(0), clone->getResult(0), layout, /*partial=*/true);
    Pending sums = input->second;
    sums.roundThrough = type.getElementType();
    pending[op.getResult(0)] = sums;
    return success();
  }
  if (op.getNumOperands() != 2)
    return failure();
  auto lhs = pending.find(op.getOperand(0));
  auto rhs = pending.find(op.getOperand(1));
  if (lhs == pending.end() || rhs == pending.end() ||
      lhs->second.axes != rhs->second.axes || lhs->second.roundThrough ||
      rhs->second.roundThrough)
    return failure();
  IRMapping mapping;
  for (Value operand : op.getOperands()) {
    auto [local, index] = locals.lookup(operand);
    auto type = llvm::cast<mtf::TensorType>(operand.getType());
    if (layouts[index] != layoutFor(type, target))
      return failure();
    mapping.map(operand, local);
  }
  auto resultType = llvm::cast<mtf::TensorType>(op.getResult(0).getType());
  Operation *clone = cloneLocal(builder, op, mapping);
  setLocalType(clone->getResult(0), resultType, layout);
  define(op.getResult(0), clone->getResult(0), layout, /*partial=*/true);
  std::string why = lhs->second.why == rhs->second.why
                        ? lhs->second.why
                        : lhs->second.why + "; " + rhs->second.why;
  if (StringRef(why).ends_with(" (partial sums added first)"))
    why = why.substr(0, why.size() - strlen(" (partial sums added first)"));
  pending[op.getResult(0)] = {lhs->second.axes,
                              why + " (partial sums added first)", op.getLoc()};
  return success();
}

void Partitioner::materialize(Value value) {
  auto it = pending.find(value);
  if (it == pending.end())
    return;
  Pending sums = it->second;
  pending.erase(it);
  auto [local, index] = locals.lookup(value);
  Layout layout = layouts[index];
  OpBuilder::InsertionGuard guard(builder);
  // The reduction belongs to the phase of the op that made the partial sums.
  StringAttr phase = phaseListener.phase;
  phaseListener.phase = local.getDefiningOp()
                            ? local.getDefiningOp()->getAttrOfType<StringAttr>(
                                  mtf::MtfDialect::kPhaseAttrName)
                            : StringAttr();
  llvm::scope_exit restore([&] { phaseListener.phase = phase; });
  // Reduce right after the partial sums are computed: the total is then
  // ready for every later use.
  if (Operation *def = local.getDefiningOp())
    builder.setInsertionPointAfter(def);
  auto type = llvm::cast<mtf::TensorType>(value.getType());
  Value total = reduceOver(local, type, layout, sums.axes, std::nullopt, false,
                           Location(sums.loc), sums.why);
  define(value, roundTotal(total, type, layout, sums, Location(sums.loc)),
         layout);
}

//===----------------------------------------------------------------------===//
// Contractions: einsum and reductions
//===----------------------------------------------------------------------===//

/// The dimensions the operands have and the result drops are contracted. A
/// contracted dimension keeps the split it already has (if its axes are
/// free), so each device computes a partial result over its block; the
/// partial results are then summed over those axes: reduce-scatter along a
/// result dimension the layout splits over them (they must be the trailing
/// axes of its split), all-reduce otherwise.
LogicalResult
Partitioner::partitionContraction(Operation &op,
                                  const mtf::PartitionRule &rule) {
  auto resultType = llvm::cast<mtf::TensorType>(op.getResult(0).getType());
  Layout outLayout = resultLayout(&op);
  AxisMap outAxes = axesByName(resultType, outLayout);
  bool isMax = false;
  for (const auto &[dim, role] : rule.roles) {
    if (role == mtf::DimRole::Whole || role == mtf::DimRole::Parallel ||
        resultType.hasDim(dim))
      return op.emitOpError()
             << "partitioning rule makes dimension '" << dim << "' "
             << mtf::dimRoleName(role)
             << " beside reduced dimensions; a reduction's rule may list only "
                "summed or maxed dimensions the result lacks";
    isMax |= role == mtf::DimRole::Maxed;
  }
  if (isMax && llvm::any_of(rule.roles, [](const auto &entry) {
        return entry.second == mtf::DimRole::Summed;
      }))
    return op.emitOpError()
           << "partitioning rule both sums and maxes dimensions";
  bool isMean = rule.mean;

  // Contracted dimensions in order of first appearance, with the axes they
  // keep.
  std::vector<std::string> contracted;
  AxisMap keep;
  std::map<size_t, std::string> claimedBy;
  for (Value operand : op.getOperands()) {
    auto type = llvm::cast<mtf::TensorType>(operand.getType());
    AxisMap current = axesByName(type, layouts[locals.lookup(operand).second]);
    for (const mtf::NamedDim &dim : type.getDims()) {
      std::string name = dim.name.getValue().str();
      if (rule.roleOf(name) == mtf::DimRole::Parallel || keep.count(name))
        continue;
      contracted.push_back(name);
      std::vector<size_t> axes = current[name];
      bool free = llvm::none_of(
          axes, [&](size_t a) { return claimedBy.count(a) != 0; });
      if (!free)
        axes.clear();
      for (size_t a : axes)
        claimedBy[a] = name;
      keep[name] = axes;
    }
  }
  // By value: `name` may be claimedBy's own entry, which this erases.
  auto release = [&](std::string name) {
    for (size_t a : keep[name])
      claimedBy.erase(a);
    keep[name].clear();
  };
  // A max cannot be reduce-scattered: release axes a result dim needs.
  // Otherwise the axes a result dim shares with contracted ones must be its
  // trailing axes, in order, so that a reduce-scatter appends them.
  std::map<std::string, std::vector<size_t>> scatterAxes;
  for (bool changed = true; changed;) {
    changed = false;
    scatterAxes.clear();
    for (auto &[dim, axes] : outAxes) {
      std::vector<size_t> shared;
      for (size_t a : axes)
        if (claimedBy.count(a))
          shared.push_back(a);
      if (shared.empty())
        continue;
      bool suffix = !isMax && std::equal(shared.begin(), shared.end(),
                                         axes.end() - shared.size());
      if (!suffix) {
        // The dims that claimed the shared axes (one may claim several).
        std::set<std::string> owners;
        for (size_t a : shared)
          owners.insert(claimedBy.at(a));
        for (const std::string &owner : owners)
          release(owner);
        changed = true;
        break;
      }
      scatterAxes[dim] = shared;
    }
  }

  // Operands: result dims split as the result minus the scattered axes,
  // contracted dims as kept.
  AxisMap localAxes = outAxes;
  for (auto &[dim, axes] : scatterAxes)
    localAxes[dim].resize(localAxes[dim].size() - axes.size());
  AxisMap target = localAxes;
  for (auto &[dim, axes] : keep)
    target[dim] = axes;
  IRMapping mapping;
  for (Value operand : op.getOperands()) {
    auto type = llvm::cast<mtf::TensorType>(operand.getType());
    mapping.map(operand, operandAs(operand, layoutFor(type, target), &op));
  }

  Layout partialLayout = layoutFor(resultType, localAxes);
  mtf::TensorType partialType = localType(resultType, partialLayout);
  bool reduced = !claimedBy.empty();
  Value local;
  if (isMean && reduced) {
    local = track(mtf::ReduceSumOp::create(builder, op.getLoc(), partialType,
                                           mapping.lookup(op.getOperand(0))),
                  resultType, partialLayout);
  } else {
    Operation *clone = cloneLocal(builder, op, mapping);
    local = setLocalType(clone->getResult(0), resultType, partialLayout);
  }

  // Sum the partial results.
  Layout current = partialLayout;
  std::vector<size_t> remaining;
  for (auto &[axis, dim] : claimedBy)
    remaining.push_back(axis);
  for (auto [index, dim] : llvm::enumerate(resultType.getDims())) {
    auto it = scatterAxes.find(dim.name.getValue().str());
    if (it == scatterAxes.end())
      continue;
    std::string why = "the sum over '" + claimedBy[it->second.front()] +
                      "' (split on its axes) ends up split along '" +
                      it->first + "'";
    local = reduceOver(local, resultType, current, it->second, index, false,
                       op.getLoc(), why);
    localAxes[it->first] = outAxes[it->first];
    current = layoutFor(resultType, localAxes);
    for (size_t a : it->second)
      llvm::erase(remaining, a);
  }
  if (!remaining.empty()) {
    std::set<std::string> dims;
    for (size_t a : remaining)
      dims.insert(claimedBy[a]);
    std::string why = std::string(isMax ? "maximum" : "sum") + " over ";
    for (auto [i, dim] : llvm::enumerate(dims))
      why += (i ? ", '" : "'") + dim + "'";
    why += " split across devices";
    if (!isMax && !isMean) {
      // Lazy all-reduce: keep the partial sums until something needs the
      // total (see materialize), so sums added first reduce once.
      define(op.getResult(0), local, current, /*partial=*/true);
      std::sort(remaining.begin(), remaining.end());
      pending[op.getResult(0)] = {remaining, why, op.getLoc()};
      return success();
    }
    local = reduceOver(local, resultType, current, remaining, std::nullopt,
                       isMax, op.getLoc(), why);
  }
  if (isMean && reduced) {
    int64_t count = 1;
    auto inputType = llvm::cast<mtf::TensorType>(op.getOperand(0).getType());
    for (const mtf::NamedDim &dim : inputType.getDims())
      if (!resultType.hasDim(dim.name.getValue()))
        count *= dim.size;
    local = scaleLocal(local, resultType, current,
                       1.0 / static_cast<double>(count), op.getLoc());
  }
  define(op.getResult(0), local, current);
  return success();
}

//===----------------------------------------------------------------------===//
// Structural kinds: rename, assign, local gradients
//===----------------------------------------------------------------------===//

/// Renaming keeps the data where it is; the renamed dimension then moves to
/// the layout the rules give its new name.
LogicalResult Partitioner::partitionRename(Operation &op,
                                           const mtf::PartitionRule &rule) {
  Value operand = op.getOperand(0);
  auto inputType = llvm::cast<mtf::TensorType>(operand.getType());
  auto type = llvm::cast<mtf::TensorType>(op.getResult(0).getType());
  Layout outLayout = resultLayout(&op);
  // A pending sum that the new name splits over its axes is
  // reduce-scattered into that split (a pipeline's kept result, summed over
  // the stages into each device's share of the examples), not all-reduced
  // and then sliced.
  AxisMap wanted = axesByName(type, outLayout);
  wanted[rule.from] = wanted[rule.to];
  if (rule.from != rule.to)
    wanted.erase(rule.to);
  if (std::optional<Value> shard =
          scatterPending(operand, layoutFor(inputType, wanted), &op,
                         "into the split of '" + rule.to + "'")) {
    IRMapping mapping;
    mapping.map(operand, *shard);
    Operation *clone = cloneLocal(builder, op, mapping);
    setLocalType(clone->getResult(0), type, outLayout);
    define(op.getResult(0), clone->getResult(0), outLayout);
    return success();
  }
  materialize(operand);
  auto [input, index] = locals.lookup(operand);
  AxisMap axes = axesByName(inputType, layouts[index]);
  axes[rule.to] = axes[rule.from];
  if (rule.from != rule.to)
    axes.erase(rule.from);
  Layout renamed = layoutFor(type, axes);
  IRMapping mapping;
  mapping.map(operand, input);
  Operation *clone = cloneLocal(builder, op, mapping);
  setLocalType(clone->getResult(0), type, renamed);
  Value result =
      reshard(clone->getResult(0), type, renamed, outLayout, op.getLoc(),
              "'" + rule.to + "' is laid out unlike '" + rule.from + "'");
  define(op.getResult(0), result, outLayout);
  return success();
}

/// split_dim and merge_dims keep the data where it is. A split's outer
/// dimension takes the split dimension's axes where every block is whole
/// outer rows (equal blocks, each a multiple of the inner size); otherwise
/// the dimension is gathered over its last axes first, as few as leave
/// whole rows. A merge gathers a split inner dimension
/// first, and the merged dimension takes the outer one's axes. The result
/// then moves to the layout the rules give it.
LogicalResult Partitioner::partitionReshape(Operation &op) {
  if (auto split = llvm::dyn_cast<mtf::SplitDimOp>(op))
    if (std::optional<ArrayRef<int64_t>> blocks = split.getBlocks())
      return partitionBlocks(op, *blocks);
  if (auto merge = llvm::dyn_cast<mtf::MergeDimsOp>(op))
    if (std::optional<ArrayRef<int64_t>> blocks = merge.getBlocks())
      return partitionBlocks(op, *blocks);
  Value operand = op.getOperand(0);
  auto inputType = llvm::cast<mtf::TensorType>(operand.getType());
  auto type = llvm::cast<mtf::TensorType>(op.getResult(0).getType());
  materialize(operand);
  Layout current = layouts[locals.lookup(operand).second];
  AxisMap axes = axesByName(inputType, current);
  if (auto split = llvm::dyn_cast<mtf::SplitDimOp>(op)) {
    std::string dim = split.getDim().str();
    unsigned index = split.getDimIndex();
    // The fewest axes gathered (the last first) that leave whole rows.
    std::vector<size_t> &dimAxes = axes[dim];
    while (!dimAxes.empty()) {
      std::vector<int64_t> blocks =
          layoutFor(inputType, axes)
              .blockSizes(index, inputType.getDims()[index].size, mesh,
                          weights);
      if (llvm::all_equal(blocks) &&
          blocks.front() % split.getInner().size == 0)
        break;
      dimAxes.pop_back();
    }
    AxisMap viewed = axes;
    viewed.erase(dim);
    viewed[split.getOuter().name.getValue().str()] = dimAxes;
    viewed[split.getInner().name.getValue().str()] = {};
    return defineView(op, axes, viewed,
                      "the split of '" + dim + "' into '" +
                          split.getOuter().name.getValue().str() + "' and '" +
                          split.getInner().name.getValue().str() +
                          "' is laid out unlike the rules for them");
  }
  auto merge = llvm::cast<mtf::MergeDimsOp>(op);
  unsigned index = merge.getOuterIndex();
  std::string outer = merge.getOuter().str();
  std::string inner = inputType.getDims()[index + 1].name.getValue().str();
  std::string merged = type.getDims()[index].name.getValue().str();
  axes[inner].clear();
  AxisMap viewed = axes;
  std::vector<size_t> outerAxes = viewed[outer];
  viewed.erase(outer);
  viewed.erase(inner);
  viewed[merged] = outerAxes;
  return defineView(op, axes, viewed,
                    "the merge of '" + outer + "' and '" + inner +
                        "' is laid out unlike '" + merged + "'");
}

/// The whole dim (a split's operand's, a merge's result's) is cut over mesh
/// axes into exactly `blocks`, one outer index per device along them: the
/// axes the rules give the result's outer (split) or whole (merge) dim, else
/// those the operand's whole (split) or outer (merge) dim has; the inner dim
/// is whole. A split's local op is a window of the device's block padded
/// with zeros to the inner size, then a view adding the outer dim (of 1); a
/// merge's the view dropping it, then a window back to the device's block.
/// The other dims keep their layouts, less those axes. Refused where
/// neither side is laid out so.
LogicalResult Partitioner::partitionBlocks(Operation &op,
                                           ArrayRef<int64_t> blocks) {
  Value operand = op.getOperand(0);
  auto inputType = llvm::cast<mtf::TensorType>(operand.getType());
  auto type = llvm::cast<mtf::TensorType>(op.getResult(0).getType());
  bool split = llvm::isa<mtf::SplitDimOp>(op);
  mtf::TensorType cutType = split ? type : inputType;
  mtf::TensorType wholeType = split ? inputType : type;
  unsigned index = split ? llvm::cast<mtf::SplitDimOp>(op).getDimIndex()
                         : llvm::cast<mtf::MergeDimsOp>(op).getOuterIndex();
  mtf::NamedDim outer = cutType.getDims()[index];
  mtf::NamedDim inner = cutType.getDims()[index + 1];
  mtf::NamedDim whole = wholeType.getDims()[index];
  std::string outerName = outer.name.getValue().str();
  std::string innerName = inner.name.getValue().str();
  std::string wholeName = whole.name.getValue().str();
  Layout ruled = resultLayout(&op);
  materialize(operand);
  Layout current = layouts[locals.lookup(operand).second];

  // The layouts of both sides with the whole dim, and the outer one, over
  // `axes`, the other dims as the operand has them less those axes.
  AxisMap wholeAxes, cutAxes;
  Layout wholeLayout = current, cutLayout = current;
  std::vector<int64_t> cut;
  auto cutOver = [&](const std::vector<size_t> &axes) {
    AxisMap operandAxes = axesByName(inputType, current);
    for (auto &[name, dimAxes] : operandAxes)
      llvm::erase_if(
          dimAxes, [&](size_t axis) { return llvm::is_contained(axes, axis); });
    wholeAxes = operandAxes;
    wholeAxes.erase(outerName);
    wholeAxes.erase(innerName);
    wholeAxes[wholeName] = axes;
    cutAxes = operandAxes;
    cutAxes.erase(wholeName);
    cutAxes[outerName] = axes;
    cutAxes[innerName] = {};
    wholeLayout = layoutFor(wholeType, wholeAxes);
    cutLayout = layoutFor(cutType, cutAxes);
    cut = wholeLayout.blockSizes(index, whole.size, mesh, weights);
    int64_t devices = 1;
    for (size_t axis : axes)
      devices *= mesh.axisSize(axis);
    return devices == outer.size &&
           cut == std::vector<int64_t>(blocks.begin(), blocks.end());
  };
  // The axes the rules give the result's outer (split) or whole (merge)
  // dim, else those the operand's whole (split) or outer (merge) dim has.
  std::vector<size_t> ruledAxes = ruled.axesOf(index);
  std::vector<size_t> currentAxes = current.axesOf(index);
  if (!cutOver(ruledAxes) && !cutOver(currentAxes)) {
    std::string want;
    llvm::raw_string_ostream wantOs(want);
    llvm::interleaveComma(blocks, wantOs);
    return op.emitOpError()
           << "cuts '" << wholeName << "' into the blocks [" << want << "] of '"
           << outerName << "', which needs '" << wholeName << "' or '"
           << outerName
           << "' laid out over mesh axes with one device per block that cut '"
           << wholeName << "' so; the result is laid out "
           << describe(type, ruled) << " and the operand "
           << describe(inputType, current);
  }

  // A name the local tensors do not have, for the padded block.
  std::string padded = innerName + "_block";
  while (inputType.hasDim(padded) || type.hasDim(padded))
    padded += "_";
  StringAttr paddedAttr = builder.getStringAttr(padded);
  SmallVector<mtf::NamedDim> paddedDims(wholeType.getDims());
  paddedDims[index] = {paddedAttr, inner.size};
  auto paddedType =
      mtf::TensorType::get(op.getContext(), paddedDims, type.getElementType());
  AxisMap paddedAxes = wholeAxes;
  paddedAxes.erase(wholeName);
  paddedAxes[padded] = {};
  Layout paddedLayout = layoutFor(paddedType, paddedAxes);
  Location loc = op.getLoc();
  Value result;
  if (split) {
    Value block = operandAs(operand, wholeLayout, &op);
    Value window = setLocalType(
        mtf::WindowOp::create(builder, loc, localType(paddedType, paddedLayout),
                              block, wholeName, padded, 0),
        paddedType, paddedLayout);
    result = setLocalType(mtf::SplitDimOp::create(builder, loc,
                                                  localType(type, cutLayout),
                                                  window, paddedAttr, nullptr),
                          type, cutLayout);
  } else {
    Value block = operandAs(operand, cutLayout, &op);
    Value merged =
        setLocalType(mtf::MergeDimsOp::create(
                         builder, loc, localType(paddedType, paddedLayout),
                         block, outer.name, nullptr),
                     paddedType, paddedLayout);
    result = setLocalType(mtf::WindowOp::create(builder, loc,
                                                localType(type, wholeLayout),
                                                merged, padded, wholeName, 0),
                          type, wholeLayout);
  }
  Layout from = split ? cutLayout : wholeLayout;
  define(op.getResult(0),
         reshard(result, type, from, ruled, loc,
                 split ? "the blocks of '" + wholeName + "' padded to '" +
                             outerName + "' x '" + innerName +
                             "' are laid out unlike the rules for them"
                       : "the blocks of '" + wholeName +
                             "' taken back are laid out unlike '" + wholeName +
                             "'"),
         ruled);
  return success();
}

/// `op` (a view) on its operand laid out as `operandAxes`, its result then
/// laid out as `viewedAxes` on every device, then moved to the layout the
/// rules give it (`why` a reshard is needed).
LogicalResult Partitioner::defineView(Operation &op, const AxisMap &operandAxes,
                                      const AxisMap &viewedAxes,
                                      const std::string &why) {
  Value operand = op.getOperand(0);
  auto inputType = llvm::cast<mtf::TensorType>(operand.getType());
  auto type = llvm::cast<mtf::TensorType>(op.getResult(0).getType());
  IRMapping mapping;
  mapping.map(operand,
              operandAs(operand, layoutFor(inputType, operandAxes), &op));
  Operation *clone = cloneLocal(builder, op, mapping);
  Layout local = layoutFor(type, viewedAxes);
  setLocalType(clone->getResult(0), type, local);
  Layout outLayout = resultLayout(&op);
  define(op.getResult(0),
         reshard(clone->getResult(0), type, local, outLayout, op.getLoc(), why),
         outLayout);
  return success();
}

/// The new value takes its parameter's layout.
LogicalResult Partitioner::partitionAssign(Operation &op,
                                           const mtf::PartitionRule &rule) {
  Value param = params.lookup(rule.param);
  if (!param || !locals.count(param))
    return op.emitOpError() << "assigns '" << rule.param
                            << "', which is not a parameter defined before it";
  Layout target = layouts[locals.lookup(param).second];
  IRMapping mapping;
  Value value = op.getOperand(0);
  mapping.map(value, operandAs(value, target, &op));
  builder.clone(op, mapping);
  return success();
}

/// Whether some input's first (example) dim is cut into unequal blocks.
/// The body's arguments take the layouts their operands have when the loop
/// starts (a partial sum is added up first; a stacked operand's slice drops
/// the loop dim, which is never split), and the body yields each carried
/// value in its argument's layout, so every iteration sees the layouts the
/// first one did. A value yielded for stacking keeps its layout, under the
/// whole loop dim.
LogicalResult Partitioner::partitionLoop(mtf::LoopOp loop) {
  // Under device weights or --uneven, a loop whose values are all cut into
  // equal blocks (a pipeline's ticks, where only the stacked weights
  // outside it are uneven) is partitioned as any; unequal blocks inside are
  // refused.
  auto unequal = [&](Value value, const Layout &layout) {
    auto type = llvm::cast<mtf::TensorType>(value.getType());
    for (auto [d, dim] : llvm::enumerate(type.getDims()))
      if (!llvm::all_equal(layout.blockSizes(d, dim.size, mesh, weights)))
        return std::optional<std::string>(dim.name.getValue().str());
    return std::optional<std::string>();
  };
  auto refuse = [&](Value value, const Layout &layout,
                    const std::string &dimName) {
    return loop.emitOpError()
           << "cannot be partitioned with unequal blocks yet: device weights "
              "or --uneven cut '"
           << dimName << "' of " << nameOf(value) << " ("
           << describe(llvm::cast<mtf::TensorType>(value.getType()), layout)
           << ") unequally, and a loop's body runs one block size on every "
              "device";
  };
  StringRef dim = loop.getDim();
  int64_t count = loop.getCount();
  SmallVector<Value> operands;
  SmallVector<Layout> argLayouts;
  SmallVector<Type> argTypes;
  for (auto [index, operand] : llvm::enumerate(loop.getOperands())) {
    materialize(operand);
    auto [local, layoutIndex] = locals.lookup(operand);
    Layout layout = layouts[layoutIndex];
    if (std::optional<std::string> cut = unequal(operand, layout))
      return refuse(operand, layout, *cut);
    auto type = llvm::cast<mtf::TensorType>(operand.getType());
    Value arg = loop.getBodyBlock().getArgument(index);
    auto argType = llvm::cast<mtf::TensorType>(arg.getType());
    if (argType != type) {
      // A stacked operand: its slice, without the (whole) loop dim.
      if (!layout.axesOf(0).empty())
        return loop.emitOpError()
               << "cannot split its dim '" << dim << "' over the mesh ("
               << describe(type, layout)
               << "): a layer dim is whole until pipeline parallelism";
      std::vector<std::vector<size_t>> splits;
      for (size_t d = 1; d < type.getDims().size(); ++d)
        splits.push_back(layout.axesOf(d));
      layout = Layout::fromAxisIndices(std::move(splits));
    }
    operands.push_back(local);
    argLayouts.push_back(layout);
    argTypes.push_back(localType(argType, layout));
  }
  // The body: its arguments, then its ops, partitioned where they stand.
  auto block = std::make_unique<Block>();
  for (auto [arg, type] :
       llvm::zip(loop.getBodyBlock().getArguments(), argTypes))
    block->addArgument(type, arg.getLoc());
  for (auto [arg, local, layout] : llvm::zip(loop.getBodyBlock().getArguments(),
                                             block->getArguments(), argLayouts))
    define(arg, local, layout);
  OpBuilder::InsertPoint after = builder.saveInsertionPoint();
  builder.setInsertionPointToEnd(block.get());
  for (Operation &op : loop.getBodyBlock().without_terminator()) {
    if (failed(partition(op)))
      return failure();
    for (Value result : op.getResults())
      if (locals.count(result)) {
        Layout layout = layouts[locals.lookup(result).second];
        if (std::optional<std::string> cut = unequal(result, layout))
          return refuse(result, layout, *cut);
      }
  }
  // What the values' layouts do not show: a collective in the body that
  // moves unequal blocks (mtf.blocks on a local op).
  Operation *unequalOp = nullptr;
  block->walk([&](Operation *op) {
    if (!op->hasAttr(mtf::MtfDialect::kBlocksAttrName))
      return WalkResult::advance();
    unequalOp = op;
    return WalkResult::interrupt();
  });
  if (unequalOp)
    return loop.emitOpError()
           << "cannot be partitioned with unequal blocks yet: device weights "
              "or --uneven cut '"
           << tensorName(unequalOp)
           << "' inside it unequally, and a loop's body runs one block size "
              "on every device";
  size_t carried = loop.getCarried().size();
  SmallVector<Value> yielded;
  SmallVector<Type> stackedTypes;
  SmallVector<Layout> stackedLayouts;
  Operation *terminator = loop.getBodyBlock().getTerminator();
  for (auto [index, value] : llvm::enumerate(terminator->getOperands())) {
    if (index < carried) {
      yielded.push_back(operandAs(value, argLayouts[index], terminator));
      continue;
    }
    auto type = llvm::cast<mtf::TensorType>(value.getType());
    // A pending sum stacked for ops after the loop that read it cut further
    // (--shard-optimizer's update of a stacked parameter): reduce-scattered
    // into that cut in each iteration, so the loop stacks shards, not whole
    // gradients.
    if (std::optional<Layout> cut =
            stackedUse(loop.getResult(index), type, dim))
      if (std::optional<Value> shard =
              scatterPending(value, *cut, terminator)) {
        pending.erase(value);
        define(value, *shard, *cut);
      }
    materialize(value);
    auto [local, layoutIndex] = locals.lookup(value);
    Layout layout = layouts[layoutIndex];
    std::vector<std::vector<size_t>> splits{{}};
    for (size_t d = 0; d < type.getDims().size(); ++d)
      splits.push_back(layout.axesOf(d));
    Layout stackedLayout = Layout::fromAxisIndices(std::move(splits));
    yielded.push_back(local);
    stackedLayouts.push_back(stackedLayout);
    stackedTypes.push_back(
        localType(mtf::LoopOp::stackedType(type, dim, count), stackedLayout));
  }
  mtf::YieldOp::create(builder, terminator->getLoc(), yielded);
  builder.restoreInsertionPoint(after);
  SmallVector<Type> finalTypes(argTypes.begin(), argTypes.begin() + carried);
  auto local = mtf::LoopOp::create(
      builder, loop.getLoc(), finalTypes, stackedTypes, dim, count,
      ValueRange(operands).take_front(carried),
      ValueRange(operands).slice(carried, loop.getStacked().size()),
      ValueRange(operands).drop_front(carried + loop.getStacked().size()),
      loop.getReverse());
  local.getBody().push_back(block.release());
  for (auto [index, result] : llvm::enumerate(loop.getResults())) {
    const Layout &layout =
        index < carried ? argLayouts[index] : stackedLayouts[index - carried];
    define(result, local.getResult(index), layout);
  }
  return success();
}

std::optional<Partitioner::Layout>
Partitioner::stackedUse(Value stacked, mtf::TensorType slice, StringRef dim) {
  for (Operation *user : stacked.getUsers()) {
    if (user->getNumResults() != 1 ||
        !user->hasAttr(mtf::MtfDialect::kLayoutAttrName))
      continue;
    auto resultType =
        llvm::dyn_cast<mtf::TensorType>(user->getResult(0).getType());
    if (!resultType)
      continue;
    AxisMap axes = axesByName(resultType, resultLayout(user));
    if (auto layer = axes.find(dim.str());
        layer != axes.end() && !layer->second.empty())
      continue; // cut along the layer dim: no slice of it
    return layoutFor(slice, axes);
  }
  return std::nullopt;
}

bool Partitioner::hasUnequalExamples() {
  for (auto input : global.getBodyBlock().getOps<mtf::InputOp>()) {
    auto type = llvm::cast<mtf::TensorType>(input.getType());
    if (type.getRank() == 0)
      continue;
    std::vector<int64_t> blocks = resultLayout(input).blockSizes(
        0, type.getDims()[0].size, mesh, weights);
    if (!llvm::all_equal(blocks))
      return true;
  }
  return false;
}

/// Local SGD: partial sums over the data-parallel axes stay per replica,
/// scaled to the replica's own mean (the loss averages over the examples);
/// partial sums over other axes are pieces of one gradient and are summed.
LogicalResult Partitioner::partitionLocalGrad(Operation &op) {
  Value input = op.getOperand(0);
  auto type = llvm::cast<mtf::TensorType>(input.getType());
  auto it = pending.find(input);
  if (it == pending.end()) {
    define(op.getResult(0), locals.lookup(input).first,
           layouts[locals.lookup(input).second]);
    return success();
  }
  Pending sums = it->second;
  pending.erase(it);
  auto [local, index] = locals.lookup(input);
  Layout layout = layouts[index];
  std::vector<size_t> model, data;
  for (size_t axis : sums.axes)
    (llvm::is_contained(dataAxes, axis) ? data : model).push_back(axis);
  if (!model.empty())
    local = roundTotal(reduceOver(local, type, layout, model, std::nullopt,
                                  false, op.getLoc(), sums.why),
                       type, layout, sums, op.getLoc());
  if (!data.empty()) {
    if (!refusal && hasUnequalExamples())
      refusal = {op.getLoc(),
                 {"local SGD (sync_every) scales each replica's gradient to "
                  "its own examples, and meshc does not do that for unequal "
                  "blocks of the examples yet",
                  "train with synchronous updates, or without device "
                  "weights (docs/layouts.md#device-weights)"}};
    int64_t replicas = layout::groupSize(data, mesh);
    local = scaleLocal(local, type, layout, static_cast<double>(replicas),
                       op.getLoc());
  }
  define(op.getResult(0), local, layout);
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

std::optional<Value>
Partitioner::scatterPending(Value value, const Layout &target, Operation *user,
                            std::optional<std::string> into) {
  auto it = pending.find(value);
  if (it == pending.end())
    return std::nullopt;
  for (const auto &[partial, layout, local] : scattered)
    if (partial == value && layout == target)
      return local;
  auto [local, index] = locals.lookup(value);
  const Layout &current = layouts[index];
  auto type = llvm::cast<mtf::TensorType>(value.getType());
  std::optional<size_t> dim;
  std::vector<size_t> added;
  for (size_t d = 0; d < current.rank(); ++d) {
    const std::vector<size_t> &from = current.axesOf(d);
    const std::vector<size_t> &to = target.axesOf(d);
    if (from == to)
      continue;
    if (dim || to.size() <= from.size() ||
        !std::equal(from.begin(), from.end(), to.begin()))
      return std::nullopt;
    dim = d;
    added.assign(to.begin() + from.size(), to.end());
  }
  std::vector<size_t> sorted = added;
  std::sort(sorted.begin(), sorted.end());
  if (!dim || sorted != it->second.axes)
    return std::nullopt;
  if (!into)
    into = "into the shard " +
           (llvm::isa<mtf::YieldOp>(user)
                ? std::string("the update after the loop reads")
                : user->getName().stripDialect().str() + " updates") +
           " (--shard-optimizer)";
  Value result =
      roundTotal(reduceOver(local, type, current, added, *dim, false,
                            user->getLoc(), it->second.why + ", " + *into),
                 type, target, it->second, user->getLoc());
  scattered.emplace_back(value, target, result);
  return result;
}

Value Partitioner::operandAs(Value value, const Layout &target,
                             Operation *user) {
  if (std::optional<Value> shard = scatterPending(value, target, user))
    return *shard;
  materialize(value);
  auto [local, index] = locals.lookup(value);
  const Layout &current = layouts[index];
  if (current == target)
    return local;
  auto type = llvm::cast<mtf::TensorType>(value.getType());
  std::string why = user->getName().stripDialect().str() + " needs " +
                    nameOf(value) + " as " + describe(type, target) +
                    ", it is " + describe(type, current);
  return reshard(local, type, current, target, user->getLoc(), why);
}

/// The ranked tensor type of a local block.
/// The ranked form of local type `type`, the sizes of `dynamicDims` dynamic.
static RankedTensorType rankedOf(mtf::TensorType type,
                                 ArrayRef<size_t> dynamicDims = {}) {
  SmallVector<int64_t> shape;
  for (const mtf::NamedDim &dim : type.getDims())
    shape.push_back(dim.size);
  for (size_t dim : dynamicDims)
    shape[dim] = ShapedType::kDynamic;
  return RankedTensorType::get(shape, type.getElementType());
}

std::vector<size_t>
Partitioner::unequalMoves(mtf::TensorType type, const Layout &from,
                          const std::vector<layout::ReshardStep> &steps) {
  std::vector<size_t> moved;
  if (weights.isPlain())
    return moved;
  auto note = [&](size_t dim, const Layout &before, const Layout &after) {
    int64_t size = type.getDims()[dim].size;
    for (const Layout *layout : {&before, &after})
      if (!llvm::all_equal(layout->blockSizes(dim, size, mesh, weights)) &&
          !llvm::is_contained(moved, dim))
        moved.push_back(dim);
  };
  Layout before = from;
  for (const layout::ReshardStep &step : steps) {
    note(step.dim, before, step.after);
    if (step.kind == layout::ReshardKind::AllToAll)
      note(step.concatDim, before, step.after);
    before = step.after;
  }
  llvm::sort(moved);
  return moved;
}

Value Partitioner::reshard(Value value, mtf::TensorType type,
                           const Layout &from, const Layout &to, Location loc,
                           StringRef why) {
  std::vector<layout::ReshardStep> steps = layout::planReshard(from, to);
  if (steps.empty())
    return value;
  std::vector<size_t> dynamic = unequalMoves(type, from, steps);
  Value tensor =
      track(mtf::ToTensorOp::create(
                builder, loc, rankedOf(localType(type, from), dynamic), value),
            type, from, dynamic);
  for (const layout::ReshardStep &step : steps) {
    RankedTensorType stepType = rankedOf(localType(type, step.after), dynamic);
    Operation *collective = nullptr;
    switch (step.kind) {
    case layout::ReshardKind::AllGather:
      collective = shard::AllGatherOp::create(builder, loc, stepType, grid,
                                              gridAxes(step.axes), tensor,
                                              builder.getIndexAttr(step.dim));
      break;
    case layout::ReshardKind::Slice:
      collective = shard::AllSliceOp::create(builder, loc, stepType, grid,
                                             gridAxes(step.axes), tensor,
                                             builder.getIndexAttr(step.dim));
      break;
    case layout::ReshardKind::AllToAll:
      collective = shard::AllToAllOp::create(
          builder, loc, stepType, grid, gridAxes(step.axes), tensor,
          builder.getIndexAttr(step.dim), builder.getIndexAttr(step.concatDim));
      break;
    }
    collective->setAttr(mtf::MtfDialect::kReasonAttrName,
                        builder.getStringAttr(why));
    tensor = track(collective->getResult(0), type, step.after, dynamic);
  }
  return track(
      mtf::FromTensorOp::create(builder, loc, localType(type, to), tensor),
      type, to);
}

Value Partitioner::reduceOver(Value value, mtf::TensorType type,
                              const Layout &layout, std::vector<size_t> axes,
                              std::optional<size_t> scatterDim, bool isMax,
                              Location loc, StringRef why) {
  // An all-reduce's group is a set; a reduce-scatter's axes are ordered:
  // they give the block order (major to minor) of the scattered dim.
  if (!scatterDim)
    std::sort(axes.begin(), axes.end());
  mtf::TensorType before = localType(type, layout);
  Layout scattered = layout;
  if (scatterDim) {
    std::vector<std::vector<size_t>> splits;
    for (size_t d = 0; d < layout.rank(); ++d)
      splits.push_back(layout.axesOf(d));
    llvm::append_range(splits[*scatterDim], axes);
    scattered = Layout::fromAxisIndices(std::move(splits));
  }
  // A reduce-scatter into unequal blocks leaves the scattered dim's size
  // dynamic in its tensors (unequalMoves).
  std::vector<size_t> dynamic;
  if (scatterDim &&
      !llvm::all_equal(scattered.blockSizes(
          *scatterDim, type.getDims()[*scatterDim].size, mesh, weights)))
    dynamic.push_back(*scatterDim);
  Value tensor = track(
      mtf::ToTensorOp::create(builder, loc, rankedOf(before, dynamic), value),
      type, layout, dynamic);
  auto kind = shard::ReductionKindAttr::get(builder.getContext(),
                                            isMax ? shard::ReductionKind::Max
                                                  : shard::ReductionKind::Sum);
  Operation *collective;
  mtf::TensorType after = localType(type, scattered);
  if (scatterDim) {
    collective = shard::ReduceScatterOp::create(
        builder, loc, rankedOf(after, dynamic), grid, gridAxes(axes), tensor,
        kind, builder.getIndexAttr(*scatterDim));
  } else {
    collective = shard::AllReduceOp::create(builder, loc, rankedOf(before),
                                            grid, gridAxes(axes), tensor, kind);
  }
  collective->setAttr(mtf::MtfDialect::kReasonAttrName,
                      builder.getStringAttr(why));
  track(collective->getResult(0), type, scattered, dynamic);
  return track(
      mtf::FromTensorOp::create(builder, loc, after, collective->getResult(0)),
      type, scattered);
}

//===----------------------------------------------------------------------===//
// Layout helpers
//===----------------------------------------------------------------------===//

Value Partitioner::roundTotal(Value local, mtf::TensorType type,
                              const Layout &layout, const Pending &sums,
                              Location loc) {
  if (!sums.roundThrough)
    return local;
  auto narrow = mtf::TensorType::get(builder.getContext(), type.getDims(),
                                     sums.roundThrough);
  Value rounded =
      track(mtf::CastOp::create(builder, loc, localType(narrow, layout), local),
            narrow, layout);
  return track(
      mtf::CastOp::create(builder, loc, localType(type, layout), rounded), type,
      layout);
}

Value Partitioner::scaleLocal(Value local, mtf::TensorType type,
                              const Layout &layout, double factor,
                              Location loc) {
  auto scalarType =
      mtf::TensorType::get(builder.getContext(), {}, type.getElementType());
  Value scale = mtf::ConstantOp::create(builder, loc, scalarType,
                                        builder.getF64FloatAttr(factor));
  scale.getDefiningOp()->setAttr(
      mtf::MtfDialect::kLayoutAttrName,
      mtf::LayoutAttr::get(builder.getContext(), {}));
  return track(
      mtf::MulOp::create(builder, loc, localType(type, layout), local, scale),
      type, layout);
}

void Partitioner::define(Value value, Value local, const Layout &layout,
                         bool partial) {
  layouts.push_back(layout);
  locals[value] = {local, layouts.size() - 1};
  Operation *op = local.getDefiningOp();
  auto type = llvm::cast<mtf::TensorType>(value.getType());
  if (op && !partial && op->getNumRegions() == 0 && op->getNumResults() == 1 &&
      llvm::isa<mtf::MtfDialect>(op->getDialect()))
    op->setAttr(mtf::MtfDialect::kLayoutAttrName,
                toLayoutAttr(type, layout, mesh));
}

Partitioner::Layout Partitioner::resultLayout(Operation *op) {
  auto type = llvm::cast<mtf::TensorType>(op->getResult(0).getType());
  auto attr =
      op->getAttrOfType<mtf::LayoutAttr>(mtf::MtfDialect::kLayoutAttrName);
  if (!attr)
    return Layout::replicated(type.getRank());
  // The attribute was verified against this mesh.
  layout::Result<Layout> result =
      fromLayoutAttr("", type, attr, mesh, &weights);
  return result.ok() ? *result : Layout::replicated(type.getRank());
}

mtf::TensorType Partitioner::localType(mtf::TensorType type,
                                       const Layout &layout) const {
  std::vector<int64_t> shape =
      layout.maxBlockShape(toDims(type), mesh, weights);
  SmallVector<mtf::NamedDim> dims;
  for (auto [dim, size] : llvm::zip(type.getDims(), shape))
    dims.push_back({dim.name, size});
  return mtf::TensorType::get(type.getContext(), dims, type.getElementType());
}

Value Partitioner::setLocalType(Value local, mtf::TensorType type,
                                const Layout &layout) {
  local.setType(localType(type, layout));
  return track(local, type, layout);
}

Value Partitioner::track(Value local, mtf::TensorType type,
                         const Layout &layout, ArrayRef<size_t> dynamicDims) {
  if (!weights.isPlain())
    setBlocks(local.getDefiningOp(), type, layout, mesh, weights, dynamicDims);
  return local;
}

Partitioner::AxisMap Partitioner::axesByName(mtf::TensorType type,
                                             const Layout &layout) const {
  AxisMap axes;
  for (auto [index, dim] : llvm::enumerate(type.getDims()))
    axes[dim.name.getValue().str()] = layout.axesOf(index);
  return axes;
}

Partitioner::Layout Partitioner::layoutFor(mtf::TensorType type,
                                           const AxisMap &axes) const {
  std::vector<std::vector<size_t>> splits;
  for (const mtf::NamedDim &dim : type.getDims()) {
    auto it = axes.find(dim.name.getValue().str());
    splits.push_back(it == axes.end() ? std::vector<size_t>() : it->second);
  }
  return Layout::fromAxisIndices(std::move(splits));
}

std::string Partitioner::describe(mtf::TensorType type,
                                  const Layout &layout) const {
  return layout.str(toDims(type), mesh);
}

std::string Partitioner::nameOf(Value value) const {
  if (Operation *op = value.getDefiningOp())
    return "'" + tensorName(op) + "'";
  return "its operand";
}

DenseI16ArrayAttr Partitioner::gridAxes(const std::vector<size_t> &axes) {
  SmallVector<int16_t> list(axes.begin(), axes.end());
  return builder.getDenseI16ArrayAttr(list);
}

} // namespace meshc
