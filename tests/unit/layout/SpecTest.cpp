//===- SpecTest.cpp - Tests of JSON spec files ----------------------------===//
//
// Both forms of "mesh" and "layout", options, and every spec error with its
// JSON path, line and column; reading spec files from disk.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/Spec.h"

#include "ErrorMatchers.h"

#include <gtest/gtest.h>

#include <fstream>

using namespace meshc::layout;

namespace {

constexpr const char *kNameHint = "names start with a letter or '_' and "
                                  "contain only letters, digits and '_'";
constexpr const char *kSpecExample =
    "a spec looks like {\"mesh\": {\"b\": 4, \"m\": 2}, \"layout\": "
    "{\"batch\": \"b\"}}";

Spec parseOk(std::string_view text) {
  Result<Spec> spec = parseSpecJson(text, "spec.json");
  EXPECT_TRUE(spec.ok()) << spec.error().str();
  return spec.ok() ? *spec : Spec();
}

Result<Spec> parse(std::string_view text) {
  Result<Spec> spec = parseSpecJson(text, "spec.json");
  if (!spec.ok()) {
    EXPECT_EQ(spec.error().source, "spec.json");
  }
  return spec;
}

TEST(Spec, ObjectForms) {
  Spec spec = parseOk(R"({
  "mesh": {"b": 4, "m": 2},
  "layout": {"batch": "b", "d_ff": "m", "x": "b+m", "y": ["m", "b"],
             "z": " m + b "}
})");
  EXPECT_EQ(spec.mesh.str(), "b:4;m:2");
  EXPECT_EQ(spec.rules.str(), "batch:b;d_ff:m;x:b+m;y:m+b;z:m+b");
  EXPECT_TRUE(spec.options.empty());
  // Rules point at the file: the key of the dimension, each axis's value.
  const LayoutRule &y = spec.rules.rules()[3];
  EXPECT_EQ(y.dimLoc.line, 3);
  EXPECT_EQ(y.dimLoc.column, 53);
  EXPECT_EQ(y.axisLocs[1].line, 3);
  EXPECT_EQ(y.axisLocs[1].column, 64);
}

TEST(Spec, StringForms) {
  Spec spec = parseOk(R"({"mesh": "b:4;m:2", "layout": "batch:b x:b+m"})");
  EXPECT_EQ(spec.mesh.str(), "b:4;m:2");
  EXPECT_EQ(spec.rules.str(), "batch:b;x:b+m");
  // Locations inside the string are translated to the file.
  EXPECT_EQ(spec.rules.rules()[1].dimLoc.line, 1);
  EXPECT_EQ(spec.rules.rules()[1].dimLoc.column, 40);
  EXPECT_EQ(spec.rules.rules()[1].axisLocs[1].column, 44);
}

TEST(Spec, AutoLayoutAsksForTheSearch) {
  Spec spec =
      parseOk(R"({"mesh": "b:2;m:4", "layout": "auto", "options": {"x": 1}})");
  EXPECT_TRUE(spec.autoLayout);
  EXPECT_TRUE(spec.rules.empty());
  EXPECT_EQ(spec.options.at("x"), "1");
  EXPECT_FALSE(parseOk(R"({"mesh": "b:2", "layout": "batch:b"})").autoLayout);
}

TEST(Spec, LayoutIsOptionalAndOptionsAreKept) {
  Spec spec = parseOk(R"({"mesh": {"d": 1}, "options": {"optimizer": "adam",
      "uneven_batch": true, "lr": 0.001, "steps": 10, "list": [1, 2],
      "none": null}})");
  EXPECT_EQ(spec.mesh.numDevices(), 1);
  EXPECT_TRUE(spec.rules.empty());
  std::map<std::string, std::string> expected = {
      {"optimizer", "adam"}, {"uneven_batch", "true"}, {"lr", "0.001"},
      {"steps", "10"},       {"list", "[1,2]"},        {"none", "null"}};
  EXPECT_EQ(spec.options, expected);
}

TEST(SpecErrors, JsonSyntax) {
  EXPECT_LAYOUT_ERROR(parse("{\n  \"mesh\": {\"b\": 4,}\n}"),
                      "invalid JSON: syntax error while parsing object key - "
                      "unexpected '}'; expected string literal",
                      kSpecExample, 2, 19);
  EXPECT_LAYOUT_ERROR(parse("{\"mesh\": {\"b\": 4x}}"),
                      "invalid JSON: syntax error while parsing object - "
                      "invalid literal; last read: '4x'; expected '}'",
                      kSpecExample, 1, 17);
  EXPECT_LAYOUT_ERROR(parse("{\"mesh\": \n"),
                      "invalid JSON: syntax error while parsing value - "
                      "unexpected end of input; expected '[', '{', or a "
                      "literal",
                      kSpecExample, 2, 1);
  EXPECT_LAYOUT_ERROR(parse(""),
                      "invalid JSON: syntax error while parsing value - "
                      "unexpected end of input; expected '[', '{', or a "
                      "literal",
                      kSpecExample, 1, 1);
}

