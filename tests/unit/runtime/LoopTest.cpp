//===- LoopTest.cpp - The loop step against the same steps unrolled -------===//
//
// A loop step runs its body once per iteration, each stacked buffer moved to
// that iteration's slice (docs/mprog.md#loops). Each program here is
// compared, output for output and bit for bit, with the same steps written
// out once per iteration at the slices' offsets (a dropout mask in the body
// drawn as "name@i"): forward and reverse, a collective on a moved buffer,
// nested loops whose inner buffer both loops move. Also: the trace names
// each body step's iteration, a failing body step names its loop and
// iteration, and every loader error of a loop step is pinned.
//
//===----------------------------------------------------------------------===//

#include "runtime/Error.h"
#include "runtime/Loader.h"
#include "runtime/Session.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <functional>

using namespace meshc::runtime;
using nlohmann::json;

namespace {

json dim(const std::string &name, int64_t size,
         std::vector<std::string> axes = {}) {
  return {{"name", name}, {"size", size}, {"axes", axes}};
}

json operand(int64_t buf, std::vector<std::string> dims) {
  return {{"buf", buf}, {"dims", dims}};
}

json buffer(int64_t id, std::vector<int64_t> shape, int64_t offset) {
  int64_t elements = 1;
  for (int64_t size : shape)
    elements *= size;
  return {{"id", id},
          {"dtype", "f32"},
          {"shape", shape},
          {"offset", offset},
          {"bytes", elements * 4}};
}

// Mesh b:2;m:2. x [batch=4 over b, d=4] feeds h; per layer l (of `outer` x
// `inner` layers): r[l] = h (then an all_reduce max over m, which keeps it),
// h = dropout(tanh(einsum(h, w[l]))). Outputs: y = h, and r, every layer's
// input. Buffers: 0 x, 1 w [outer, inner, d, e], 2 h, 3 t, 4 r [outer,
// inner, batch, d], 5 the mask; in the loop form, 6 (w[l]) and 7 (r[l]) are
// the moved slices.
constexpr int64_t kW = 32, kSliceW = 64, kR = 288, kSliceR = 32;

/// The body of one layer, reading slice buffers `w` and `r` and drawing the
/// mask `mask`.
json layerSteps(int64_t w, int64_t r, const std::string &mask) {
  json sizes = {{"batch", 2}, {"d", 4}, {"e", 4}};
  return json::array(
      {{{"op", "copy"}, {"in", 2}, {"out", r}},
       {{"op", "all_reduce"},
        {"buf", r},
        {"axes", {"m"}},
        {"reduction", "max"}},
       {{"op", "einsum"},
        {"in", {operand(2, {"batch", "d"}), operand(w, {"d", "e"})}},
        {"out", operand(3, {"batch", "e"})},
        {"sizes", sizes}},
       {{"op", "unary"}, {"fn", "tanh"}, {"in", 3}, {"out", 3}},
       {{"op", "dropout"},
        {"out", operand(5, {"batch", "e"})},
        {"sizes", {{"batch", 2}, {"e", 4}}},
        {"name", mask},
        {"rate", 0.25},
        {"dims", {dim("batch", 4, {"b"}), dim("e", 4)}}},
       {{"op", "binary"},
        {"fn", "mul"},
        {"lhs", operand(3, {"batch", "e"})},
        {"rhs", operand(5, {"batch", "e"})},
        {"out", operand(3, {"batch", "e"})},
        {"sizes", {{"batch", 2}, {"e", 4}}}},
       {{"op", "copy"}, {"in", 3}, {"out", 2}}});
}

/// The program with `steps` after h = x; `extra` buffers beside 0-5.
json layersProgram(int64_t outer, int64_t inner, const json &extra,
                   const json &steps) {
  int64_t layers = outer * inner;
  int64_t arena = kR + layers * kSliceR + 32;
  json buffers = {buffer(0, {2, 4}, 0),
                  buffer(1, {outer, inner, 4, 4}, kW),
                  buffer(2, {2, 4}, kW + layers * kSliceW),
                  buffer(3, {2, 4}, kW + layers * kSliceW + 32),
                  buffer(4, {outer, inner, 2, 4}, kR),
                  buffer(5, {2, 4}, kR + layers * kSliceR)};
  for (const json &b : extra)
    buffers.push_back(b);
  json all = json::array({{{"op", "copy"}, {"in", 0}, {"out", 2}}});
  for (const json &step : steps)
    all.push_back(step);
  return {
      {"format", "meshc-mprog"},
      {"version", 1},
      {"program", "layers"},
      {"mesh", {{{"name", "b"}, {"size", 2}}, {{"name", "m"}, {"size", 2}}}},
      {"seed", 5},
      {"arena_bytes", arena},
      {"buffers", buffers},
      {"tensors",
       {{{"role", "input"},
         {"name", "x"},
         {"buffer", 0},
         {"dtype", "f32"},
         {"dims", {dim("batch", 4, {"b"}), dim("d", 4)}}},
        {{"role", "param"},
         {"name", "w"},
         {"buffer", 1},
         {"dtype", "f32"},
         {"dims",
          {dim("outer", outer), dim("inner", inner), dim("d", 4), dim("e", 4)}},
         {"init", {{"kind", "normal"}, {"args", {0.0, 0.6}}}}},
        {{"role", "output"},
         {"name", "y"},
         {"buffer", 2},
         {"dtype", "f32"},
         {"dims", {dim("batch", 4, {"b"}), dim("d", 4)}}},
        {{"role", "output"},
         {"name", "r"},
         {"buffer", 4},
         {"dtype", "f32"},
         {"dims",
          {dim("outer", outer), dim("inner", inner), dim("batch", 4, {"b"}),
           dim("d", 4)}}}}},
      {"steps", all}};
}

/// One loop over `count` layers (reversed when `reverse`).
json loopProgram(int64_t count, bool reverse) {
  json loop = {
      {"op", "loop"},
      {"count", count},
      {"stacked",
       {{{"buf", 6}, {"stride", kSliceW}}, {{"buf", 7}, {"stride", kSliceR}}}},
      {"body", layerSteps(6, 7, "mask")}};
  if (reverse)
    loop["reverse"] = true;
  return layersProgram(1, count, {buffer(6, {4, 4}, kW), buffer(7, {2, 4}, kR)},
                       json::array({loop}));
}

/// The same layers written out, in the order `order` gives them.
json unrolledProgram(int64_t outer, int64_t inner,
                     const std::vector<std::pair<int64_t, int64_t>> &order,
                     bool nestedNames) {
  json extra = json::array(), steps = json::array();
  for (auto [o, i] : order) {
    int64_t layer = o * inner + i;
    extra.push_back(buffer(100 + layer, {4, 4}, kW + layer * kSliceW));
    extra.push_back(buffer(200 + layer, {2, 4}, kR + layer * kSliceR));
    std::string mask =
        nestedNames ? "mask@" + std::to_string(o) + "@" + std::to_string(i)
                    : "mask@" + std::to_string(i);
    for (const json &step : layerSteps(100 + layer, 200 + layer, mask))
      steps.push_back(step);
  }
  return layersProgram(outer, inner, extra, steps);
}

/// Every output of `a` and `b` after two training runs, bit for bit.
void expectSameOutputs(const json &a, const json &b) {
  Program first = parseProgram(a.dump(), "loop.mprog");
  Program second = parseProgram(b.dump(), "unrolled.mprog");
  Session one(first, {}), two(second, {});
  for (int run = 0; run < 2; ++run) {
    one.runStep();
    two.runStep();
  }
  for (const char *name : {"y", "r"}) {
    HostTensor got = one.gather(*first.findTensor(Role::Output, name));
    HostTensor want = two.gather(*second.findTensor(Role::Output, name));
    EXPECT_EQ(got.shape, want.shape) << name;
    EXPECT_EQ(got.data, want.data) << name;
  }
}

TEST(LoopTest, RunsLikeItsBodyWrittenOutPerIteration) {
  expectSameOutputs(loopProgram(3, false),
                    unrolledProgram(1, 3, {{0, 0}, {0, 1}, {0, 2}}, false));
}

TEST(LoopTest, ReverseRunsTheLastIterationFirst) {
  expectSameOutputs(loopProgram(3, true),
                    unrolledProgram(1, 3, {{0, 2}, {0, 1}, {0, 0}}, false));
}

/// The loop does move its buffers and redraws its mask: the layers' inputs
/// differ, and the same mask name in every iteration gives other outputs.
TEST(LoopTest, EveryIterationHasItsOwnSlicesAndMask) {
  Program program = parseProgram(loopProgram(3, false).dump(), "loop.mprog");
  Session session(program, {});
  session.runStep();
  HostTensor r = session.gather(*program.findTensor(Role::Output, "r"));
  ASSERT_EQ(r.elements(), 3 * 16);
  std::vector<char> layer0(r.data.begin(), r.data.begin() + 64);
  std::vector<char> layer1(r.data.begin() + 64, r.data.begin() + 128);
  std::vector<char> layer2(r.data.begin() + 128, r.data.end());
  EXPECT_NE(layer0, layer1);
  EXPECT_NE(layer1, layer2);

  json sameMask = unrolledProgram(1, 3, {{0, 0}, {0, 1}, {0, 2}}, false);
  for (json &step : sameMask["steps"])
    if (step["op"] == "dropout")
      step["name"] = "mask";
  Program unrolled = parseProgram(sameMask.dump(), "same.mprog");
  Session other(unrolled, {});
  other.runStep();
  EXPECT_NE(other.gather(*unrolled.findTensor(Role::Output, "y")).data,
            session.gather(*program.findTensor(Role::Output, "y")).data);
}

TEST(LoopTest, NestedLoopsMoveABufferByBothStrides) {
  json inner = {
      {"op", "loop"},
      {"count", 3},
      {"stacked",
       {{{"buf", 6}, {"stride", kSliceW}}, {{"buf", 7}, {"stride", kSliceR}}}},
      {"body", layerSteps(6, 7, "mask")}};
  json outer = {{"op", "loop"},
                {"count", 2},
                {"reverse", true},
                {"stacked",
                 {{{"buf", 6}, {"stride", 3 * kSliceW}},
                  {{"buf", 7}, {"stride", 3 * kSliceR}}}},
                {"body", json::array({inner})}};
  json nested =
      layersProgram(2, 3, {buffer(6, {4, 4}, kW), buffer(7, {2, 4}, kR)},
                    json::array({outer}));
  expectSameOutputs(
      nested,
      unrolledProgram(2, 3, {{1, 0}, {1, 1}, {1, 2}, {0, 0}, {0, 1}, {0, 2}},
                      true));
}

TEST(LoopTest, TheLoaderNumbersBodyStepsAfterTheProgramsSteps) {
  Program program = parseProgram(loopProgram(3, false).dump(), "loop.mprog");
  ASSERT_EQ(program.steps.size(), 2u);
  ASSERT_EQ(program.loopBodies.size(), 1u);
  const std::vector<Step> &body = program.bodyOf(program.steps[1]);
  ASSERT_EQ(body.size(), 7u);
  EXPECT_EQ(body[0].index, 2u);
  EXPECT_EQ(&program.step(4), &body[2]);
  EXPECT_EQ(program.stepCount(), 9u);
  EXPECT_EQ(program.stepLabel(4), "step 1 (loop) body step 2");
  EXPECT_EQ(&program.lastRun(program.steps[1]), &body.back());
}

TEST(LoopTest, TheTraceNamesEachBodyStepsIteration) {
  Program program = parseProgram(loopProgram(3, true).dump(), "loop.mprog");
  SessionOptions options;
  options.trace = true;
  Session session(program, options);
  session.runStep();
  json trace = json::parse(session.traceJson());
  std::vector<int64_t> einsums;
  for (const json &event : trace["traceEvents"])
    if (event.value("name", "") == "einsum" && event["tid"] == 0)
      einsums.push_back(event["args"]["iteration"].get<int64_t>());
  EXPECT_EQ(einsums, (std::vector<int64_t>{2, 1, 0}));
}

TEST(LoopTest, AFailingBodyStepNamesItsLoopAndIteration) {
  // labels = range(4) seen as [layers=2, batch=2]: iteration 1's labels are
  // 2 and 3, and there are 3 classes.
  json program = json::parse(R"({
    "format": "meshc-mprog", "version": 1, "program": "bad",
    "mesh": [], "seed": 1, "arena_bytes": 48,
    "buffers": [
      {"id": 0, "dtype": "i32", "shape": [4], "offset": 0, "bytes": 16},
      {"id": 1, "dtype": "i32", "shape": [2], "offset": 0, "bytes": 8},
      {"id": 2, "dtype": "f32", "shape": [2, 3], "offset": 16, "bytes": 24},
      {"id": 3, "dtype": "f32", "shape": [2], "offset": 40, "bytes": 8}],
    "tensors": [],
    "steps": [
      {"op": "range", "out": {"buf": 0, "dims": ["n"]}, "sizes": {"n": 4}},
      {"op": "fill", "out": 2, "value": 0.5},
      {"op": "loop", "count": 2, "stacked": [{"buf": 1, "stride": 8}],
       "body": [
         {"op": "softmax_cross_entropy",
          "logits": {"buf": 2, "dims": ["batch", "classes"]},
          "labels": {"buf": 1, "dims": ["batch"]},
          "out": {"buf": 3, "dims": ["batch"]}, "dim": "classes",
          "sizes": {"batch": 2, "classes": 3}}]}]
  })");
  Program loaded = parseProgram(program.dump(), "bad.mprog");
  Session session(loaded, {});
  try {
    session.runStep();
    FAIL() << "a label of 3 out of 3 classes ran";
  } catch (const RuntimeError &error) {
    EXPECT_EQ(std::string(error.what())
                  .rfind("step 2 (loop) body step 0 in iteration 1 "
                         "(softmax_cross_entropy) on device 0: ",
                         0),
              0u)
        << error.what();
  }
}

