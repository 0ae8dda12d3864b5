//===- PerDeviceSizesTest.cpp - Sizes that differ between devices ---------===//
//
// A program on b:3 whose batch dim is cut 2, 2, 4 (device weights 1,1,2):
// the loader gives each device its own sizes, shares one program between
// devices with the same blocks, takes tensor blocks from the lists, and pins
// every error of a malformed per-device size or block list.
//
//===----------------------------------------------------------------------===//

#include "runtime/Error.h"
#include "runtime/Loader.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

using namespace meshc::runtime;
using nlohmann::json;

namespace {

/// mesh b:3 x m:2; y = relu(x) with x [batch=8 cut 2|2|4 over b, io=4].
json weightedProgram() {
  return json::parse(R"({
    "format": "meshc-mprog", "version": 1, "program": "p", "source": "p.mtf",
    "mesh": [{"name": "b", "size": 3}, {"name": "m", "size": 2}],
    "seed": 3, "arena_bytes": 128,
    "buffers": [
      {"id": 0, "dtype": "f32",
       "shape": [{"axes": ["b"], "blocks": [2, 2, 4]}, 4],
       "offset": 0, "bytes": 64},
      {"id": 1, "dtype": "f32",
       "shape": [{"axes": ["b"], "blocks": [2, 2, 4]}, 4],
       "offset": 64, "bytes": 64}],
    "tensors": [
      {"role": "input", "name": "x", "buffer": 0, "dtype": "f32",
       "dims": [{"name": "batch", "size": 8, "axes": ["b"],
                 "blocks": [2, 2, 4]},
                {"name": "io", "size": 4}]},
      {"role": "output", "name": "y", "buffer": 1, "dtype": "f32",
       "dims": [{"name": "batch", "size": 8, "axes": ["b"],
                 "blocks": [2, 2, 4]},
                {"name": "io", "size": 4}]}],
    "steps": [
      {"op": "binary", "fn": "add",
       "lhs": {"buf": 0, "dims": ["batch", "io"]},
       "rhs": {"buf": 0, "dims": ["batch", "io"]},
       "out": {"buf": 1, "dims": ["batch", "io"]},
       "sizes": {"batch": {"axes": ["b"], "blocks": [2, 2, 4]}, "io": 4}}]
  })");
}

