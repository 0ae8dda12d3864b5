//===- LayoutSpaceTest.cpp - Tests of the layout space --------------------===//
//
// enumerateLayouts lists each layout once: as many as there are assignments
// of mesh axes to dims times the orders of each multi-axis split, every text
// parses and splits each axis at most once, and the limit stops the listing.
// enumerateSearchLayouts (--layout auto) also lets an axis split dims that
// share no tensor, and leaves out splits that do not divide: checked against
// a brute-force count and by Megatron's layout.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/LayoutSpace.h"
#include "runtime/core/layout/LayoutRules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

using namespace meshc::layout;

namespace {

Mesh mesh(std::string_view text) {
  Result<Mesh> parsed = Mesh::parse(text);
  EXPECT_TRUE(parsed.ok());
  return parsed.ok() ? *parsed : Mesh();
}

/// The size of the space counted independently: every assignment of each
/// axis to a dim or none, weighted by the orders of each dim's axes.
size_t expectedCount(size_t dims, size_t axes) {
  size_t total = 0;
  std::vector<size_t> choice(axes, 0);
  while (true) {
    std::vector<size_t> perDim(dims + 1, 0);
    for (size_t c : choice)
      ++perDim[c];
    size_t orders = 1;
    for (size_t d = 1; d <= dims; ++d)
      for (size_t k = 2; k <= perDim[d]; ++k)
        orders *= k;
    total += orders;
    size_t a = 0;
    while (a < axes && ++choice[a] == dims + 1)
      choice[a++] = 0;
    if (a == axes)
      return total;
  }
}

TEST(LayoutSpace, EachLayoutOnceAndValid) {
  std::vector<std::string> dims = {"batch", "heads", "d_ff"};
  for (const char *meshText : {"b:2", "b:2;m:4", "x:2;y:2;z:2"}) {
    Mesh m = mesh(meshText);
    std::vector<std::string> texts = enumerateLayouts(dims, m);
    EXPECT_EQ(texts.size(), expectedCount(dims.size(), m.rank())) << meshText;
    EXPECT_EQ(std::set<std::string>(texts.begin(), texts.end()).size(),
              texts.size())
        << meshText << ": a layout is listed twice";
    ASSERT_FALSE(texts.empty());
    EXPECT_EQ(texts.front(), "");
    for (const std::string &text : texts) {
      Result<LayoutRules> rules = LayoutRules::parse(text);
      ASSERT_TRUE(rules.ok()) << text;
      EXPECT_TRUE(rules->checkAgainstMesh(m).ok()) << text;
      std::multiset<std::string> used;
      for (const LayoutRule &rule : rules->rules())
        used.insert(rule.axes.begin(), rule.axes.end());
      for (const std::string &axis : m.axisNames())
        EXPECT_LE(used.count(axis), 1u) << text;
    }
  }
}

TEST(LayoutSpace, TwoAxesOverOneDimInBothOrders) {
  std::vector<std::string> texts = enumerateLayouts({"batch"}, mesh("b:2;m:2"));
  EXPECT_EQ(texts, (std::vector<std::string>{"", "batch:m", "batch:b",
                                             "batch:m+b", "batch:b+m"}));
}

TEST(LayoutSpace, LimitStopsTheListing) {
  std::vector<std::string> dims = {"a", "b", "c", "d"};
  Mesh m = mesh("x:2;y:2;z:2");
  size_t all = enumerateLayouts(dims, m).size();
  ASSERT_GT(all, 10u);
  EXPECT_EQ(enumerateLayouts(dims, m, 10).size(), 11u);
  EXPECT_EQ(enumerateLayouts(dims, m, all).size(), all);
}

TEST(LayoutSpace, NoMeshAxesGiveOnlyTheEmptyLayout) {
  EXPECT_EQ(enumerateLayouts({"batch"}, Mesh()), std::vector<std::string>{""});
}

using Tensors = std::vector<std::vector<std::string>>;

/// A Megatron-style layer's dims and tensors: heads and d_ff never meet.
const std::map<std::string, int64_t> kLayerDims = {
    {"batch", 8}, {"d_model", 4}, {"heads", 4}, {"d_ff", 16}, {"odd", 3}};
const Tensors kLayerTensors = {{"batch", "d_model"}, {"d_model", "heads"},
                               {"batch", "heads"},   {"d_model", "d_ff"},
                               {"batch", "d_ff"},    {"batch", "odd"}};

/// The search space counted by brute force: every assignment of each axis
/// to any subset of dims, kept when no tensor has two dims on one axis and
/// every dim's axes divide it, times the orders of each dim's axes.
size_t bruteForceCount(const std::map<std::string, int64_t> &dims,
                       const Tensors &tensors, const Mesh &m) {
  std::vector<std::string> names;
  for (const auto &[name, size] : dims)
    names.push_back(name);
  size_t n = names.size(), total = 0;
  size_t masks = size_t(1) << n;
  std::vector<size_t> choice(m.rank(), 0);
  while (true) {
    bool ok = true;
    for (size_t a = 0; a < m.rank() && ok; ++a)
      for (const auto &tensor : tensors) {
        int inTensor = 0;
        for (const std::string &dim : tensor) {
          size_t d = std::find(names.begin(), names.end(), dim) - names.begin();
          inTensor += (choice[a] >> d) & 1;
        }
        ok &= inTensor <= 1;
      }
    size_t orders = 1;
    for (size_t d = 0; d < n && ok; ++d) {
      int64_t product = 1;
      size_t count = 0;
      for (size_t a = 0; a < m.rank(); ++a)
        if ((choice[a] >> d) & 1) {
          product *= m.axisSize(a);
          orders *= ++count;
        }
      ok &= dims.at(names[d]) % product == 0;
    }
    if (ok)
      total += orders;
    size_t a = 0;
    while (a < m.rank() && ++choice[a] == masks)
      choice[a++] = 0;
    if (a == m.rank())
      return total;
  }
}

TEST(SearchLayoutSpace, MatchesABruteForceCount) {
  for (const char *meshText : {"b:2", "b:2;m:4", "x:2;y:2;z:2"}) {
    Mesh m = mesh(meshText);
    std::vector<std::string> texts =
        enumerateSearchLayouts(kLayerDims, kLayerTensors, m);
    EXPECT_EQ(texts.size(), bruteForceCount(kLayerDims, kLayerTensors, m))
        << meshText;
    EXPECT_EQ(std::set<std::string>(texts.begin(), texts.end()).size(),
              texts.size())
        << meshText << ": a layout is listed twice";
    ASSERT_FALSE(texts.empty());
    EXPECT_EQ(texts.front(), "");
    for (const std::string &text : texts)
      EXPECT_TRUE(LayoutRules::parse(text).ok()) << text;
  }
}

TEST(SearchLayoutSpace, HasMegatronAndNoAxisTwiceInATensor) {
  std::vector<std::string> texts =
      enumerateSearchLayouts(kLayerDims, kLayerTensors, mesh("b:2;m:2"));
  auto has = [&](const char *text) {
    return std::find(texts.begin(), texts.end(), text) != texts.end();
  };
  EXPECT_TRUE(has("batch:b;d_ff:m;heads:m"));
  EXPECT_TRUE(has("d_ff:b+m;heads:m+b"));
  // d_model meets heads and d_ff; 'odd' (3) is not divisible by 2.
  EXPECT_FALSE(has("d_model:m;heads:m"));
  EXPECT_FALSE(has("batch:b;odd:m"));
  EXPECT_FALSE(has("odd:b"));
}

TEST(SearchLayoutSpace, AxesOfOtherSizesAndOfOne) {
  // 'odd' (3) is split only by the axis of 3, 'batch' (8) only by the 2;
  // the axis of one device is never used.
  Mesh m = mesh("b:2;t:3;one:1");
  std::vector<std::string> texts =
      enumerateSearchLayouts(kLayerDims, kLayerTensors, m);
  EXPECT_EQ(texts.size(),
            bruteForceCount(kLayerDims, kLayerTensors, mesh("b:2;t:3")));
  auto has = [&](const char *text) {
    return std::find(texts.begin(), texts.end(), text) != texts.end();
  };
  EXPECT_TRUE(has("odd:t"));
  EXPECT_TRUE(has("batch:b;odd:t"));
  EXPECT_FALSE(has("odd:b"));
  for (const std::string &text : texts)
    EXPECT_EQ(text.find("one"), std::string::npos) << text;
}

TEST(SearchLayoutSpace, ManyApartDimsStopAtTheLimit) {
  // 40 dims that never meet: 2^40 sets of dims, listed only up to the limit.
  std::map<std::string, int64_t> dims;
  for (int i = 0; i < 40; ++i)
    dims["d" + std::to_string(100 + i)] = 2;
  std::vector<std::string> texts =
      enumerateSearchLayouts(dims, {}, mesh("b:2"), 1000);
  EXPECT_EQ(texts.size(), 1001u);
}

TEST(SearchLayoutSpace, LimitStopsTheListing) {
  Mesh m = mesh("x:2;y:2;z:2");
  size_t all = enumerateSearchLayouts(kLayerDims, kLayerTensors, m).size();
  ASSERT_GT(all, 10u);
  EXPECT_EQ(enumerateSearchLayouts(kLayerDims, kLayerTensors, m, 10).size(),
            11u);
}

TEST(SearchLayoutSpace, WeightsLetTheirAxesCutIndivisibleSizes) {
  // batch 64 and hidden 10 over 3 devices: only the weighted axis, or any
  // axis with --uneven, may cut them.
  std::map<std::string, int64_t> dims = {{"batch", 64}, {"hidden", 10}};
  std::vector<std::vector<std::string>> tensors = {{"batch", "hidden"}};
  Mesh m = mesh("b:3;m:2");
  using Texts = std::vector<std::string>;
  EXPECT_EQ(enumerateSearchLayouts(dims, tensors, m),
            (Texts{"", "batch:m", "hidden:m"}));
  AxisWeights weights = *AxisWeights::parse("b=1,1,2", m);
  EXPECT_EQ(enumerateSearchLayouts(dims, tensors, m, SIZE_MAX - 1, &weights),
            (Texts{"", "batch:m", "hidden:m", "batch:b", "batch:b+m",
                   "batch:m+b", "batch:b;hidden:m", "hidden:b",
                   "batch:m;hidden:b", "hidden:b+m", "hidden:m+b"}));
  // An even axis that does not divide may cut a dim the weighted axis cuts
  // too, whichever comes first in the mesh; alone it may not.
  Mesh evenFirst = mesh("e:3;w:3");
  AxisWeights onW = *AxisWeights::parse("w=1,1,2", evenFirst);
  EXPECT_EQ(enumerateSearchLayouts({{"x", 10}}, {{"x"}}, evenFirst,
                                   SIZE_MAX - 1, &onW),
            (Texts{"", "x:w", "x:e+w", "x:w+e"}));
  AxisWeights uneven = AxisWeights::even(m);
  uneven.allowIndivisible();
  EXPECT_EQ(
      enumerateSearchLayouts(dims, tensors, m, SIZE_MAX - 1, &uneven).size(),
      11u);
}

} // namespace
