//===- MeshTest.cpp - Tests of meshes -------------------------------------===//
//
// Mesh string parsing (every separator, whitespace, every error with its
// column), building meshes from axes, and the row-major device numbering.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/Mesh.h"

#include "ErrorMatchers.h"

#include <gtest/gtest.h>

using namespace meshc::layout;

namespace {

constexpr const char *kSyntaxHint =
    "write the mesh as name:size pairs, e.g. 'b:4;m:2'";
constexpr const char *kSizeHint =
    "write the size as a positive integer, e.g. 'b:4'";
constexpr const char *kNameHint = "names start with a letter or '_' and "
                                  "contain only letters, digits and '_'";

Mesh parseOk(std::string_view text) {
  Result<Mesh> mesh = Mesh::parse(text);
  EXPECT_TRUE(mesh.ok()) << "'" << text << "': " << mesh.error().message;
  return mesh.ok() ? *mesh : Mesh();
}

TEST(MeshParse, TwoAxes) {
  Mesh mesh = parseOk("b:4;m:2");
  ASSERT_EQ(mesh.rank(), 2u);
  EXPECT_EQ(mesh.axes()[0], (MeshAxis{"b", 4}));
  EXPECT_EQ(mesh.axes()[1], (MeshAxis{"m", 2}));
  EXPECT_EQ(mesh.numDevices(), 8);
  EXPECT_EQ(mesh.str(), "b:4;m:2");
  EXPECT_EQ(mesh.shapeStr(), "4x2");
  EXPECT_EQ(mesh.axisNames(), (std::vector<std::string>{"b", "m"}));
}

class MeshSeparators : public testing::TestWithParam<const char *> {};

TEST_P(MeshSeparators, AllSpellingsGiveTheSameMesh) {
  Mesh mesh = parseOk(GetParam());
  EXPECT_EQ(mesh.str(), "b:4;m:2");
}

INSTANTIATE_TEST_SUITE_P(Spellings, MeshSeparators,
                         testing::Values("b:4;m:2", "b:4,m:2", "b:4.m:2",
                                         "b:4 m:2", "b:4\tm:2", "b:4\nm:2",
                                         "  b:4 ; m:2  ", "b:4;,. m:2;",
                                         ";b:4;;m:2;", "b : 4 , m : 2",
                                         "b:4 ,m:2"));

TEST(MeshParse, ThreeAxesWithMixedSeparators) {
  Mesh mesh = parseOk("x:2,y:3.z:4 w:1");
  EXPECT_EQ(mesh.str(), "x:2;y:3;z:4;w:1");
  EXPECT_EQ(mesh.shapeStr(), "2x3x4x1");
  EXPECT_EQ(mesh.numDevices(), 24);
}

TEST(MeshParse, NamesAndSizes) {
  Mesh mesh = parseOk("_a1:04;B_2:1");
  EXPECT_EQ(mesh.axes()[0], (MeshAxis{"_a1", 4}));
  EXPECT_EQ(mesh.axes()[1], (MeshAxis{"B_2", 1}));
  EXPECT_EQ(mesh.numDevices(), 4);
}

TEST(MeshParse, StrRoundTrips) {
  Mesh mesh = parseOk(" rows:2 , cols:8 ");
  EXPECT_EQ(parseOk(mesh.str()), mesh);
}

TEST(MeshParse, EmptyIsAnError) {
  std::string hint = std::string(kSyntaxHint) + " (a single device is 'd:1')";
  EXPECT_LAYOUT_ERROR(Mesh::parse(""), "mesh is empty", hint, 0, 1);
  EXPECT_LAYOUT_ERROR(Mesh::parse("  ;, "), "mesh is empty", hint, 0, 1);
}

TEST(MeshParse, BadSizes) {
  std::string got = "mesh axis 'b' size must be a positive integer, got ";
  EXPECT_LAYOUT_ERROR(Mesh::parse("b:0"), got + "'0'", kSizeHint, 0, 3);
  EXPECT_LAYOUT_ERROR(Mesh::parse("m:2;b:-2"), got + "'-2'", kSizeHint, 0, 7);
  EXPECT_LAYOUT_ERROR(Mesh::parse("b:4x"), got + "'4x'", kSizeHint, 0, 3);
  EXPECT_LAYOUT_ERROR(Mesh::parse("b:4.5"), got + "'4.5'", kSizeHint, 0, 3);
  EXPECT_LAYOUT_ERROR(Mesh::parse("b:4+2"), got + "'4+2'", kSizeHint, 0, 3);
  EXPECT_LAYOUT_ERROR(Mesh::parse("b:m"), got + "'m'", kSizeHint, 0, 3);
}

TEST(MeshParse, SizeOverflow) {
  EXPECT_LAYOUT_ERROR(
      Mesh::parse("b:99999999999999999999"),
      "mesh axis 'b' size '99999999999999999999' is too large",
      "a mesh axis size counts devices and must fit in a 64-bit integer", 0, 3);
  EXPECT_LAYOUT_ERROR(Mesh::parse("a:4294967296;b:4294967296"),
                      "mesh has too many devices: the product of its axis "
                      "sizes overflows a 64-bit integer at axis 'b'",
                      "a mesh axis size counts devices; check the sizes", 0,
                      14);
}

TEST(MeshParse, MalformedPairs) {
  EXPECT_LAYOUT_ERROR(Mesh::parse("b:"), "mesh axis 'b' has no size",
                      kSyntaxHint, 0, 2);
  EXPECT_LAYOUT_ERROR(Mesh::parse("b:;m:2"), "mesh axis 'b' has no size",
                      kSyntaxHint, 0, 2);
  EXPECT_LAYOUT_ERROR(
      Mesh::parse("b"),
      "expected ':' after mesh axis name 'b', got the end of the text",
      kSyntaxHint, 0, 2);
  EXPECT_LAYOUT_ERROR(Mesh::parse("b:4;m 2"),
                      "expected ':' after mesh axis name 'm', got '2'",
                      kSyntaxHint, 0, 7);
  EXPECT_LAYOUT_ERROR(Mesh::parse(":4"), "expected a mesh axis name, got ':'",
                      kSyntaxHint, 0, 1);
  EXPECT_LAYOUT_ERROR(Mesh::parse("b:4:2"), "unexpected ':' after 'b:4'",
                      "separate pairs with ';', ',', '.' or spaces", 0, 4);
}

TEST(MeshParse, BadNames) {
  EXPECT_LAYOUT_ERROR(Mesh::parse("2b:4"), "'2b' is not a valid mesh axis name",
                      kNameHint, 0, 1);
  EXPECT_LAYOUT_ERROR(Mesh::parse("b:2;b-x:4"),
                      "'b-x' is not a valid mesh axis name", kNameHint, 0, 5);
  EXPECT_LAYOUT_ERROR(Mesh::parse("+b:4"), "'+b' is not a valid mesh axis name",
                      kNameHint, 0, 1);
}

TEST(MeshParse, DuplicateAxis) {
  EXPECT_LAYOUT_ERROR(Mesh::parse("b:4;m:2;b:2"),
                      "mesh axis 'b' is given twice",
                      "give each mesh axis its own name", 0, 9);
}

TEST(MeshParse, EveryTruncationParsesOrPointsIntoTheText) {
  std::string text = " b:4 ;m:12,x:1 ";
  for (size_t length = 0; length <= text.size(); ++length) {
    Result<Mesh> mesh = Mesh::parse(text.substr(0, length));
    if (mesh.ok())
      continue;
    EXPECT_GE(mesh.error().column, 1) << "prefix of length " << length;
    EXPECT_LE(mesh.error().column, static_cast<int>(length) + 1)
        << "prefix of length " << length;
  }
  EXPECT_EQ(parseOk(text.substr(0, 9)).str(), "b:4;m:1");
}

TEST(MeshFromAxes, BuildsAndValidates) {
  Result<Mesh> mesh = Mesh::fromAxes({{"x", 2}, {"y", 4}});
  ASSERT_TRUE(mesh.ok());
  EXPECT_EQ(mesh->str(), "x:2;y:4");
  EXPECT_EQ(*mesh, parseOk("x:2,y:4"));
  EXPECT_NE(*mesh, parseOk("y:4,x:2"));

  EXPECT_LAYOUT_ERROR(Mesh::fromAxes({}), "mesh is empty",
                      std::string(kSyntaxHint) + " (a single device is 'd:1')",
                      0, 0);
  EXPECT_LAYOUT_ERROR(Mesh::fromAxes({{"x", 0}}),
                      "mesh axis 'x' size must be a positive integer, got 0",
                      kSizeHint, 0, 0);
  EXPECT_LAYOUT_ERROR(Mesh::fromAxes({{"x", -3}}),
                      "mesh axis 'x' size must be a positive integer, got -3",
                      kSizeHint, 0, 0);
  EXPECT_LAYOUT_ERROR(Mesh::fromAxes({{"x", 2}, {"x", 2}}),
                      "mesh axis 'x' is given twice",
                      "give each mesh axis its own name", 0, 0);
  EXPECT_LAYOUT_ERROR(Mesh::fromAxes({{"", 2}}),
                      "'' is not a valid mesh axis name", kNameHint, 0, 0);
}

TEST(MeshSingle, HasOneDeviceAndNoAxes) {
  Mesh mesh = Mesh::single();
  EXPECT_EQ(mesh.rank(), 0u);
  EXPECT_EQ(mesh.numDevices(), 1);
  EXPECT_EQ(mesh.str(), "");
  EXPECT_EQ(mesh.shapeStr(), "1");
  EXPECT_TRUE(mesh.coordinates(0).empty());
  EXPECT_EQ(mesh.deviceId({}), 0);
  EXPECT_EQ(mesh, Mesh());
}

TEST(MeshAxes, Lookup) {
  Mesh mesh = parseOk("b:4;m:2");
  EXPECT_EQ(mesh.axisIndex("b"), std::optional<size_t>(0));
  EXPECT_EQ(mesh.axisIndex("m"), std::optional<size_t>(1));
  EXPECT_EQ(mesh.axisIndex("x"), std::nullopt);
  EXPECT_EQ(mesh.axisName(1), "m");
  EXPECT_EQ(mesh.axisSize(0), 4);
}

TEST(MeshCoordinates, OneAxis) {
  Mesh mesh = parseOk("x:4");
  for (int64_t id = 0; id < 4; ++id) {
    EXPECT_EQ(mesh.coordinates(id), std::vector<int64_t>{id});
    EXPECT_EQ(mesh.deviceId({id}), id);
  }
}

TEST(MeshCoordinates, RowMajorLastAxisFastest) {
  Mesh mesh = parseOk("b:4;m:2");
  EXPECT_EQ(mesh.coordinates(0), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(mesh.coordinates(1), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(mesh.coordinates(2), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(mesh.coordinates(5), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(mesh.coordinates(7), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(mesh.deviceId({2, 1}), 5);
}

class MeshRoundTrip : public testing::TestWithParam<const char *> {};

TEST_P(MeshRoundTrip, DeviceIdInvertsCoordinates) {
  Mesh mesh = parseOk(GetParam());
  std::vector<int64_t> expected(mesh.rank(), 0);
  for (int64_t id = 0; id < mesh.numDevices(); ++id) {
    std::vector<int64_t> coords = mesh.coordinates(id);
    // Row-major order is counting in mixed radix with the last axis as the
    // least significant digit.
    EXPECT_EQ(coords, expected) << "device " << id;
    EXPECT_EQ(mesh.deviceId(coords), id);
    for (size_t axis = mesh.rank(); axis-- > 0;) {
      if (++expected[axis] < mesh.axisSize(axis))
        break;
      expected[axis] = 0;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MeshRoundTrip,
                         testing::Values("x:1", "x:2", "x:4", "b:2;m:2",
                                         "b:2;m:4", "b:4;m:2", "x:2;y:2;z:2",
                                         "x:3;y:1;z:5", "a:2;b:3;c:2;d:2"));

} // namespace
