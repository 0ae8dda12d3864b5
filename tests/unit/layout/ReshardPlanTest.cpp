//===- ReshardPlanTest.cpp - tests of reshard plans -----------------------===//
//
// Every plan between every pair of valid layouts of a small tensor is executed
// symbolically: each device's block (offset and extent per dimension) is moved
// the way the collective moves data, checking that gathered blocks are
// adjacent and in group-rank order, and the final blocks must be the target
// layout's. Also pins which collectives the common cases choose.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/ReshardPlan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

using namespace meshc::layout;

namespace {

struct Block {
  std::vector<int64_t> offset, extent;
};

Mesh makeMesh(std::vector<MeshAxis> axes) {
  Result<Mesh> mesh = Mesh::fromAxes(std::move(axes));
  EXPECT_TRUE(mesh.ok());
  return *mesh;
}

/// Devices of `device`'s group over `axes`, by group rank (first axis major).
std::vector<int64_t> groupOf(const Mesh &mesh, int64_t device,
                             const std::vector<size_t> &axes) {
  std::vector<int64_t> members;
  std::vector<int64_t> coords = mesh.coordinates(device);
  std::function<void(size_t)> walk = [&](size_t i) {
    if (i == axes.size()) {
      members.push_back(mesh.deviceId(coords));
      return;
    }
    for (int64_t c = 0; c < mesh.axisSize(axes[i]); ++c) {
      coords[axes[i]] = c;
      walk(i + 1);
    }
  };
  walk(0);
  return members;
}

std::vector<Block> blocksOf(const TensorLayout &layout,
                            const std::vector<Dim> &dims, const Mesh &mesh) {
  std::vector<Block> blocks;
  for (int64_t d = 0; d < mesh.numDevices(); ++d)
    blocks.push_back(
        {layout.sliceOffset(dims, mesh, d), layout.sliceShape(dims, mesh)});
  return blocks;
}

/// Moves every device's block the way `step` moves data; fails the test when
/// the step's preconditions on the data do not hold.
void apply(const ReshardStep &step, const Mesh &mesh,
           std::vector<Block> &blocks) {
  std::vector<Block> next = blocks;
  for (int64_t device = 0; device < mesh.numDevices(); ++device) {
    std::vector<int64_t> group = groupOf(mesh, device, step.axes);
    int64_t g = group.size();
    int64_t rank =
        std::find(group.begin(), group.end(), device) - group.begin();
    Block &out = next[device];
    const Block &mine = blocks[device];
    switch (step.kind) {
    case ReshardKind::AllGather:
      for (int64_t r = 0; r < g; ++r) {
        const Block &other = blocks[group[r]];
        for (size_t d = 0; d < mine.offset.size(); ++d) {
          int64_t expected =
              d == step.dim ? blocks[group[0]].offset[d] + r * mine.extent[d]
                            : mine.offset[d];
          ASSERT_EQ(other.offset[d], expected)
              << "gathered blocks not adjacent in rank order";
        }
      }
      out.offset[step.dim] = blocks[group[0]].offset[step.dim];
      out.extent[step.dim] = mine.extent[step.dim] * g;
      break;
    case ReshardKind::Slice:
      ASSERT_EQ(mine.extent[step.dim] % g, 0);
      out.extent[step.dim] = mine.extent[step.dim] / g;
      out.offset[step.dim] =
          mine.offset[step.dim] + rank * out.extent[step.dim];
      break;
    case ReshardKind::AllToAll:
      for (int64_t r = 0; r < g; ++r)
        ASSERT_EQ(blocks[group[r]].offset[step.concatDim],
                  blocks[group[0]].offset[step.concatDim] +
                      r * mine.extent[step.concatDim]);
      ASSERT_EQ(mine.extent[step.dim] % g, 0);
      out.extent[step.dim] = mine.extent[step.dim] / g;
      out.offset[step.dim] =
          mine.offset[step.dim] + rank * out.extent[step.dim];
      out.offset[step.concatDim] = blocks[group[0]].offset[step.concatDim];
      out.extent[step.concatDim] = mine.extent[step.concatDim] * g;
      break;
    }
  }
  blocks = next;
}

/// Every valid layout of `dims` on `mesh` (each axis splits at most one dim,
/// in every order, sizes divisible).
std::vector<TensorLayout> allLayouts(const std::vector<Dim> &dims,
                                     const Mesh &mesh) {
  std::vector<TensorLayout> layouts;
  std::vector<std::vector<size_t>> splits(dims.size());
  std::function<void(size_t)> assign = [&](size_t axis) {
    if (axis == mesh.rank()) {
      std::vector<std::vector<std::string>> names(dims.size());
      for (size_t d = 0; d < dims.size(); ++d)
        for (size_t a : splits[d])
          names[d].push_back(mesh.axisName(a));
      Result<TensorLayout> layout =
          TensorLayout::fromAxes("t", dims, names, mesh);
      if (layout.ok())
        layouts.push_back(*layout);
      return;
    }
    assign(axis + 1);
    for (size_t d = 0; d < dims.size(); ++d)
      for (size_t pos = 0; pos <= splits[d].size(); ++pos) {
        splits[d].insert(splits[d].begin() + pos, axis);
        assign(axis + 1);
        splits[d].erase(splits[d].begin() + pos);
      }
  };
  assign(0);
  return layouts;
}

void checkAllPairs(const std::vector<Dim> &dims, const Mesh &mesh,
                   size_t expectedLayouts) {
  std::vector<TensorLayout> layouts = allLayouts(dims, mesh);
  ASSERT_EQ(layouts.size(), expectedLayouts);
  for (const TensorLayout &from : layouts)
    for (const TensorLayout &to : layouts) {
      std::vector<Block> blocks = blocksOf(from, dims, mesh);
      std::vector<ReshardStep> steps = planReshard(from, to);
      for (const ReshardStep &step : steps) {
        apply(step, mesh, blocks);
        if (::testing::Test::HasFatalFailure())
          FAIL() << "from " << from.str(dims, mesh) << " to "
                 << to.str(dims, mesh);
      }
      std::vector<Block> want = blocksOf(to, dims, mesh);
      for (int64_t d = 0; d < mesh.numDevices(); ++d) {
        ASSERT_EQ(blocks[d].offset, want[d].offset)
            << "from " << from.str(dims, mesh) << " to " << to.str(dims, mesh);
        ASSERT_EQ(blocks[d].extent, want[d].extent);
      }
      if (from == to) {
        EXPECT_TRUE(steps.empty());
      } else {
        ASSERT_FALSE(steps.empty());
        EXPECT_EQ(steps.back().after, to);
      }
    }
}

TEST(ReshardPlanTest, EveryPairOn2x2x2) {
  // Each of 3 axes unused or in one of 3 dims, in any order:
  // 1 + 3*3 + 3*(3*4) + 3*4*5 = 106 layouts.
  checkAllPairs({{"a", 8}, {"b", 8}, {"c", 8}},
                makeMesh({{"x", 2}, {"y", 2}, {"z", 2}}), 106);
}

TEST(ReshardPlanTest, EveryPairOn2x4) {
  // 11 arrangements of x and y; b=4 cannot take both (8 shards).
  checkAllPairs({{"a", 8}, {"b", 4}}, makeMesh({{"x", 2}, {"y", 4}}), 9);
}

TEST(ReshardPlanTest, MovingOneAxisIsOneAllToAll) {
  Mesh mesh = makeMesh({{"m", 4}});
  TensorLayout from = TensorLayout::fromAxisIndices({{0}, {}});
  TensorLayout to = TensorLayout::fromAxisIndices({{}, {0}});
  std::vector<ReshardStep> steps = planReshard(from, to);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].kind, ReshardKind::AllToAll);
  EXPECT_EQ(steps[0].dim, 1u);
  EXPECT_EQ(steps[0].concatDim, 0u);
  EXPECT_EQ(steps[0].axes, std::vector<size_t>{0});
}

