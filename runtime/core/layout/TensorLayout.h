//===- TensorLayout.h - How one tensor is split over a mesh -----*- C++ -*-===//
//
// A tensor layout records, for each dimension of one tensor, the mesh axes it
// is split over (major to minor); a tensor is replicated over every mesh axis
// none of its dimensions uses. From it follow each device's block of the
// tensor: the slice shape (the same on every device) and the element offset
// of the block, where the shard index of a dimension split over axes
// [a1, a2] is coord[a1] * size(a2) + coord[a2]. On a mesh with device weights
// (AxisWeights) the blocks differ between devices: blockShape and
// blockOffset give each device's.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CORE_LAYOUT_TENSORLAYOUT_H
#define MESHC_RUNTIME_CORE_LAYOUT_TENSORLAYOUT_H

#include "runtime/core/layout/AxisWeights.h"
#include "runtime/core/layout/Error.h"
#include "runtime/core/layout/LayoutRules.h"
#include "runtime/core/layout/Mesh.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace meshc::layout {

/// A named tensor dimension with its global size.
struct Dim {
  std::string name;
  int64_t size = 1;
};

/// The number of bytes of one element of `elementType` ("f32", "bf16",
/// "f16", "f64", "i64", "i32", "i8"), or 0 for an unknown type.
int64_t elementBytes(std::string_view elementType);

/// Which mesh axes each dimension of one tensor is split over. The dims and
/// the mesh are not stored: pass the ones the layout was built for.
class TensorLayout {
public:
  /// The layout of a tensor of rank `rank` that is not split at all.
  static TensorLayout replicated(size_t rank);

  /// Applies `rules` by dimension name (Mesh-TensorFlow semantics): each
  /// dimension with a rule is split over the rule's axes, the others are not
  /// split. Fails, naming `tensorName`, when a rule's axis is not in `mesh`,
  /// one mesh axis would split two dimensions of the tensor, or a dimension
  /// size is not divisible by the number of its shards (unless `weights`
  /// allow it: AxisWeights::allowsIndivisible).
  static Result<TensorLayout> compute(std::string_view tensorName,
                                      const std::vector<Dim> &dims,
                                      const LayoutRules &rules,
                                      const Mesh &mesh,
                                      const AxisWeights *weights = nullptr);

  /// Builds a layout from explicit mesh axis names per dimension (one entry
  /// per dim, empty = not split), with the same checks as compute() plus:
  /// an axis listed twice for one dimension, and the wrong number of entries.
  static Result<TensorLayout>
  fromAxes(std::string_view tensorName, const std::vector<Dim> &dims,
           const std::vector<std::vector<std::string>> &axes, const Mesh &mesh,
           const AxisWeights *weights = nullptr);

  /// A layout from mesh axis indices per dimension, without checks: for
  /// layouts derived from checked ones (e.g. the steps of a reshard plan).
  static TensorLayout fromAxisIndices(std::vector<std::vector<size_t>> splits) {
    return TensorLayout(std::move(splits));
  }

  /// The tensor's rank.
  size_t rank() const { return splits.size(); }
  /// The mesh axis indices dimension `dim` is split over, major to minor.
  const std::vector<size_t> &axesOf(size_t dim) const;
  /// The number of blocks dimension `dim` is cut into.
  int64_t shardCount(size_t dim, const Mesh &mesh) const;
  /// Which of those blocks the device at `coords` holds.
  int64_t shardIndex(size_t dim, const Mesh &mesh,
                     const std::vector<int64_t> &coords) const;

  /// The shape of every device's block.
  std::vector<int64_t> sliceShape(const std::vector<Dim> &dims,
                                  const Mesh &mesh) const;
  /// The element offsets of device `deviceId`'s block in the global tensor.
  std::vector<int64_t> sliceOffset(const std::vector<Dim> &dims,
                                   const Mesh &mesh, int64_t deviceId) const;
  /// The number of elements of every device's block.
  int64_t numElementsPerDevice(const std::vector<Dim> &dims,
                               const Mesh &mesh) const;

