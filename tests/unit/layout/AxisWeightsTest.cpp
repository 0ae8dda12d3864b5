//===- AxisWeightsTest.cpp - Tests of device weights along mesh axes ------===//
//
// Parsing "b=1,1,2;m=1,3" against a mesh (every error with its text and
// column) and the largest-remainder split of a dimension by weights.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/AxisWeights.h"

#include "ErrorMatchers.h"

#include <gtest/gtest.h>

#include <limits>
#include <numeric>

using namespace meshc::layout;

namespace {

constexpr const char *kSyntaxHint =
    "write name=w1,w2,... per weighted mesh axis, e.g. 'b=1,1,2;m=1,3'";
constexpr const char *kWeightHint =
    "weights are positive numbers, one per device along the axis, e.g. "
    "'b=1,1,2' or 'b=1,1.5'";

Mesh mesh(std::string_view text) { return *Mesh::parse(text); }

TEST(AxisWeightsParse, OneAxis) {
  Mesh m = mesh("b:3");
  Result<AxisWeights> weights = AxisWeights::parse("b=1,1,2", m);
  ASSERT_TRUE(weights.ok()) << weights.error().message;
  EXPECT_EQ(weights->of(0), (std::vector<double>{1, 1, 2}));
  EXPECT_FALSE(weights->isEven());
  EXPECT_EQ(weights->str(m), "b=1,1,2");
}

TEST(AxisWeightsParse, TwoAxesAndAnAxisLeftEven) {
  Mesh m = mesh("b:2;m:3;x:2");
  Result<AxisWeights> weights = AxisWeights::parse(" m=1,2.5,3 ;b=2,1", m);
  ASSERT_TRUE(weights.ok()) << weights.error().message;
  EXPECT_EQ(weights->of(0), (std::vector<double>{2, 1}));
  EXPECT_EQ(weights->of(1), (std::vector<double>{1, 2.5, 3}));
  EXPECT_EQ(weights->of(2), (std::vector<double>{1, 1}));
  EXPECT_TRUE(weights->isEven(2));
  // The text form lists the uneven axes in mesh order and reads back.
  EXPECT_EQ(weights->str(m), "b=2,1;m=1,2.5,3");
  Result<AxisWeights> again = AxisWeights::parse(weights->str(m), m);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->of(1), weights->of(1));
}

TEST(AxisWeightsParse, EqualWeightsAreEven) {
  Mesh m = mesh("b:3");
  Result<AxisWeights> weights = AxisWeights::parse("b=2,2,2", m);
  ASSERT_TRUE(weights.ok());
  EXPECT_TRUE(weights->isEven());
  EXPECT_EQ(weights->str(m), "");
  EXPECT_TRUE(AxisWeights::even(m).isEven());
  // An even text form is empty, which parse() refuses: a flag given must
  // weigh something.
  EXPECT_FALSE(AxisWeights::parse(weights->str(m), m).ok());
}

TEST(AxisWeightsParse, Errors) {
  Mesh m = mesh("b:3;m:2");
  EXPECT_LAYOUT_ERROR(AxisWeights::parse("", m), "axis weights are empty",
                      kSyntaxHint, 0, 1);
  EXPECT_LAYOUT_ERROR(AxisWeights::parse(" ; ", m), "axis weights are empty",
                      kSyntaxHint, 0, 1);
  EXPECT_LAYOUT_ERROR(AxisWeights::parse("b:1,1,2", m),
                      "expected '=' and weights after mesh axis 'b:1,1,2'",
                      kSyntaxHint, 0, 1);
  EXPECT_LAYOUT_ERROR(AxisWeights::parse("=1,2", m),
                      "expected a mesh axis name before '='", kSyntaxHint, 0,
                      1);
  EXPECT_LAYOUT_ERROR(
      AxisWeights::parse("b=1,1,2;x=1,2", m),
      "axis weights name 'x', which is not an axis of the mesh b:3;m:2",
      "the mesh axes are 'b', 'm'", 0, 9);
  EXPECT_LAYOUT_ERROR(AxisWeights::parse("b=1,1,2 b=1,2,3", m),
                      "weights of mesh axis 'b' are given twice",
                      "give each mesh axis's weights once", 0, 9);
  // A wrong count, both ways.
  EXPECT_LAYOUT_ERROR(AxisWeights::parse("b=1,2", m),
                      "mesh axis 'b' has 3 devices, but 2 weights were given",
                      "give one weight per device along 'b'", 0, 3);
  EXPECT_LAYOUT_ERROR(AxisWeights::parse("m=1,2,3", m),
                      "mesh axis 'm' has 2 devices, but 3 weights were given",
                      "give one weight per device along 'm'", 0, 3);
  EXPECT_LAYOUT_ERROR(AxisWeights::parse("m=4", m),
                      "mesh axis 'm' has 2 devices, but 1 weight was given",
                      "give one weight per device along 'm'", 0, 3);
  // Zero, negative, non-numeric, missing, non-finite, out of range.
  EXPECT_LAYOUT_ERROR(
      AxisWeights::parse("b=1,0,2", m),
      "the weight of device 1 along mesh axis 'b' must be positive, got 0",
      kWeightHint, 0, 5);
  EXPECT_LAYOUT_ERROR(
      AxisWeights::parse("b=1,1,-2", m),
      "the weight of device 2 along mesh axis 'b' must be positive, got -2",
      kWeightHint, 0, 7);
  EXPECT_LAYOUT_ERROR(
      AxisWeights::parse("b=1,fast,2", m),
      "the weight of device 1 along mesh axis 'b' is not a number, got 'fast'",
      kWeightHint, 0, 5);
  EXPECT_LAYOUT_ERROR(
      AxisWeights::parse("b=1,2x,2", m),
      "the weight of device 1 along mesh axis 'b' is not a number, got '2x'",
      kWeightHint, 0, 5);
  EXPECT_LAYOUT_ERROR(
      AxisWeights::parse("b=1,inf,2", m),
      "the weight of device 1 along mesh axis 'b' is not a number, got 'inf'",
      kWeightHint, 0, 5);
  EXPECT_LAYOUT_ERROR(
      AxisWeights::parse("b=1,nan,2", m),
      "the weight of device 1 along mesh axis 'b' is not a number, got 'nan'",
      kWeightHint, 0, 5);
  EXPECT_LAYOUT_ERROR(AxisWeights::parse("b=1,1e400,2", m),
                      "the weight of device 1 along mesh axis 'b' is out of "
                      "range, got '1e400'",
                      kWeightHint, 0, 5);
  EXPECT_LAYOUT_ERROR(AxisWeights::parse("b=1,1e-400,2", m),
                      "the weight of device 1 along mesh axis 'b' is out of "
                      "range, got '1e-400'",
                      kWeightHint, 0, 5);
  // A missing weight is reported before the count.
  EXPECT_LAYOUT_ERROR(AxisWeights::parse("b=1,,2", m),
                      "the weight of device 1 along mesh axis 'b' is missing",
                      kWeightHint, 0, 5);
  EXPECT_LAYOUT_ERROR(AxisWeights::parse("b=", m),
                      "the weight of device 0 along mesh axis 'b' is missing",
                      kWeightHint, 0, 3);
  EXPECT_LAYOUT_ERROR(AxisWeights::parse("b=1,1,2,", m),
                      "the weight of device 3 along mesh axis 'b' is missing",
                      kWeightHint, 0, 9);
}

