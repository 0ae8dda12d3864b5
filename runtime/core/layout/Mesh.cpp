//===- Mesh.cpp - Logical device meshes -----------------------------------===//
//
// Parsing and validation of meshes, and the row-major numbering of devices.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/Mesh.h"

#include "runtime/core/layout/Names.h"
#include "runtime/core/layout/PairSyntax.h"

#include <algorithm>
#include <charconv>

namespace meshc::layout {

static constexpr const char *kMeshSyntaxHint =
    "write the mesh as name:size pairs, e.g. 'b:4;m:2'";

static Error emptyMeshError(int column) {
  return Error{"mesh is empty",
               std::string(kMeshSyntaxHint) + " (a single device is 'd:1')", 0,
               column};
}

static bool isDigit(char c) { return c >= '0' && c <= '9'; }

Result<Mesh> Mesh::parse(std::string_view text) {
  static const PairSyntax syntax{"mesh axis", "size", kMeshSyntaxHint, false};
  Result<std::vector<PairItem>> items = splitPairs(text, syntax);
  if (!items)
    return items.error();
  if (items->empty())
    return emptyMeshError(1);

  std::vector<MeshAxis> axes;
  std::vector<int> columns;
  for (const PairItem &item : *items) {
    const PairWord &word = item.values.front();
    std::string name(item.name.text);
    bool allDigits = std::all_of(word.text.begin(), word.text.end(), isDigit);
    int64_t size = 0;
    if (allDigits) {
      std::from_chars_result parsed = std::from_chars(
          word.text.data(), word.text.data() + word.text.size(), size);
      if (parsed.ec == std::errc::result_out_of_range)
        return Error{"mesh axis " + quoteName(name) + " size " +
                         quoteName(word.text) + " is too large",
                     "a mesh axis size counts devices and must fit in a "
                     "64-bit integer",
                     0, word.column};
    }
    if (!allDigits || size == 0)
      return Error{
          "mesh axis " + quoteName(name) +
              " size must be a positive integer, got " + quoteName(word.text),
          "write the size as a positive integer, e.g. 'b:4'", 0, word.column};
    axes.push_back({std::move(name), size});
    columns.push_back(item.name.column);
  }
  return build(std::move(axes), columns);
}

Result<Mesh> Mesh::fromAxes(std::vector<MeshAxis> axes) {
  return build(std::move(axes), {});
}

Result<Mesh> Mesh::build(std::vector<MeshAxis> axes,
                         const std::vector<int> &columns) {
  if (axes.empty())
    return emptyMeshError(0);
  Mesh mesh;
  for (size_t i = 0; i < axes.size(); ++i) {
    int column = i < columns.size() ? columns[i] : 0;
    const MeshAxis &axis = axes[i];
    if (!isIdentifier(axis.name))
      return Error{quoteName(axis.name) + " is not a valid mesh axis name",
                   kIdentifierHint, 0, column};
    for (size_t j = 0; j < i; ++j)
      if (axes[j].name == axis.name)
        return Error{"mesh axis " + quoteName(axis.name) + " is given twice",
                     "give each mesh axis its own name", 0, column};
    if (axis.size <= 0)
      return Error{"mesh axis " + quoteName(axis.name) +
                       " size must be a positive integer, got " +
                       std::to_string(axis.size),
                   "write the size as a positive integer, e.g. 'b:4'", 0,
                   column};
    if (__builtin_mul_overflow(mesh.deviceCount, axis.size, &mesh.deviceCount))
      return Error{"mesh has too many devices: the product of its axis sizes "
                   "overflows a 64-bit integer at axis " +
                       quoteName(axis.name),
                   "a mesh axis size counts devices; check the sizes", 0,
                   column};
  }
  mesh.axisList = std::move(axes);
  return mesh;
}

std::optional<size_t> Mesh::axisIndex(std::string_view name) const {
  for (size_t i = 0; i < axisList.size(); ++i)
    if (axisList[i].name == name)
      return i;
  return std::nullopt;
}

const std::string &Mesh::axisName(size_t axis) const {
  assert(axis < axisList.size() && "mesh axis out of range");
  return axisList[axis].name;
}

int64_t Mesh::axisSize(size_t axis) const {
  assert(axis < axisList.size() && "mesh axis out of range");
  return axisList[axis].size;
}

std::vector<std::string> Mesh::axisNames() const {
  std::vector<std::string> names;
  for (const MeshAxis &axis : axisList)
    names.push_back(axis.name);
  return names;
}

std::vector<int64_t> Mesh::coordinates(int64_t deviceId) const {
  assert(deviceId >= 0 && deviceId < deviceCount && "device out of range");
  std::vector<int64_t> coords(axisList.size());
  for (size_t i = axisList.size(); i-- > 0;) {
    coords[i] = deviceId % axisList[i].size;
    deviceId /= axisList[i].size;
  }
  return coords;
}

int64_t Mesh::deviceId(const std::vector<int64_t> &coords) const {
  assert(coords.size() == axisList.size() && "one coordinate per axis");
  int64_t id = 0;
  for (size_t i = 0; i < axisList.size(); ++i) {
    assert(coords[i] >= 0 && coords[i] < axisList[i].size &&
           "coordinate out of range");
    id = id * axisList[i].size + coords[i];
  }
  return id;
}

std::string Mesh::str() const {
  std::string out;
  for (const MeshAxis &axis : axisList)
    out +=
        (out.empty() ? "" : ";") + axis.name + ":" + std::to_string(axis.size);
  return out;
}

std::string Mesh::shapeStr() const {
  if (axisList.empty())
    return "1";
  std::string out;
  for (const MeshAxis &axis : axisList)
    out += (out.empty() ? "" : "x") + std::to_string(axis.size);
  return out;
}

} // namespace meshc::layout
