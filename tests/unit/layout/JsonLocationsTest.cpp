//===- JsonLocationsTest.cpp - Tests of JSON key/value locations ----------===//
//
// The scanner that tells spec errors where a key or value is.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/JsonLocations.h"

#include <gtest/gtest.h>

using namespace meshc::layout;

namespace {

void expectLoc(SourceLoc loc, int line, int column) {
  EXPECT_EQ(loc.line, line);
  EXPECT_EQ(loc.column, column);
}

TEST(JsonLocations, Paths) {
  EXPECT_EQ(jsonMemberPath("", "mesh"), "\"mesh\"");
  EXPECT_EQ(jsonMemberPath("\"mesh\"", "b"), "\"mesh\".\"b\"");
  EXPECT_EQ(jsonElementPath("\"layout\".\"x\"", 1), "\"layout\".\"x\"[1]");
}

TEST(JsonLocations, OffsetToLineAndColumn) {
  std::string_view text = "ab\ncd\n\nx";
  expectLoc(locOfOffset(text, 0), 1, 1);
  expectLoc(locOfOffset(text, 1), 1, 2);
  expectLoc(locOfOffset(text, 3), 2, 1);
  expectLoc(locOfOffset(text, 7), 4, 1);
  expectLoc(locOfOffset(text, 100), 4, 2);
}

TEST(JsonLocations, KeysAndValues) {
  std::string text =
      "{\n"
      "  \"mesh\": {\"b\": 4, \"m\": 2},\n"
      "  \"layout\": {\"x\": [\"b\", \"m\"], \"y\": \"b\\\"\"},\n"
      "  \"n\": [1, [true, null], -2.5e3]\n"
      "}";
  JsonLocations locations = JsonLocations::scan(text);
  expectLoc(locations.valueLoc(""), 1, 1);
  expectLoc(locations.keyLoc("\"mesh\""), 2, 3);
  expectLoc(locations.valueLoc("\"mesh\""), 2, 11);
  expectLoc(locations.keyLoc("\"mesh\".\"m\""), 2, 20);
  expectLoc(locations.valueLoc("\"mesh\".\"m\""), 2, 25);
  expectLoc(locations.valueLoc("\"layout\".\"x\"[1]"), 3, 25);
  expectLoc(locations.keyLoc("\"layout\".\"y\""), 3, 31);
  expectLoc(locations.valueLoc("\"layout\".\"y\""), 3, 36);
  expectLoc(locations.valueLoc("\"n\"[1][1]"), 4, 19);
  expectLoc(locations.valueLoc("\"n\"[2]"), 4, 26);
  expectLoc(locations.valueLoc("\"absent\""), 0, 0);
  expectLoc(locations.keyLoc("\"absent\""), 0, 0);
  EXPECT_FALSE(locations.duplicate().has_value());
}

TEST(JsonLocations, ByteOrderMarkIsSkipped) {
  JsonLocations locations = JsonLocations::scan("\xEF\xBB\xBF{\"a\": 1}");
  expectLoc(locations.keyLoc("\"a\""), 1, 5);
}

TEST(JsonLocations, FindsTheFirstDuplicateKey) {
  JsonLocations locations =
      JsonLocations::scan("{\"mesh\": {\"b\": 4,\n \"b\": 2}, \"mesh\": 1}");
  ASSERT_TRUE(locations.duplicate().has_value());
  EXPECT_EQ(locations.duplicate()->path, "\"mesh\".\"b\"");
  EXPECT_EQ(locations.duplicate()->parentPath, "\"mesh\"");
  EXPECT_EQ(locations.duplicate()->key, "b");
  expectLoc(locations.duplicate()->loc, 2, 2);
}

} // namespace
