//===- SessionTest.cpp - Collective steps and sessions end to end ---------===//
//
// Each resharding step (all_gather, slice, all_to_all) must leave the global
// tensor unchanged while changing its layout, and the reducing ones
// (reduce_scatter, all_reduce) must multiply a replicated tensor by the group
// size: the output, reassembled from the device blocks, is compared with the
// input generated on the host. Also: session errors, with a device failing
// while its peers wait in a collective.
//
//===----------------------------------------------------------------------===//

#include "NpyWriter.h"

#include "runtime/Error.h"
#include "runtime/Loader.h"
#include "runtime/Session.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstring>

#include <cstdio>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;
using nlohmann::json;

namespace {

/// A tensor declaration for reshardProgram: dims as (name, size, axes).
struct Decl {
  json dims;
  int64_t localElements;
};

/// mesh b:2;m:4; input x (buffer 0) goes through `step` into output y
/// (buffer 1, or buffer 0 when `inPlace`).
json reshardProgram(const Decl &x, const Decl &y, const json &step,
                    bool inPlace = false) {
  int64_t xBytes = x.localElements * 4, yBytes = y.localElements * 4;
  return {
      {"format", "meshc-mprog"},
      {"version", 1},
      {"program", "reshard"},
      {"mesh", {{{"name", "b"}, {"size", 2}}, {{"name", "m"}, {"size", 4}}}},
      {"seed", 11},
      {"arena_bytes", xBytes + yBytes},
      {"buffers",
       {{{"id", 0},
         {"dtype", "f32"},
         {"shape", {x.localElements}},
         {"offset", 0},
         {"bytes", xBytes}},
        {{"id", 1},
         {"dtype", "f32"},
         {"shape", {y.localElements}},
         {"offset", xBytes},
         {"bytes", yBytes}}}},
      {"tensors",
       {{{"role", "input"},
         {"name", "x"},
         {"buffer", 0},
         {"dtype", "f32"},
         {"dims", x.dims}},
        {{"role", "output"},
         {"name", "y"},
         {"buffer", inPlace ? 0 : 1},
         {"dtype", "f32"},
         {"dims", y.dims}}}},
      {"steps", {step}}};
}

json dim(const std::string &name, int64_t size,
         std::vector<std::string> axes = {}) {
  return {{"name", name}, {"size", size}, {"axes", axes}};
}

json operand(int64_t buf, std::vector<std::string> dims) {
  return {{"buf", buf}, {"dims", dims}};
}

/// Runs `text` once and checks y == factor * x on the global tensors.
void expectOutputIsScaledInput(const json &text, float factor) {
  Program program = parseProgram(text.dump(), "reshard.mprog");
  Session session(program, {});
  session.runStep();
  const Tensor &x = *program.findTensor(Role::Input, "x");
  HostTensor y = session.gather(*program.findTensor(Role::Output, "y"));
  std::vector<int64_t> shape = x.globalShape();
  ASSERT_EQ(y.shape, shape);
  std::vector<float> expected(y.elements());
  fillBlock({InitSpec::Kind::Normal, 0.0, 1.0}, 11, "x", shape,
            std::vector<int64_t>(shape.size(), 0), shape, expected.data());
  for (int64_t i = 0; i < y.elements(); ++i)
    ASSERT_FLOAT_EQ(y.at(i), factor * expected[i]) << "element " << i;
}

TEST(SessionTest, AllGatherInnerDim) {
  expectOutputIsScaledInput(
      reshardProgram({{dim("a", 3), dim("c", 8, {"m"})}, 6},
                     {{dim("a", 3), dim("c", 8)}, 24},
                     {{"op", "all_gather"},
                      {"in", operand(0, {"a", "c"})},
                      {"out", operand(1, {"a", "c"})},
                      {"dim", "c"},
                      {"axes", {"m"}},
                      {"sizes", {{"a", 3}, {"c", 8}}}}),
      1.0f);
}

TEST(SessionTest, AllGatherOuterDimOverTwoAxes) {
  for (std::vector<std::string> axes :
       {std::vector<std::string>{"b", "m"}, {"m", "b"}}) {
    SCOPED_TRACE(axes[0]);
    expectOutputIsScaledInput(
        reshardProgram({{dim("c", 16, axes), dim("a", 3)}, 6},
                       {{dim("c", 16), dim("a", 3)}, 48},
                       {{"op", "all_gather"},
                        {"in", operand(0, {"c", "a"})},
                        {"out", operand(1, {"c", "a"})},
                        {"dim", "c"},
                        {"axes", axes},
                        {"sizes", {{"a", 3}, {"c", 16}}}}),
        1.0f);
  }
}

TEST(SessionTest, Slice) {
  expectOutputIsScaledInput(
      reshardProgram({{dim("a", 3), dim("c", 8)}, 24},
                     {{dim("a", 3), dim("c", 8, {"m"})}, 6},
                     {{"op", "slice"},
                      {"in", operand(0, {"a", "c"})},
                      {"out", operand(1, {"a", "c"})},
                      {"dim", "c"},
                      {"axes", {"m"}},
                      {"sizes", {{"a", 3}, {"c", 8}}}}),
      1.0f);
}

TEST(SessionTest, AllToAll) {
  // [a, c:m] -> [a:m, c], then the same with the dims stored as [c, a].
  expectOutputIsScaledInput(
      reshardProgram({{dim("a", 4), dim("c", 8, {"m"})}, 8},
                     {{dim("a", 4, {"m"}), dim("c", 8)}, 8},
                     {{"op", "all_to_all"},
                      {"in", operand(0, {"a", "c"})},
                      {"out", operand(1, {"a", "c"})},
                      {"split_dim", "a"},
                      {"concat_dim", "c"},
                      {"axes", {"m"}},
                      {"sizes", {{"a", 4}, {"c", 2}}}}),
      1.0f);
  expectOutputIsScaledInput(
      reshardProgram({{dim("c", 8, {"m"}), dim("a", 4)}, 8},
                     {{dim("c", 8), dim("a", 4, {"m"})}, 8},
                     {{"op", "all_to_all"},
                      {"in", operand(0, {"c", "a"})},
                      {"out", operand(1, {"c", "a"})},
                      {"split_dim", "a"},
                      {"concat_dim", "c"},
                      {"axes", {"m"}},
                      {"sizes", {{"a", 4}, {"c", 2}}}}),
      1.0f);
}

TEST(SessionTest, ReduceScatterSumsReplicas) {
  expectOutputIsScaledInput(
      reshardProgram({{dim("a", 3), dim("c", 8)}, 24},
                     {{dim("a", 3), dim("c", 8, {"m"})}, 6},
                     {{"op", "reduce_scatter"},
                      {"in", operand(0, {"a", "c"})},
                      {"out", operand(1, {"a", "c"})},
                      {"dim", "c"},
                      {"axes", {"m"}},
                      {"reduction", "sum"},
                      {"sizes", {{"a", 3}, {"c", 8}}}}),
      4.0f);
}

TEST(SessionTest, AllReduceInPlace) {
  expectOutputIsScaledInput(reshardProgram({{dim("a", 3), dim("c", 5)}, 15},
                                           {{dim("a", 3), dim("c", 5)}, 15},
                                           {{"op", "all_reduce"},
                                            {"buf", 0},
                                            {"axes", {"m", "b"}},
                                            {"reduction", "sum"}},
                                           /*inPlace=*/true),
                            8.0f);
}

/// Runs `combined` (one combined collective step) and `plain` (the same
/// tensors moved by single steps) once, and checks outputs x and z equal
/// bit for bit and equal `factor` times the inputs x and z (drawn with
/// `seed`).
void expectCombinedMatchesSingleSteps(const Program &combined,
                                      const Program &plain, uint64_t seed,
                                      float factor) {
  ASSERT_EQ(combined.steps.size(), 1u);
  Session one(combined, {}), two(plain, {});
  one.runStep();
  two.runStep();
  for (const char *name : {"x", "z"}) {
    HostTensor got = one.gather(*combined.findTensor(Role::Output, name));
    HostTensor want = two.gather(*plain.findTensor(Role::Output, name));
    std::vector<int64_t> shape =
        combined.findTensor(Role::Input, name)->globalShape();
    std::vector<float> input(got.elements());
    fillBlock({InitSpec::Kind::Normal, 0.0, 1.0}, seed, name, shape,
              std::vector<int64_t>(shape.size(), 0), shape, input.data());
    for (int64_t i = 0; i < got.elements(); ++i) {
      ASSERT_EQ(got.at(i), want.at(i)) << name << " element " << i;
      ASSERT_FLOAT_EQ(got.at(i), factor * input[i]) << name << " element " << i;
    }
  }
}

// A combined all_reduce ("bufs"): both buffers summed over the group in one
// collective through the scratch, each in place; the sums equal two plain
// all_reduce steps' bit for bit.
TEST(SessionTest, CombinedAllReduceSumsEveryBuffer) {
  auto program = [](bool combined) {
    json steps = combined ? json::array({{{"op", "all_reduce"},
                                          {"bufs", {0, 1}},
                                          {"axes", {"m"}},
                                          {"reduction", "sum"}}})
                          : json::array({{{"op", "all_reduce"},
                                          {"buf", 0},
                                          {"axes", {"m"}},
                                          {"reduction", "sum"}},
                                         {{"op", "all_reduce"},
                                          {"buf", 1},
                                          {"axes", {"m"}},
                                          {"reduction", "sum"}}});
    json text = json::parse(R"({
      "format": "meshc-mprog", "version": 1, "program": "combined",
      "mesh": [{"name": "b", "size": 2}, {"name": "m", "size": 3}],
      "seed": 5, "arena_bytes": 128,
      "buffers": [
        {"id": 0, "dtype": "f32", "shape": [2, 5], "offset": 0, "bytes": 40},
        {"id": 1, "dtype": "f32", "shape": [7], "offset": 64, "bytes": 28}],
      "tensors": [
        {"role": "input", "name": "x", "buffer": 0, "dtype": "f32",
         "dims": [{"name": "r", "size": 2}, {"name": "c", "size": 5}]},
        {"role": "input", "name": "z", "buffer": 1, "dtype": "f32",
         "dims": [{"name": "k", "size": 7}]},
        {"role": "output", "name": "x", "buffer": 0, "dtype": "f32",
         "dims": [{"name": "r", "size": 2}, {"name": "c", "size": 5}]},
        {"role": "output", "name": "z", "buffer": 1, "dtype": "f32",
         "dims": [{"name": "k", "size": 7}]}]})");
    text["steps"] = steps;
    return parseProgram(text.dump(), "combined.mprog");
  };
  Program combined = program(true), plain = program(false);
  EXPECT_EQ(combined.steps[0].scratchBytes, 68);
  expectCombinedMatchesSingleSteps(combined, plain, 5, 3.0f);
}

