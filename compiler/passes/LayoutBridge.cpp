//===- LayoutBridge.cpp - mtf attributes <-> the layout library -----------===//
//
// Conversions between the mtf dialect and runtime/core/layout values.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LayoutBridge.h"

#include "mlir/IR/Diagnostics.h"

#include <set>

using namespace mlir;

namespace meshc {

layout::Mesh toMesh(mtf::MeshAttr mesh) {
  if (!mesh)
    return layout::Mesh::single();
  std::vector<layout::MeshAxis> axes;
  for (const mtf::NamedDim &axis : mesh.getAxes())
    axes.push_back({axis.name.getValue().str(), axis.size});
  // A verified #mtf.mesh always forms a valid mesh.
  layout::Result<layout::Mesh> result = layout::Mesh::fromAxes(axes);
  return result.ok() ? result.value() : layout::Mesh::single();
}

mtf::MeshAttr toMeshAttr(MLIRContext *context, const layout::Mesh &mesh) {
  if (mesh.rank() == 0)
    return {};
  SmallVector<mtf::NamedDim> axes;
  for (const layout::MeshAxis &axis : mesh.axes())
    axes.push_back({StringAttr::get(context, axis.name), axis.size});
  return mtf::MeshAttr::get(context, axes);
}

std::vector<layout::Dim> toDims(mtf::TensorType type) {
  std::vector<layout::Dim> dims;
  for (const mtf::NamedDim &dim : type.getDims())
    dims.push_back({dim.name.getValue().str(), dim.size});
  return dims;
}

mtf::LayoutAttr toLayoutAttr(mtf::TensorType type,
                             const layout::TensorLayout &tensorLayout,
                             const layout::Mesh &mesh) {
  MLIRContext *context = type.getContext();
  SmallVector<mtf::DimSplit> splits;
  for (auto [index, dim] : llvm::enumerate(type.getDims())) {
    const std::vector<size_t> &axes = tensorLayout.axesOf(index);
    if (axes.empty())
      continue;
    SmallVector<Attribute> names;
    for (size_t axis : axes)
      names.push_back(StringAttr::get(context, mesh.axisName(axis)));
    splits.push_back({dim.name, ArrayAttr::get(context, names)});
  }
  return mtf::LayoutAttr::get(context, splits);
}

layout::Result<layout::TensorLayout> fromLayoutAttr(StringRef tensorName,
                                                    mtf::TensorType type,
                                                    mtf::LayoutAttr attr,
                                                    const layout::Mesh &mesh) {
  std::vector<std::vector<std::string>> axes(type.getRank());
  for (auto [index, dim] : llvm::enumerate(type.getDims()))
    for (StringAttr axis : attr.getAxesFor(dim.name.getValue()))
      axes[index].push_back(axis.getValue().str());
  return layout::TensorLayout::fromAxes(tensorName, toDims(type), axes, mesh);
}

std::string tensorName(Operation *op) {
  if (auto input = llvm::dyn_cast<mtf::InputOp>(op))
    return input.getName().str();
  if (auto param = llvm::dyn_cast<mtf::ParamOp>(op))
    return param.getName().str();
  if (auto named = llvm::dyn_cast<NameLoc>(op->getLoc()))
    return named.getName().getValue().str();
  std::string name = op->getName().stripDialect().str();
  if (auto fileLoc = llvm::dyn_cast<FileLineColLoc>(op->getLoc()))
    name += "@" + std::to_string(fileLoc.getLine()) + ":" +
            std::to_string(fileLoc.getColumn());
  return name;
}

std::map<std::string, int64_t> collectModelDims(Operation *root) {
  std::map<std::string, int64_t> dims;
  root->walk([&](Operation *op) {
    for (Type type : op->getResultTypes())
      if (auto tensor = llvm::dyn_cast<mtf::TensorType>(type))
        for (const mtf::NamedDim &dim : tensor.getDims())
          dims.emplace(dim.name.getValue().str(), dim.size);
  });
  return dims;
}

std::vector<std::vector<std::string>> collectTensorDims(Operation *root) {
  std::set<std::vector<std::string>> lists;
  root->walk([&](Operation *op) {
    for (Type type : op->getResultTypes())
      if (auto tensor = llvm::dyn_cast<mtf::TensorType>(type)) {
        std::vector<std::string> names;
        for (const mtf::NamedDim &dim : tensor.getDims())
          names.push_back(dim.name.getValue().str());
        lists.insert(std::move(names));
      }
  });
  return {lists.begin(), lists.end()};
}

InFlightDiagnostic emitLayoutError(Location loc, const layout::Error &error) {
  InFlightDiagnostic diag = emitError(loc) << error.message;
  if (!error.hint.empty())
    diag.attachNote() << "hint: " << error.hint;
  return diag;
}

} // namespace meshc
