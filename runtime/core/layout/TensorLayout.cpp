//===- TensorLayout.cpp - How one tensor is split over a mesh -------------===//
//
// Validation of tensor layouts and the arithmetic of device blocks.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/TensorLayout.h"

#include "runtime/core/layout/Names.h"

#include <algorithm>
#include <numeric>

namespace meshc::layout {

int64_t elementBytes(std::string_view elementType) {
  if (elementType == "f64" || elementType == "i64")
    return 8;
  if (elementType == "f32" || elementType == "i32")
    return 4;
  if (elementType == "f16" || elementType == "bf16")
    return 2;
  if (elementType == "i8")
    return 1;
  return 0;
}

TensorLayout TensorLayout::replicated(size_t rank) {
  return TensorLayout(std::vector<std::vector<size_t>>(rank));
}

Result<TensorLayout> TensorLayout::compute(std::string_view tensorName,
                                           const std::vector<Dim> &dims,
                                           const LayoutRules &rules,
                                           const Mesh &mesh,
                                           const AxisWeights *weights) {
  std::vector<std::vector<std::string>> axes;
  for (const Dim &dim : dims) {
    const std::vector<std::string> *ruleAxes = rules.axesFor(dim.name);
    axes.push_back(ruleAxes ? *ruleAxes : std::vector<std::string>());
  }
  return fromAxes(tensorName, dims, axes, mesh, weights);
}

/// "1 entry", "2 entries".
static std::string counted(size_t count, const char *one, const char *many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

/// The hint for a dimension of `size` elements that `shards` does not divide.
static std::string divisibilityHint(const std::string &dim, int64_t size,
                                    int64_t shards) {
  int64_t below = size / shards * shards, above = 0;
  std::string examples = below > 0 ? std::to_string(below) : "";
  // (The next multiple may not exist: a size near 2^63 split in two.)
  if (!__builtin_add_overflow(below, shards, &above))
    examples += (examples.empty() ? "" : " or ") + std::to_string(above);
  return "leave " + quoteName(dim) +
         " unsplit or make its size a multiple of " + std::to_string(shards) +
         " (e.g. " + examples + ")";
}

Result<TensorLayout>
TensorLayout::fromAxes(std::string_view tensorName,
                       const std::vector<Dim> &dims,
                       const std::vector<std::vector<std::string>> &axes,
                       const Mesh &mesh, const AxisWeights *weights) {
  std::string tensor = "tensor " + quoteName(tensorName);
  if (axes.size() != dims.size())
    return Error{"layout of " + tensor + " has " +
                     counted(axes.size(), "entry", "entries") +
                     " but the tensor has " +
                     counted(dims.size(), "dimension", "dimensions"),
                 "give one list of mesh axes per dimension"};

  std::vector<std::vector<size_t>> splits(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    const Dim &dim = dims[d];
    std::string subject = tensor + " dimension " + quoteName(dim.name);
    if (dim.size < 1)
      return Error{subject + " has size " + std::to_string(dim.size) +
                       "; sizes must be positive",
                   ""};
    for (size_t e = 0; e < d; ++e)
      if (dims[e].name == dim.name)
        return Error{tensor + " has two dimensions named " +
                         quoteName(dim.name),
                     "give each dimension of a tensor its own name"};

    int64_t shards = 1;
    std::string sizes;
    for (const std::string &axisName : axes[d]) {
      std::optional<size_t> axis = mesh.axisIndex(axisName);
      if (!axis)
        return unknownMeshAxisError(subject, dim.name, axisName,
                                    mesh.axisNames());
      if (std::find(splits[d].begin(), splits[d].end(), *axis) !=
          splits[d].end())
        return Error{subject + " lists mesh axis " + quoteName(axisName) +
                         " twice",
                     "a mesh axis can split a dimension only once"};
      for (size_t e = 0; e < d; ++e)
        if (std::find(splits[e].begin(), splits[e].end(), *axis) !=
            splits[e].end())
          return Error{tensor + " splits dimensions " +
                           quoteName(dims[e].name) + " and " +
                           quoteName(dim.name) + " over the same mesh axis " +
                           quoteName(axisName),
                       "split one of them over another mesh axis or leave "
                       "it unsplit"};
      splits[d].push_back(*axis);
      shards *= mesh.axisSize(*axis);
      sizes +=
          (sizes.empty() ? "" : " x ") + std::to_string(mesh.axisSize(*axis));
    }
    if (dim.size % shards == 0 ||
        (weights && weights->allowsIndivisible(splits[d])))
      continue;
    std::string divisor =
        axes[d].size() == 1
            ? "mesh axis " + quoteName(axes[d][0]) + " (size " + sizes + ")"
            : "mesh axes " + quoteName(joinAxes(axes[d])) + " (size " + sizes +
                  " = " + std::to_string(shards) + ")";
    return Error{subject + " (size " + std::to_string(dim.size) +
                     ") is not divisible by " + divisor,
                 divisibilityHint(dim.name, dim.size, shards)};
  }
  return TensorLayout(std::move(splits));
}

const std::vector<size_t> &TensorLayout::axesOf(size_t dim) const {
  assert(dim < splits.size() && "dimension out of range");
  return splits[dim];
}

int64_t TensorLayout::shardCount(size_t dim, const Mesh &mesh) const {
  int64_t shards = 1;
  for (size_t axis : axesOf(dim))
    shards *= mesh.axisSize(axis);
  return shards;
}

int64_t TensorLayout::shardIndex(size_t dim, const Mesh &mesh,
                                 const std::vector<int64_t> &coords) const {
  assert(coords.size() == mesh.rank() && "one coordinate per mesh axis");
  int64_t index = 0;
  for (size_t axis : axesOf(dim))
    index = index * mesh.axisSize(axis) + coords[axis];
  return index;
}

std::vector<int64_t> TensorLayout::sliceShape(const std::vector<Dim> &dims,
                                              const Mesh &mesh) const {
  assert(dims.size() == splits.size() && "layout built for other dims");
  std::vector<int64_t> shape;
  for (size_t d = 0; d < dims.size(); ++d)
    shape.push_back(dims[d].size / shardCount(d, mesh));
  return shape;
}

std::vector<int64_t> TensorLayout::sliceOffset(const std::vector<Dim> &dims,
                                               const Mesh &mesh,
                                               int64_t deviceId) const {
  std::vector<int64_t> coords = mesh.coordinates(deviceId);
  std::vector<int64_t> offset = sliceShape(dims, mesh);
  for (size_t d = 0; d < offset.size(); ++d)
    offset[d] *= shardIndex(d, mesh, coords);
  return offset;
}

int64_t TensorLayout::numElementsPerDevice(const std::vector<Dim> &dims,
                                           const Mesh &mesh) const {
  int64_t elements = 1;
  for (int64_t size : sliceShape(dims, mesh))
    elements *= size;
  return elements;
}

std::vector<int64_t>
TensorLayout::blockSizes(size_t dim, int64_t size, const Mesh &mesh,
                         const AxisWeights &weights) const {
  return cutBlocks(size, axesOf(dim), mesh, weights);
}

std::vector<int64_t> TensorLayout::blockSizes(size_t dim, int64_t size,
                                              const Mesh &mesh,
                                              const BlockLists &lists) const {
  if (dim < lists.size() && !lists[dim].empty())
    return lists[dim];
  int64_t shards = shardCount(dim, mesh);
  return std::vector<int64_t>(size_t(shards), size / shards);
}

namespace {
/// Every dimension's blocks under `weights`.
TensorLayout::BlockLists listsOf(const TensorLayout &layout,
                                 const std::vector<Dim> &dims, const Mesh &mesh,
                                 const AxisWeights &weights) {
  TensorLayout::BlockLists lists;
  for (size_t d = 0; d < dims.size(); ++d)
    lists.push_back(layout.blockSizes(d, dims[d].size, mesh, weights));
  return lists;
}
} // namespace

std::vector<int64_t> TensorLayout::blockShape(const std::vector<Dim> &dims,
                                              const Mesh &mesh,
                                              const AxisWeights &weights,
                                              int64_t deviceId) const {
  return blockShape(dims, mesh, listsOf(*this, dims, mesh, weights), deviceId);
}

std::vector<int64_t> TensorLayout::blockOffset(const std::vector<Dim> &dims,
                                               const Mesh &mesh,
                                               const AxisWeights &weights,
                                               int64_t deviceId) const {
  return blockOffset(dims, mesh, listsOf(*this, dims, mesh, weights), deviceId);
}

std::vector<int64_t>
TensorLayout::maxBlockShape(const std::vector<Dim> &dims, const Mesh &mesh,
                            const AxisWeights &weights) const {
  return maxBlockShape(dims, mesh, listsOf(*this, dims, mesh, weights));
}

std::vector<int64_t> TensorLayout::blockShape(const std::vector<Dim> &dims,
                                              const Mesh &mesh,
                                              const BlockLists &lists,
                                              int64_t deviceId) const {
  assert(dims.size() == splits.size() && "layout built for other dims");
  std::vector<int64_t> coords = mesh.coordinates(deviceId);
  std::vector<int64_t> shape;
  for (size_t d = 0; d < dims.size(); ++d)
    shape.push_back(blockSizes(d, dims[d].size, mesh,
                               lists)[size_t(shardIndex(d, mesh, coords))]);
  return shape;
}

std::vector<int64_t> TensorLayout::blockOffset(const std::vector<Dim> &dims,
                                               const Mesh &mesh,
                                               const BlockLists &lists,
                                               int64_t deviceId) const {
  assert(dims.size() == splits.size() && "layout built for other dims");
  std::vector<int64_t> coords = mesh.coordinates(deviceId);
  std::vector<int64_t> offset;
  for (size_t d = 0; d < dims.size(); ++d) {
    std::vector<int64_t> blocks = blockSizes(d, dims[d].size, mesh, lists);
    int64_t shard = shardIndex(d, mesh, coords);
    offset.push_back(
        std::accumulate(blocks.begin(), blocks.begin() + shard, int64_t(0)));
  }
  return offset;
}

std::vector<int64_t>
TensorLayout::maxBlockShape(const std::vector<Dim> &dims, const Mesh &mesh,
                            const BlockLists &lists) const {
  assert(dims.size() == splits.size() && "layout built for other dims");
  std::vector<int64_t> shape;
  for (size_t d = 0; d < dims.size(); ++d) {
    std::vector<int64_t> blocks = blockSizes(d, dims[d].size, mesh, lists);
    shape.push_back(*std::max_element(blocks.begin(), blocks.end()));
  }
  return shape;
}

bool TensorLayout::hasEqualBlocks(const std::vector<Dim> &dims,
                                  const Mesh &mesh,
                                  const AxisWeights &weights) const {
  assert(dims.size() == splits.size() && "layout built for other dims");
  for (size_t d = 0; d < dims.size(); ++d) {
    std::vector<int64_t> blocks = blockSizes(d, dims[d].size, mesh, weights);
    if (std::any_of(blocks.begin(), blocks.end(),
                    [&](int64_t block) { return block != blocks.front(); }))
      return false;
  }
  return true;
}

std::vector<size_t> TensorLayout::replicatedAxes(const Mesh &mesh) const {
  std::vector<size_t> axes;
  for (size_t axis = 0; axis < mesh.rank(); ++axis)
    if (std::none_of(splits.begin(), splits.end(),
                     [&](const std::vector<size_t> &split) {
                       return std::find(split.begin(), split.end(), axis) !=
                              split.end();
                     }))
      axes.push_back(axis);
  return axes;
}

int64_t TensorLayout::replicaCount(const Mesh &mesh) const {
  int64_t replicas = 1;
  for (size_t axis : replicatedAxes(mesh))
    replicas *= mesh.axisSize(axis);
  return replicas;
}

bool TensorLayout::isReplicated() const {
  return std::all_of(splits.begin(), splits.end(),
                     [](const std::vector<size_t> &s) { return s.empty(); });
}

std::string TensorLayout::str(const std::vector<Dim> &dims,
                              const Mesh &mesh) const {
  assert(dims.size() == splits.size() && "layout built for other dims");
  std::string out = "[";
  for (size_t d = 0; d < dims.size(); ++d) {
    out += (d == 0 ? "" : ", ") + dims[d].name;
    std::vector<std::string> names;
    for (size_t axis : splits[d])
      names.push_back(mesh.axisName(axis));
    if (!names.empty())
      out += ":" + joinAxes(names);
  }
  return out + "]";
}

TensorLayout shardOverReplicatedAxes(const TensorLayout &layout,
                                     const std::vector<Dim> &dims,
                                     const Mesh &mesh,
                                     const AxisWeights *weights,
                                     const std::vector<std::string> &keepWhole,
                                     const std::vector<size_t> *onlyAxes) {
  std::vector<size_t> free;
  int64_t freeSize = 1;
  for (size_t axis : layout.replicatedAxes(mesh))
    if (mesh.axisSize(axis) > 1 && (!weights || weights->isEven(axis)) &&
        (!onlyAxes || std::find(onlyAxes->begin(), onlyAxes->end(), axis) !=
                          onlyAxes->end())) {
      free.push_back(axis);
      freeSize *= mesh.axisSize(axis);
    }
  if (free.empty())
    return layout;
  std::vector<size_t> byName(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    byName[i] = i;
  std::sort(byName.begin(), byName.end(),
            [&](size_t a, size_t b) { return dims[a].name < dims[b].name; });
  for (size_t dim : byName) {
    if (dims[dim].size % (layout.shardCount(dim, mesh) * freeSize) != 0 ||
        std::find(keepWhole.begin(), keepWhole.end(), dims[dim].name) !=
            keepWhole.end())
      continue;
    std::vector<std::vector<size_t>> splits;
    for (size_t d = 0; d < dims.size(); ++d)
      splits.push_back(layout.axesOf(d));
    splits[dim].insert(splits[dim].end(), free.begin(), free.end());
    return TensorLayout::fromAxisIndices(std::move(splits));
  }
  return layout;
}

} // namespace meshc::layout