/// The loader's message for loopProgram(3, false) changed by `edit` (the
/// loop is step 1).
std::string
errorAfter(const std::function<void(json &loop, json &program)> &edit) {
  json program = loopProgram(3, false);
  edit(program["steps"][1], program);
  try {
    parseProgram(program.dump(), "p.mprog");
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "";
}

TEST(LoopTest, LoaderErrors) {
  EXPECT_EQ(errorAfter([](json &loop, json &) { loop["count"] = 0; }),
            "p.mprog: steps[1].count: expected an integer >= 1, got 0");
  EXPECT_EQ(errorAfter([](json &loop, json &) { loop.erase("body"); }),
            "p.mprog: steps[1]: missing member \"body\"");
  EXPECT_EQ(errorAfter([](json &loop, json &) { loop["reverse"] = 1; }),
            "p.mprog: steps[1].reverse: expected true or false, got the "
            "number 1");
  EXPECT_EQ(
      errorAfter([](json &loop, json &) { loop["body"] = json::array(); }),
      "p.mprog: steps[1].body: a loop needs at least one step in its "
      "body");
  EXPECT_EQ(
      errorAfter([](json &loop, json &) { loop["stacked"][1]["buf"] = 6; }),
      "p.mprog: steps[1].stacked[1].buf: buffer 6 is stacked twice in "
      "one loop");
  EXPECT_EQ(
      errorAfter([](json &loop, json &) { loop["stacked"][0]["buf"] = 1; }),
      "p.mprog: steps[1].stacked[0].buf: buffer 1 holds param 'w', "
      "which never moves; a loop moves buffers of slices");
  EXPECT_EQ(
      errorAfter([](json &loop, json &) { loop["stacked"][0]["stride"] = 32; }),
      "p.mprog: steps[1].stacked[0].stride: stride 32 is less than the "
      "64 bytes of buffer 6: its slices would overlap");
  EXPECT_EQ(errorAfter([](json &loop, json &) { loop["count"] = 5; }),
            "p.mprog: steps[1].stacked[1].stride: buffer 7 at [288, 320) "
            "moved 4 times by 32 bytes leaves the arena of 416 bytes");
  EXPECT_EQ(errorAfter([](json &loop, json &) {
              loop["stacked"][0]["stride"] = int64_t(1) << 62;
            }),
            "p.mprog: steps[1].stacked[0].stride: buffer 6 at [32, 96) moved "
            "2 times by 4611686018427387904 bytes leaves the arena of 416 "
            "bytes");
  EXPECT_EQ(errorAfter([](json &loop, json &) {
              loop["phase"] = "backward";
              loop["body"][3]["phase"] = "update";
            }),
            "p.mprog: steps[1].body[3].phase: a body step runs in its loop's "
            "phase (\"backward\")");
  EXPECT_EQ(
      errorAfter([](json &, json &program) {
        program["steps"].push_back({{"op", "copy"}, {"in", 7}, {"out", 3}});
      }),
      "p.mprog: steps[2]: buffer 7 is moved by a loop this step is not "
      "in; only that loop's body may use it");
  // Also as a member of a combined collective ("bufs"), which the check
  // once missed.
  EXPECT_EQ(
      errorAfter([](json &, json &program) {
        program["steps"].push_back({{"op", "all_reduce"},
                                    {"bufs", {3, 7}},
                                    {"axes", json::array()},
                                    {"reduction", "sum"}});
      }),
      "p.mprog: steps[2]: buffer 7 is moved by a loop this step is not "
      "in; only that loop's body may use it");
  EXPECT_EQ(errorAfter([](json &loop, json &) { loop["body"][0]["out"] = 4; }),
            "p.mprog: steps[1].body[0]: copy needs buffers of the same size: "
            "buffer 2 holds 32 bytes, buffer 4 holds 96");
  // An operand overlaps a moved buffer wherever its loop moves it: t at 96
  // is clear of w[0] at [32, 96) but not of w[1].
  EXPECT_EQ(errorAfter([](json &, json &program) {
              program["buffers"][3]["offset"] = 96;
            }),
            "p.mprog: steps[1].body[2].out: buffer 3 [96, 128) overlaps "
            "buffer 6 [32, 96) that einsum reads (a loop moves buffer 6 up "
            "to 128 bytes further)");
}

} // namespace