/// `steps` with every "start" and every wait step removed, loop bodies
/// included: the blocking program (as tests/runtime/Inputs/strip_starts.py).
json withoutStarts(const json &steps) {
  json kept = json::array();
  for (json step : steps) {
    if (step["op"] == "wait")
      continue;
    step.erase("start");
    if (step["op"] == "loop")
      step["body"] = withoutStarts(step["body"]);
    kept.push_back(step);
  }
  return kept;
}

// Started collectives ("start" and "wait"): a combined all_reduce beside a
// unary step, an all_reduce started and waited at once, and one started in
// each iteration of a loop over a stacked buffer: on the communication lanes
// the outputs equal the blocking program's bit for bit, run after run.
/// Runs `overlapped` on lanes and `blocking` (its steps withoutStarts)
/// `runs` training runs side by side: after each, outputs `names` are equal
/// bit for bit (and, with `nonzero`, the blocking ones hold no zero).
void expectOverlapEqualsBlocking(const Program &overlapped,
                                 const Program &blocking,
                                 std::initializer_list<const char *> names,
                                 int runs, bool nonzero = false) {
  SessionOptions lanes;
  lanes.overlap = Overlap::On; // on lanes on any machine
  Session one(overlapped, lanes), two(blocking, {});
  for (int run = 0; run < runs; ++run) {
    one.runStep();
    two.runStep();
    for (const char *name : names) {
      HostTensor got = one.gather(*overlapped.findTensor(Role::Output, name));
      HostTensor want = two.gather(*blocking.findTensor(Role::Output, name));
      ASSERT_EQ(got.elements(), want.elements());
      for (int64_t i = 0; i < got.elements(); ++i) {
        if (nonzero) {
          ASSERT_NE(want.at(i), 0.0f) << name << " element " << i;
        }
        ASSERT_EQ(got.at(i), want.at(i))
            << name << " element " << i << " after run " << run;
      }
    }
  }
}

