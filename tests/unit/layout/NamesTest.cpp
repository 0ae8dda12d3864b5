//===- NamesTest.cpp - Tests of name helpers and error rendering ----------===//
//
// The identifier rule, the edit distance and "did you mean" choice behind
// hints, and how errors are rendered for the driver.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/Names.h"

#include <gtest/gtest.h>

using namespace meshc::layout;

namespace {

TEST(Names, Identifiers) {
  EXPECT_TRUE(isIdentifier("b"));
  EXPECT_TRUE(isIdentifier("_x1"));
  EXPECT_TRUE(isIdentifier("d_ff"));
  EXPECT_TRUE(isIdentifier("Batch2"));
  EXPECT_FALSE(isIdentifier(""));
  EXPECT_FALSE(isIdentifier("2b"));
  EXPECT_FALSE(isIdentifier("b-x"));
  EXPECT_FALSE(isIdentifier("b m"));
  EXPECT_FALSE(isIdentifier("é"));
}

TEST(Names, EditDistance) {
  EXPECT_EQ(editDistance("", ""), 0u);
  EXPECT_EQ(editDistance("batch", "batch"), 0u);
  EXPECT_EQ(editDistance("batch", ""), 5u);
  EXPECT_EQ(editDistance("batch", "bath"), 1u);
  EXPECT_EQ(editDistance("batch", "btach"), 1u); // a swap is one edit
  EXPECT_EQ(editDistance("model", "modle"), 1u);
  EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
}

TEST(Names, ClosestName) {
  std::vector<std::string> axes = {"data", "model", "m"};
  EXPECT_EQ(closestName("modle", axes), std::optional<std::string>("model"));
  EXPECT_EQ(closestName("dat", axes), std::optional<std::string>("data"));
  EXPECT_EQ(closestName("mm", axes), std::optional<std::string>("m"));
  // A one-letter name is not "close" to another one-letter name.
  EXPECT_EQ(closestName("x", axes), std::nullopt);
  EXPECT_EQ(closestName("pipeline", axes), std::nullopt);
  EXPECT_EQ(closestName("b", {}), std::nullopt);
}

TEST(Names, Quoting) {
  EXPECT_EQ(quoteName("b"), "'b'");
  EXPECT_EQ(quoteNames({}), "");
  EXPECT_EQ(quoteNames({"b", "m"}), "'b', 'm'");
  EXPECT_EQ(joinAxes({"b"}), "b");
  EXPECT_EQ(joinAxes({"b", "m", "x"}), "b+m+x");
}

TEST(ErrorRendering, Str) {
  EXPECT_EQ((Error{"bad", "fix it", 3, 10, "spec.json"}).str(),
            "spec.json:3:10: error: bad\nhint: fix it");
  EXPECT_EQ((Error{"bad", "", 3, 10}).str(), "3:10: error: bad");
  EXPECT_EQ((Error{"bad", "", 0, 5}).str(), "column 5: error: bad");
  EXPECT_EQ((Error{"bad", "", 0, 0, "spec.json"}).str(),
            "spec.json: error: bad");
  EXPECT_EQ((Error{"bad", "h"}).str(), "error: bad\nhint: h");
}

TEST(ErrorRendering, At) {
  Error error{"bad", "", 1, 2};
  EXPECT_EQ(error.at({}).line, 1);
  EXPECT_EQ(error.at({}).column, 2);
  EXPECT_EQ(error.at({0, 7}).line, 0);
  EXPECT_EQ(error.at({0, 7}).column, 7);
}

TEST(ErrorRendering, FlagWithCaret) {
  Error error{"mesh axis 'b' is given twice",
              "give each mesh axis its own "
              "name",
              0, 5};
  EXPECT_EQ(formatFlagError(error, "--mesh", "b:4;b:2"),
            "error: --mesh: mesh axis 'b' is given twice\n"
            "  b:4;b:2\n"
            "      ^\n"
            "hint: give each mesh axis its own name");
  EXPECT_EQ(formatFlagError(Error{"no column"}, "--layout", "x"),
            "error: --layout: no column");
}

TEST(ResultType, HoldsValueOrError) {
  Result<int> value = 3;
  EXPECT_TRUE(value.ok());
  EXPECT_TRUE(static_cast<bool>(value));
  EXPECT_EQ(*value, 3);
  Result<int> failed = Result<int>::failure(Error{"bad"});
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "bad");
  EXPECT_TRUE(success().ok());
}

} // namespace
