//===- PerDeviceSizesTest.cpp - Sizes that differ between devices ---------===//
//
// A program on b:3 whose batch dim is cut 2, 2, 4 (device weights 1,1,2):
// the loader gives each device its own sizes, shares one program between
// devices with the same blocks, takes tensor blocks from the lists, reads a
// collective's member blocks, and pins every error of a malformed per-device
// size or block list.
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

/// The error loading `program` after `edit`, or "".
std::string errorIn(json program, void (*edit)(json &)) {
  edit(program);
  try {
    parseProgram(program.dump(), "p.mprog");
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "";
}

std::string errorAfter(void (*edit)(json &)) {
  return errorIn(weightedProgram(), edit);
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

/// y = all_gather(x) over b: x's batch blocks 2, 2, 4 join into 8.
json gatherProgram() {
  json program = weightedProgram();
  program["arena_bytes"] = 192;
  program["buffers"][1]["shape"] = {8, 4};
  program["buffers"][1]["bytes"] = 128;
  program["tensors"][1]["dims"][0] = {{"name", "batch"}, {"size", 8}};
  program["steps"][0] = json::parse(R"({
    "op": "all_gather", "in": {"buf": 0, "dims": ["batch", "io"]},
    "out": {"buf": 1, "dims": ["batch", "io"]}, "dim": "batch",
    "axes": ["b"], "sizes": {"batch": 8, "io": 4}, "blocks": [2, 2, 4]})");
  return program;
}

std::string gatherErrorAfter(void (*edit)(json &)) {
  return errorIn(gatherProgram(), edit);
}

TEST(PerDeviceSizesTest, CollectivesListTheMembersBlocks) {
  Program loaded = parseProgram(gatherProgram().dump(), "p.mprog");
  // Device d is b = d / 2, m = d % 2.
  for (int64_t device : {0, 3, 4, 5}) {
    const Step &step = loaded.on(device).steps[0];
    EXPECT_EQ(step.as<AllGatherAttrs>().blocks,
              (std::vector<int64_t>{2, 2, 4}));
    EXPECT_EQ(step.in[0].shape.sizes[0], device / 2 == 2 ? 4 : 2)
        << "device " << device;
    EXPECT_EQ(step.out.shape.sizes[0], 8);
  }
  // The program of the largest blocks holds the largest member's.
  EXPECT_EQ(loaded.steps[0].in[0].shape.sizes[0], 4);
}

TEST(PerDeviceSizesTest, MemberBlocksAloneStillGiveEachDeviceItsOwn) {
  // No per-device size anywhere but the step's list: x's buffer holds 4
  // rows on every device and the gather joins 2, 2 and 4 of them.
  json program = gatherProgram();
  program["buffers"][0]["shape"] = {4, 4};
  program["tensors"][0]["dims"][0] = {
      {"name", "batch"}, {"size", 12}, {"axes", {"b"}}};
  Program loaded = parseProgram(program.dump(), "p.mprog");
  ASSERT_FALSE(loaded.perDevice.empty());
  EXPECT_EQ(loaded.on(0).steps[0].in[0].shape.sizes[0], 2);
  EXPECT_EQ(loaded.on(4).steps[0].in[0].shape.sizes[0], 4);
}

TEST(PerDeviceSizesTest, MalformedMemberBlocks) {
  EXPECT_EQ(gatherErrorAfter([](json &p) {
              p["steps"][0]["blocks"] = {4, 4};
            }),
            "p.mprog: steps[0].blocks: lists 2 blocks of dim 'batch', but the "
            "group over ['b'] has 3 members");
  EXPECT_EQ(gatherErrorAfter([](json &p) {
              p["steps"][0]["blocks"] = {2, 2, 3};
            }),
            "p.mprog: steps[0].blocks: the blocks of dim 'batch' add up to 7, "
            "but its joined size is 8 (in the sizes of device 0)");
  EXPECT_EQ(gatherErrorAfter([](json &p) {
              p["steps"][0]["blocks"] = {2, -2, 8};
            }),
            "p.mprog: steps[0].blocks[1]: expected an integer >= 0, got -2");
  EXPECT_EQ(gatherErrorAfter([](json &p) {
              p["steps"][0]["blocks"] = {INT64_MAX, INT64_MAX, 0};
            }),
            "p.mprog: steps[0].in: sizes are too large: their product "
            "overflows 64 bits");
  // Without the list the blocks are taken to be equal, and 8 is not 3 of
  // them.
  EXPECT_EQ(gatherErrorAfter([](json &p) { p["steps"][0].erase("blocks"); }),
            "p.mprog: steps[0].sizes.batch: size 8 of dim 'batch' is not "
            "divisible by the group size 3");
}

TEST(PerDeviceSizesTest, AllToAllNeedsTheJoinedConcatSize) {
  json exchange = json::parse(R"({
    "op": "all_to_all", "in": {"buf": 0, "dims": ["batch", "io"]},
    "out": {"buf": 1, "dims": ["batch", "io"]}, "split_dim": "io",
    "concat_dim": "batch", "axes": ["b"],
    "sizes": {"batch": {"axes": ["b"], "blocks": [2, 2, 4]}, "io": 3},
    "concat_blocks": [2, 2, 4]})");
  json program = gatherProgram();
  program["steps"][0] = exchange;
  try {
    parseProgram(program.dump(), "p.mprog");
    ADD_FAILURE() << "loaded";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(),
                 "p.mprog: steps[0].concat_blocks: an all_to_all with "
                 "\"concat_blocks\" needs \"concat_size\", the joined size "
                 "of its concat dim");
  }
  program["steps"][0].erase("concat_blocks");
  program["steps"][0]["concat_size"] = 8;
  try {
    parseProgram(program.dump(), "p.mprog");
    ADD_FAILURE() << "loaded";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(), "p.mprog: steps[0].concat_size: "
                               "\"concat_size\" goes with \"concat_blocks\"");
  }
  // A device's own concat block must be its in size: device 2 (b = 1) has
  // 2 rows, not the 4 this list gives it. (Device 2 has device 0's sizes,
  // but its own entry tells it apart, so it is checked, not given device
  // 0's program.)
  program["steps"][0]["concat_blocks"] = {2, 4, 2};
  try {
    parseProgram(program.dump(), "p.mprog");
    ADD_FAILURE() << "loaded";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(),
                 "p.mprog: steps[0].concat_blocks: this device's block of dim "
                 "'batch' is 4 but its size in \"sizes\" is 2 (in the sizes of "
                 "device 2)");
  }
  // With both, device 4 (b = 2) joins the batch blocks into 8 rows of io 1.
  program["steps"][0]["concat_blocks"] = {2, 2, 4};
  Program loaded = parseProgram(program.dump(), "p.mprog");
  EXPECT_EQ(loaded.on(4).steps[0].out.shape.sizes,
            (std::vector<int64_t>{8, 1}));
  EXPECT_EQ(loaded.on(4).steps[0].in[0].shape.sizes,
            (std::vector<int64_t>{4, 3}));
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