TEST(SessionTest, StartedCollectivesEqualBlockingOnes) {
  auto program = [](bool overlapped) {
    json text = json::parse(R"({
      "format": "meshc-mprog", "version": 1, "program": "started",
      "mesh": [{"name": "b", "size": 2}, {"name": "m", "size": 3}],
      "seed": 9, "arena_bytes": 320,
      "buffers": [
        {"id": 0, "dtype": "f32", "shape": [10], "offset": 0, "bytes": 40},
        {"id": 1, "dtype": "f32", "shape": [7], "offset": 64, "bytes": 28},
        {"id": 2, "dtype": "f32", "shape": [16], "offset": 128, "bytes": 64},
        {"id": 3, "dtype": "f32", "shape": [16], "offset": 192, "bytes": 64},
        {"id": 4, "dtype": "f32", "shape": [4], "offset": 256, "bytes": 16},
        {"id": 5, "dtype": "f32", "shape": [12], "offset": 256, "bytes": 48},
        {"id": 6, "dtype": "f32", "shape": [4], "offset": 304, "bytes": 16}],
      "tensors": [
        {"role": "input", "name": "x", "buffer": 0, "dtype": "f32",
         "dims": [{"name": "c", "size": 10}]},
        {"role": "input", "name": "z", "buffer": 1, "dtype": "f32",
         "dims": [{"name": "k", "size": 7}]},
        {"role": "input", "name": "w", "buffer": 2, "dtype": "f32",
         "dims": [{"name": "j", "size": 16}]},
        {"role": "input", "name": "s", "buffer": 5, "dtype": "f32",
         "dims": [{"name": "i", "size": 12}]},
        {"role": "output", "name": "x", "buffer": 0, "dtype": "f32",
         "dims": [{"name": "c", "size": 10}]},
        {"role": "output", "name": "z", "buffer": 1, "dtype": "f32",
         "dims": [{"name": "k", "size": 7}]},
        {"role": "output", "name": "v", "buffer": 3, "dtype": "f32",
         "dims": [{"name": "j", "size": 16}]},
        {"role": "output", "name": "s", "buffer": 5, "dtype": "f32",
         "dims": [{"name": "i", "size": 12}]}],
      "steps": [
        {"op": "all_reduce", "bufs": [0, 1], "axes": ["m"],
         "reduction": "sum", "start": 0},
        {"op": "unary", "fn": "exp", "in": 2, "out": 3},
        {"op": "wait", "tickets": [0]},
        {"op": "all_reduce", "buf": 3, "axes": ["b"], "reduction": "sum",
         "start": 1},
        {"op": "wait", "tickets": [1]},
        {"op": "loop", "count": 3,
         "stacked": [{"buf": 4, "stride": 16}],
         "body": [
           {"op": "all_reduce", "buf": 4, "axes": ["m", "b"],
            "reduction": "sum", "start": 2},
           {"op": "fill", "out": 6, "value": 2.5},
           {"op": "wait", "tickets": [2]}]}]})");
    if (!overlapped)
      text["steps"] = withoutStarts(text["steps"]);
    return parseProgram(text.dump(), "started.mprog");
  };
  Program overlapped = program(true), blocking = program(false);
  ASSERT_EQ(overlapped.steps[0].ticket, 0);
  ASSERT_EQ(blocking.steps[0].ticket, -1);
  expectOverlapEqualsBlocking(overlapped, blocking, {"x", "z", "v", "s"}, 3);
}

