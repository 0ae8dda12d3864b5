//===- ReshardPlan.cpp - Changing a tensor's layout -----------------------===//

#include "runtime/core/layout/ReshardPlan.h"

#include <algorithm>

namespace meshc::layout {

namespace {

using Splits = std::vector<std::vector<size_t>>;

Splits splitsOf(const TensorLayout &layout) {
  Splits splits(layout.rank());
  for (size_t d = 0; d < layout.rank(); ++d)
    splits[d] = layout.axesOf(d);
  return splits;
}

/// Length of the longest common prefix of two axis lists.
size_t commonPrefix(const std::vector<size_t> &a,
                    const std::vector<size_t> &b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n])
    ++n;
  return n;
}

bool startsWith(const std::vector<size_t> &list,
                const std::vector<size_t> &prefix) {
  return prefix.size() <= list.size() &&
         std::equal(prefix.begin(), prefix.end(), list.begin());
}

/// Finds an axis that leaves one dimension (its last, not kept there) and is
/// the next axis the target gives another dimension: one all-to-all moves it.
bool findMove(const Splits &cur, const Splits &tgt, size_t &from, size_t &to) {
  for (from = 0; from < cur.size(); ++from) {
    if (cur[from].empty())
      continue;
    size_t axis = cur[from].back();
    if (commonPrefix(cur[from], tgt[from]) == cur[from].size())
      continue;
    for (to = 0; to < cur.size(); ++to) {
      if (to == from || !startsWith(tgt[to], cur[to]) ||
          tgt[to].size() <= cur[to].size())
        continue;
      if (tgt[to][cur[to].size()] == axis)
        return true;
    }
  }
  return false;
}

} // namespace

std::vector<ReshardStep> planReshard(const TensorLayout &from,
                                     const TensorLayout &to) {
  Splits cur = splitsOf(from);
  Splits tgt = splitsOf(to);
  std::vector<ReshardStep> steps;
  auto record = [&](ReshardKind kind, size_t dim, size_t concatDim,
                    std::vector<size_t> axes) {
    steps.push_back(ReshardStep{kind, dim, concatDim, std::move(axes),
                                TensorLayout::fromAxisIndices(cur)});
  };

  size_t moveFrom, moveTo;
  while (findMove(cur, tgt, moveFrom, moveTo)) {
    size_t axis = cur[moveFrom].back();
    cur[moveFrom].pop_back();
    cur[moveTo].push_back(axis);
    record(ReshardKind::AllToAll, moveTo, moveFrom, {axis});
  }
  for (size_t d = 0; d < cur.size(); ++d) {
    size_t keep = commonPrefix(cur[d], tgt[d]);
    if (keep == cur[d].size())
      continue;
    std::vector<size_t> gathered(cur[d].begin() + keep, cur[d].end());
    cur[d].resize(keep);
    record(ReshardKind::AllGather, d, 0, std::move(gathered));
  }
  for (size_t d = 0; d < cur.size(); ++d) {
    if (tgt[d].size() == cur[d].size())
      continue;
    std::vector<size_t> sliced(tgt[d].begin() + cur[d].size(), tgt[d].end());
    cur[d] = tgt[d];
    record(ReshardKind::Slice, d, 0, std::move(sliced));
  }
  return steps;
}

const char *reshardKindName(ReshardKind kind) {
  switch (kind) {
  case ReshardKind::AllGather:
    return "all-gather";
  case ReshardKind::Slice:
    return "slice";
  case ReshardKind::AllToAll:
    return "all-to-all";
  }
  return "?";
}

int64_t groupSize(const std::vector<size_t> &axes, const Mesh &mesh) {
  int64_t size = 1;
  for (size_t axis : axes)
    size *= mesh.axisSize(axis);
  return size;
}

int64_t collectiveBytesPerDevice(CollectiveKind kind, int64_t bytes,
                                 int64_t group) {
  if (group <= 1)
    return 0;
  switch (kind) {
  case CollectiveKind::AllReduce:
    return 2 * (group - 1) * bytes / group;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return (group - 1) * bytes / group;
  case CollectiveKind::Slice:
    return 0;
  case CollectiveKind::Permute:
    return bytes;
  }
  return 0;
}

} // namespace meshc::layout