TEST(SpecErrors, DuplicateKeys) {
  EXPECT_LAYOUT_ERROR(parse("{\"mesh\": {\"b\": 4,\n \"b\": 2}}"),
                      "key \"b\" appears twice in \"mesh\"",
                      "each key of a JSON object may appear only once", 2, 2);
  EXPECT_LAYOUT_ERROR(parse("{\"mesh\": \"b:4\", \"mesh\": \"b:2\"}"),
                      "key \"mesh\" appears twice in the spec",
                      "each key of a JSON object may appear only once", 1, 17);
}

TEST(SpecErrors, TopLevel) {
  EXPECT_LAYOUT_ERROR(parse("[1, 2]"),
                      "the spec must be a JSON object, got an array",
                      kSpecExample, 1, 1);
  EXPECT_LAYOUT_ERROR(parse(" \"b:4\""),
                      "the spec must be a JSON object, got \"b:4\"",
                      kSpecExample, 1, 2);
  EXPECT_LAYOUT_ERROR(parse("{\"layout\": \"batch:b\"}"),
                      "the spec has no \"mesh\"",
                      "add e.g. \"mesh\": {\"b\": 4, \"m\": 2}", 1, 1);
}

TEST(SpecErrors, UnknownKey) {
  std::string known = "the known keys are \"mesh\", \"layout\", "
                      "\"axis_weights\", \"uneven\" and \"options\"";
  EXPECT_LAYOUT_ERROR(parse("{\"mesh\": \"b:2\",\n \"layuot\": \"batch:b\"}"),
                      "unknown key \"layuot\" in the spec",
                      "did you mean \"layout\"? " + known, 2, 2);
  EXPECT_LAYOUT_ERROR(parse("{\"mesh\": \"b:2\", \"devices\": 8}"),
                      "unknown key \"devices\" in the spec", known, 1, 17);
}

TEST(SpecErrors, MeshValues) {
  EXPECT_LAYOUT_ERROR(parse("{\"mesh\": {\"b\": \"4x\"}}"),
                      "\"mesh\".\"b\": expected a positive integer, got \"4x\"",
                      "write the size as a number, e.g. \"b\": 4", 1, 16);
  for (const char *bad :
       {"0", "-1", "2.5", "true", "null", "[4]", "18446744073709551615"}) {
    std::string text = std::string("{\"mesh\": {\"m\": ") + bad + "}}";
    std::string got = std::string(bad) == "[4]" ? "an array" : bad;
    EXPECT_LAYOUT_ERROR(
        parse(text), "\"mesh\".\"m\": expected a positive integer, got " + got,
        "write the size as a number, e.g. \"m\": 4", 1, 16);
  }
  EXPECT_LAYOUT_ERROR(parse("{\"mesh\": {\"b\": 2, \"2b\": 4}}"),
                      "\"mesh\".\"2b\": '2b' is not a valid mesh axis name",
                      kNameHint, 1, 19);
  EXPECT_LAYOUT_ERROR(parse("{\"mesh\": {}}"), "\"mesh\": mesh is empty",
                      "write the mesh as name:size pairs, e.g. 'b:4;m:2' (a "
                      "single device is 'd:1')",
                      1, 10);
  EXPECT_LAYOUT_ERROR(parse("{\"mesh\": [[\"b\", 4]]}"),
                      "\"mesh\": expected an object of axis sizes such as "
                      "{\"b\": 4, \"m\": 2} or a string such as \"b:4;m:2\", "
                      "got an array",
                      "", 1, 10);
  EXPECT_LAYOUT_ERROR(
      parse("{\"mesh\": {\"a\": 4294967296, \"b\": 4294967296}}"),
      "\"mesh\": mesh has too many devices: the product of its axis sizes "
      "overflows a 64-bit integer at axis 'b'",
      "a mesh axis size counts devices; check the sizes", 1, 10);
}

TEST(SpecErrors, MeshString) {
  // The column points inside the string: 'b' of the second pair.
  EXPECT_LAYOUT_ERROR(parse("{\n  \"mesh\": \"b:4;b:2\"}"),
                      "\"mesh\": mesh axis 'b' is given twice",
                      "give each mesh axis its own name", 2, 16);
  EXPECT_LAYOUT_ERROR(parse("{\"mesh\": \"\"}"), "\"mesh\": mesh is empty",
                      "write the mesh as name:size pairs, e.g. 'b:4;m:2' (a "
                      "single device is 'd:1')",
                      1, 11);
}

