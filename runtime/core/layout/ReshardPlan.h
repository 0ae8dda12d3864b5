//===- ReshardPlan.h - Changing a tensor's layout ---------------*- C++ -*-===//
//
// The cheapest sequence of collectives that turns one layout of a tensor into
// another, and what each costs. Three primitives suffice:
//   - all-gather: a dimension split over trailing axes becomes whole over them;
//   - slice: a dimension becomes split over more (trailing) axes, locally, with
//     no communication;
//   - all-to-all: one mesh axis moves from one dimension to another.
// The SPMD partitioner materialises each step as a collective op.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CORE_LAYOUT_RESHARDPLAN_H
#define MESHC_RUNTIME_CORE_LAYOUT_RESHARDPLAN_H

#include "runtime/core/layout/Mesh.h"
#include "runtime/core/layout/TensorLayout.h"

#include <cstdint>
#include <string>
#include <vector>

namespace meshc::layout {

/// The kind of one resharding step.
enum class ReshardKind { AllGather, Slice, AllToAll };

/// One step of a reshard plan.
struct ReshardStep {
  ReshardKind kind;
  /// AllGather: the dimension that becomes whole over `axes`; Slice: the one
  /// that becomes split over `axes`; AllToAll: the one that becomes split
  /// (the split axis of the exchange).
  size_t dim = 0;
  /// AllToAll only: the dimension that becomes whole over `axes` (the concat
  /// axis of the exchange).
  size_t concatDim = 0;
  /// Mesh axis indices of the group, major to minor.
  std::vector<size_t> axes;
  /// The layout once this step is done.
  TensorLayout after = TensorLayout::replicated(0);
};

/// The steps that turn layout `from` into `to` (same tensor, same mesh), in
/// order: all-to-alls for axes that move between dimensions, then gathers,
/// then slices. Empty when the layouts are equal.
std::vector<ReshardStep> planReshard(const TensorLayout &from,
                                     const TensorLayout &to);

/// "all-gather", "slice", "all-to-all".
const char *reshardKindName(ReshardKind kind);

/// Product of the sizes of mesh axes `axes`: the size of their device group.
int64_t groupSize(const std::vector<size_t> &axes, const Mesh &mesh);

/// The collectives the SPMD partitioner emits, for cost accounting.
enum class CollectiveKind {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Slice,
  /// collective_permute: each member sends its block to at most one other.
  Permute
};

/// Bytes each device receives in a bandwidth-optimal (ring) implementation:
/// all-reduce 2(g-1)/g·B, all-gather (g-1)/g·B_out, reduce-scatter
/// (g-1)/g·B_in, all-to-all (g-1)/g·B, slice 0, permute B (one block
/// received); `bytes` is the local
/// buffer size named there and `group` the group size g.
int64_t collectiveBytesPerDevice(CollectiveKind kind, int64_t bytes,
                                 int64_t group);

} // namespace meshc::layout

#endif // MESHC_RUNTIME_CORE_LAYOUT_RESHARDPLAN_H