// A started reduce_scatter copies its input into its scratch where it
// starts (readsInputsAtStart), so the fill after its start may zero that
// input before its wait: on lanes the result is still the blocking one's
// (were the copy left to the lane, the fill would usually win the race).
TEST(SessionTest, AStartedReduceScatterReadsItsInputWhereItStarts) {
  auto program = [](bool overlapped) {
    json text = json::parse(R"({
      "format": "meshc-mprog", "version": 1, "program": "packed",
      "mesh": [{"name": "m", "size": 2}],
      "seed": 3, "arena_bytes": 384,
      "buffers": [
        {"id": 0, "dtype": "f32", "shape": [64], "offset": 0, "bytes": 256},
        {"id": 1, "dtype": "f32", "shape": [32], "offset": 256, "bytes": 128}],
      "tensors": [
        {"role": "input", "name": "x", "buffer": 0, "dtype": "f32",
         "dims": [{"name": "c", "size": 64}]},
        {"role": "output", "name": "y", "buffer": 1, "dtype": "f32",
         "dims": [{"name": "c", "size": 64, "axes": ["m"]}]}],
      "steps": [
        {"op": "reduce_scatter", "in": {"buf": 0, "dims": ["c"]},
         "out": {"buf": 1, "dims": ["c"]}, "dim": "c", "axes": ["m"],
         "reduction": "sum", "sizes": {"c": 64}, "start": 0},
        {"op": "fill", "out": 0, "value": 0.0},
        {"op": "wait", "tickets": [0]}]})");
    if (!overlapped)
      text["steps"] = withoutStarts(text["steps"]);
    return parseProgram(text.dump(), "packed.mprog");
  };
  Program overlapped = program(true), blocking = program(false);
  expectOverlapEqualsBlocking(overlapped, blocking, {"y"}, 20,
                              /*nonzero=*/true);
}