TEST(SplitByWeights, ProportionalWhenExact) {
  EXPECT_EQ(splitByWeights(64, {1, 1, 2}), (std::vector<int64_t>{16, 16, 32}));
  EXPECT_EQ(splitByWeights(12, {1, 2, 3}), (std::vector<int64_t>{2, 4, 6}));
  EXPECT_EQ(splitByWeights(8, {1, 1, 1, 1}),
            (std::vector<int64_t>{2, 2, 2, 2}));
}

TEST(SplitByWeights, EqualWeightsGiveTheMostEvenSplit) {
  // 64 over 7: the first 64 % 7 = 1 block one larger.
  EXPECT_EQ(splitByWeights(64, std::vector<double>(7, 1.0)),
            (std::vector<int64_t>{10, 9, 9, 9, 9, 9, 9}));
  EXPECT_EQ(splitByWeights(10, {1, 1, 1, 1}),
            (std::vector<int64_t>{3, 3, 2, 2}));
  // Fewer elements than blocks: the last blocks are empty.
  EXPECT_EQ(splitByWeights(2, {1, 1, 1}), (std::vector<int64_t>{1, 1, 0}));
}

TEST(SplitByWeights, LargestRemainderGetsTheLeftovers) {
  // Quotas 10 * {1, 1, 2} / 4 = 2.5, 2.5, 5: the tie goes to the lower index.
  EXPECT_EQ(splitByWeights(10, {1, 1, 2}), (std::vector<int64_t>{3, 2, 5}));
  // Quotas 10 * {1, 2, 3} / 6 = 1.67, 3.33, 5: the largest fraction wins.
  EXPECT_EQ(splitByWeights(10, {1, 2, 3}), (std::vector<int64_t>{2, 3, 5}));
  // Quotas 7 * {1.5, 1} / 2.5 = 4.2, 2.8.
  EXPECT_EQ(splitByWeights(7, {1.5, 1}), (std::vector<int64_t>{4, 3}));
}

TEST(SplitByWeights, AlwaysSumsToTheSize) {
  std::vector<std::vector<double>> cases = {{1, 1, 2},
                                            {0.1, 0.2, 0.7},
                                            {1e-9, 1},
                                            {3, 1e9, 7},
                                            {1, 1, 1, 1, 1, 1, 1}};
  for (const std::vector<double> &weights : cases)
    for (int64_t size :
         {int64_t(0), int64_t(1), int64_t(2), int64_t(3), int64_t(7),
          int64_t(64), int64_t(1000), int64_t(4096), int64_t(1) << 30,
          int64_t(1) << 53, std::numeric_limits<int64_t>::max()}) {
      std::vector<int64_t> sizes = splitByWeights(size, weights);
      ASSERT_EQ(sizes.size(), weights.size());
      EXPECT_EQ(std::accumulate(sizes.begin(), sizes.end(), int64_t(0)), size);
      for (int64_t s : sizes)
        EXPECT_GE(s, 0);
    }
}

} // namespace
