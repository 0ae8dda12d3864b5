//===- ShowLayout.cpp - meshc --show-layout -------------------------------===//

#include "compiler/driver/ShowLayout.h"

#include "compiler/passes/LayoutBridge.h"

#include <algorithm>
#include <map>

using namespace mlir;

namespace meshc {
namespace {

/// "0:32" for the block [offset, offset + size).
std::string range(int64_t offset, int64_t size) {
  return std::to_string(offset) + ":" + std::to_string(offset + size);
}

/// "0,4" for the devices holding one block.
std::string deviceList(const std::vector<int64_t> &devices) {
  std::string text;
  for (int64_t device : devices)
    text += (text.empty() ? "" : ",") + std::to_string(device);
  return text;
}

} // namespace

LogicalResult showLayout(mtf::ProgramOp program, StringRef name,
                         llvm::raw_ostream &os, llvm::raw_ostream &err) {
  // Every tensor result, loop bodies' included (a body's tensors without
  // the layer dim: one layer's).
  Value found;
  std::vector<std::string> names;
  program.getBody().walk([&](Operation *op) {
    if (llvm::isa<mtf::LoopOp>(op))
      return;
    for (OpResult result : op->getResults()) {
      if (!llvm::isa<mtf::TensorType>(result.getType()))
        continue;
      std::string resultName = resultTensorName(result);
      if (resultName == name && !found)
        found = result;
      if (llvm::isa<mtf::InputOp, mtf::ParamOp>(op) ||
          llvm::isa<NameLoc>(op->getLoc()))
        names.push_back(resultName);
    }
  });
  if (!found) {
    std::string list;
    for (const std::string &known : names)
      list += (list.empty() ? "'" : ", '") + known + "'";
    err << "meshc: error: --show-layout: the model has no tensor '" << name
        << "'\nhint: its tensors are " << list << "\n";
    return failure();
  }

  auto type = llvm::cast<mtf::TensorType>(found.getType());
  layout::Mesh mesh = toMesh(program.getMeshAttr());
  layout::AxisWeights weights = axisWeightsOf(program, mesh);
  mtf::LayoutAttr attr = resultLayoutAttr(found);
  layout::Result<layout::TensorLayout> tensorLayout =
      attr ? fromLayoutAttr(name, type, attr, mesh, &weights)
           : layout::Result<layout::TensorLayout>(
                 layout::TensorLayout::replicated(type.getRank()));
  if (!tensorLayout.ok())
    return emitLayoutError(found.getLoc(), tensorLayout.error());
  std::vector<layout::Dim> dims = toDims(type);
  os << name << ": " << type << " as " << tensorLayout->str(dims, mesh)
     << " on mesh " << (mesh.rank() ? mesh.str() : std::string("(single)"))
     << " (" << mesh.numDevices() << " devices)";
  if (!weights.isPlain())
    os << (weights.isEven() ? "" : " with weights " + weights.str(mesh))
       << (weights.allowsIndivisible() ? ", uneven" : "");
  os << "\n";

  if (type.getRank() == 0 || type.getRank() > 2) {
    // Devices by block: its offset and shape.
    std::map<std::pair<std::vector<int64_t>, std::vector<int64_t>>,
             std::vector<int64_t>>
        holders;
    for (int64_t device = 0; device < mesh.numDevices(); ++device)
      holders[{tensorLayout->blockOffset(dims, mesh, weights, device),
               tensorLayout->blockShape(dims, mesh, weights, device)}]
          .push_back(device);
    for (auto &[block, devices] : holders) {
      os << "  [";
      for (size_t d = 0; d < block.first.size(); ++d)
        os << (d ? ", " : "") << range(block.first[d], block.second[d]);
      os << "] on device" << (devices.size() == 1 ? " " : "s ")
         << deviceList(devices) << "\n";
    }
    return success();
  }

  // A grid: rows are blocks of the first dim (one row for rank 1), columns
  // blocks of the last, each labelled with its element range.
  size_t last = type.getRank() - 1;
  auto ranges = [&](size_t dim) {
    std::vector<std::string> labels;
    int64_t offset = 0;
    for (int64_t size :
         tensorLayout->blockSizes(dim, dims[dim].size, mesh, weights)) {
      labels.push_back(range(offset, size));
      offset += size;
    }
    return labels;
  };
  std::vector<std::string> rowLabels =
      type.getRank() == 2 ? ranges(0) : std::vector<std::string>{""};
  std::vector<std::string> colLabels = ranges(last);
  int64_t rows = int64_t(rowLabels.size());
  int64_t cols = int64_t(colLabels.size());
  std::vector<std::vector<std::string>> cells(rows,
                                              std::vector<std::string>(cols));
  for (int64_t device = 0; device < mesh.numDevices(); ++device) {
    std::vector<int64_t> coords = mesh.coordinates(device);
    int64_t row =
        type.getRank() == 2 ? tensorLayout->shardIndex(0, mesh, coords) : 0;
    std::string &cell =
        cells[row][tensorLayout->shardIndex(last, mesh, coords)];
    cell += (cell.empty() ? "" : ",") + std::to_string(device);
  }
  std::string rowLabelHeader =
      type.getRank() == 2 ? dims[0].name.c_str() : std::string();
  size_t labelWidth = rowLabelHeader.size();
  for (const std::string &label : rowLabels)
    labelWidth = std::max(labelWidth, label.size());
  size_t width = 0;
  for (const std::string &label : colLabels)
    width = std::max(width, label.size());
  for (auto &row : cells)
    for (auto &cell : row)
      width = std::max(width, cell.size());
  width += 2;

  auto center = [&](const std::string &text) {
    size_t left = (width - text.size()) / 2;
    os.indent(left) << text;
    os.indent(width - text.size() - left);
  };
  os.indent(labelWidth + 2) << " " << dims[last].name << "\n";
  os.indent(labelWidth + 2) << " ";
  for (const std::string &label : colLabels) {
    center(label);
    os << " ";
  }
  os << "\n";
  std::string rule(width, '-');
  auto separator = [&] {
    os.indent(labelWidth + 2) << "+";
    for (int64_t c = 0; c < cols; ++c)
      os << rule << "+";
    os << "\n";
  };
  if (!rowLabelHeader.empty())
    os << "  " << rowLabelHeader << "\n";
  separator();
  for (int64_t r = 0; r < rows; ++r) {
    os << "  " << rowLabels[r];
    os.indent(labelWidth - rowLabels[r].size()) << "|";
    for (int64_t c = 0; c < cols; ++c) {
      center(cells[r][c]);
      os << "|";
    }
    os << "\n";
    separator();
  }
  os << "  (cells list the devices holding each block; device ids are "
        "row-major over the mesh)\n";
  return success();
}

} // namespace meshc