// A combined all_gather and a combined reduce_scatter ("parts"): two
// tensors each, one cut along an inner dim (strided blocks) and one along
// its outer dim, moved in one collective; the results equal the single
// steps' bit for bit and the inputs gathered (twice the input scattered).
TEST(SessionTest, CombinedGatherAndScatterMoveEveryPart) {
  auto program = [](bool combined, bool gather) {
    // x: [a=3, c=8], z: [k=6]; c and k split over m (2 devices) on one side.
    json cSplit = dim("c", 8, {"m"}), kSplit = dim("k", 6, {"m"});
    json small = {{"x", {dim("a", 3), cSplit}}, {"z", {kSplit}}};
    json whole = {{"x", {dim("a", 3), dim("c", 8)}}, {"z", {dim("k", 6)}}};
    json in = gather ? small : whole, out = gather ? whole : small;
    auto part = [&](const char *name, int64_t from, int64_t to,
                    std::vector<std::string> dims, const char *cut,
                    json sizes) {
      return json{{"in", operand(from, dims)},
                  {"out", operand(to, dims)},
                  {"dim", cut},
                  {"sizes", sizes}};
    };
    json xSizes = {{"a", 3}, {"c", 8}}, zSizes = {{"k", 6}};
    json parts = {part("x", 0, 2, {"a", "c"}, "c", xSizes),
                  part("z", 1, 3, {"k"}, "k", zSizes)};
    json steps = json::array();
    const char *op = gather ? "all_gather" : "reduce_scatter";
    if (combined) {
      steps.push_back({{"op", op}, {"parts", parts}, {"axes", {"m"}}});
    } else {
      for (json each : parts) {
        each["op"] = op;
        each["axes"] = {"m"};
        steps.push_back(each);
      }
    }
    if (!gather)
      for (json &step : steps)
        step["reduction"] = "sum";
    int64_t xIn = gather ? 12 : 24, zIn = gather ? 3 : 6;
    int64_t xOut = gather ? 24 : 12, zOut = gather ? 6 : 3;
    json text = {{"format", "meshc-mprog"},
                 {"version", 1},
                 {"program", "moves"},
                 {"mesh", {{{"name", "m"}, {"size", 2}}}},
                 {"seed", 9},
                 {"arena_bytes", 4 * (xIn + zIn + xOut + zOut)},
                 {"buffers",
                  {{{"id", 0},
                    {"dtype", "f32"},
                    {"shape", {xIn}},
                    {"offset", 0},
                    {"bytes", 4 * xIn}},
                   {{"id", 1},
                    {"dtype", "f32"},
                    {"shape", {zIn}},
                    {"offset", 4 * xIn},
                    {"bytes", 4 * zIn}},
                   {{"id", 2},
                    {"dtype", "f32"},
                    {"shape", {xOut}},
                    {"offset", 4 * (xIn + zIn)},
                    {"bytes", 4 * xOut}},
                   {{"id", 3},
                    {"dtype", "f32"},
                    {"shape", {zOut}},
                    {"offset", 4 * (xIn + zIn + xOut)},
                    {"bytes", 4 * zOut}}}},
                 {"tensors",
                  {{{"role", "input"},
                    {"name", "x"},
                    {"buffer", 0},
                    {"dtype", "f32"},
                    {"dims", in["x"]}},
                   {{"role", "input"},
                    {"name", "z"},
                    {"buffer", 1},
                    {"dtype", "f32"},
                    {"dims", in["z"]}},
                   {{"role", "output"},
                    {"name", "x"},
                    {"buffer", 2},
                    {"dtype", "f32"},
                    {"dims", out["x"]}},
                   {{"role", "output"},
                    {"name", "z"},
                    {"buffer", 3},
                    {"dtype", "f32"},
                    {"dims", out["z"]}}}},
                 {"steps", steps}};

    return parseProgram(text.dump(), "moves.mprog");
  };
  for (bool gather : {true, false}) {
    SCOPED_TRACE(gather ? "all_gather" : "reduce_scatter");
    Program combined = program(true, gather), plain = program(false, gather);
    EXPECT_EQ(combined.steps[0].scratchBytes, 4 * (24 + 6));
    expectCombinedMatchesSingleSteps(combined, plain, 9, gather ? 1.0f : 2.0f);
  }
}

