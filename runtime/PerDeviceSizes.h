//===- PerDeviceSizes.h - Sizes that differ between devices -----*- C++ -*-===//
//
// Under device weights a dim can be cut into unequal blocks; wherever the
// .mprog gives its local size (a step's "sizes", a buffer's "shape") it then
// writes {"axes": ["b"], "blocks": [16, 16, 32]}: the block of each shard of
// those mesh axes (docs/mprog.md#per-device-sizes); so may an entry of a
// collective's member blocks. The loader resolves the
// document once per distinct set of blocks before reading it, so the steps
// and the backends only ever see integers. Internal to the loader.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_PERDEVICESIZES_H
#define MESHC_RUNTIME_PERDEVICESIZES_H

#include "runtime/core/layout/Mesh.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace meshc::runtime {

/// The per-device sizes of one .mprog document.
class PerDeviceSizes {
public:
  /// Finds and checks every per-device size of `document` (whose "mesh" is
  /// `mesh`): its axes are distinct mesh axes and it lists one block of at
  /// least 0 per shard. Throws RuntimeError naming the file and the path.
  /// (A collective that cuts or joins unequal blocks lists each member's,
  /// and the step parser checks those against each device's sizes.)
  PerDeviceSizes(const nlohmann::json &document, const layout::Mesh &mesh,
                 const std::string &fileName);

  /// Whether the document has any, or a collective listing its members'
  /// blocks.
  bool any() const { return !distinct.empty() || !memberLists.empty(); }
  /// A copy of the document with each per-device size replaced by device
  /// `deviceId`'s block, or with no device by the largest block.
  nlohmann::json resolve(std::optional<int64_t> deviceId) const;
  /// The sizes device `deviceId` has: its block of each distinct per-device
  /// size, and its own entry of each collective's member blocks (so each
  /// device's entry is checked against its sizes). Devices with equal keys
  /// run the same program.
  std::vector<int64_t> key(int64_t deviceId) const;

private:
  /// Whether `node` is a per-device size: an object of exactly "axes" and
  /// "blocks".
  static bool isPerDevice(const nlohmann::json &node);
  nlohmann::json resolveNode(const nlohmann::json &node,
                             std::optional<int64_t> deviceId) const;
  /// Whether `node` is a per-device size; checks it (`path` locates it for
  /// errors).
  bool check(const nlohmann::json &node, const std::string &path);
  void collect(const nlohmann::json &node, const std::string &path);
  /// Device `deviceId`'s shard index over mesh axes `axes`.
  int64_t shardIndex(const std::vector<std::string> &axes,
                     int64_t deviceId) const;

  const nlohmann::json &document;
  layout::Mesh mesh;
  const std::string &fileName;
  /// The member-block lists of the collectives ("blocks", "split_blocks",
  /// "concat_blocks"), with the mesh axes of their groups.
  std::vector<std::pair<std::vector<std::string>, const nlohmann::json *>>
      memberLists;
  /// The distinct per-device sizes: (axes, blocks), in first-use order.
  std::vector<std::pair<std::vector<std::string>, std::vector<int64_t>>>
      distinct;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_PERDEVICESIZES_H