TEST(SpecErrors, LayoutValues) {
  std::string head = "{\"mesh\": {\"b\": 4, \"m\": 2}, \"layout\": ";
  // The value of "layout" starts at column 38.
  ASSERT_EQ(head.size(), 37u);
  EXPECT_LAYOUT_ERROR(parse(head + "3}"),
                      "\"layout\": expected an object such as {\"batch\": "
                      "\"b\"} or a string such as \"batch:b\", got 3",
                      "", 1, 38);
  std::string valueHint = "e.g. \"batch\": \"b\", \"batch\": \"b+m\" or "
                          "\"batch\": [\"b\", \"m\"]";
  EXPECT_LAYOUT_ERROR(parse(head + "{\"batch\": 4}}"),
                      "\"layout\".\"batch\": expected a mesh axis name, "
                      "\"b+m\" or a list of mesh axis names, got 4",
                      valueHint, 1, 48);
  EXPECT_LAYOUT_ERROR(parse(head + "{\"batch\": {\"b\": 1}}}"),
                      "\"layout\".\"batch\": expected a mesh axis name, "
                      "\"b+m\" or a list of mesh axis names, got an object",
                      valueHint, 1, 48);
  EXPECT_LAYOUT_ERROR(parse(head + "{\"batch\": \"b+\"}}"),
                      "\"layout\".\"batch\": expected mesh axis names joined "
                      "by '+', got \"b+\"",
                      std::string("e.g. \"b\" or \"b+m\"; ") + kNameHint, 1,
                      48);
  EXPECT_LAYOUT_ERROR(parse(head + "{\"x\": [\"b\", 4]}}"),
                      "\"layout\".\"x\"[1]: expected a mesh axis name, got 4",
                      "list mesh axes as strings, e.g. [\"b\", \"m\"]", 1, 50);
  EXPECT_LAYOUT_ERROR(parse(head + "{\"x\": [\"b\", \"m m\"]}}"),
                      "\"layout\".\"x\"[1]: 'm m' is not a valid mesh axis "
                      "name",
                      kNameHint, 1, 50);
}

TEST(SpecErrors, LayoutRules) {
  std::string head = "{\"mesh\": {\"b\": 4, \"m\": 2}, \"layout\": ";
  std::string syntaxHint =
      "write each rule as dimension:axes, e.g. 'batch:b' or 'batch:b+m'";
  EXPECT_LAYOUT_ERROR(parse(head + "{\"batch\": \"\"}}"),
                      "\"layout\".\"batch\": dimension 'batch' has no mesh "
                      "axis",
                      syntaxHint, 1, 39);
  EXPECT_LAYOUT_ERROR(parse(head + "{\"batch\": []}}"),
                      "\"layout\".\"batch\": dimension 'batch' has no mesh "
                      "axis",
                      syntaxHint, 1, 39);
  EXPECT_LAYOUT_ERROR(parse(head + "{\"batch\": \"b+b\"}}"),
                      "\"layout\".\"batch\": dimension 'batch' lists mesh "
                      "axis 'b' twice",
                      "a mesh axis can split a dimension only once; list "
                      "different axes, e.g. 'batch:b+m'",
                      1, 48);
  EXPECT_LAYOUT_ERROR(parse(head + "{\"2d\": \"b\"}}"),
                      "\"layout\".\"2d\": '2d' is not a valid dimension name",
                      kNameHint, 1, 39);
  EXPECT_LAYOUT_ERROR(parse(head + "\"batch:b;batch:m\"}"),
                      "\"layout\": dimension 'batch' is assigned twice (to "
                      "'b' and to 'm')",
                      "to split one dimension over several mesh axes write "
                      "batch:b+m",
                      1, 47);
}

TEST(SpecErrors, LayoutAgainstMesh) {
  std::string head = "{\"mesh\": {\"b\": 4, \"m\": 2}, \"layout\": ";
  EXPECT_LAYOUT_ERROR(
      parse(head + "{\"batch\": \"b\", \"x\": [\"m\", \"c\"]}}"),
      "\"layout\": dimension 'x' is split over mesh axis 'c', "
      "which is not in the mesh (axes: 'b', 'm')",
      "add 'c' to the mesh or split 'x' over one of its axes", 1, 64);
  EXPECT_LAYOUT_ERROR(parse(head + "\"batch:b;d_ff:mm\"}"),
                      "\"layout\": dimension 'd_ff' is split over mesh axis "
                      "'mm', which is not in the mesh (axes: 'b', 'm')",
                      "did you mean 'm'?", 1, 52);
}

