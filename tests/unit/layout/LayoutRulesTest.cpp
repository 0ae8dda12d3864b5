//===- LayoutRulesTest.cpp - Tests of layout rules ------------------------===//
//
// Layout string parsing (separators, multi-axis splits, every error with its
// column), building rules in code, and the checks against a mesh and against
// a model's dimensions.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/LayoutRules.h"

#include "ErrorMatchers.h"

#include <gtest/gtest.h>

using namespace meshc::layout;

namespace {

constexpr const char *kSyntaxHint =
    "write each rule as dimension:axes, e.g. 'batch:b' or 'batch:b+m'";
constexpr const char *kNameHint = "names start with a letter or '_' and "
                                  "contain only letters, digits and '_'";

using Axes = std::vector<std::string>;

LayoutRules parseOk(std::string_view text) {
  Result<LayoutRules> rules = LayoutRules::parse(text);
  EXPECT_TRUE(rules.ok()) << "'" << text << "': " << rules.error().message;
  return rules.ok() ? *rules : LayoutRules();
}

Mesh mesh(std::string_view text) {
  Result<Mesh> parsed = Mesh::parse(text);
  EXPECT_TRUE(parsed.ok());
  return parsed.ok() ? *parsed : Mesh();
}

TEST(LayoutParse, EmptyMeansNoRules) {
  for (const char *text : {"", "   ", ";,."}) {
    LayoutRules rules = parseOk(text);
    EXPECT_TRUE(rules.empty());
    EXPECT_EQ(rules.str(), "");
    EXPECT_EQ(rules.axesFor("batch"), nullptr);
  }
}

TEST(LayoutParse, SingleAxisRules) {
  LayoutRules rules = parseOk("batch:b;d_ff:m;heads:m");
  ASSERT_EQ(rules.rules().size(), 3u);
  EXPECT_EQ(rules.rules()[0].dim, "batch");
  EXPECT_EQ(rules.rules()[1].dim, "d_ff");
  ASSERT_NE(rules.axesFor("batch"), nullptr);
  EXPECT_EQ(*rules.axesFor("batch"), Axes{"b"});
  EXPECT_EQ(*rules.axesFor("heads"), Axes{"m"});
  EXPECT_EQ(rules.axesFor("hidden"), nullptr);
  EXPECT_EQ(rules.str(), "batch:b;d_ff:m;heads:m");
}

TEST(LayoutParse, MultiAxisRules) {
  LayoutRules rules = parseOk("batch:b+m; experts : x + y + z");
  EXPECT_EQ(*rules.axesFor("batch"), (Axes{"b", "m"}));
  EXPECT_EQ(*rules.axesFor("experts"), (Axes{"x", "y", "z"}));
  EXPECT_EQ(rules.str(), "batch:b+m;experts:x+y+z");
  EXPECT_EQ(parseOk(rules.str()), rules);
}

TEST(LayoutParse, RecordsColumns) {
  LayoutRules rules = parseOk("batch:b; x:b+m");
  const LayoutRule &second = rules.rules()[1];
  EXPECT_EQ(second.dimLoc.column, 10);
  ASSERT_EQ(second.axisLocs.size(), 2u);
  EXPECT_EQ(second.axisLocs[0].column, 12);
  EXPECT_EQ(second.axisLocs[1].column, 14);
}

class LayoutSeparators : public testing::TestWithParam<const char *> {};

TEST_P(LayoutSeparators, AllSpellingsGiveTheSameRules) {
  EXPECT_EQ(parseOk(GetParam()).str(), "batch:b;d_ff:m+x");
}

INSTANTIATE_TEST_SUITE_P(Spellings, LayoutSeparators,
                         testing::Values("batch:b;d_ff:m+x", "batch:b,d_ff:m+x",
                                         "batch:b.d_ff:m+x", "batch:b d_ff:m+x",
                                         " batch : b ;\n d_ff : m + x ;"));

TEST(LayoutParse, MalformedPairs) {
  EXPECT_LAYOUT_ERROR(
      LayoutRules::parse("batch"),
      "expected ':' after dimension name 'batch', got the end of the text",
      kSyntaxHint, 0, 6);
  EXPECT_LAYOUT_ERROR(LayoutRules::parse("batch b"),
                      "expected ':' after dimension name 'batch', got 'b'",
                      kSyntaxHint, 0, 7);
  EXPECT_LAYOUT_ERROR(LayoutRules::parse("batch;:b"),
                      "expected ':' after dimension name 'batch', got ';'",
                      kSyntaxHint, 0, 6);
  EXPECT_LAYOUT_ERROR(LayoutRules::parse(":b"),
                      "expected a dimension name, got ':'", kSyntaxHint, 0, 1);
  EXPECT_LAYOUT_ERROR(LayoutRules::parse("+b"),
                      "expected a dimension name, got '+'", kSyntaxHint, 0, 1);
  EXPECT_LAYOUT_ERROR(LayoutRules::parse("batch:b:m"),
                      "unexpected ':' after 'batch:b'",
                      "separate pairs with ';', ',', '.' or spaces", 0, 8);
}

TEST(LayoutParse, EmptyAxisList) {
  EXPECT_LAYOUT_ERROR(LayoutRules::parse("batch:"),
                      "dimension 'batch' has no mesh axis", kSyntaxHint, 0, 6);
  EXPECT_LAYOUT_ERROR(LayoutRules::parse("batch:;d:m"),
                      "dimension 'batch' has no mesh axis", kSyntaxHint, 0, 6);
  EXPECT_LAYOUT_ERROR(LayoutRules::parse("batch:b+"),
                      "expected a mesh axis name after '+' in the rule for "
                      "dimension 'batch', got the end of the text",
                      kSyntaxHint, 0, 8);
  EXPECT_LAYOUT_ERROR(LayoutRules::parse("batch:b++m"),
                      "expected a mesh axis name after '+' in the rule for "
                      "dimension 'batch', got '+'",
                      kSyntaxHint, 0, 8);
}

TEST(LayoutParse, BadNames) {
  EXPECT_LAYOUT_ERROR(LayoutRules::parse("2d:b"),
                      "'2d' is not a valid dimension name", kNameHint, 0, 1);
  EXPECT_LAYOUT_ERROR(LayoutRules::parse("batch:b;d:m-1"),
                      "'m-1' is not a valid mesh axis name", kNameHint, 0, 11);
}

TEST(LayoutParse, SameAxisTwiceInOneDimension) {
  EXPECT_LAYOUT_ERROR(LayoutRules::parse("batch:b+m+b"),
                      "dimension 'batch' lists mesh axis 'b' twice",
                      "a mesh axis can split a dimension only once; list "
                      "different axes, e.g. 'batch:b+m'",
                      0, 11);
}

TEST(LayoutParse, DimensionAssignedTwice) {
  EXPECT_LAYOUT_ERROR(
      LayoutRules::parse("batch:b;batch:m"),
      "dimension 'batch' is assigned twice (to 'b' and to 'm')",
      "to split one dimension over several mesh axes write batch:b+m", 0, 9);
  EXPECT_LAYOUT_ERROR(
      LayoutRules::parse("x:b+m d:c x:m+z"),
      "dimension 'x' is assigned twice (to 'b+m' and to 'm+z')",
      "to split one dimension over several mesh axes write x:b+m+z", 0, 11);
  EXPECT_LAYOUT_ERROR(LayoutRules::parse("batch:b;batch:b"),
                      "dimension 'batch' is assigned twice (to 'b' and to 'b')",
                      "remove one of the two rules for 'batch'", 0, 9);
}

TEST(LayoutAdd, BuildsRulesInCode) {
  LayoutRules rules;
  ASSERT_TRUE(rules.add("batch", {"b", "m"}).ok());
  ASSERT_TRUE(rules.add("d_ff", {"m"}).ok());
  EXPECT_EQ(rules.str(), "batch:b+m;d_ff:m");
  EXPECT_EQ(rules, parseOk("batch:b+m d_ff:m"));
  EXPECT_NE(rules, parseOk("d_ff:m batch:b+m"));
  EXPECT_LAYOUT_ERROR(rules.add("heads", {}),
                      "dimension 'heads' has no mesh axis", kSyntaxHint, 0, 0);
  ASSERT_TRUE(rules.add("heads", {"m"}, {3, 4}, {{3, 9}}).ok());
  EXPECT_EQ(rules.rules()[2].axisLocs[0].line, 3);
  EXPECT_LAYOUT_ERROR(rules.add("heads", {"b"}, {5, 6}),
                      "dimension 'heads' is assigned twice (to 'm' and to 'b')",
                      "to split one dimension over several mesh axes write "
                      "heads:m+b",
                      5, 6);
}

TEST(LayoutCheckMesh, KnownAxesPass) {
  EXPECT_TRUE(parseOk("batch:b;x:b+m").checkAgainstMesh(mesh("b:2;m:2")).ok());
  EXPECT_TRUE(parseOk("").checkAgainstMesh(Mesh::single()).ok());
}

TEST(LayoutCheckMesh, UnknownAxis) {
  EXPECT_LAYOUT_ERROR(
      parseOk("batch:b;d_ff:mm").checkAgainstMesh(mesh("b:4;m:2")),
      "dimension 'd_ff' is split over mesh axis 'mm', which "
      "is not in the mesh (axes: 'b', 'm')",
      "did you mean 'm'?", 0, 14);
  EXPECT_LAYOUT_ERROR(
      parseOk("batch:b+modle").checkAgainstMesh(mesh("data:2;model:2")),
      "dimension 'batch' is split over mesh axis 'b', which "
      "is not in the mesh (axes: 'data', 'model')",
      "add 'b' to the mesh or split 'batch' over one of its "
      "axes",
      0, 7);
  EXPECT_LAYOUT_ERROR(
      parseOk("batch:data+modle").checkAgainstMesh(mesh("data:2;model:2")),
      "dimension 'batch' is split over mesh axis 'modle', "
      "which is not in the mesh (axes: 'data', 'model')",
      "did you mean 'model'?", 0, 12);
  EXPECT_LAYOUT_ERROR(parseOk("batch:c").checkAgainstMesh(mesh("b:4")),
                      "dimension 'batch' is split over mesh axis 'c', which "
                      "is not in the mesh (axes: 'b')",
                      "add 'c' to the mesh or split 'batch' over one of its "
                      "axes",
                      0, 7);
  EXPECT_LAYOUT_ERROR(parseOk("batch:b").checkAgainstMesh(Mesh::single()),
                      "dimension 'batch' is split over mesh axis 'b', which "
                      "is not in the mesh (the mesh has no axes)",
                      "add 'b' to the mesh or split 'batch' over one of its "
                      "axes",
                      0, 7);
}

TEST(LayoutCheckDims, KnownDimsPass) {
  EXPECT_TRUE(
      parseOk("batch:b").checkAgainstDims({{"batch", 8}, {"hidden", 16}}).ok());
}

TEST(LayoutCheckDims, UnknownDimension) {
  std::map<std::string, int64_t> dims = {{"batch", 8}, {"hidden", 16}};
  EXPECT_LAYOUT_ERROR(parseOk("btach:b").checkAgainstDims(dims),
                      "the layout splits dimension 'btach', which the model "
                      "does not have",
                      "did you mean 'batch'?", 0, 1);
  EXPECT_LAYOUT_ERROR(parseOk("batch:b experts:m").checkAgainstDims(dims),
                      "the layout splits dimension 'experts', which the "
                      "model does not have",
                      "the model's dimensions are 'batch', 'hidden'", 0, 9);
  EXPECT_LAYOUT_ERROR(parseOk("batch:b").checkAgainstDims({}),
                      "the layout splits dimension 'batch', which the model "
                      "does not have",
                      "the model has no named dimensions", 0, 1);
}

} // namespace
