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
                         llvm::raw_ostream &os) {
  Operation *found = nullptr;
  std::vector<std::string> names;
  for (Operation &op : program.getBodyBlock()) {
    if (op.getNumResults() != 1 ||
        !llvm::isa<mtf::TensorType>(op.getResult(0).getType()))
      continue;
    std::string opName = tensorName(&op);
    if (opName == name && !found)
      found = &op;
    if (llvm::isa<mtf::InputOp, mtf::ParamOp>(op) ||
        llvm::isa<NameLoc>(op.getLoc()))
      names.push_back(opName);
  }
  if (!found) {
    std::string list;
    for (const std::string &known : names)
      list += (list.empty() ? "'" : ", '") + known + "'";
    llvm::errs() << "meshc: error: --show-layout: the model has no tensor '"
                 << name << "'\nhint: its tensors are " << list << "\n";
    return failure();
  }

  auto type = llvm::cast<mtf::TensorType>(found->getResult(0).getType());
  layout::Mesh mesh = toMesh(program.getMeshAttr());
  auto attr =
      found->getAttrOfType<mtf::LayoutAttr>(mtf::MtfDialect::kLayoutAttrName);
  layout::Result<layout::TensorLayout> tensorLayout =
      attr ? fromLayoutAttr(name, type, attr, mesh)
           : layout::Result<layout::TensorLayout>(
                 layout::TensorLayout::replicated(type.getRank()));
  if (!tensorLayout.ok())
    return emitLayoutError(found->getLoc(), tensorLayout.error());
  std::vector<layout::Dim> dims = toDims(type);
  os << name << ": " << type << " as " << tensorLayout->str(dims, mesh)
     << " on mesh " << (mesh.rank() ? mesh.str() : std::string("(single)"))
     << " (" << mesh.numDevices() << " devices)\n";

  // Devices by block.
  std::map<std::vector<int64_t>, std::vector<int64_t>> holders;
  std::vector<int64_t> shape = tensorLayout->sliceShape(dims, mesh);
  for (int64_t device = 0; device < mesh.numDevices(); ++device)
    holders[tensorLayout->sliceOffset(dims, mesh, device)].push_back(device);

  if (type.getRank() == 0 || type.getRank() > 2) {
    for (auto &[offset, devices] : holders) {
      os << "  [";
      for (size_t d = 0; d < offset.size(); ++d)
        os << (d ? ", " : "") << range(offset[d], shape[d]);
      os << "] on device" << (devices.size() == 1 ? " " : "s ")
         << deviceList(devices) << "\n";
    }
    return success();
  }

  // A grid: rows are blocks of the first dim (one row for rank 1), columns
  // blocks of the last.
  size_t last = type.getRank() - 1;
  int64_t rows = type.getRank() == 2 ? dims[0].size / shape[0] : 1;
  int64_t cols = dims[last].size / shape[last];
  std::vector<std::vector<std::string>> cells(rows,
                                              std::vector<std::string>(cols));
  for (auto &[offset, devices] : holders) {
    int64_t row = type.getRank() == 2 ? offset[0] / shape[0] : 0;
    cells[row][offset[last] / shape[last]] = deviceList(devices);
  }
  std::string rowLabelHeader =
      type.getRank() == 2 ? dims[0].name.c_str() : std::string();
  size_t labelWidth = rowLabelHeader.size();
  std::vector<std::string> rowLabels(rows);
  for (int64_t r = 0; r < rows; ++r) {
    rowLabels[r] = type.getRank() == 2 ? range(r * shape[0], shape[0]) : "";
    labelWidth = std::max(labelWidth, rowLabels[r].size());
  }
  size_t width = 0;
  for (int64_t c = 0; c < cols; ++c)
    width = std::max(width, range(c * shape[last], shape[last]).size());
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
  for (int64_t c = 0; c < cols; ++c) {
    center(range(c * shape[last], shape[last]));
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