TEST(ReshardPlanTest, SplitToWholeIsOneGatherAndBackIsOneSlice) {
  TensorLayout split = TensorLayout::fromAxisIndices({{0, 1}, {}});
  TensorLayout whole = TensorLayout::fromAxisIndices({{}, {}});
  std::vector<ReshardStep> gather = planReshard(split, whole);
  ASSERT_EQ(gather.size(), 1u);
  EXPECT_EQ(gather[0].kind, ReshardKind::AllGather);
  EXPECT_EQ(gather[0].axes, (std::vector<size_t>{0, 1}));
  std::vector<ReshardStep> slice = planReshard(whole, split);
  ASSERT_EQ(slice.size(), 1u);
  EXPECT_EQ(slice[0].kind, ReshardKind::Slice);
  EXPECT_EQ(slice[0].axes, (std::vector<size_t>{0, 1}));
}

TEST(ReshardPlanTest, ReorderingAxesOfOneDimGathersThenSlices) {
  TensorLayout xy = TensorLayout::fromAxisIndices({{0, 1}});
  TensorLayout yx = TensorLayout::fromAxisIndices({{1, 0}});
  std::vector<ReshardStep> steps = planReshard(xy, yx);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].kind, ReshardKind::AllGather);
  EXPECT_EQ(steps[1].kind, ReshardKind::Slice);
}

TEST(ReshardPlanTest, CollectiveBytes) {
  EXPECT_EQ(collectiveBytesPerDevice(CollectiveKind::AllReduce, 1024, 4), 1536);
  EXPECT_EQ(collectiveBytesPerDevice(CollectiveKind::AllGather, 1024, 4), 768);
  EXPECT_EQ(collectiveBytesPerDevice(CollectiveKind::ReduceScatter, 1024, 2),
            512);
  EXPECT_EQ(collectiveBytesPerDevice(CollectiveKind::AllToAll, 1024, 1), 0);
  EXPECT_EQ(collectiveBytesPerDevice(CollectiveKind::Slice, 1024, 8), 0);
}

} // namespace