/// Two devices; device 1 gets a bad label and fails while device 0 waits
/// for it in the all_reduce that follows.
json crossEntropyProgram() {
  return json::parse(R"({
    "format": "meshc-mprog", "version": 1, "program": "ce",
    "mesh": [{"name": "d", "size": 2}], "seed": 1, "arena_bytes": 64,
    "buffers": [
      {"id": 0, "dtype": "f32", "shape": [2, 3], "offset": 0, "bytes": 24},
      {"id": 1, "dtype": "i32", "shape": [2], "offset": 24, "bytes": 8},
      {"id": 2, "dtype": "f32", "shape": [2], "offset": 32, "bytes": 8}],
    "tensors": [
      {"role": "input", "name": "logits", "buffer": 0, "dtype": "f32",
       "dims": [{"name": "batch", "size": 4, "axes": ["d"]},
                {"name": "classes", "size": 3}]},
      {"role": "input", "name": "labels", "buffer": 1, "dtype": "i32",
       "dims": [{"name": "batch", "size": 4, "axes": ["d"]}]}],
    "steps": [
      {"op": "softmax_cross_entropy",
       "logits": {"buf": 0, "dims": ["batch", "classes"]},
       "labels": {"buf": 1, "dims": ["batch"]},
       "out": {"buf": 2, "dims": ["batch"]}, "dim": "classes",
       "sizes": {"batch": 2, "classes": 3}},
      {"op": "all_reduce", "buf": 2, "axes": ["d"], "reduction": "sum"}]
  })");
}