  /// The sizes of the blocks dimension `dim` of `size` elements is cut into
  /// under `weights`, by shard index (cutBlocks).
  std::vector<int64_t> blockSizes(size_t dim, int64_t size, const Mesh &mesh,
                                  const AxisWeights &weights) const;
  /// The shape of device `deviceId`'s block under `weights`.
  std::vector<int64_t> blockShape(const std::vector<Dim> &dims,
                                  const Mesh &mesh, const AxisWeights &weights,
                                  int64_t deviceId) const;
  /// The element offsets of device `deviceId`'s block under `weights`.
  std::vector<int64_t> blockOffset(const std::vector<Dim> &dims,
                                   const Mesh &mesh, const AxisWeights &weights,
                                   int64_t deviceId) const;
  /// The largest block along each dimension under `weights`: what a device
  /// program sized for every device holds.
  std::vector<int64_t> maxBlockShape(const std::vector<Dim> &dims,
                                     const Mesh &mesh,
                                     const AxisWeights &weights) const;
  /// Per dimension, the sizes of its blocks by shard index as a compiled
  /// program lists them (the runtime never cuts blocks itself, see
  /// splitByWeights); an empty list: the dimension's blocks are equal,
  /// size / shardCount each.
  using BlockLists = std::vector<std::vector<int64_t>>;
  /// The sizes of the blocks of dimension `dim` of `size` elements: its
  /// list in `lists`, or equal blocks where it has none.
  std::vector<int64_t> blockSizes(size_t dim, int64_t size, const Mesh &mesh,
                                  const BlockLists &lists) const;
  /// blockShape, blockOffset and maxBlockShape by listed blocks.
  std::vector<int64_t> blockShape(const std::vector<Dim> &dims,
                                  const Mesh &mesh, const BlockLists &lists,
                                  int64_t deviceId) const;
  std::vector<int64_t> blockOffset(const std::vector<Dim> &dims,
                                   const Mesh &mesh, const BlockLists &lists,
                                   int64_t deviceId) const;
  std::vector<int64_t> maxBlockShape(const std::vector<Dim> &dims,
                                     const Mesh &mesh,
                                     const BlockLists &lists) const;
  /// Whether every device's block has the same shape under `weights`.
  bool hasEqualBlocks(const std::vector<Dim> &dims, const Mesh &mesh,
                      const AxisWeights &weights) const;

  /// The mesh axes no dimension is split over, in mesh order: the tensor is
  /// replicated over them.
  std::vector<size_t> replicatedAxes(const Mesh &mesh) const;
  /// How many devices hold each block: the product of replicatedAxes' sizes.
  int64_t replicaCount(const Mesh &mesh) const;
  /// True when no dimension is split.
  bool isReplicated() const;

  /// "[batch:b, hidden]", "[batch:b+m, d]"; "[]" for a scalar.
  std::string str(const std::vector<Dim> &dims, const Mesh &mesh) const;

  bool operator==(const TensorLayout &other) const {
    return splits == other.splits;
  }
  bool operator!=(const TensorLayout &other) const { return !(*this == other); }

private:
  explicit TensorLayout(std::vector<std::vector<size_t>> splits)
      : splits(std::move(splits)) {}

  /// Per dimension, the mesh axis indices it is split over.
  std::vector<std::vector<size_t>> splits;
};

/// `layout` split further over the mesh axes it replicates the tensor on
/// (those of more than one device, in mesh order), appended as the minor
/// axes of the first dimension by name whose size they divide together with
/// its current split; `layout` itself when no axis replicates it or no
/// dimension divides. The shard of optimizer state each device keeps under
/// --shard-optimizer (ZeRO-1): choosing by name gives every tensor of one
/// parameter's update the same split. Axes `weights` weigh unevenly are
/// left out: the state stays whole along them. Dimensions named in
/// `keepWhole` are never chosen, and with `onlyAxes` only those axes are
/// (--shard-params keeps a repeat's layer dim whole, the loop slicing it, and
/// shards over the data-parallel axes only).
TensorLayout
shardOverReplicatedAxes(const TensorLayout &layout,
                        const std::vector<Dim> &dims, const Mesh &mesh,
                        const AxisWeights *weights = nullptr,
                        const std::vector<std::string> &keepWhole = {},
                        const std::vector<size_t> *onlyAxes = nullptr);

} // namespace meshc::layout

#endif // MESHC_RUNTIME_CORE_LAYOUT_TENSORLAYOUT_H
