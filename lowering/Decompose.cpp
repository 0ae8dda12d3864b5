//===- Decompose.cpp - ops over a split dimension, rewritten --------------===//

#include "lowering/Decompose.h"

#include "dialect/OpEmitter.h"

#include <map>
#include <set>

using namespace mlir;

namespace meshc {

namespace {

/// The layout attribute of the op that defines `value`; for a loop body's
/// argument, its operand's (a stacked operand's names the loop dim too,
/// which the slice lacks and the readers skip); null if none.
mtf::LayoutAttr layoutOf(Value value) {
  if (auto arg = llvm::dyn_cast<BlockArgument>(value))
    if (auto loop =
            llvm::dyn_cast_or_null<mtf::LoopOp>(arg.getOwner()->getParentOp()))
      return layoutOf(loop->getOperand(arg.getArgNumber()));
  Operation *def = value.getDefiningOp();
  return def ? def->getAttrOfType<mtf::LayoutAttr>(
                   mtf::MtfDialect::kLayoutAttrName)
             : mtf::LayoutAttr();
}

/// Mesh axes per dimension name, gathered from several layouts. A
/// dimension keeps the axes of the first layout that names it; `consistent`
/// turns false when two dimensions would share a mesh axis.
struct AxesByDim {
  std::map<std::string, ArrayAttr> axes;
  std::set<std::string> used;
  bool consistent = true;

  void add(Value value, mtf::LayoutAttr layout) {
    auto type = llvm::dyn_cast<mtf::TensorType>(value.getType());
    if (!type || !layout)
      return;
    for (const mtf::DimSplit &split : layout.getSplits()) {
      if (!type.hasDim(split.dim.getValue()) ||
          axes.count(split.dim.getValue().str()))
        continue;
      for (Attribute axis : split.axes)
        consistent &=
            used.insert(llvm::cast<StringAttr>(axis).getValue().str()).second;
      axes[split.dim.getValue().str()] = split.axes;
    }
  }

  mtf::LayoutAttr layoutFor(mtf::TensorType type) const {
    SmallVector<mtf::DimSplit> splits;
    for (const mtf::NamedDim &dim : type.getDims()) {
      auto it = axes.find(dim.name.getValue().str());
      if (it != axes.end())
        splits.push_back({dim.name, it->second});
    }
    return mtf::LayoutAttr::get(type.getContext(), splits);
  }
};

/// True when `dim` of some tensor `op` reads or writes is split over more
/// than one device.
bool splitsDim(Operation *op, StringRef dim, mtf::MeshAttr mesh) {
  if (!mesh)
    return false;
  auto splitIn = [&](Value value, mtf::LayoutAttr layout) {
    auto type = llvm::dyn_cast<mtf::TensorType>(value.getType());
    if (!layout || !type || !type.hasDim(dim))
      return false;
    int64_t shards = 1;
    for (StringAttr axis : layout.getAxesFor(dim))
      for (const mtf::NamedDim &named : mesh.getAxes())
        if (named.name == axis)
          shards *= named.size;
    return shards > 1;
  };
  for (Value operand : op->getOperands())
    if (splitIn(operand, layoutOf(operand)))
      return true;
  return splitIn(op->getResult(0), op->getAttrOfType<mtf::LayoutAttr>(
                                       mtf::MtfDialect::kLayoutAttrName));
}

/// The dimensions `op`'s partition rule needs whole.
SmallVector<std::string> wholeDims(Operation *op) {
  SmallVector<std::string> dims;
  auto ruled = llvm::dyn_cast<mtf::PartitionRuleOpInterface>(op);
  if (!ruled)
    return dims;
  for (const auto &[dim, role] : ruled.getPartitionRule().roles)
    if (role == mtf::DimRole::Whole)
      dims.push_back(dim);
  return dims;
}

} // namespace

LogicalResult decomposeSplitOps(mtf::ProgramOp program) {
  mtf::MeshAttr mesh = program.getMeshAttr();
  // The program's ops and its loops' bodies' (a pipeline's head runs in
  // its ticks: docs/pipeline.md#1f1b).
  SmallVector<Operation *> candidates;
  program.getBodyBlock().walk([&](Operation *op) {
    if (llvm::isa<mtf::DecomposeOpInterface>(op) &&
        llvm::any_of(wholeDims(op), [&](const std::string &dim) {
          return splitsDim(op, dim, mesh);
        }))
      candidates.push_back(op);
  });

  for (Operation *op : candidates) {
    AxesByDim axes;
    axes.add(op->getOperand(0), layoutOf(op->getOperand(0)));
    axes.add(op->getResult(0), op->getAttrOfType<mtf::LayoutAttr>(
                                   mtf::MtfDialect::kLayoutAttrName));
    for (Value operand : op->getOperands().drop_front())
      axes.add(operand, layoutOf(operand));
    // Layouts that disagree on a mesh axis: the gather stays (it is correct).
    if (!axes.consistent)
      continue;

    Operation *before = op->getPrevNode();
    mtf::OpEmitter emit(op);
    Value value = llvm::cast<mtf::DecomposeOpInterface>(op).decompose(emit);
    if (!value || value.getType() != op->getResult(0).getType())
      return op->emitError()
             << "internal error: the decomposition of '" << op->getName()
             << "' has type " << (value ? value.getType() : Type())
             << ", not the op's " << op->getResult(0).getType();
    for (Operation *made = before ? before->getNextNode()
                                  : &op->getBlock()->front();
         made != op; made = made->getNextNode())
      if (made->getNumResults() == 1)
        if (auto type =
                llvm::dyn_cast<mtf::TensorType>(made->getResult(0).getType()))
          made->setAttr(mtf::MtfDialect::kLayoutAttrName, axes.layoutFor(type));
    // The result keeps the op's own layout.
    if (Attribute own = op->getAttr(mtf::MtfDialect::kLayoutAttrName))
      value.getDefiningOp()->setAttr(mtf::MtfDialect::kLayoutAttrName, own);
    op->getResult(0).replaceAllUsesWith(value);
    op->erase();
  }
  return success();
}

} // namespace meshc