TEST(Spec, AxisWeightsAndUneven) {
  Spec spec = parseOk(
      R"({"mesh": "b:3;m:2", "axis_weights": "b=1,1,2", "uneven": true})");
  EXPECT_EQ(spec.axisWeights, "b=1,1,2");
  EXPECT_TRUE(spec.uneven);
  Spec plain = parseOk(R"({"mesh": "b:3"})");
  EXPECT_EQ(plain.axisWeights, "");
  EXPECT_FALSE(plain.uneven);
}

TEST(SpecErrors, AxisWeightsAndUneven) {
  std::string hint = "weights are positive numbers, one per device along the "
                     "axis, e.g. 'b=1,1,2' or 'b=1,1.5'";
  // The weights' own errors, at their column inside the string.
  EXPECT_LAYOUT_ERROR(
      parse(R"({"mesh": "b:3", "axis_weights": "b=1,0,2"})"),
      "\"axis_weights\": the weight of device 1 along mesh axis 'b' must be "
      "positive, got 0",
      hint, 1, 38);
  EXPECT_LAYOUT_ERROR(
      parse(R"({"mesh": "b:3", "axis_weights": "b=1,2"})"),
      "\"axis_weights\": mesh axis 'b' has 3 devices, but 2 weights were "
      "given",
      "give one weight per device along 'b'", 1, 36);
  EXPECT_LAYOUT_ERROR(parse(R"({"mesh": "b:3", "axis_weights": [1, 1, 2]})"),
                      "\"axis_weights\": expected a string such as "
                      "\"b=1,1,2\", got an array",
                      "", 1, 33);
  EXPECT_LAYOUT_ERROR(parse(R"({"mesh": "b:3", "uneven": "yes"})"),
                      "\"uneven\": expected true or false, got \"yes\"", "", 1,
                      27);
}

TEST(SpecErrors, Options) {
  EXPECT_LAYOUT_ERROR(parse("{\"mesh\": \"b:2\", \"options\": [1]}"),
                      "\"options\": expected an object, got an array",
                      "write options as {\"name\": value}", 1, 28);
}

TEST(SpecErrors, EveryTruncationIsALocatedError) {
  std::string text = R"({"mesh": {"b": 4, "m": 2},
 "layout": {"batch": "b", "x": ["b", "m"]}, "options": {"k": [1, "v"]}})";
  ASSERT_TRUE(parse(text).ok());
  for (size_t length = 0; length < text.size(); ++length) {
    Result<Spec> spec = parse(text.substr(0, length));
    ASSERT_FALSE(spec.ok()) << "prefix of length " << length;
    EXPECT_GE(spec.error().line, 1) << "prefix of length " << length;
    EXPECT_GE(spec.error().column, 1) << "prefix of length " << length;
  }
}

std::string writeTempFile(const std::string &name, const std::string &text) {
  std::string path = testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(SpecFile, LoadsFromDisk) {
  std::string path = writeTempFile(
      "meshc_layout_spec_ok.json",
      "{\"mesh\": \"b:2;m:2\", \"layout\": {\"batch\": \"b+m\"}}\n");
  Result<Spec> spec = loadSpecFile(path);
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  EXPECT_EQ(spec->mesh.str(), "b:2;m:2");
  EXPECT_EQ(spec->rules.str(), "batch:b+m");
}

TEST(SpecFile, ErrorsNameTheFile) {
  std::string path =
      writeTempFile("meshc_layout_spec_bad.json", "{\"mesh\": {\"b\": 0}}");
  Result<Spec> spec = loadSpecFile(path);
  EXPECT_LAYOUT_ERROR(spec,
                      "\"mesh\".\"b\": expected a positive integer, got 0",
                      "write the size as a number, e.g. \"b\": 4", 1, 16);
  EXPECT_EQ(spec.error().source, path);
  EXPECT_EQ(spec.error().str(),
            path + ":1:16: error: \"mesh\".\"b\": expected a positive "
                   "integer, got 0\nhint: write the size as a number, e.g. "
                   "\"b\": 4");
}

TEST(SpecFile, MissingFile) {
  Result<Spec> spec = loadSpecFile("/nonexistent/meshc/spec.json");
  EXPECT_LAYOUT_ERROR(spec,
                      "cannot open spec file '/nonexistent/meshc/spec.json': "
                      "No such file or directory",
                      "", 0, 0);
  EXPECT_EQ(spec.error().source, "/nonexistent/meshc/spec.json");
}

TEST(SpecFile, DirectoryIsNotAFile) {
  std::string dir = testing::TempDir();
  EXPECT_LAYOUT_ERROR(loadSpecFile(dir),
                      "cannot read spec file '" + dir + "': Is a directory", "",
                      0, 0);
}

} // namespace
