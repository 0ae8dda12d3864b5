//===- Collectives.cpp - Collective communication interface ---------------===//
//
// The mesh partition into collective groups.
//
//===----------------------------------------------------------------------===//

#include "runtime/Collectives.h"

#include <map>
#include <utility>

namespace meshc::runtime {

Communicator::~Communicator() = default;
Collectives::~Collectives() = default;

GroupPartition partitionMesh(const layout::Mesh &mesh,
                             const std::vector<std::string> &axes) {
  std::vector<bool> inGroup(mesh.rank(), false);
  std::vector<size_t> axisIndices;
  for (const std::string &name : axes) {
    size_t axis = *mesh.axisIndex(name);
    inGroup[axis] = true;
    axisIndices.push_back(axis);
  }
  int64_t devices = mesh.numDevices();
  GroupPartition partition;
  partition.groupOf.resize(devices);
  partition.rankOf.resize(devices);
  // Devices agreeing on every coordinate outside `axes` share a group; the
  // key is those coordinates (group ids follow the lowest device id).
  std::map<std::vector<int64_t>, size_t> groupIds;
  for (int64_t device = 0; device < devices; ++device) {
    std::vector<int64_t> coords = mesh.coordinates(device);
    std::vector<int64_t> key;
    for (size_t axis = 0; axis < coords.size(); ++axis)
      if (!inGroup[axis])
        key.push_back(coords[axis]);
    auto [it, fresh] = groupIds.emplace(key, partition.groups.size());
    if (fresh)
      partition.groups.emplace_back();
    int64_t rank = 0;
    for (size_t axis : axisIndices)
      rank = rank * mesh.axisSize(axis) + coords[axis];
    partition.groupOf[device] = it->second;
    partition.rankOf[device] = rank;
  }
  int64_t groupSize = devices / static_cast<int64_t>(partition.groups.size());
  for (auto &group : partition.groups)
    group.resize(groupSize);
  for (int64_t device = 0; device < devices; ++device)
    partition.groups[partition.groupOf[device]][partition.rankOf[device]] =
        device;
  return partition;
}

std::vector<int64_t> groupBlocks(const std::vector<int64_t> &listed,
                                 int64_t members, int64_t size) {
  if (!listed.empty())
    return listed;
  return std::vector<int64_t>(size_t(members), size / members);
}

std::vector<int64_t> blockStarts(const std::vector<int64_t> &blocks) {
  std::vector<int64_t> starts;
  int64_t start = 0;
  for (int64_t block : blocks) {
    starts.push_back(start);
    start += block;
  }
  return starts;
}

std::vector<int64_t> chunkSizes(int64_t outer, int64_t inner,
                                const std::vector<int64_t> &blocks,
                                int64_t elementBytes) {
  std::vector<int64_t> sizes;
  for (int64_t block : blocks)
    sizes.push_back(outer * block * inner * elementBytes);
  return sizes;
}

std::vector<StridedCopy> splitCopies(int64_t outer, int64_t inner,
                                     const std::vector<int64_t> &blocks,
                                     int64_t elementBytes) {
  int64_t row = 0;
  for (int64_t block : blocks)
    row += block * inner * elementBytes;
  std::vector<StridedCopy> copies;
  int64_t chunk = 0;
  for (int64_t start : blockStarts(blocks)) {
    int64_t width = blocks[copies.size()] * inner * elementBytes;
    copies.push_back(
        {chunk, width, start * inner * elementBytes, row, width, outer});
    chunk += width * outer;
  }
  return copies;
}

std::vector<StridedCopy> concatCopies(int64_t outer, int64_t inner,
                                      const std::vector<int64_t> &blocks,
                                      int64_t elementBytes) {
  std::vector<StridedCopy> copies =
      splitCopies(outer, inner, blocks, elementBytes);
  for (StridedCopy &copy : copies) {
    std::swap(copy.dstOffset, copy.srcOffset);
    std::swap(copy.dstPitch, copy.srcPitch);
  }
  return copies;
}

} // namespace meshc::runtime