std::string sessionError(const Program &program,
                         const SessionOptions &options) {
  try {
    Session session(program, options);
    session.runStep();
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "";
}

TEST(SessionTest, BadLabelNamesStepDeviceAndValue) {
  std::string path = ::testing::TempDir() + "labels.npy";
  writeFile(path, npyBytes<int32_t>(
                      "{'descr': '<i4', 'fortran_order': False, 'shape': "
                      "(4,), }",
                      {0, 1, 2, 7}));
  Program program = parseProgram(crossEntropyProgram().dump(), "ce.mprog");
  SessionOptions options;
  options.inputFiles["labels"] = path;
  EXPECT_EQ(sessionError(program, options),
            "step 0 (softmax_cross_entropy) on device 1: label 7 (labels "
            "element 1) is outside [0, 3)");
  std::remove(path.c_str());
}

TEST(SessionTest, SetupErrors) {
  Program program = parseProgram(crossEntropyProgram().dump(), "ce.mprog");
  SessionOptions devices;
  devices.devices = 3;
  EXPECT_EQ(sessionError(program, devices),
            "--devices 3 does not match ce.mprog, which is compiled for 2 "
            "devices (mesh d:2)");
  SessionOptions cuda;
  cuda.backend = "cuda";
  EXPECT_EQ(sessionError(program, cuda),
            "backend 'cuda': meshrun is not built with CUDA support yet "
            "(available backends: cpu)");
  SessionOptions unknown;
  unknown.backend = "tpu";
  EXPECT_EQ(sessionError(program, unknown),
            "unknown backend 'tpu' (available backends: cpu)");
  SessionOptions noSuchInput;
  noSuchInput.inputFiles["y"] = "y.npy";
  EXPECT_EQ(sessionError(program, noSuchInput),
            "--input y=y.npy: ce.mprog has no input 'y' (inputs: 'logits', "
            "'labels')");
  EXPECT_EQ(sessionError(program, {}),
            "input 'labels' is i32 and has no \"range\" for synthetic values; "
            "give --input labels=FILE.npy");
}

TEST(SessionTest, InputFileMismatches) {
  Program program = parseProgram(crossEntropyProgram().dump(), "ce.mprog");
  std::string path = ::testing::TempDir() + "bad.npy";
  SessionOptions options;
  options.inputFiles["labels"] = path;
  writeFile(path,
            npyBytes<float>("{'descr': '<f4', 'fortran_order': False, 'shape': "
                            "(4,), }",
                            {0, 1, 2, 0}));
  EXPECT_EQ(sessionError(program, options),
            path + ": .npy dtype f32 does not match input 'labels' (i32)");
  writeFile(path, npyBytes<int32_t>(
                      "{'descr': '<i4', 'fortran_order': False, 'shape': "
                      "(2, 2), }",
                      {0, 1, 2, 0}));
  EXPECT_EQ(sessionError(program, options),
            path + ": .npy shape (2, 2) does not match input 'labels' shape "
                   "(4,)");
  std::remove(path.c_str());
}

/// An array of int32 labels as SessionOptions::inputArrays takes it.
std::shared_ptr<const NpyArray> labelArray(std::vector<int32_t> values,
                                           DType dtype = DType::I32) {
  auto array = std::make_shared<NpyArray>();
  array->dtype = dtype;
  array->shape = {static_cast<int64_t>(values.size())};
  array->data.resize(values.size() * 4);
  std::memcpy(array->data.data(), values.data(), array->data.size());
  return array;
}

TEST(SessionTest, InputArraysAreTakenAsFilesAre) {
  Program program = parseProgram(crossEntropyProgram().dump(), "ce.mprog");
  // The bad label of BadLabelNamesStepDeviceAndValue reaches device 1 from
  // an array in memory as from the file.
  SessionOptions options;
  options.inputArrays["labels"] = labelArray({0, 1, 2, 7});
  EXPECT_EQ(sessionError(program, options),
            "step 0 (softmax_cross_entropy) on device 1: label 7 (labels "
            "element 1) is outside [0, 3)");
  options.inputArrays["labels"] = labelArray({0, 1, 2, 0});
  EXPECT_EQ(sessionError(program, options), "");

  options.inputArrays["labels"] = labelArray({0, 1, 2, 0}, DType::F32);
  EXPECT_EQ(sessionError(program, options),
            "input array 'labels': dtype f32 does not match input 'labels' "
            "(i32)");
  auto square = std::make_shared<NpyArray>(*labelArray({0, 1, 2, 0}));
  square->shape = {2, 2};
  options.inputArrays["labels"] = square;
  EXPECT_EQ(sessionError(program, options),
            "input array 'labels': shape (2, 2) does not match input "
            "'labels' shape (4,)");
  SessionOptions unknown;
  unknown.inputArrays["y"] = labelArray({0});
  EXPECT_EQ(sessionError(program, unknown),
            "input array 'y': ce.mprog has no input 'y' (inputs: 'logits', "
            "'labels')");
  SessionOptions both;
  both.inputFiles["labels"] = "labels.npy";
  both.inputArrays["labels"] = labelArray({0, 1, 2, 0});
  EXPECT_EQ(sessionError(program, both),
            "--input labels=labels.npy and an array both give input 'labels'");
}

TEST(SessionTest, InputsBoundLaterAndAgain) {
  Program program = parseProgram(crossEntropyProgram().dump(), "ce.mprog");
  SessionOptions options;
  options.bindInputsLater = true;
  Session session(program, options);
  auto runError = [&]() -> std::string {
    try {
      session.runStep();
    } catch (const RuntimeError &error) {
      return error.what();
    }
    return "";
  };
  const std::string unbound =
      "the inputs of ce.mprog are not bound: bind them "
      "(Session::bindInputs) before a run, again after a failed binding";
  EXPECT_EQ(runError(), unbound);
  options.inputArrays["labels"] = labelArray({0, 1, 2, 0});
  session.bindInputs(options);
  EXPECT_EQ(runError(), "");
  // A failed binding leaves the inputs unbound.
  options.inputArrays["labels"] = labelArray({0, 1, 2, 0}, DType::F32);
  EXPECT_THROW(session.bindInputs(options), RuntimeError);
  EXPECT_EQ(runError(), unbound);
  // Eval arrays need every training array's input.
  options.inputArrays["labels"] = labelArray({0, 1, 2, 0, 1, 2});
  options.evalInputArrays["logits"] = std::make_shared<NpyArray>();
  try {
    session.bindInputs(options);
    ADD_FAILURE() << "an eval set without 'labels' was taken";
  } catch (const RuntimeError &error) {
    EXPECT_EQ(std::string(error.what()),
              "eval inputs: input 'labels' is an array in training but has "
              "no eval array");
  }
}

TEST(SessionTest, NoRunAfterAFailedOne) {
  Program program = parseProgram(crossEntropyProgram().dump(), "ce.mprog");
  SessionOptions options;
  options.inputArrays["labels"] = labelArray({0, 1, 2, 7});
  Session session(program, options);
  EXPECT_THROW(session.runStep(), RuntimeError);
  // Good labels now: the aborted collectives and the devices stopped
  // mid-program would give a wrong answer, so the session refuses.
  options.inputArrays["labels"] = labelArray({0, 1, 2, 0});
  session.bindInputs(options);
  try {
    session.runStep();
    ADD_FAILURE() << "a run after a failed one ran";
  } catch (const RuntimeError &error) {
    EXPECT_EQ(std::string(error.what()),
              "a run of ce.mprog failed before (step 0 (softmax_cross_entropy) "
              "on device 1: label 7 (labels element 1) is outside [0, 3)); "
              "the session cannot run again: set up a new one (and restore a "
              "checkpoint to go on)");
  }
}

} // namespace