std::string errorAfter(void (*edit)(json &)) {
  json program = weightedProgram();
  edit(program);
  try {
    parseProgram(program.dump(), "p.mprog");
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "";
}

TEST(PerDeviceSizesTest, EachDeviceRunsItsOwnSizes) {
  Program program = parseProgram(weightedProgram().dump(), "p.mprog");
  // The program itself has the largest blocks.
  EXPECT_EQ(program.device, -1);
  EXPECT_EQ(program.steps[0].out.shape.str(), "[batch=4, io=4]");
  EXPECT_EQ(program.buffers[0].elements, 16);
  ASSERT_EQ(program.perDevice.size(), 6u);
  // Device d is at b = d / 2: b=0 and b=1 hold 2 rows, b=2 holds 4.
  for (int64_t d = 0; d < 6; ++d) {
    const Program &own = program.on(d);
    int64_t rows = d / 2 == 2 ? 4 : 2;
    EXPECT_EQ(own.steps[0].out.shape.sizes[0], rows) << "device " << d;
    EXPECT_EQ(own.buffers[1].elements, rows * 4) << "device " << d;
  }
  // Devices with the same sizes share one program.
  EXPECT_EQ(program.perDevice[0], program.perDevice[1]);
  EXPECT_EQ(program.perDevice[0], program.perDevice[3]);
  EXPECT_NE(program.perDevice[0], program.perDevice[4]);
  EXPECT_EQ(program.perDevice[4], program.perDevice[5]);
  // Tensor blocks come from the lists.
  const Tensor &x = program.tensors[0];
  EXPECT_EQ(x.blockShape(program.mesh, 4), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(x.blockOffset(program.mesh, 4), (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(x.blockOffset(program.mesh, 3), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(x.maxBlockShape(program.mesh), (std::vector<int64_t>{4, 4}));
}

TEST(PerDeviceSizesTest, EvenProgramsRunOneProgram) {
  json program = weightedProgram();
  program["buffers"][0]["shape"][0] = 4;
  program["buffers"][1]["shape"][0] = 4;
  program["steps"][0]["sizes"]["batch"] = 4;
  for (json &tensor : program["tensors"]) {
    tensor["dims"][0]["size"] = 12;
    tensor["dims"][0].erase("blocks");
  }
  Program loaded = parseProgram(program.dump(), "p.mprog");
  EXPECT_TRUE(loaded.perDevice.empty());
  EXPECT_EQ(&loaded.on(5), &loaded);
}

TEST(PerDeviceSizesTest, MalformedSizes) {
  EXPECT_EQ(errorAfter([](json &p) {
              p["steps"][0]["sizes"]["batch"]["blocks"] = {2, 2};
            }),
            "p.mprog: steps[0].sizes.batch.blocks: a per-device size over 3 "
            "shards needs one block per shard, got 2");
  EXPECT_EQ(errorAfter([](json &p) {
              p["steps"][0]["sizes"]["batch"]["axes"] = {"q"};
            }),
            "p.mprog: steps[0].sizes.batch.axes: 'q' is not a mesh axis "
            "(mesh b:3;m:2)");
  EXPECT_EQ(errorAfter([](json &p) {
              p["buffers"][0]["shape"][0]["axes"] = {"b", "b"};
            }),
            "p.mprog: buffers[0].shape[0].axes: mesh axis 'b' is listed twice");
  EXPECT_EQ(errorAfter([](json &p) {
              p["buffers"][0]["shape"][0]["axes"] = json::array();
            }),
            "p.mprog: buffers[0].shape[0].axes: a per-device size needs at "
            "least one mesh axis");
  EXPECT_EQ(
      errorAfter([](json &p) {
        p["steps"][0]["sizes"]["batch"]["blocks"] = {2, -1, 4};
      }),
      "p.mprog: steps[0].sizes.batch.blocks[1]: expected an integer >= 0, "
      "got -1");
}

TEST(PerDeviceSizesTest, CollectivesMoveEqualBlocksOnly) {
  EXPECT_EQ(errorAfter([](json &p) {
              p["steps"][0] = json::parse(R"({
                "op": "all_gather", "in": {"buf": 0, "dims": ["batch", "io"]},
                "out": {"buf": 1, "dims": ["batch", "io"]}, "dim": "batch",
                "axes": ["b"],
                "sizes": {"batch": {"axes": ["b"], "blocks": [2, 2, 4]},
                          "io": 4}})");
            }),
            "p.mprog: steps[0].sizes.batch: the all_gather moves dim 'batch', "
            "whose size differs between devices; collectives move equal "
            "blocks only so far");
}

TEST(PerDeviceSizesTest, MalformedBlockLists) {
  EXPECT_EQ(errorAfter([](json &p) {
              p["tensors"][0]["dims"][0]["blocks"] = {2, 2, 3};
            }),
            "p.mprog: tensors[0].dims[0].blocks: dim 'batch' of x has 3 "
            "blocks summing to 7; its split needs 3 summing to its size 8");
  EXPECT_EQ(
      errorAfter([](json &p) { p["tensors"][0]["dims"][0].erase("blocks"); }),
      "p.mprog: tensors[0].dims: tensor 'x' dimension 'batch' (size 8) "
      "is not divisible by mesh axis 'b' (size 3)");
  EXPECT_EQ(errorAfter([](json &p) {
              p["tensors"][0]["dims"][0]["blocks"] = {INT64_MAX, 1, 0};
            }),
            "p.mprog: tensors[0].dims[0].blocks[1]: the blocks' sum "
            "overflows 64 bits");
  // A device whose buffer is smaller than its block of a tensor.
  EXPECT_EQ(errorAfter([](json &p) {
              p["tensors"][0]["dims"][0]["blocks"] = {4, 2, 2};
            }),
            "p.mprog: tensors[0].buffer: input 'x' needs 64 bytes per device "
            "but buffer 0 holds 32 (in the sizes of device 0)");
}

} // namespace
