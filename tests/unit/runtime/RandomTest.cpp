//===- RandomTest.cpp - The layout-independent generator ------------------===//
//
// Pins the generator to the formulas of docs/mprog.md (values computed with
// the Python transcription in tests/runtime/Inputs/random_reference.py),
// checks determinism and rough statistics, and checks that device blocks
// of two different layouts reassemble to the same global tensor.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Random.h"

#include "runtime/core/layout/TensorLayout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace meshc;
using namespace meshc::runtime;

namespace {

TEST(RandomTest, HashesMatchTheirDefinitions) {
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("w1"), 0x08cb8707b56d7b05ULL);
  EXPECT_EQ(TensorRandom(1234, "w1").key(), 0x3007d8e219dbaf20ULL);
}

TEST(RandomTest, ValuesMatchThePythonTranscription) {
  TensorRandom w1(1234, "w1");
  InitSpec normal{InitSpec::Kind::Normal, 0.0, 0.05};
  EXPECT_EQ(w1.value(normal, 0), 0.015831582248210907f);
  EXPECT_EQ(w1.value(normal, 1), -0.02184191159904003f);
  EXPECT_EQ(w1.value(normal, 2), 0.056476689875125885f);
  EXPECT_EQ(w1.value(normal, 3), -0.05905758962035179f);
  TensorRandom labels(1234, "labels");
  std::vector<int64_t> drawn;
  for (uint64_t i = 0; i < 8; ++i)
    drawn.push_back(labels.uniformInt(i, 0, 10));
  EXPECT_EQ(drawn, (std::vector<int64_t>{4, 5, 9, 8, 9, 5, 2, 3}));
}

TEST(RandomTest, ConstantKinds) {
  TensorRandom random(1, "t");
  EXPECT_EQ(random.value({InitSpec::Kind::Zeros, 0, 0}, 5), 0.0f);
  EXPECT_EQ(random.value({InitSpec::Kind::Ones, 0, 0}, 5), 1.0f);
  EXPECT_EQ(random.value({InitSpec::Kind::Constant, 0.25, 0}, 5), 0.25f);
}

TEST(RandomTest, DeterministicPerSeedAndName) {
  InitSpec normal{InitSpec::Kind::Normal, 0.0, 1.0};
  EXPECT_EQ(TensorRandom(5, "a").value(normal, 17),
            TensorRandom(5, "a").value(normal, 17));
  EXPECT_NE(TensorRandom(5, "a").value(normal, 17),
            TensorRandom(6, "a").value(normal, 17));
  EXPECT_NE(TensorRandom(5, "a").value(normal, 17),
            TensorRandom(5, "b").value(normal, 17));
}

TEST(RandomTest, Statistics) {
  TensorRandom random(3, "stats");
  const int n = 20000;
  double sum = 0, squares = 0, uniformSum = 0;
  for (int i = 0; i < n; ++i) {
    double z = random.normal(i);
    sum += z;
    squares += z * z;
    double u = random.value({InitSpec::Kind::Uniform, -2.0, 6.0}, i);
    ASSERT_GE(u, -2.0);
    ASSERT_LT(u, 6.0);
    uniformSum += u;
    int64_t k = random.uniformInt(i, -3, 4);
    ASSERT_GE(k, -3);
    ASSERT_LT(k, 4);
  }
  EXPECT_NEAR(sum / n, 0.0, 0.03);
  EXPECT_NEAR(squares / n, 1.0, 0.05);
  EXPECT_NEAR(uniformSum / n, 2.0, 0.05);
}

/// Fills every device block of `shape` under `axes` on `meshText` and
/// reassembles the global tensor.
std::vector<float> assemble(const std::string &meshText,
                            const std::vector<std::vector<std::string>> &axes,
                            const std::vector<int64_t> &shape) {
  layout::Mesh mesh = *layout::Mesh::parse(meshText);
  std::vector<layout::Dim> dims = {{"r", shape[0]}, {"c", shape[1]}};
  layout::TensorLayout tensorLayout =
      *layout::TensorLayout::fromAxes("t", dims, axes, mesh);
  std::vector<int64_t> block = tensorLayout.sliceShape(dims, mesh);
  std::vector<float> global(shape[0] * shape[1], NAN);
  std::vector<float> values(block[0] * block[1]);
  InitSpec spec{InitSpec::Kind::Normal, 1.0, 2.0};
  for (int64_t d = 0; d < mesh.numDevices(); ++d) {
    std::vector<int64_t> offset = tensorLayout.sliceOffset(dims, mesh, d);
    fillBlock(spec, 9, "t", shape, offset, block, values.data());
    for (int64_t i = 0; i < block[0]; ++i)
      for (int64_t j = 0; j < block[1]; ++j)
        global[(offset[0] + i) * shape[1] + offset[1] + j] =
            values[i * block[1] + j];
  }
  return global;
}

