//===- NamedIndexTest.cpp - walking tensors by dimension name -------------===//
//
// The walk order, strides by name (zero for missing dimensions), offsets and
// their inverse, on which every op of the interpreter rests.
//
//===----------------------------------------------------------------------===//

#include "compiler/interpreter/NamedIndex.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace meshc::interp {
namespace {

Tensor shaped(std::vector<std::string> dims, std::vector<int64_t> shape) {
  Tensor tensor;
  tensor.dims = std::move(dims);
  tensor.shape = std::move(shape);
  return tensor;
}

TEST(NamedIndexTest, WalksRowMajor) {
  std::vector<std::vector<int64_t>> seen;
  forEachIndex({2, 3}, [&](const std::vector<int64_t> &index) {
    seen.push_back(index);
  });
  EXPECT_EQ(seen, (std::vector<std::vector<int64_t>>{
                      {0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}));
}

TEST(NamedIndexTest, ScalarIsVisitedOnceAndEmptyNever) {
  int scalarVisits = 0, emptyVisits = 0;
  forEachIndex({}, [&](const std::vector<int64_t> &index) {
    EXPECT_TRUE(index.empty());
    ++scalarVisits;
  });
  forEachIndex({3, 0, 2}, [&](const std::vector<int64_t> &) { ++emptyVisits; });
  EXPECT_EQ(scalarVisits, 1);
  EXPECT_EQ(emptyVisits, 0);
}

TEST(NamedIndexTest, StridesFollowNamesAndAreZeroForMissingDims) {
  Tensor tensor = shaped({"a", "b", "c"}, {2, 3, 4});
  EXPECT_EQ(stridesAlong(tensor, {"a", "b", "c"}),
            (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(stridesAlong(tensor, {"c", "x", "a"}),
            (std::vector<int64_t>{1, 0, 12}));
  EXPECT_EQ(stridesAlong(shaped({}, {}), {"a"}), (std::vector<int64_t>{0}));
}

TEST(NamedIndexTest, OffsetsAndIndicesAreInverse) {
  std::vector<int64_t> shape = {2, 3, 4};
  std::vector<int64_t> strides =
      stridesAlong(shaped({"a", "b", "c"}, shape), {"a", "b", "c"});
  int64_t expected = 0;
  forEachIndex(shape, [&](const std::vector<int64_t> &index) {
    EXPECT_EQ(offsetAt(index, strides), expected);
    EXPECT_EQ(indexAt(shape, expected), index);
    ++expected;
  });
  EXPECT_EQ(expected, 24);
}

TEST(NamedIndexTest, CountSaturates) {
  EXPECT_EQ(countElements({}), 1u);
  EXPECT_EQ(countElements({2, 3, 4}), 24u);
  EXPECT_EQ(countElements({1LL << 40, 1LL << 40}),
            std::numeric_limits<uint64_t>::max());
}

TEST(NamedIndexTest, FormatsNamedValues) {
  EXPECT_EQ(formatNamed({"batch", "d"}, {8, 4}), "[batch=8, d=4]");
  EXPECT_EQ(formatNamed({}, {}), "[]");
}

} // namespace
} // namespace meshc::interp
