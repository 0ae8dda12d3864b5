//===- Mesh.h - Logical device meshes ---------------------------*- C++ -*-===//
//
// A mesh is the logical grid of devices an SPMD program runs on: an ordered
// list of named axes with sizes, written "b:4;m:2" (8 devices as a 4x2 grid)
// as in Mesh-TensorFlow. Devices are numbered row-major over the mesh shape
// (first axis most significant, like numpy's C order), so device 5 of "b:4;m:2"
// has coordinates (2, 1).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CORE_LAYOUT_MESH_H
#define MESHC_RUNTIME_CORE_LAYOUT_MESH_H

#include "runtime/core/layout/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace meshc::layout {

/// One named axis of a mesh.
struct MeshAxis {
  std::string name;
  int64_t size = 1;

  bool operator==(const MeshAxis &other) const {
    return name == other.name && size == other.size;
  }
  bool operator!=(const MeshAxis &other) const { return !(*this == other); }
};

/// An ordered list of named mesh axes, e.g. "b:4;m:2".
class Mesh {
public:
  /// The single-device mesh with no axes (same as single()).
  Mesh() = default;

  /// Parses the Mesh-TensorFlow string form "b:4;m:2". Pairs are separated
  /// by ';', ',', '.' or whitespace (mixed freely); names are identifiers and
  /// sizes positive integers. Errors carry the 1-based column of the
  /// offending word. An empty text is an error (see single()).
  static Result<Mesh> parse(std::string_view text);

  /// Builds a mesh from axes given in order; checks names, sizes, duplicate
  /// names and that there is at least one axis.
  static Result<Mesh> fromAxes(std::vector<MeshAxis> axes);

  /// The mesh of one device and no axes; the only legal mesh without axes.
  static Mesh single() { return Mesh(); }

  /// The axes, major (most significant) first.
  const std::vector<MeshAxis> &axes() const { return axisList; }
  /// The number of axes.
  size_t rank() const { return axisList.size(); }
  /// The product of the axis sizes (1 for single()).
  int64_t numDevices() const { return deviceCount; }
  /// The position of the axis called `name`, if there is one.
  std::optional<size_t> axisIndex(std::string_view name) const;
  /// The name of axis `axis` (< rank()).
  const std::string &axisName(size_t axis) const;
  /// The size of axis `axis` (< rank()).
  int64_t axisSize(size_t axis) const;
  /// The axis names in order.
  std::vector<std::string> axisNames() const;

  /// The coordinates of device `deviceId` (< numDevices()), one per axis,
  /// row-major: the last axis varies fastest.
  std::vector<int64_t> coordinates(int64_t deviceId) const;
  /// The device at `coords` (one in-range coordinate per axis); the inverse
  /// of coordinates().
  int64_t deviceId(const std::vector<int64_t> &coords) const;

  /// The canonical string form "b:4;m:2" (empty for single()), which parse()
  /// reads back.
  std::string str() const;
  /// The shape "4x2" ("1" for single()).
  std::string shapeStr() const;

  bool operator==(const Mesh &other) const {
    return axisList == other.axisList;
  }
  bool operator!=(const Mesh &other) const { return !(*this == other); }

private:
  /// Validates `axes`; `columns[i]`, when given, locates axis i in the
  /// parsed text.
  static Result<Mesh> build(std::vector<MeshAxis> axes,
                            const std::vector<int> &columns);

  std::vector<MeshAxis> axisList;
  int64_t deviceCount = 1;
};

} // namespace meshc::layout

#endif // MESHC_RUNTIME_CORE_LAYOUT_MESH_H