TEST(RandomTest, BlocksOfTwoLayoutsAssembleToTheSameTensor) {
  std::vector<int64_t> shape = {8, 12};
  std::vector<float> whole(8 * 12);
  fillBlock({InitSpec::Kind::Normal, 1.0, 2.0}, 9, "t", shape, {0, 0}, shape,
            whole.data());
  std::vector<float> rowsAndColumns =
      assemble("b:2;m:4", {{"b"}, {"m"}}, shape);
  std::vector<float> rowsOverBoth =
      assemble("b:2;m:4", {{"m", "b"}, {}}, shape);
  std::vector<float> columns = assemble("x:2;y:2;z:2", {{}, {"z", "x"}}, shape);
  EXPECT_EQ(rowsAndColumns, whole);
  EXPECT_EQ(rowsOverBoth, whole);
  EXPECT_EQ(columns, whole);
}

// A block of more than 2^20 elements is drawn in parts on several threads:
// every element is still TensorRandom's value at its global index (here an
// offset block of a 3-d tensor, so the parts start mid-row).
TEST(RandomTest, LargeBlocksDrawnInPartsEqualEachElementsDraw) {
  std::vector<int64_t> shape = {5, 1000, 1001}, offset = {1, 7, 3},
                       block = {3, 900, 997};
  InitSpec spec{InitSpec::Kind::Normal, 0.5, 2.0};
  std::vector<float> values(3 * 900 * 997);
  fillBlock(spec, 11, "big", shape, offset, block, values.data());
  TensorRandom random(11, "big");
  int64_t mismatches = 0, i = 0;
  for (int64_t a = 0; a < block[0]; ++a)
    for (int64_t b = 0; b < block[1]; ++b)
      for (int64_t c = 0; c < block[2]; ++c, ++i) {
        uint64_t global =
            ((offset[0] + a) * shape[1] + offset[1] + b) * shape[2] +
            offset[2] + c;
        mismatches += values[i] != random.value(spec, global);
      }
  EXPECT_EQ(mismatches, 0);
}

TEST(RandomTest, IntegerBlocksAreLayoutIndependent) {
  std::vector<int64_t> shape = {6};
  std::vector<int32_t> whole(6), left(3), right(3);
  fillBlockInt(0, 10, 4, "labels", shape, {0}, shape, whole.data());
  fillBlockInt(0, 10, 4, "labels", shape, {0}, {3}, left.data());
  fillBlockInt(0, 10, 4, "labels", shape, {3}, {3}, right.data());
  left.insert(left.end(), right.begin(), right.end());
  EXPECT_EQ(left, whole);
}

TEST(RandomTest, DropoutMatchesThePythonTranscription) {
  EXPECT_EQ(runKey(1234, "drop0", 3), 0xcdbab8a1b6f19181ULL);
  std::vector<double> mask;
  for (uint64_t i = 0; i < 12; ++i)
    mask.push_back(dropoutScale(1234, "drop0", 3, i, 0.5));
  EXPECT_EQ(mask, (std::vector<double>{0, 0, 0, 0, 2, 0, 2, 0, 2, 0, 2, 0}));
  // Rate 0 keeps everything at scale 1.
  for (uint64_t i = 0; i < 100; ++i)
    ASSERT_EQ(dropoutScale(1, "d", 0, i, 0.0), 1.0);
}

TEST(RandomTest, DropoutKeepsAboutOneMinusRate) {
  DropoutMask mask(9, "drop1", 17, 0.3);
  int64_t kept = 0;
  for (uint64_t i = 0; i < 100000; ++i)
    kept += mask.scale(i) != 0.0;
  EXPECT_NEAR(kept / 100000.0, 0.7, 0.01);
  EXPECT_DOUBLE_EQ(mask.scale(0) + mask.scale(1) + mask.scale(2) +
                       mask.scale(3),
                   (mask.scale(0) != 0) / 0.7 + (mask.scale(1) != 0) / 0.7 +
                       (mask.scale(2) != 0) / 0.7 + (mask.scale(3) != 0) / 0.7);
}

TEST(RandomTest, EpochPermutationsMatchThePythonTranscription) {
  EXPECT_EQ(epochPermutation(1234, 0, 10),
            (std::vector<int64_t>{5, 8, 1, 2, 9, 6, 4, 7, 3, 0}));
  EXPECT_EQ(epochPermutation(1234, 1, 10),
            (std::vector<int64_t>{7, 0, 2, 9, 8, 6, 1, 4, 3, 5}));
  EXPECT_EQ(epochPermutation(5, 3, 1), (std::vector<int64_t>{0}));
  EXPECT_TRUE(epochPermutation(5, 3, 0).empty());
  std::vector<int64_t> order = epochPermutation(77, 2, 1000);
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i)
    ASSERT_EQ(sorted[i], i);
}

} // namespace
