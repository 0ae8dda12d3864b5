//===- TensorLayoutTest.cpp - Tests of tensor layouts ---------------------===//
//
// Applying layout rules to tensors (replicated, split, split over several
// axes), slice shapes and offsets, the exact tiling of a tensor by the
// devices' blocks on 2x4 and 2x2x2 meshes, and every layout error.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/TensorLayout.h"

#include "ErrorMatchers.h"

#include <gtest/gtest.h>

#include <functional>

using namespace meshc::layout;

namespace {

using Shape = std::vector<int64_t>;
using Axes = std::vector<size_t>;

Mesh mesh(std::string_view text) {
  Result<Mesh> parsed = Mesh::parse(text);
  EXPECT_TRUE(parsed.ok()) << text;
  return parsed.ok() ? *parsed : Mesh();
}

LayoutRules rules(std::string_view text) {
  Result<LayoutRules> parsed = LayoutRules::parse(text);
  EXPECT_TRUE(parsed.ok()) << text;
  return parsed.ok() ? *parsed : LayoutRules();
}

TensorLayout computeOk(const std::vector<Dim> &dims, std::string_view layout,
                       const Mesh &onMesh) {
  Result<TensorLayout> computed =
      TensorLayout::compute("t", dims, rules(layout), onMesh);
  EXPECT_TRUE(computed.ok()) << layout << ": " << computed.error().message;
  return computed.ok() ? *computed : TensorLayout::replicated(dims.size());
}

TEST(ElementBytes, KnownAndUnknownTypes) {
  EXPECT_EQ(elementBytes("f32"), 4);
  EXPECT_EQ(elementBytes("i32"), 4);
  EXPECT_EQ(elementBytes("bf16"), 2);
  EXPECT_EQ(elementBytes("f16"), 2);
  EXPECT_EQ(elementBytes("f64"), 8);
  EXPECT_EQ(elementBytes("i64"), 8);
  EXPECT_EQ(elementBytes("i8"), 1);
  EXPECT_EQ(elementBytes("f8"), 0);
  EXPECT_EQ(elementBytes(""), 0);
}

TEST(TensorLayout, NoRulesMeansReplicated) {
  Mesh m = mesh("b:4;m:2");
  std::vector<Dim> dims = {{"batch", 8}, {"hidden", 6}};
  TensorLayout layout = computeOk(dims, "", m);
  EXPECT_TRUE(layout.isReplicated());
  EXPECT_EQ(layout, TensorLayout::replicated(2));
  EXPECT_EQ(layout.sliceShape(dims, m), (Shape{8, 6}));
  EXPECT_EQ(layout.sliceOffset(dims, m, 7), (Shape{0, 0}));
  EXPECT_EQ(layout.replicatedAxes(m), (Axes{0, 1}));
  EXPECT_EQ(layout.replicaCount(m), 8);
  EXPECT_EQ(layout.numElementsPerDevice(dims, m), 48);
  EXPECT_EQ(layout.str(dims, m), "[batch, hidden]");
}

TEST(TensorLayout, RulesApplyByDimensionName) {
  Mesh m = mesh("b:4;m:2");
  std::vector<Dim> dims = {{"batch", 8}, {"hidden", 6}};
  // 'd_ff' is not a dimension of this tensor: its rule does not apply.
  TensorLayout layout = computeOk(dims, "d_ff:m;batch:b", m);
  EXPECT_FALSE(layout.isReplicated());
  EXPECT_EQ(layout.rank(), 2u);
  EXPECT_EQ(layout.axesOf(0), (Axes{0}));
  EXPECT_EQ(layout.axesOf(1), Axes{});
  EXPECT_EQ(layout.shardCount(0, m), 4);
  EXPECT_EQ(layout.shardCount(1, m), 1);
  EXPECT_EQ(layout.sliceShape(dims, m), (Shape{2, 6}));
  // Device 5 is at (b=2, m=1).
  EXPECT_EQ(layout.sliceOffset(dims, m, 5), (Shape{4, 0}));
  EXPECT_EQ(layout.replicatedAxes(m), (Axes{1}));
  EXPECT_EQ(layout.replicaCount(m), 2);
  EXPECT_EQ(layout.numElementsPerDevice(dims, m), 12);
  EXPECT_EQ(layout.str(dims, m), "[batch:b, hidden]");
}

TEST(TensorLayout, TwoDimensionsOnTwoAxes) {
  Mesh m = mesh("b:4;m:2");
  std::vector<Dim> dims = {{"batch", 8}, {"d_ff", 6}};
  TensorLayout layout = computeOk(dims, "batch:b;d_ff:m", m);
  EXPECT_EQ(layout.sliceShape(dims, m), (Shape{2, 3}));
  EXPECT_EQ(layout.sliceOffset(dims, m, 5), (Shape{4, 3}));
  EXPECT_TRUE(layout.replicatedAxes(m).empty());
  EXPECT_EQ(layout.replicaCount(m), 1);
  EXPECT_EQ(layout.str(dims, m), "[batch:b, d_ff:m]");
}

TEST(TensorLayout, MultiAxisSplitIsMajorToMinor) {
  Mesh m = mesh("b:4;m:2");
  std::vector<Dim> dims = {{"batch", 16}, {"d", 3}};
  TensorLayout bm = computeOk(dims, "batch:b+m", m);
  EXPECT_EQ(bm.axesOf(0), (Axes{0, 1}));
  EXPECT_EQ(bm.shardCount(0, m), 8);
  EXPECT_EQ(bm.sliceShape(dims, m), (Shape{2, 3}));
  // Device 5 is at (b=2, m=1): shard 2 * size(m) + 1 = 5.
  EXPECT_EQ(bm.shardIndex(0, m, {2, 1}), 5);
  EXPECT_EQ(bm.sliceOffset(dims, m, 5), (Shape{10, 0}));
  EXPECT_EQ(bm.str(dims, m), "[batch:b+m, d]");

  TensorLayout mb = computeOk(dims, "batch:m+b", m);
  EXPECT_EQ(mb.axesOf(0), (Axes{1, 0}));
  // Shard 1 * size(b) + 2 = 6.
  EXPECT_EQ(mb.shardIndex(0, m, {2, 1}), 6);
  EXPECT_EQ(mb.sliceOffset(dims, m, 5), (Shape{12, 0}));
  EXPECT_EQ(mb.str(dims, m), "[batch:m+b, d]");
  EXPECT_NE(bm, mb);
}

TEST(TensorLayout, ScalarAndSingleDevice) {
  Mesh m = mesh("b:4");
  TensorLayout scalar = computeOk({}, "batch:b", m);
  EXPECT_EQ(scalar.str({}, m), "[]");
  EXPECT_TRUE(scalar.sliceShape({}, m).empty());
  EXPECT_EQ(scalar.numElementsPerDevice({}, m), 1);
  EXPECT_EQ(scalar.replicaCount(m), 4);

  std::vector<Dim> dims = {{"batch", 5}};
  TensorLayout single = computeOk(dims, "", Mesh::single());
  EXPECT_EQ(single.sliceShape(dims, Mesh::single()), Shape{5});
  EXPECT_EQ(single.sliceOffset(dims, Mesh::single(), 0), Shape{0});
  EXPECT_EQ(single.replicaCount(Mesh::single()), 1);
}

TEST(TensorLayout, FromAxesMatchesCompute) {
  Mesh m = mesh("x:2;y:2;z:2");
  std::vector<Dim> dims = {{"a", 4}, {"b", 2}, {"c", 3}};
  Result<TensorLayout> explicitAxes =
      TensorLayout::fromAxes("t", dims, {{"z", "x"}, {"y"}, {}}, m);
  ASSERT_TRUE(explicitAxes.ok());
  EXPECT_EQ(*explicitAxes, computeOk(dims, "a:z+x;b:y", m));
  EXPECT_EQ(explicitAxes->str(dims, m), "[a:z+x, b:y, c]");
}

/// Checks that the blocks `blockOf(device)` (offset, shape) cover every
/// element of the tensor exactly `replicas` times, each inside the tensor.
void expectBlocksTile(
    const std::vector<Dim> &dims, const Mesh &m, int64_t replicas,
    const std::function<std::pair<Shape, Shape>(int64_t)> &blockOf) {
  int64_t total = 1;
  for (const Dim &dim : dims)
    total *= dim.size;
  std::vector<int> coverage(static_cast<size_t>(total), 0);
  for (int64_t device = 0; device < m.numDevices(); ++device) {
    auto [offset, shape] = blockOf(device);
    // Visit every element of the block in row-major order.
    std::function<void(size_t, int64_t)> visit = [&](size_t d, int64_t flat) {
      if (d == dims.size()) {
        ++coverage[static_cast<size_t>(flat)];
        return;
      }
      ASSERT_LE(offset[d] + shape[d], dims[d].size);
      for (int64_t i = 0; i < shape[d]; ++i)
        visit(d + 1, flat * dims[d].size + offset[d] + i);
    };
    visit(0, 0);
  }
  for (size_t i = 0; i < coverage.size(); ++i)
    ASSERT_EQ(coverage[i], replicas) << "element " << i;
}

/// The even slices tile the tensor replicaCount() times.
void expectExactTiling(const std::vector<Dim> &dims,
                       std::string_view layoutText, const Mesh &m) {
  SCOPED_TRACE(std::string(layoutText) + " on " + m.str());
  TensorLayout layout = computeOk(dims, layoutText, m);
  Shape slice = layout.sliceShape(dims, m);
  int64_t replicas = layout.replicaCount(m);
  expectBlocksTile(dims, m, replicas, [&](int64_t device) {
    return std::make_pair(layout.sliceOffset(dims, m, device), slice);
  });
  int64_t total = 1;
  for (const Dim &dim : dims)
    total *= dim.size;
  EXPECT_EQ(layout.numElementsPerDevice(dims, m) * m.numDevices(),
            total * replicas);
}

TEST(TensorLayoutTiling, TwoByFourMesh) {
  Mesh m = mesh("b:2;m:4");
  std::vector<Dim> dims = {{"batch", 8}, {"d", 16}, {"h", 4}};
  for (const char *layout : {"", "batch:b", "batch:m", "batch:b;d:m", "d:b;h:m",
                             "batch:b+m", "batch:m+b", "d:m+b", "h:b;d:m"})
    expectExactTiling(dims, layout, m);
}

TEST(TensorLayoutTiling, TwoByTwoByTwoMesh) {
  Mesh m = mesh("x:2;y:2;z:2");
  std::vector<Dim> dims = {{"batch", 8}, {"d", 4}, {"h", 6}};
  for (const char *layout :
       {"", "batch:x", "batch:y;d:z", "batch:x+y+z", "batch:z+x;h:y",
        "d:y+x;batch:z", "batch:x;d:y;h:z"})
    expectExactTiling(dims, layout, m);
}

TEST(TensorLayoutErrors, MeshAxisUsedByTwoDimensions) {
  Mesh m = mesh("b:4;m:2");
  std::string hint = "split one of them over another mesh axis or leave it "
                     "unsplit";
  EXPECT_LAYOUT_ERROR(
      TensorLayout::compute("h", {{"batch", 8}, {"d_ff", 8}},
                            rules("batch:m;d_ff:m"), m),
      "tensor 'h' splits dimensions 'batch' and 'd_ff' over the same mesh "
      "axis 'm'",
      hint, 0, 0);
  EXPECT_LAYOUT_ERROR(
      TensorLayout::compute("h", {{"batch", 8}, {"d_ff", 8}},
                            rules("batch:b+m;d_ff:m"), m),
      "tensor 'h' splits dimensions 'batch' and 'd_ff' over the same mesh "
      "axis 'm'",
      hint, 0, 0);
}

TEST(TensorLayoutErrors, NotDivisible) {
  EXPECT_LAYOUT_ERROR(
      TensorLayout::compute("w1", {{"io", 784}, {"hidden", 1000}},
                            rules("hidden:m"), mesh("b:4;m:3")),
      "tensor 'w1' dimension 'hidden' (size 1000) is not divisible by mesh "
      "axis 'm' (size 3)",
      "leave 'hidden' unsplit or make its size a multiple of 3 (e.g. 999 or "
      "1002)",
      0, 0);
  EXPECT_LAYOUT_ERROR(
      TensorLayout::compute("x", {{"batch", 12}}, rules("batch:b+m"),
                            mesh("b:4;m:2")),
      "tensor 'x' dimension 'batch' (size 12) is not divisible by mesh axes "
      "'b+m' (size 4 x 2 = 8)",
      "leave 'batch' unsplit or make its size a multiple of 8 (e.g. 8 or 16)",
      0, 0);
  EXPECT_LAYOUT_ERROR(
      TensorLayout::compute("x", {{"batch", 3}}, rules("batch:b"), mesh("b:4")),
      "tensor 'x' dimension 'batch' (size 3) is not divisible by mesh axis "
      "'b' (size 4)",
      "leave 'batch' unsplit or make its size a multiple of 4 (e.g. 4)", 0, 0);
  // The largest size split in two: no next multiple (its sum overflowed, a
  // signed overflow while building the hint, found by mutating .mprog files).
  EXPECT_LAYOUT_ERROR(
      TensorLayout::compute("x", {{"batch", INT64_MAX}}, rules("batch:b"),
                            mesh("b:2")),
      "tensor 'x' dimension 'batch' (size 9223372036854775807) is not "
      "divisible by mesh axis 'b' (size 2)",
      "leave 'batch' unsplit or make its size a multiple of 2 (e.g. "
      "9223372036854775806)",
      0, 0);
}

TEST(TensorLayoutErrors, UnknownMeshAxis) {
  Mesh m = mesh("b:4;m:2");
  EXPECT_LAYOUT_ERROR(
      TensorLayout::compute("x", {{"batch", 8}}, rules("batch:c"), m),
      "tensor 'x' dimension 'batch' is split over mesh axis 'c', which is not "
      "in the mesh (axes: 'b', 'm')",
      "add 'c' to the mesh or split 'batch' over one of its axes", 0, 0);
  EXPECT_LAYOUT_ERROR(
      TensorLayout::compute("x", {{"batch", 8}}, rules("batch:bb"), m),
      "tensor 'x' dimension 'batch' is split over mesh axis 'bb', which is "
      "not in the mesh (axes: 'b', 'm')",
      "did you mean 'b'?", 0, 0);
}

TEST(TensorLayoutErrors, FromAxesChecks) {
  Mesh m = mesh("b:4;m:2");
  std::vector<Dim> dims = {{"batch", 8}, {"d", 8}};
  EXPECT_LAYOUT_ERROR(TensorLayout::fromAxes("x", dims, {{"b"}}, m),
                      "layout of tensor 'x' has 1 entry but the tensor has 2 "
                      "dimensions",
                      "give one list of mesh axes per dimension", 0, 0);
  EXPECT_LAYOUT_ERROR(TensorLayout::fromAxes("x", dims, {{"b", "b"}, {}}, m),
                      "tensor 'x' dimension 'batch' lists mesh axis 'b' twice",
                      "a mesh axis can split a dimension only once", 0, 0);
  EXPECT_LAYOUT_ERROR(
      TensorLayout::fromAxes("x", {{"d", 8}, {"d", 8}}, {{}, {}}, m),
      "tensor 'x' has two dimensions named 'd'",
      "give each dimension of a tensor its own name", 0, 0);
  EXPECT_LAYOUT_ERROR(TensorLayout::fromAxes("x", {{"d", 0}}, {{}}, m),
                      "tensor 'x' dimension 'd' has size 0; sizes must be "
                      "positive",
                      "", 0, 0);
}

TEST(ShardOverReplicatedAxes, SplitsTheFirstDividingDimByName) {
  Mesh m = mesh("b:2;m:2");
  std::vector<Dim> dims = {{"io", 64}, {"hidden", 128}};
  TensorLayout plain = computeOk(dims, "hidden:m", m);
  // 'hidden' sorts first and divides by m (2) times b (2).
  TensorLayout sharded = shardOverReplicatedAxes(plain, dims, m);
  EXPECT_EQ(sharded.axesOf(0), Axes{});
  EXPECT_EQ(sharded.axesOf(1), (Axes{1, 0}));
  EXPECT_EQ(sharded.str(dims, m), "[io, hidden:m+b]");
  // Every axis already used: unchanged.
  TensorLayout full = computeOk(dims, "io:b;hidden:m", m);
  EXPECT_EQ(shardOverReplicatedAxes(full, dims, m), full);
}

TEST(ShardOverReplicatedAxes, SkipsDimsTheAxesDoNotDivide) {
  Mesh m = mesh("b:4;one:1");
  std::vector<Dim> dims = {{"a", 6}, {"c", 8}};
  TensorLayout plain = computeOk(dims, "", m);
  // 'a' (6) is not divisible by 4; the axis of one device is not used.
  EXPECT_EQ(shardOverReplicatedAxes(plain, dims, m).str(dims, m), "[a, c:b]");
  std::vector<Dim> odd = {{"a", 6}, {"c", 10}};
  TensorLayout none = computeOk(odd, "", m);
  EXPECT_EQ(shardOverReplicatedAxes(none, odd, m), none);
  // A scalar has nothing to split.
  TensorLayout scalar = computeOk({}, "", m);
  EXPECT_EQ(shardOverReplicatedAxes(scalar, {}, m), scalar);
}

TEST(ShardOverReplicatedAxes, KeepsNamedDimsWhole) {
  // --shard-params keeps a repeat's layer dim whole: the next dim by name.
  Mesh m = mesh("b:2");
  std::vector<Dim> dims = {{"layers", 4}, {"d_model", 6}, {"d_ff", 8}};
  TensorLayout plain = computeOk(dims, "", m);
  EXPECT_EQ(shardOverReplicatedAxes(plain, dims, m).str(dims, m),
            "[layers, d_model, d_ff:b]");
  EXPECT_EQ(
      shardOverReplicatedAxes(plain, dims, m, nullptr, {"d_ff"}).str(dims, m),
      "[layers, d_model:b, d_ff]");
  EXPECT_EQ(
      shardOverReplicatedAxes(plain, dims, m, nullptr, {"d_ff", "d_model"})
          .str(dims, m),
      "[layers:b, d_model, d_ff]");
  EXPECT_EQ(shardOverReplicatedAxes(plain, dims, m, nullptr,
                                    {"d_ff", "d_model", "layers"}),
            plain);
}

//===----------------------------------------------------------------------===//
// Unequal blocks: device weights and --uneven
//===----------------------------------------------------------------------===//

AxisWeights weights(std::string_view text, const Mesh &m) {
  Result<AxisWeights> parsed = AxisWeights::parse(text, m);
  EXPECT_TRUE(parsed.ok()) << text;
  return parsed.ok() ? *parsed : AxisWeights::even(m);
}

TensorLayout weightedOk(const std::vector<Dim> &dims, std::string_view layout,
                        const Mesh &m, const AxisWeights &w) {
  Result<TensorLayout> computed =
      TensorLayout::compute("t", dims, rules(layout), m, &w);
  EXPECT_TRUE(computed.ok()) << layout << ": " << computed.error().message;
  return computed.ok() ? *computed : TensorLayout::replicated(dims.size());
}

/// Checks that the devices' blocks under `w` cover every element exactly
/// replicaCount() times, each block inside the tensor, and that the largest
/// block is the largest of the devices'.
void expectExactWeightedTiling(const std::vector<Dim> &dims,
                               std::string_view layoutText, const Mesh &m,
                               const AxisWeights &w) {
  SCOPED_TRACE(std::string(layoutText) + " on " + m.str() + " with " +
               w.str(m));
  TensorLayout layout = weightedOk(dims, layoutText, m, w);
  Shape largest(dims.size(), 0);
  expectBlocksTile(dims, m, layout.replicaCount(m), [&](int64_t device) {
    Shape shape = layout.blockShape(dims, m, w, device);
    for (size_t d = 0; d < dims.size(); ++d)
      largest[d] = std::max(largest[d], shape[d]);
    return std::make_pair(layout.blockOffset(dims, m, w, device), shape);
  });
  EXPECT_EQ(layout.maxBlockShape(dims, m, w), largest);
}

TEST(TensorLayoutBlocks, WeightsCutInProportion) {
  Mesh m = mesh("b:3");
  AxisWeights w = weights("b=1,1,2", m);
  std::vector<Dim> dims = {{"batch", 64}, {"io", 8}};
  TensorLayout layout = weightedOk(dims, "batch:b", m, w);
  EXPECT_EQ(layout.blockSizes(0, 64, m, w), (Shape{16, 16, 32}));
  EXPECT_EQ(layout.blockShape(dims, m, w, 2), (Shape{32, 8}));
  EXPECT_EQ(layout.blockOffset(dims, m, w, 0), (Shape{0, 0}));
  EXPECT_EQ(layout.blockOffset(dims, m, w, 1), (Shape{16, 0}));
  EXPECT_EQ(layout.blockOffset(dims, m, w, 2), (Shape{32, 0}));
  EXPECT_EQ(layout.maxBlockShape(dims, m, w), (Shape{32, 8}));
  EXPECT_FALSE(layout.hasEqualBlocks(dims, m, w));
  // A weighted axis cuts any size: 10 by 1,1,2 is 3, 2, 5.
  TensorLayout ten = weightedOk({{"batch", 10}}, "batch:b", m, w);
  EXPECT_EQ(ten.blockSizes(0, 10, m, w), (Shape{3, 2, 5}));
}

TEST(TensorLayoutBlocks, EvenWeightsAreTheEvenSlices) {
  Mesh m = mesh("b:2;m:4");
  AxisWeights even = AxisWeights::even(m);
  std::vector<Dim> dims = {{"batch", 8}, {"d", 16}, {"h", 4}};
  for (const char *text : {"", "batch:b", "batch:b;d:m", "batch:m+b"}) {
    SCOPED_TRACE(text);
    TensorLayout layout = weightedOk(dims, text, m, even);
    EXPECT_TRUE(layout.hasEqualBlocks(dims, m, even));
    EXPECT_EQ(layout.maxBlockShape(dims, m, even), layout.sliceShape(dims, m));
    for (int64_t device = 0; device < m.numDevices(); ++device) {
      EXPECT_EQ(layout.blockShape(dims, m, even, device),
                layout.sliceShape(dims, m));
      EXPECT_EQ(layout.blockOffset(dims, m, even, device),
                layout.sliceOffset(dims, m, device));
    }
  }
}

TEST(TensorLayoutBlocks, ListedBlocksAreWhatTheWeightsCut) {
  // What a program lists (the weights' blocks) gives the same blocks and
  // offsets as the weights; a dim without a list is cut evenly.
  Mesh m = mesh("b:3;m:2");
  AxisWeights w = weights("b=1,2,3", m);
  std::vector<Dim> dims = {{"batch", 12}, {"d", 4}};
  TensorLayout layout = weightedOk(dims, "batch:b;d:m", m, w);
  TensorLayout::BlockLists lists = {layout.blockSizes(0, 12, m, w), {}};
  EXPECT_EQ(lists[0], (Shape{2, 4, 6}));
  EXPECT_EQ(layout.blockSizes(1, 4, m, lists), (Shape{2, 2}));
  EXPECT_EQ(layout.maxBlockShape(dims, m, lists), (Shape{6, 2}));
  for (int64_t device = 0; device < m.numDevices(); ++device) {
    EXPECT_EQ(layout.blockShape(dims, m, lists, device),
              layout.blockShape(dims, m, w, device));
    EXPECT_EQ(layout.blockOffset(dims, m, lists, device),
              layout.blockOffset(dims, m, w, device));
  }
  // Device 5 is b=2, m=1: rows 6..12, columns 2..4.
  EXPECT_EQ(layout.blockOffset(dims, m, lists, 5), (Shape{6, 2}));
}

TEST(TensorLayoutBlocks, NestedSplitCutsByEachAxisInTurn) {
  Mesh m = mesh("b:3;m:2");
  AxisWeights w = weights("b=1,2,3", m);
  std::vector<Dim> dims = {{"batch", 12}};
  // b cuts 12 into 2, 4, 6; m then halves each.
  TensorLayout bm = weightedOk(dims, "batch:b+m", m, w);
  EXPECT_EQ(bm.blockSizes(0, 12, m, w), (Shape{1, 1, 2, 2, 3, 3}));
  // m first: 6, 6; then b cuts each 1:2:3.
  TensorLayout mb = weightedOk(dims, "batch:m+b", m, w);
  EXPECT_EQ(mb.blockSizes(0, 12, m, w), (Shape{1, 2, 3, 1, 2, 3}));
  // Device 5 is (b=2, m=1): shard 5 of b+m, shard 1*3+2 = 5 of m+b.
  EXPECT_EQ(bm.blockOffset(dims, m, w, 5), (Shape{9}));
  EXPECT_EQ(mb.blockOffset(dims, m, w, 5), (Shape{9}));
  // Device 1 is (b=0, m=1): shard 3 of m+b, after 1 + 2 + 3; device 2 is
  // (b=1, m=0): shard 1.
  EXPECT_EQ(mb.blockOffset(dims, m, w, 1), (Shape{6}));
  EXPECT_EQ(mb.blockOffset(dims, m, w, 2), (Shape{1}));
}

TEST(TensorLayoutBlocks, UnevenTakesTheMostEvenSizes) {
  Mesh m = mesh("b:7");
  AxisWeights uneven = AxisWeights::even(m);
  uneven.allowIndivisible();
  EXPECT_FALSE(uneven.isPlain());
  TensorLayout layout = weightedOk({{"batch", 64}}, "batch:b", m, uneven);
  EXPECT_EQ(layout.blockSizes(0, 64, m, uneven), (Shape{10, 9, 9, 9, 9, 9, 9}));
  // Fewer elements than devices: the last blocks are empty.
  TensorLayout few = weightedOk({{"batch", 3}}, "batch:b", m, uneven);
  EXPECT_EQ(few.blockSizes(0, 3, m, uneven), (Shape{1, 1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(few.blockOffset({{"batch", 3}}, m, uneven, 6), (Shape{3}));
}

TEST(TensorLayoutBlocks, ExactTilingUnderWeights) {
  Mesh m = mesh("b:3;m:2");
  std::vector<Dim> dims = {{"batch", 13}, {"d", 7}, {"h", 6}};
  AxisWeights w = weights("b=1,2,3;m=2,1", m);
  AxisWeights bOnly = weights("b=1,2,3", m);
  bOnly.allowIndivisible();
  for (const AxisWeights *each : {&w, &bOnly})
    for (const char *layout :
         {"", "batch:b", "batch:b;d:m", "batch:m+b", "d:b+m", "h:b;d:m"})
      expectExactWeightedTiling(dims, layout, m, *each);
}

TEST(TensorLayoutBlocks, WeightsAllowIndivisibleSizesOnlyWhereTheyCut) {
  Mesh m = mesh("b:3;m:2");
  AxisWeights w = weights("b=1,1,2", m);
  EXPECT_TRUE(w.allowsIndivisible({0}));
  EXPECT_TRUE(w.allowsIndivisible({1, 0}));
  EXPECT_FALSE(w.allowsIndivisible({1}));
  EXPECT_FALSE(w.isPlain());
  EXPECT_TRUE(AxisWeights::even(m).isPlain());
  // 'm' is even and does not divide 7: still an error.
  EXPECT_LAYOUT_ERROR(
      TensorLayout::compute("x", {{"d", 7}}, rules("d:m"), m, &w),
      "tensor 'x' dimension 'd' (size 7) is not divisible by mesh axis 'm' "
      "(size 2)",
      "leave 'd' unsplit or make its size a multiple of 2 (e.g. 6 or 8)", 0, 0);
  // Over 'b+m' the weighted 'b' makes the split uneven anyway.
  EXPECT_TRUE(
      TensorLayout::compute("x", {{"d", 7}}, rules("d:b+m"), m, &w).ok());
}

} // namespace
