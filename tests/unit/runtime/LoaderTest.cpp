//===- LoaderTest.cpp - Every .mprog load error, pinned -------------------===//
//
// Starts from a small valid program and breaks one thing at a time; each
// case pins the complete message the user sees (after "meshrun: error: ").
//
//===----------------------------------------------------------------------===//

#include "runtime/Loader.h"
#include "runtime/Error.h"
#include "runtime/Program.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

using namespace meshc::runtime;
using nlohmann::json;

namespace {

/// mesh b:2 x m:2; h = einsum(x, w), then all_gather over m.
json validProgram() {
  return json::parse(R"({
    "format": "meshc-mprog", "version": 1, "program": "p", "source": "p.mtf",
    "mesh": [{"name": "b", "size": 2}, {"name": "m", "size": 2}],
    "seed": 3, "arena_bytes": 112,
    "buffers": [
      {"id": 0, "dtype": "f32", "shape": [2, 4], "offset": 0, "bytes": 32},
      {"id": 1, "dtype": "f32", "shape": [4, 2], "offset": 32, "bytes": 32},
      {"id": 2, "dtype": "f32", "shape": [2, 2], "offset": 64, "bytes": 16},
      {"id": 3, "dtype": "f32", "shape": [2, 4], "offset": 80, "bytes": 32}],
    "tensors": [
      {"role": "input", "name": "x", "buffer": 0, "dtype": "f32",
       "dims": [{"name": "batch", "size": 4, "axes": ["b"]},
                {"name": "io", "size": 4}]},
      {"role": "param", "name": "w", "buffer": 1, "dtype": "f32",
       "dims": [{"name": "io", "size": 4},
                {"name": "hidden", "size": 4, "axes": ["m"]}],
       "init": {"kind": "normal", "args": [0.0, 0.1]}},
      {"role": "output", "name": "hg", "buffer": 3, "dtype": "f32",
       "dims": [{"name": "batch", "size": 4, "axes": ["b"]},
                {"name": "hidden", "size": 4}]}],
    "steps": [
      {"op": "einsum",
       "in": [{"buf": 0, "dims": ["batch", "io"]},
              {"buf": 1, "dims": ["io", "hidden"]}],
       "out": {"buf": 2, "dims": ["batch", "hidden"]},
       "sizes": {"batch": 2, "io": 4, "hidden": 2}},
      {"op": "all_gather", "in": {"buf": 2, "dims": ["batch", "hidden"]},
       "out": {"buf": 3, "dims": ["batch", "hidden"]}, "dim": "hidden",
       "axes": ["m"], "sizes": {"batch": 2, "hidden": 4}}]
  })");
}

/// The loader's message for `text`, or "" when it loads.
std::string errorOf(const std::string &text) {
  try {
    parseProgram(text, "p.mprog");
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "";
}

/// The loader's message for validProgram() changed by `edit`.
template <typename Edit> std::string errorAfter(Edit edit) {
  json program = validProgram();
  edit(program);
  return errorOf(program.dump());
}

TEST(LoaderTest, ValidProgramLoads) {
  Program program = parseProgram(validProgram().dump(), "p.mprog");
  EXPECT_EQ(program.name, "p");
  EXPECT_EQ(program.mesh.numDevices(), 4);
  EXPECT_EQ(program.steps.size(), 2u);
  EXPECT_EQ(program.groupAxes, (std::vector<std::vector<std::string>>{{"m"}}));
  EXPECT_EQ(program.steps[1].in[0].shape.str(), "[batch=2, hidden=2]");
  // all_gather along an inner dim packs its chunks in the scratch.
  EXPECT_EQ(program.scratchBytes, 32);
}

TEST(LoaderTest, SyntaxErrors) {
  EXPECT_EQ(errorOf("{\"format\": \"meshc-mprog\",\n  \"version\": 1,,\n}"),
            "p.mprog:2:16: not valid JSON: syntax error while parsing object "
            "key - unexpected ','; expected string literal");
  std::string text = validProgram().dump(2);
  EXPECT_EQ(errorOf(text.substr(0, 40)),
            "p.mprog:4:2: not valid JSON: syntax error while parsing value - "
            "unexpected end of input; expected '[', '{', or a literal");
  EXPECT_EQ(errorOf(""), "p.mprog:1:1: not valid JSON: syntax error while "
                         "parsing value - unexpected end of input; expected "
                         "'[', '{', or a literal");
  EXPECT_EQ(errorOf("[1]"),
            "p.mprog: expected a JSON object at the top level, got an array");
  // Found by fuzz-mprog: a number no double holds escaped as nlohmann's
  // out_of_range exception.
  EXPECT_EQ(errorOf("{\"version\": 1e30816}"),
            "p.mprog: not valid JSON: number overflow parsing '1e30816'");
}

TEST(LoaderTest, HeaderErrors) {
  EXPECT_EQ(errorAfter([](json &p) { p["format"] = "onnx"; }),
            "p.mprog: format: not a meshc program: format is \"onnx\", "
            "expected \"meshc-mprog\"");
  EXPECT_EQ(errorAfter([](json &p) { p["version"] = 2; }),
            "p.mprog: version: unsupported .mprog version 2 (this runtime "
            "reads version 1)");
  EXPECT_EQ(errorAfter([](json &p) { p["version"] = "1"; }),
            "p.mprog: version: expected an integer, got the string \"1\"");
  EXPECT_EQ(errorAfter([](json &p) { p.erase("steps"); }),
            "p.mprog: missing member \"steps\"");
  EXPECT_EQ(errorAfter([](json &p) { p["arena_bytes"] = -1; }),
            "p.mprog: arena_bytes: expected an integer >= 0, got -1");
  EXPECT_EQ(errorAfter([](json &p) { p["mesh"][1]["name"] = "b"; }),
            "p.mprog: mesh: mesh axis 'b' is given twice");
  EXPECT_EQ(errorAfter([](json &p) { p["mesh"][0]["size"] = 0; }),
            "p.mprog: mesh: mesh axis 'b' size must be a positive integer, "
            "got 0");
  // Bounded before anything is sized from it (2^31 once allocated 13 GB).
  EXPECT_EQ(
      errorAfter([](json &p) { p["mesh"][0]["size"] = int64_t(1) << 31; }),
      "p.mprog: mesh: the mesh has 4294967296 devices (mesh "
      "b:2147483648;m:2); a .mprog's mesh has at most 1048576");
}

TEST(LoaderTest, BufferErrors) {
  EXPECT_EQ(errorAfter([](json &p) { p["buffers"][0]["dtype"] = "f33"; }),
            "p.mprog: buffers[0].dtype: unknown dtype \"f33\" (supported: "
            "f32, i32, bf16, f16)");
  EXPECT_EQ(errorAfter([](json &p) {
              p["buffers"][1]["dtype"] = "bf16";
              p["tensors"][1]["dtype"] = "bf16";
            }),
            "p.mprog: tensors[1].dtype: param 'w' is bf16; inputs, outputs "
            "and params are f32 or i32 (bf16 and f16 are for the program's "
            "own buffers)");
  EXPECT_EQ(errorAfter([](json &p) { p["buffers"][3]["offset"] = 96; }),
            "p.mprog: buffers[3]: buffer 3 [96, 128) ends outside the arena "
            "of 112 bytes");
  EXPECT_EQ(errorAfter([](json &p) { p["buffers"][0]["bytes"] = 16; }),
            "p.mprog: buffers[0]: buffer 0 has 16 bytes but its shape needs "
            "32");
  EXPECT_EQ(errorAfter([](json &p) { p["buffers"][1]["offset"] = 34; }),
            "p.mprog: buffers[1].offset: buffer 1 offset 34 is not a "
            "multiple of 4 (the f32 element size)");
  EXPECT_EQ(errorAfter([](json &p) { p["buffers"][1]["id"] = 0; }),
            "p.mprog: buffers[1].id: buffer 0 is declared twice");
  EXPECT_EQ(errorAfter([](json &p) { p["buffers"][0]["shape"][0] = -2; }),
            "p.mprog: buffers[0].shape[0]: expected an integer >= 0, got -2");
}

TEST(LoaderTest, TensorErrors) {
  EXPECT_EQ(errorAfter([](json &p) { p["tensors"][0]["buffer"] = 9; }),
            "p.mprog: tensors[0].buffer: buffer 9 is not declared");
  EXPECT_EQ(errorAfter([](json &p) { p["tensors"][0]["dtype"] = "i32"; }),
            "p.mprog: tensors[0].dtype: input 'x' is i32 but buffer 0 is f32");
  EXPECT_EQ(errorAfter([](json &p) { p["tensors"][0]["role"] = "state"; }),
            "p.mprog: tensors[0].role: unknown role \"state\" (known: input, "
            "param, output)");
  EXPECT_EQ(
      errorAfter([](json &p) { p["tensors"][0]["dims"][0]["axes"] = {"q"}; }),
      "p.mprog: tensors[0].dims: tensor 'x' dimension 'batch' is split over "
      "mesh axis 'q', which is not in the mesh (axes: 'b', 'm')");
  EXPECT_EQ(
      errorAfter([](json &p) { p["tensors"][0]["dims"][0]["size"] = 5; }),
      "p.mprog: tensors[0].dims: tensor 'x' dimension 'batch' (size 5) is "
      "not divisible by mesh axis 'b' (size 2)");
  EXPECT_EQ(errorAfter([](json &p) {
              p["tensors"][0]["dims"][0]["axes"] = json::array();
            }),
            "p.mprog: tensors[0].buffer: input 'x' needs 64 bytes per device "
            "but buffer 0 holds 32");
  EXPECT_EQ(
      errorAfter([](json &p) { p["tensors"][1]["init"]["kind"] = "xavier"; }),
      "p.mprog: tensors[1].init.kind: unknown init kind \"xavier\" "
      "(known: zeros, ones, constant, normal, uniform)");
  EXPECT_EQ(errorAfter([](json &p) { p["tensors"][1]["init"]["args"] = {1}; }),
            "p.mprog: tensors[1].init: init \"normal\" takes 2 args (mean, "
            "std), got 1");
  EXPECT_EQ(errorAfter([](json &p) {
              p["tensors"][0]["range"] = {5, 5};
            }),
            "p.mprog: tensors[0].range: range [5, 5) is empty");
  EXPECT_EQ(errorAfter([](json &p) {
              p["tensors"][0]["range"] = {0, 4294967296};
            }),
            "p.mprog: tensors[0].range: range [0, 4294967296) does not fit "
            "i32");
  EXPECT_EQ(errorAfter([](json &p) { p["tensors"][1].erase("init"); }),
            "p.mprog: tensors[1]: missing member \"init\"");
  EXPECT_EQ(errorAfter([](json &p) {
              p["tensors"][2]["name"] = "x";
              p["tensors"][2]["role"] = "input";
            }),
            "p.mprog: tensors[2].name: input 'x' is declared twice");
}

// A param (or output) stored with its first dim cut into several lists the
// dims the model declares (an interleaved pipeline's params, docs/mprog.md).
TEST(LoaderTest, ModelDims) {
  json program = validProgram();
  program["tensors"][1]["model_dims"] = {{{"name", "all"}, {"size", 16}}};
  const Program loaded = parseProgram(program.dump(), "p.mprog");
  const Tensor *w = loaded.findTensor(Role::Param, "w");
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->declaredDims().size(), 1u);
  EXPECT_EQ(w->declaredDims()[0].name, "all");
  EXPECT_EQ(w->declaredShape(), std::vector<int64_t>{16});
  EXPECT_EQ(w->globalShape(), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(errorAfter([](json &p) {
              p["tensors"][1]["model_dims"] = {{{"name", "all"}, {"size", 15}}};
            }),
            "p.mprog: tensors[1].model_dims: 'w' of dims [io=4, hidden=4] "
            "cannot be declared as [all=15]: model_dims merge the leading "
            "dims into the first and keep the others");
  EXPECT_EQ(errorAfter([](json &p) {
              p["tensors"][1]["model_dims"] = {{{"name", "io"}, {"size", 4}},
                                               {{"name", "h"}, {"size", 4}}};
            }),
            "p.mprog: tensors[1].model_dims: 'w' of dims [io=4, hidden=4] "
            "cannot be declared as [io=4, h=4]: model_dims merge the leading "
            "dims into the first and keep the others");
}

// A block in the stored dims [round=3, stage=2, layer=2, d=4] is a list of
// boxes of the model's [layers=12, d=4]: stage 1's block of every round is
// the layers 2-3, 6-7 and 10-11; a whole tensor is one box.
TEST(LoaderTest, DeclaredBoxes) {
  std::vector<meshc::layout::Dim> dims{
      {"round", 3}, {"stage", 2}, {"layer", 2}, {"d", 4}};
  std::vector<meshc::layout::Dim> model{{"layers", 12}, {"d", 4}};
  std::vector<DeclaredBox> boxes =
      declaredBoxes(dims, model, {0, 1, 0, 0}, {3, 1, 2, 4});
  ASSERT_EQ(boxes.size(), 3u);
  for (int64_t v = 0; v < 3; ++v) {
    EXPECT_EQ(boxes[v].offset, (std::vector<int64_t>{(2 * v + 1) * 2, 0}));
    EXPECT_EQ(boxes[v].shape, (std::vector<int64_t>{2, 4}));
    EXPECT_EQ(boxes[v].start, v * 8);
  }
  boxes = declaredBoxes(dims, model, {0, 0, 0, 0}, {3, 2, 2, 4});
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0].offset, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(boxes[0].shape, (std::vector<int64_t>{12, 4}));
  // The second half of d in round 1: its stages' runs join into one box.
  boxes = declaredBoxes(dims, model, {1, 0, 0, 2}, {1, 2, 2, 2});
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0].offset, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(boxes[0].shape, (std::vector<int64_t>{4, 2}));
  // Without model dims: the block itself.
  boxes = declaredBoxes(dims, {}, {1, 0, 0, 2}, {1, 2, 2, 2});
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0].offset, (std::vector<int64_t>{1, 0, 0, 2}));
}

TEST(LoaderTest, StepErrors) {
  EXPECT_EQ(errorAfter([](json &p) { p["steps"][0]["op"] = "conv"; }),
            "p.mprog: steps[0].op: unknown op \"conv\" (known: fill, copy, "
            "einsum, unary, cast, binary, reduce, softmax, logsumexp, "
            "softmax_cross_entropy, one_hot, argmax, dropout, range, cumsum, "
            "window, top_k, all_reduce, "
            "all_gather, reduce_scatter, all_to_all, slice, fused, loop, "
            "collective_permute, attention, attention_grad, wait)");
  EXPECT_EQ(errorAfter([](json &p) { p["steps"][0]["sizes"]["io"] = 8; }),
            "p.mprog: steps[0].in[0]: operand [batch=2, io=8] needs 64 bytes "
            "but buffer 0 has 32");
  EXPECT_EQ(errorAfter([](json &p) { p["steps"][0]["sizes"].erase("io"); }),
            "p.mprog: steps[0].in[0].dims[1]: dim 'io' has no entry in "
            "\"sizes\"");
  EXPECT_EQ(errorAfter([](json &p) { p["steps"][0]["sizes"]["extra"] = 1; }),
            "p.mprog: steps[0].sizes.extra: dim 'extra' is not a dim of any "
            "operand");
  EXPECT_EQ(errorAfter([](json &p) { p["steps"][0]["in"][0]["buf"] = 7; }),
            "p.mprog: steps[0].in[0].buf: buffer 7 is not declared");
  EXPECT_EQ(errorAfter([](json &p) {
              p["steps"][0]["in"][0]["dims"] = {"batch", "batch"};
            }),
            "p.mprog: steps[0].in[0].dims[1]: dim 'batch' appears twice");
  EXPECT_EQ(errorAfter([](json &p) { p["steps"][0]["out"]["buf"] = 0; }),
            "p.mprog: steps[0].out: buffer 0 [0, 16) overlaps buffer 0 [0, "
            "32) that einsum reads");
  EXPECT_EQ(errorAfter([](json &p) {
              p["steps"][0]["out"]["dims"] = {"batch", "z"};
              p["steps"][0]["sizes"]["z"] = 2;
              p["steps"][0]["sizes"].erase("hidden");
              p["steps"][0]["in"][1]["dims"] = {"io", "z"};
              p["steps"][0]["in"].erase(1);
            }),
            "p.mprog: steps[0].out: dim 'z' is in no einsum operand");
}

TEST(LoaderTest, CollectiveErrors) {
  EXPECT_EQ(errorAfter([](json &p) { p["steps"][1]["axes"] = {"q"}; }),
            "p.mprog: steps[1].axes[0]: 'q' is not a mesh axis (mesh axes: "
            "'b', 'm')");
  EXPECT_EQ(errorAfter([](json &p) {
              p["steps"][1]["axes"] = {"m", "m"};
            }),
            "p.mprog: steps[1].axes[1]: mesh axis 'm' is listed twice");
  EXPECT_EQ(errorAfter([](json &p) { p["steps"][1]["sizes"]["hidden"] = 3; }),
            "p.mprog: steps[1].sizes.hidden: size 3 of dim 'hidden' is not "
            "divisible by the group size 2");
  EXPECT_EQ(errorAfter([](json &p) { p["steps"][1]["dim"] = "io"; }),
            "p.mprog: steps[1].dim: 'io' is not a dim of out [batch=2, "
            "hidden=4]");
  EXPECT_EQ(errorAfter([](json &p) {
              p["steps"][1]["out"]["dims"] = {"hidden", "batch"};
            }),
            "p.mprog: steps[1].out: dims ['hidden', 'batch'] differ from in "
            "dims ['batch', 'hidden']; all_gather keeps the dim order");
  EXPECT_EQ(errorAfter([](json &p) {
              p["steps"][1]["reduction"] = "sum";
              p["steps"][1]["op"] = "reduce_scatter";
            }),
            "p.mprog: steps[1].in: operand [batch=2, hidden=4] needs 32 bytes "
            "but buffer 2 has 16");
}

TEST(LoaderTest, CollectivePermuteErrors) {
  // Step 1 becomes a collective_permute of buffer 0 into buffer 3 over m.
  auto permute = [](json pairs) {
    return [pairs](json &p) {
      p["steps"][1] = {{"op", "collective_permute"},
                       {"in", 0},
                       {"out", 3},
                       {"axes", {"m"}},
                       {"pairs", pairs}};
    };
  };
  EXPECT_EQ(errorAfter(permute({{0, 1}, {1, 0}})), "");
  EXPECT_EQ(errorAfter(permute(json::array())),
            "p.mprog: steps[1].pairs: a collective_permute lists at least one "
            "[source, target] pair");
  EXPECT_EQ(errorAfter(permute({{0, 2}})),
            "p.mprog: steps[1].pairs[0][1]: member 2 is outside the group "
            "over ['m'], whose ranks are 0..1");
  EXPECT_EQ(errorAfter(permute({{0, 1}, {0, 0}})),
            "p.mprog: steps[1].pairs[1][0]: member 0 is the source of two "
            "pairs");
  EXPECT_EQ(errorAfter(permute({{0, 1}, {1, 1}})),
            "p.mprog: steps[1].pairs[1][1]: member 1 is the target of two "
            "pairs");
  EXPECT_EQ(errorAfter(permute({{0, 1, 1}})),
            "p.mprog: steps[1].pairs[0]: a pair is [source, target], got 3 "
            "entries");
  EXPECT_EQ(errorAfter(permute({{-1, 1}})),
            "p.mprog: steps[1].pairs[0][0]: expected an integer >= 0, got -1");
  EXPECT_EQ(errorAfter([&](json &p) {
              permute({{0, 1}})(p);
              p["steps"][1]["out"] = 2;
            }),
            "p.mprog: steps[1].out: a collective_permute moves its whole in: "
            "buffer 0 holds 32 bytes, buffer 2 16");
  EXPECT_EQ(errorAfter([&](json &p) {
              permute({{0, 1}})(p);
              p["buffers"][3]["dtype"] = "i32";
              p["tensors"].erase(2);
            }),
            "p.mprog: steps[1].out: buffer 3 is i32 but buffer 0 is f32");
  EXPECT_EQ(errorAfter([&](json &p) {
              permute({{0, 1}})(p);
              p["steps"][1]["out"] = 0;
            }),
            "p.mprog: steps[1].out: buffer 0 [0, 32) overlaps buffer 0 [0, 32) "
            "that collective_permute reads");
}

TEST(LoaderTest, CollectivePermuteSizesAgreeAcrossDevices) {
  // Under per-device sizes each device's in and out agree, but a pair can
  // join devices whose sizes differ: device 0 holds 2 elements, device 1 3.
  auto program = [](json pairs) {
    json shape = {{{"axes", {"p"}}, {"blocks", {2, 3}}}};
    return json{{"format", "meshc-mprog"},
                {"version", 1},
                {"program", "p"},
                {"mesh", {{{"name", "p"}, {"size", 2}}}},
                {"seed", 1},
                {"arena_bytes", 32},
                {"buffers",
                 {{{"id", 0},
                   {"dtype", "f32"},
                   {"shape", shape},
                   {"offset", 0},
                   {"bytes", 12}},
                  {{"id", 1},
                   {"dtype", "f32"},
                   {"shape", shape},
                   {"offset", 16},
                   {"bytes", 12}}}},
                {"tensors", json::array()},
                {"steps",
                 {{{"op", "collective_permute"},
                   {"in", 0},
                   {"out", 1},
                   {"axes", {"p"}},
                   {"pairs", pairs}}}}}
        .dump();
  };
  EXPECT_EQ(errorOf(program({{0, 0}, {1, 1}})), "");
  EXPECT_EQ(errorOf(program({{0, 1}})),
            "p.mprog: step 0 (collective_permute): pair [0, 1] sends device "
            "0's 8 bytes to device 1, whose out holds 12");
}

TEST(LoaderTest, CombinedAllReduceErrors) {
  auto combined = [](json bufs) {
    return [bufs](json &p) {
      p["arena_bytes"] = 120;
      p["buffers"].push_back({{"id", 4},
                              {"dtype", "i32"},
                              {"shape", {2}},
                              {"offset", 112},
                              {"bytes", 8}});
      p["steps"][1] = {{"op", "all_reduce"},
                       {"bufs", bufs},
                       {"axes", {"m"}},
                       {"reduction", "sum"}};
    };
  };
  EXPECT_EQ(errorAfter(combined({2, 3})), "");
  EXPECT_EQ(errorAfter(combined({2})),
            "p.mprog: steps[1].bufs: \"bufs\" lists 1 buffer; a combined "
            "all_reduce has at least 2 (one is \"buf\")");
  EXPECT_EQ(errorAfter(combined({2, 3, 2})),
            "p.mprog: steps[1].bufs[2]: buffer 2 is listed twice in \"bufs\"");
  EXPECT_EQ(errorAfter(combined({2, 4})),
            "p.mprog: steps[1].bufs[1]: buffer 4 holds i32, buffer 2 f32: a "
            "combined all_reduce packs one element type");
  EXPECT_EQ(errorAfter(combined({2, 9})),
            "p.mprog: steps[1].bufs[1]: buffer 9 is not declared");
  EXPECT_EQ(errorAfter([&](json &p) {
              combined({2, 3})(p);
              p["steps"][1]["buf"] = 2;
            }),
            "p.mprog: steps[1].buf: an all_reduce has \"buf\" or \"bufs\", "
            "not both");
}

/// Step 1 (the all_gather) started under ticket 0, then `tail` appended.
template <typename Tail> auto started(Tail tail) {
  return [tail](json &p) {
    p["steps"][1]["start"] = 0;
    tail(p["steps"]);
  };
}

TEST(LoaderTest, StartedCollectives) {
  json wait0 = {{"op", "wait"}, {"tickets", {0}}};
  json program = validProgram();
  program["steps"][1]["start"] = 0;
  program["steps"].push_back(wait0);
  Program loaded = parseProgram(program.dump(), "p.mprog");
  EXPECT_EQ(loaded.steps[1].ticket, 0);
  EXPECT_EQ(loaded.steps[0].ticket, -1);
  EXPECT_EQ(loaded.steps[2].op(), OpKind::Wait);
  EXPECT_TRUE(loaded.steps[2].outputs().empty());

  // A combined all_reduce started beside a step with scratch of its own
  // packs in a place of its own, after that step's.
  json combined = validProgram();
  combined["steps"][1] = {{"op", "all_reduce"},
                          {"bufs", {2, 3}},
                          {"axes", {"m"}},
                          {"reduction", "sum"},
                          {"start", 4}};
  combined["steps"].push_back({{"op", "wait"}, {"tickets", {4}}});
  loaded = parseProgram(combined.dump(), "p.mprog");
  EXPECT_EQ(loaded.steps[1].scratchOffset,
            (loaded.steps[0].scratchBytes + 63) / 64 * 64);
  EXPECT_EQ(loaded.scratchBytes, loaded.steps[1].scratchOffset + 64);
}

TEST(LoaderTest, StartedCollectiveErrors) {
  json wait0 = {{"op", "wait"}, {"tickets", {0}}};
  EXPECT_EQ(errorAfter(started([&](json &steps) { steps.push_back(wait0); })),
            "");
  EXPECT_EQ(errorAfter(started([](json &) {})),
            "p.mprog: steps[1].start: ticket 0 (step 1, all_gather) is not "
            "waited for by the end of its steps; a wait step there must "
            "complete it");
  EXPECT_EQ(errorAfter([](json &p) { p["steps"][0]["start"] = 0; }),
            "p.mprog: steps[0].start: only a collective starts and runs "
            "beside later steps; einsum runs to completion");
  EXPECT_EQ(errorAfter([](json &p) { p["steps"][1]["start"] = -1; }),
            "p.mprog: steps[1].start: expected an integer >= 0, got -1");
  EXPECT_EQ(errorAfter(started([](json &steps) {
              steps.push_back({{"op", "wait"}, {"tickets", {0, 5}}});
            })),
            "p.mprog: steps[2].tickets[1]: ticket 5 is not started before "
            "this wait");
  EXPECT_EQ(errorAfter(started([&](json &steps) {
              steps.push_back(wait0);
              steps.push_back(wait0);
            })),
            "p.mprog: steps[3].tickets[0]: ticket 0 is waited for already");
  EXPECT_EQ(errorAfter(started([](json &steps) {
              steps.push_back({{"op", "wait"}, {"tickets", {0, 0}}});
            })),
            "p.mprog: steps[2].tickets[1]: ticket 0 is listed twice");
  EXPECT_EQ(errorAfter(started([](json &steps) {
              steps.push_back({{"op", "wait"}, {"tickets", json::array()}});
            })),
            "p.mprog: steps[2].tickets: a wait names at least one ticket");
  // Between the start and the wait: the gathered output (read) is the
  // collective's; its input is not (an all_gather copies it into its
  // scratch where it starts: readsInputsAtStart), so a step may write it.
  EXPECT_EQ(errorAfter(started([&](json &steps) {
              steps.push_back({{"op", "copy"}, {"in", 3}, {"out", 0}});
              steps.push_back(wait0);
            })),
            "p.mprog: steps[2]: buffer 3 [80, 112) overlaps buffer 3 [80, "
            "112) of ticket 0 (step 1, all_gather), which runs until its "
            "wait; use it after the wait");
  EXPECT_EQ(errorAfter(started([&](json &steps) {
              steps.push_back(steps[0]);
              steps.push_back(wait0);
            })),
            "");
  EXPECT_EQ(errorAfter(started([&](json &steps) {
              json again = steps[1];
              steps.push_back(wait0);
              steps.push_back(again);
              steps.push_back(wait0);
            })),
            "p.mprog: steps[3].start: ticket 0 is started by step 1 already; "
            "each started collective has a ticket of its own");
  EXPECT_EQ(errorAfter(started([](json &steps) {
              steps.push_back(
                  {{"op", "wait"}, {"tickets", {0}}, {"phase", "backward"}});
            })),
            "p.mprog: steps[2].tickets[0]: ticket 0 (step 1, all_gather) runs "
            "in the forward phase; its wait must too (this one is backward)");
  EXPECT_EQ(
      errorAfter(started([&](json &steps) {
        steps.push_back(
            {{"op", "loop"}, {"count", 2}, {"body", json::array({wait0})}});
      })),
      "p.mprog: steps[2].body[0].tickets[0]: ticket 0 (step 1, all_gather) "
      "was started in another step list; a wait completes the collectives "
      "started before it in its own loop body (or at the top level)");
  EXPECT_EQ(errorAfter([](json &p) {
              p["steps"].push_back({{"op", "loop"},
                                    {"count", 2},
                                    {"body", json::array({p["steps"][1]})}});
              p["steps"][2]["body"][0]["start"] = 0;
              p["steps"].push_back({{"op", "wait"}, {"tickets", {0}}});
            }),
            "p.mprog: steps[2].body[0].start: ticket 0 (step 2 (loop) body "
            "step 0, all_gather) is not waited for by the end of its loop "
            "body; a wait step there must complete it");
}

/// The program's two steps as a loop of `count` iterations whose body is
/// `body(einsum, gather)` (the all_gather started under ticket 0).
template <typename Body> auto inLoop(Body body) {
  return [body](json &p) {
    json einsum = p["steps"][0], gather = p["steps"][1];
    gather["start"] = 0;
    p["steps"] = json::array(
        {{{"op", "loop"}, {"count", 3}, {"body", body(einsum, gather)}}});
  };
}

TEST(LoaderTest, CarriedWaits) {
  json carried = {{"op", "wait"}, {"tickets", {0}}, {"carried", true}};
  // The iteration before's gather completes before the einsum writes its
  // input again; the last one with the loop (no wait at the body's end).
  EXPECT_EQ(errorAfter(inLoop([&](json einsum, json gather) {
              return json::array({carried, einsum, gather});
            })),
            "");
  json program = validProgram();
  inLoop([&](json einsum, json gather) {
    return json::array({carried, einsum, gather});
  })(program);
  Program loaded = parseProgram(program.dump(), "p.mprog");
  const std::vector<Step> &body = loaded.bodyOf(loaded.steps[0]);
  ASSERT_EQ(body.size(), 3u);
  EXPECT_TRUE(body[0].as<WaitAttrs>().carried);
  EXPECT_EQ(body[2].ticket, 0);

  EXPECT_EQ(errorAfter(started([&](json &steps) { steps.push_back(carried); })),
            "p.mprog: steps[2].carried: a carried wait completes collectives "
            "of a loop body's iteration before; this wait is not in a loop "
            "body");
  EXPECT_EQ(errorAfter(inLoop([&](json einsum, json gather) {
              return json::array({einsum, gather, carried});
            })),
            "p.mprog: steps[0].body[2].tickets[0]: ticket 0 is not started "
            "after this carried wait in its loop body; a carried wait "
            "completes the collectives the body starts after it, in the "
            "iteration before");
  // The einsum may write the gather's input before the carried wait (the
  // gather copied it where it started); a copy reading its output there
  // would read it while the iteration before's gather writes it.
  EXPECT_EQ(errorAfter(inLoop([&](json einsum, json gather) {
              return json::array({einsum, carried, gather});
            })),
            "");
  EXPECT_EQ(
      errorAfter(inLoop([&](json einsum, json gather) {
        return json::array(
            {{{"op", "copy"}, {"in", 3}, {"out", 0}}, carried, einsum, gather});
      })),
      "p.mprog: steps[0].body[0]: buffer 3 [80, 112) overlaps buffer 3 "
      "[80, 112) of ticket 0 (step 0 (loop) body step 3, all_gather), "
      "which runs until its wait; use it after the wait");
  EXPECT_EQ(
      errorAfter(inLoop([&](json einsum, json gather) {
        return json::array(
            {carried, einsum, gather, {{"op", "wait"}, {"tickets", {0}}}});
      })),
      "p.mprog: steps[0].body[3].tickets[0]: ticket 0 is completed by "
      "a carried wait; no other wait may complete it");
  EXPECT_EQ(errorAfter(inLoop([&](json einsum, json gather) {
              return json::array({carried, carried, einsum, gather});
            })),
            "p.mprog: steps[0].body[1].tickets[0]: ticket 0 is waited for by "
            "the carried wait step 0 (loop) body step 0 already");
}

TEST(LoaderTest, CombinedMoveErrors) {
  // Step 1 as a combined all_gather of two parts: its own tensor and one
  // more (buffers 4 -> 5, the same shapes).
  auto part = [](int64_t in, int64_t out) {
    return json{{"in", {{"buf", in}, {"dims", {"batch", "hidden"}}}},
                {"out", {{"buf", out}, {"dims", {"batch", "hidden"}}}},
                {"dim", "hidden"},
                {"sizes", {{"batch", 2}, {"hidden", 4}}}};
  };
  auto combined = [](json parts) {
    return [parts](json &p) {
      p["arena_bytes"] = 160;
      p["buffers"].push_back({{"id", 4},
                              {"dtype", "f32"},
                              {"shape", {2, 2}},
                              {"offset", 112},
                              {"bytes", 16}});
      p["buffers"].push_back({{"id", 5},
                              {"dtype", "f32"},
                              {"shape", {2, 4}},
                              {"offset", 128},
                              {"bytes", 32}});
      p["steps"][1] = {{"op", "all_gather"}, {"parts", parts}, {"axes", {"m"}}};
    };
  };
  EXPECT_EQ(errorAfter(combined({part(2, 3), part(4, 5)})), "");
  EXPECT_EQ(errorAfter(combined({part(2, 3)})),
            "p.mprog: steps[1].parts: \"parts\" lists 1 tensor; a combined "
            "all_gather has at least 2");
  EXPECT_EQ(errorAfter(combined({part(2, 3), part(2, 5)})),
            "p.mprog: steps[1].parts[1]: buffer 2 is in two parts");
  EXPECT_EQ(errorAfter([&](json &p) {
              combined({part(2, 3), part(4, 5)})(p);
              p["steps"][1]["dim"] = "hidden";
            }),
            "p.mprog: steps[1].dim: a combined all_gather lists its tensors in "
            "\"parts\", not \"dim\"");
  EXPECT_EQ(errorAfter([&](json &p) {
              json blocked = part(4, 5);
              blocked["blocks"] = {2, 2};
              combined({part(2, 3), blocked})(p);
            }),
            "p.mprog: steps[1].parts[1].blocks: a combined all_gather moves "
            "equal blocks");
  EXPECT_EQ(errorAfter([&](json &p) {
              json wrong = part(4, 5);
              wrong["sizes"]["hidden"] = 8;
              combined({part(2, 3), wrong})(p);
            }),
            "p.mprog: steps[1].parts[1].out: operand [batch=2, hidden=8] needs "
            "64 bytes but buffer 5 has 32");
  EXPECT_EQ(errorAfter([&](json &p) {
              combined({part(2, 3), part(4, 5)})(p);
              p["buffers"][4]["dtype"] = "i32";
              p["buffers"][5]["dtype"] = "i32";
            }),
            "p.mprog: steps[1].parts[1]: buffer 4 holds i32, the first part "
            "f32: a combined all_gather packs one element type");
}

TEST(LoaderTest, ElementwiseErrors) {
  auto unary = [](json &p) {
    p["steps"].push_back(
        {{"op", "unary"}, {"fn", "swish"}, {"in", 2}, {"out", 2}});
  };
  EXPECT_EQ(errorAfter(unary),
            "p.mprog: steps[2].fn: unknown unary fn \"swish\" (known: relu, "
            "gelu, silu, sigmoid, exp, log, tanh, sqrt, rsqrt, negate, scale, "
            "positive, "
            "gelu_grad)");
  EXPECT_EQ(errorAfter([](json &p) {
              p["steps"].push_back(
                  {{"op", "unary"}, {"fn", "scale"}, {"in", 2}, {"out", 2}});
            }),
            "p.mprog: steps[2]: missing member \"value\"");
  EXPECT_EQ(errorAfter([](json &p) {
              p["steps"].push_back(
                  {{"op", "unary"}, {"fn", "relu"}, {"in", 2}, {"out", 3}});
            }),
            "p.mprog: steps[2]: unary needs buffers of the same element "
            "count: buffer 2 has 4, buffer 3 has 8");
  EXPECT_EQ(errorAfter([](json &p) {
              p["steps"].push_back({{"op", "cast"},
                                    {"in", 2},
                                    {"out", 2},
                                    {"from", "i32"},
                                    {"to", "f32"}});
            }),
            "p.mprog: steps[2].from: cast from i32 but buffer 2 is f32");
  EXPECT_EQ(errorAfter([](json &p) {
              p["steps"].push_back(
                  {{"op", "binary"},
                   {"fn", "add"},
                   {"lhs", {{"buf", 3}, {"dims", {"batch", "hidden"}}}},
                   {"rhs", {{"buf", 0}, {"dims", {"io"}}}},
                   {"out", {{"buf", 3}, {"dims", {"batch", "hidden"}}}},
                   {"sizes", {{"batch", 2}, {"hidden", 4}, {"io", 4}}}});
            }),
            "p.mprog: steps[2].rhs: dim 'io' is not a dim of out [batch=2, "
            "hidden=4]");
}

TEST(LoaderTest, TrainingOpErrors) {
  auto push = [](json step) {
    return [step](json &p) { p["steps"].push_back(step); };
  };
  EXPECT_EQ(errorAfter([](json &p) { p["steps"][0]["phase"] = "bwd"; }),
            "p.mprog: steps[0].phase: unknown phase \"bwd\" (known: forward, "
            "backward, update)");
  json eqMixed = {{"op", "binary"},
                  {"fn", "eq"},
                  {"lhs", {{"buf", 2}, {"dims", {"n"}}}},
                  {"rhs", {{"buf", 4}, {"dims", {"n"}}}},
                  {"out", {{"buf", 3}, {"dims", {"n"}}}},
                  {"sizes", {{"n", 4}}}};
  auto withInts = [](json &p) {
    p["buffers"].push_back({{"id", 4},
                            {"dtype", "i32"},
                            {"shape", {4}},
                            {"offset", 96},
                            {"bytes", 16}});
  };
  EXPECT_EQ(errorAfter([&](json &p) {
              withInts(p);
              push(eqMixed)(p);
            }),
            "p.mprog: steps[2].rhs: eq compares operands of one dtype but "
            "buffer 2 is f32 and buffer 4 is i32");
  json addInts = eqMixed;
  addInts["fn"] = "add";
  addInts["lhs"]["buf"] = 4;
  EXPECT_EQ(errorAfter([&](json &p) {
              withInts(p);
              push(addInts)(p);
            }),
            "p.mprog: steps[2].lhs: binary needs a float type (f32, bf16, f16) "
            "here but buffer 4 is i32");
  json oneHot = {{"op", "one_hot"},
                 {"in", {{"buf", 4}, {"dims", {"n"}}}},
                 {"out", {{"buf", 3}, {"dims", {"n", "k"}}}},
                 {"dim", "k"},
                 {"sizes", {{"n", 4}, {"k", 2}}}};
  json oneHotWithClassDim = oneHot;
  oneHotWithClassDim["in"]["dims"] = {"k"};
  oneHotWithClassDim["sizes"] = {{"n", 4}, {"k", 2}};
  EXPECT_EQ(errorAfter([&](json &p) {
              withInts(p);
              push(oneHotWithClassDim)(p);
            }),
            "p.mprog: steps[2].in: in must not have the class dim 'k'");
  // A split class dim: [k=2] is one block of 4 classes over m (size 2).
  auto withClasses = [&](json classes) {
    json step = oneHot;
    step["out"]["buf"] = 1;
    step["classes"] = classes;
    return errorAfter([&](json &p) {
      withInts(p);
      p["steps"].push_back(step);
    });
  };
  EXPECT_EQ(withClasses({{"size", 4}, {"axes", {"m"}}}), "");
  EXPECT_EQ(withClasses({{"size", 0}, {"axes", {"m"}}}),
            "p.mprog: steps[2].classes.size: one_hot classes 0 must be "
            "positive");
  EXPECT_EQ(withClasses({{"size", 4}, {"axes", {"q"}}}),
            "p.mprog: steps[2].classes: tensor 'one_hot' dimension 'k' is "
            "split over mesh axis 'q', which is not in the mesh (axes: 'b', "
            "'m')");
  EXPECT_EQ(withClasses({{"size", 8}, {"axes", {"m"}}}),
            "p.mprog: steps[2].sizes.k: size 2 of the class dim 'k' is not "
            "its block of 8 classes (4)");
  json oneHotF32 = oneHot;
  oneHotF32["in"]["buf"] = 2;
  EXPECT_EQ(errorAfter(push(oneHotF32)),
            "p.mprog: steps[2].in: one_hot needs i32 here but buffer 2 is f32");
  json argmax = {{"op", "argmax"},
                 {"in", {{"buf", 3}, {"dims", {"n", "k"}}}},
                 {"out", {{"buf", 4}, {"dims", {"k"}}}},
                 {"dim", "k"},
                 {"sizes", {{"n", 4}, {"k", 2}}}};
  EXPECT_EQ(errorAfter([&](json &p) {
              withInts(p);
              push(argmax)(p);
            }),
            "p.mprog: steps[2].out: out must not have the class dim 'k'");
  argmax["out"] = {{"buf", 2}, {"dims", {"n"}}};
  EXPECT_EQ(errorAfter(push(argmax)),
            "p.mprog: steps[2].out: argmax needs i32 here but buffer 2 is f32");
  json lse = {{"op", "logsumexp"},
              {"in", {{"buf", 2}, {"dims", {"n", "k"}}}},
              {"out", {{"buf", 2}, {"dims", {"k"}}}},
              {"dim", "k"},
              {"sizes", {{"n", 2}, {"k", 2}}}};
  EXPECT_EQ(errorAfter(push(lse)),
            "p.mprog: steps[2].out: out must not have the reduced dim 'k'");
}

TEST(LoaderTest, DropoutErrors) {
  // x's buffer seen as a dropout mask of dims [batch/b, io] (block [2, 4]).
  json dropout = {{"op", "dropout"},
                  {"out", {{"buf", 3}, {"dims", {"batch", "io"}}}},
                  {"sizes", {{"batch", 2}, {"io", 4}}},
                  {"name", "drop0"},
                  {"rate", 0.5},
                  {"dims",
                   {{{"name", "batch"}, {"size", 4}, {"axes", {"b"}}},
                    {{"name", "io"}, {"size", 4}}}}};
  auto with = [&](auto edit) {
    return errorAfter([&](json &p) {
      json step = dropout;
      edit(step);
      p["steps"].push_back(step);
    });
  };
  EXPECT_EQ(with([](json &) {}), "");
  EXPECT_EQ(with([](json &s) { s["rate"] = 1; }),
            "p.mprog: steps[2].rate: dropout rate 1 is outside [0, 1)");
  EXPECT_EQ(with([](json &s) { s["rate"] = -0.5; }),
            "p.mprog: steps[2].rate: dropout rate -0.5 is outside [0, 1)");
  EXPECT_EQ(with([](json &s) { s["name"] = ""; }),
            "p.mprog: steps[2].name: dropout name is empty");
  EXPECT_EQ(with([](json &s) {
              s["out"]["dims"] = {"io", "batch"};
            }),
            "p.mprog: steps[2].out: dims ['io', 'batch'] differ from the "
            "dropout dims ['batch', 'io']; out is this device's block of "
            "them, in order");
  EXPECT_EQ(with([](json &s) { s["sizes"]["batch"] = 1; }),
            "p.mprog: steps[2].sizes.batch: size 1 of dim 'batch' is not its "
            "block of the dropout dims (4 cut into 2 blocks; this device's "
            "is 2)");
  EXPECT_EQ(with([](json &s) { s["dims"][0]["axes"] = {"q"}; }),
            "p.mprog: steps[2].dims: tensor 'drop0' dimension 'batch' is "
            "split over mesh axis 'q', which is not in the mesh (axes: 'b', "
            "'m')");
}

TEST(LoaderTest, RangeTopKAndWindowErrors) {
  // Buffer 0 [2, 4] read as [a, e], buffer 3 [2, 4] written.
  auto with = [&](json step) {
    return errorAfter([&](json &p) { p["steps"].push_back(step); });
  };
  json topK = {{"op", "top_k"},
               {"in", {{"buf", 0}, {"dims", {"a", "e"}}}},
               {"out", {{"buf", 3}, {"dims", {"a", "e"}}}},
               {"dim", "e"},
               {"k", 2},
               {"sizes", {{"a", 2}, {"e", 4}}}};
  EXPECT_EQ(with(topK), "");
  topK["k"] = 5;
  EXPECT_EQ(with(topK), "p.mprog: steps[2].k: k 5 is outside [1, 4] (the "
                        "size of 'e')");
  EXPECT_EQ(with({{"op", "range"},
                  {"out", {{"buf", 3}, {"dims", {"a", "e"}}}},
                  {"sizes", {{"a", 2}, {"e", 4}}}}),
            "p.mprog: steps[2].out: range needs a one-dim out, got [a=2, "
            "e=4]");
  json window = {{"op", "window"},
                 {"in", {{"buf", 0}, {"dims", {"a", "e"}}}},
                 {"out", {{"buf", 3}, {"dims", {"a", "f"}}}},
                 {"from", "e"},
                 {"to", "f"},
                 {"offset", -1},
                 {"sizes", {{"a", 2}, {"e", 4}, {"f", 4}}}};
  EXPECT_EQ(with(window), "");
  window["to"] = "g";
  EXPECT_EQ(with(window),
            "p.mprog: steps[2].to: 'g' is not a dim of out [a=2, f=4]");
  window["to"] = "a";
  EXPECT_EQ(with(window), "p.mprog: steps[2].to: in already has dim 'a'");
}

/// validProgram() with a "training" member.
json trainingProgram() {
  json program = validProgram();
  program["tensors"].push_back({{"role", "output"},
                                {"name", "loss"},
                                {"buffer", 2},
                                {"dtype", "f32"},
                                {"dims", json::array()}});
  program["training"] = {
      {"optimizer", "adam"},
      {"hyperparams", {{"lr", 0.001}, {"beta1", 0.9}}},
      {"loss", "loss"},
      {"sync", {{"every", 4}, {"axes", {"b"}}, {"buffers", {1}}}}};
  return program;
}

TEST(LoaderTest, TrainingLoads) {
  Program program = parseProgram(trainingProgram().dump(), "p.mprog");
  ASSERT_TRUE(program.training);
  EXPECT_EQ(program.training->optimizer, "adam");
  EXPECT_EQ(program.training->hyperparams,
            (std::vector<std::pair<std::string, double>>{{"beta1", 0.9},
                                                         {"lr", 0.001}}));
  EXPECT_EQ(program.training->loss, "loss");
  ASSERT_TRUE(program.training->sync);
  const SyncSpec &sync = *program.training->sync;
  EXPECT_EQ(sync.every, 4);
  EXPECT_EQ(sync.buffers, (std::vector<size_t>{1}));
  // One all_reduce and one scale by 1/2 (w is 4x2 per device).
  ASSERT_EQ(sync.steps.size(), 2u);
  EXPECT_EQ(sync.steps[0].op(), OpKind::AllReduce);
  EXPECT_EQ(sync.steps[0].out.shape.elements(), 8);
  ASSERT_TRUE(sync.steps[0].group());
  EXPECT_EQ(program.groupAxes[*sync.steps[0].group()],
            (std::vector<std::string>{"b"}));
  EXPECT_EQ(sync.steps[0].as<AllReduceAttrs>().reduction, Reduction::Sum);
  EXPECT_EQ(sync.steps[1].op(), OpKind::Unary);
  EXPECT_EQ(sync.steps[1].as<UnaryAttrs>().fn, UnaryFn::Scale);
  EXPECT_EQ(sync.steps[1].as<UnaryAttrs>().value, 0.5);
  EXPECT_FALSE(sync.steps[1].group());
  EXPECT_EQ(program.steps[0].phase, Phase::Forward);
}

TEST(LoaderTest, TrainingErrors) {
  auto error = [](auto edit) {
    json program = trainingProgram();
    edit(program["training"], program);
    return errorOf(program.dump());
  };
  EXPECT_EQ(error([](json &t, json &) { t = 3; }),
            "p.mprog: training: expected an object, got the number 3");
  EXPECT_EQ(error([](json &t, json &) { t["loss"] = "hg"; }),
            "p.mprog: training.loss: output 'hg' is not a scalar; the loss "
            "must have dims []");
  EXPECT_EQ(error([](json &t, json &) { t["loss"] = "x"; }),
            "p.mprog: training.loss: 'x' is not an output (outputs: 'hg', "
            "'loss')");
  EXPECT_EQ(error([](json &t, json &) { t["hyperparams"]["lr"] = "fast"; }),
            "p.mprog: training.hyperparams.lr: expected a number, got the "
            "string \"fast\"");
  EXPECT_EQ(error([](json &t, json &) { t["sync"]["every"] = 0; }),
            "p.mprog: training.sync.every: expected an integer >= 1, got 0");
  EXPECT_EQ(error([](json &t, json &) { t["sync"]["axes"] = {"q"}; }),
            "p.mprog: training.sync.axes[0]: 'q' is not a mesh axis (mesh "
            "axes: 'b', 'm')");
  EXPECT_EQ(error([](json &t, json &) {
              t["sync"]["axes"] = {"b", "b"};
            }),
            "p.mprog: training.sync.axes[1]: mesh axis 'b' is listed twice");
  EXPECT_EQ(error([](json &t, json &) { t["sync"]["buffers"] = {9}; }),
            "p.mprog: training.sync.buffers[0]: buffer 9 is not declared");
  EXPECT_EQ(error([](json &t, json &) {
              t["sync"]["buffers"] = {1, 1};
            }),
            "p.mprog: training.sync.buffers[1]: buffer 1 is listed twice");
  EXPECT_EQ(error([](json &t, json &) { t["sync"]["buffers"] = {0}; }),
            "p.mprog: training.sync.buffers[0]: buffer 0 holds no param; "
            "sync averages param buffers only");
  EXPECT_EQ(error([](json &t, json &) { t["sync"]["axes"] = {"m"}; }),
            "p.mprog: training.sync.buffers[0]: param 'w' (buffer 1) is "
            "split over mesh axis 'm' (dim 'hidden'); sync averages "
            "replicas, so its params must be replicated over the sync axes");
  EXPECT_EQ(error([](json &t, json &) { t["sync"].erase("every"); }),
            "p.mprog: training.sync: missing member \"every\"");
}

/// trainingProgram() with microbatches instead of sync: the einsum a
/// backward step, the all_gather an update step, the output hg dropped.
json microbatchProgram() {
  json program = trainingProgram();
  program["training"].erase("sync");
  program["training"]["microbatches"] = {{"count", 4}, {"accumulators", {1}}};
  program["steps"][0]["phase"] = "backward";
  program["steps"][1]["phase"] = "update";
  program["tensors"].erase(2);
  return program;
}

TEST(LoaderTest, MicrobatchesLoad) {
  Program program = parseProgram(microbatchProgram().dump(), "p.mprog");
  ASSERT_TRUE(program.training && program.training->microbatches);
  EXPECT_EQ(program.training->microbatches->count, 4);
  EXPECT_EQ(program.training->microbatches->accumulators,
            (std::vector<size_t>{1}));
}

TEST(LoaderTest, MicrobatchErrors) {
  auto error = [](auto edit) {
    json program = microbatchProgram();
    edit(program["training"]["microbatches"], program);
    return errorOf(program.dump());
  };
  EXPECT_EQ(error([](json &m, json &) { m["count"] = 1; }),
            "p.mprog: training.microbatches.count: expected an integer >= 2, "
            "got 1");
  EXPECT_EQ(error([](json &m, json &) { m["accumulators"] = {7}; }),
            "p.mprog: training.microbatches.accumulators[0]: buffer 7 is not "
            "declared");
  EXPECT_EQ(error([](json &m, json &) {
              m["accumulators"] = {1, 1};
            }),
            "p.mprog: training.microbatches.accumulators[1]: buffer 1 is "
            "listed twice");
  EXPECT_EQ(error([](json &m, json &) { m["accumulators"] = {0}; }),
            "p.mprog: training.microbatches.accumulators[0]: buffer 0 holds "
            "no param; the accumulators are the slots the gradients are "
            "summed in");
  EXPECT_EQ(error([](json &, json &p) {
              p["steps"][0]["phase"] = "update";
              p["steps"][1]["phase"] = "backward";
            }),
            "p.mprog: training.microbatches: step 1 (backward) comes after "
            "update step 0; with microbatches the update steps run once "
            "after every microbatch's forward and backward steps, so they "
            "must come last");
  EXPECT_EQ(error([](json &, json &p) {
              p["tensors"].push_back(
                  {{"role", "output"},
                   {"name", "hg"},
                   {"buffer", 3},
                   {"dtype", "f32"},
                   {"dims",
                    {{{"name", "batch"}, {"size", 4}, {"axes", {"b"}}},
                     {{"name", "hidden"}, {"size", 4}}}}});
            }),
            "p.mprog: training.microbatches: output 'hg' is not an f32 "
            "scalar; with microbatches a run reports the mean of each output "
            "over the microbatches, so outputs must be f32 scalars (means "
            "over the batch)");
  EXPECT_EQ(error([](json &, json &p) {
              p["training"]["sync"] = {
                  {"every", 4}, {"axes", {"b"}}, {"buffers", {1}}};
            }),
            "p.mprog: training.microbatches: microbatches and sync (local "
            "SGD) do not run together");
}

/// One device; buffers 0 q [batch, seq, d], 1 k and 2 v [batch, memory, d],
/// 3 bias [seq, memory], 4 o [batch, seq, d], 5 lse [batch, seq], 6 dout, 7
/// dq, 8 dk, 9 dv, 10 i32 (256 bytes each, 11 in all), and `step`.
json attentionProgram(const json &step) {
  json buffers = json::array();
  for (int id = 0; id < 11; ++id)
    buffers.push_back({{"id", id},
                       {"dtype", id == 10 ? "i32" : "f32"},
                       {"shape", {64}},
                       {"offset", 256 * id},
                       {"bytes", 256}});
  return {{"format", "meshc-mprog"},
          {"version", 1},
          {"program", "p"},
          {"mesh", json::array()},
          {"seed", 3},
          {"arena_bytes", 256 * 11},
          {"buffers", buffers},
          {"tensors", json::array()},
          {"steps", {step}}};
}

json attentionOperand(int buf, std::vector<std::string> dims) {
  return {{"buf", buf}, {"dims", dims}};
}

/// o, lse = attention(q, k, v) over the key 'memory' and the head dim 'd'.
json attentionStep() {
  return {{"op", "attention"},
          {"in",
           {attentionOperand(0, {"batch", "seq", "d"}),
            attentionOperand(1, {"batch", "memory", "d"}),
            attentionOperand(2, {"batch", "memory", "d"})}},
          {"out", attentionOperand(4, {"batch", "seq", "d"})},
          {"lse", attentionOperand(5, {"batch", "seq"})},
          {"key", "memory"},
          {"head", {"d"}},
          {"scale", 0.5},
          {"sizes", {{"batch", 2}, {"seq", 3}, {"memory", 4}, {"d", 2}}}};
}

/// dq, dk, dv = attention_grad(q, k, v, o, lse, dout).
json attentionGradStep() {
  json step = attentionStep();
  step["op"] = "attention_grad";
  step["in"].push_back(step["out"]);
  step["in"].push_back(step["lse"]);
  step["in"].push_back(attentionOperand(6, {"batch", "seq", "d"}));
  step["out"] = attentionOperand(7, {"batch", "seq", "d"});
  step.erase("lse");
  step["dk"] = attentionOperand(8, {"batch", "memory", "d"});
  step["dv"] = attentionOperand(9, {"batch", "memory", "d"});
  return step;
}

/// The loader's message for attentionProgram(step) (attentionStep() or
/// attentionGradStep() changed by `edit`).
template <typename Edit> std::string attentionError(bool grad, Edit edit) {
  json step = grad ? attentionGradStep() : attentionStep();
  edit(step);
  return errorOf(attentionProgram(step).dump());
}

TEST(LoaderTest, AttentionLoads) {
  Program forward =
      parseProgram(attentionProgram(attentionStep()).dump(), "p.mprog");
  const Step &step = forward.steps[0];
  ASSERT_EQ(step.op(), OpKind::Attention);
  const AttentionAttrs &attrs = step.as<AttentionAttrs>();
  EXPECT_EQ(step.outputs().size(), 2u);
  EXPECT_EQ(step.outputs()[1], &attrs.lse);
  const AttentionGeometry &geometry = attrs.geometry;
  // d is the head dim of q and k and the value dim of v and o.
  EXPECT_EQ(geometry.dims[kGroupRole], std::vector<std::string>{"batch"});
  EXPECT_EQ(geometry.dims[kQueryRole], std::vector<std::string>{"seq"});
  EXPECT_EQ(geometry.dims[kValueRole], std::vector<std::string>{"d"});
  EXPECT_EQ(geometry.size,
            (std::array<int64_t, kAttentionRoles>{2, 3, 4, 2, 2}));
  // k [batch, memory, d]: the group at 0 and 8, the keys 2 apart.
  std::vector<int64_t> tables(size_t(geometry.tableEntries));
  geometry.fillTables(tables.data());
  const int64_t *group = geometry.offsets(tables.data(), kK, kGroupRole);
  EXPECT_EQ(std::vector<int64_t>(group, group + 2),
            (std::vector<int64_t>{0, 8}));
  const int64_t *keys = geometry.offsets(tables.data(), kK, kKeyRole);
  EXPECT_EQ(std::vector<int64_t>(keys, keys + 4),
            (std::vector<int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(geometry.stride[kK][kKeyRole], 2);
  EXPECT_EQ(geometry.stride[kK][kHeadRole], 1);
  EXPECT_FALSE(geometry.has(kBias));
  EXPECT_EQ(step.scratchBytes, attentionScratchBytes(geometry, false));
  EXPECT_EQ(step.scratchBytes,
            attentionTableBytes(geometry) +
                attentionWorkFloats(geometry, false) * int64_t(sizeof(float)));

  // A bias over the key and the query, the transposed way; bf16 outputs
  // are staged, the extra ones too.
  json step2 = attentionGradStep();
  step2["in"].push_back(attentionOperand(3, {"memory", "seq"}));
  json program = attentionProgram(step2);
  for (int id : {7, 8, 9})
    program["buffers"][id]["dtype"] = "bf16";
  Program grad = parseProgram(program.dump(), "p.mprog");
  const AttentionGradAttrs &gradAttrs = grad.steps[0].as<AttentionGradAttrs>();
  EXPECT_TRUE(gradAttrs.bias);
  EXPECT_EQ(gradAttrs.geometry.stride[kBias][kKeyRole], 3);
  EXPECT_EQ(gradAttrs.geometry.stride[kBias][kGroupRole], 0);
  EXPECT_EQ(grad.steps[0].outputs().size(), 3u);
  EXPECT_GE(grad.steps[0].out.staging, 0);
  EXPECT_GE(gradAttrs.dk.staging, 0);
  EXPECT_GE(gradAttrs.dv.staging, 0);
  EXPECT_GT(gradAttrs.dv.staging, gradAttrs.dk.staging);
  EXPECT_GE(grad.steps[0].scratchBytes, gradAttrs.dv.staging + 12 * 4);
}

TEST(LoaderTest, AttentionTablesAreNotMadeByTheLoader) {
  // 2^40 keys of no head or value elements: the operands are empty, and
  // the loader only counts the tables' entries (their bytes are the
  // device's to allocate, or to fail to).
  json step = attentionStep();
  step["in"][1]["dims"] = {"batch", "memory", "z"};
  step["in"][2]["dims"] = {"batch", "memory", "z"};
  step["head"] = {"z"};
  step["in"][0]["dims"] = {"batch", "seq", "z"};
  step["out"]["dims"] = {"batch", "seq", "z"};
  step["sizes"] = {
      {"batch", 2}, {"seq", 3}, {"memory", int64_t(1) << 40}, {"z", 0}};
  Program program = parseProgram(attentionProgram(step).dump(), "p.mprog");
  const AttentionGeometry &geometry =
      program.steps[0].as<AttentionAttrs>().geometry;
  EXPECT_GT(geometry.tableEntries, int64_t(1) << 41);
  EXPECT_GT(program.scratchBytes, int64_t(1) << 44);
  // Sizes whose tables overflow 64 bits (query dims w, x, y; the operands,
  // empty, start with a dim of size 0).
  step["in"][0]["dims"] = {"z", "w", "x", "y", "batch", "seq"};
  step["out"]["dims"] = {"z", "w", "x", "y", "batch", "seq"};
  step["lse"]["dims"] = {"y", "w", "x", "batch", "seq"};
  step["sizes"]["w"] = step["sizes"]["x"] = int64_t(1) << 40;
  step["sizes"]["y"] = 0;
  EXPECT_EQ(errorOf(attentionProgram(step).dump()),
            "p.mprog: steps[0].sizes: the sizes of the attention step are too "
            "large: its offset tables or working memory overflow 64 bits");
}

TEST(LoaderTest, AttentionErrors) {
  auto forward = [](auto edit) { return attentionError(false, edit); };
  auto grad = [](auto edit) { return attentionError(true, edit); };
  EXPECT_EQ(forward([](json &s) { s.erase("lse"); }),
            "p.mprog: steps[0]: missing member \"lse\"");
  EXPECT_EQ(grad([](json &s) { s.erase("dk"); }),
            "p.mprog: steps[0]: missing member \"dk\"");
  EXPECT_EQ(grad([](json &s) { s.erase("dv"); }),
            "p.mprog: steps[0]: missing member \"dv\"");
  EXPECT_EQ(forward([](json &s) { s.erase("head"); }),
            "p.mprog: steps[0]: missing member \"head\"");
  EXPECT_EQ(forward([](json &s) { s["in"].erase(2); }),
            "p.mprog: steps[0].in: attention reads q, k, v, and an optional "
            "bias: 3 or 4 operands, got 2");
  EXPECT_EQ(grad([](json &s) { s["in"].erase(5); }),
            "p.mprog: steps[0].in: attention_grad reads q, k, v, o, lse, "
            "dout, and an optional bias: 6 or 7 operands, got 5");
  // The key and head dims.
  EXPECT_EQ(forward([](json &s) { s["key"] = "seq"; }),
            "p.mprog: steps[0].key: key dim 'seq' is not a dim of k "
            "[batch=2, memory=4, d=2]");
  EXPECT_EQ(forward([](json &s) {
              s["head"] = {"d", "d"};
            }),
            "p.mprog: steps[0].head[1]: head dim 'd' is listed twice");
  EXPECT_EQ(forward([](json &s) { s["head"] = {"memory"}; }),
            "p.mprog: steps[0].head[0]: 'memory' is the key dim; the head "
            "dims are the dims q and k contract");
  EXPECT_EQ(forward([](json &s) {
              s["head"] = {"d", "seq"};
            }),
            "p.mprog: steps[0].head[1]: head dim 'seq' is not a dim of k "
            "[batch=2, memory=4, d=2]");
  EXPECT_EQ(forward([](json &s) {
              s["in"][1]["dims"] = {"batch", "memory", "d", "seq"};
              s["head"] = {"d", "seq"};
              s["in"][0]["dims"] = {"batch", "d"};
            }),
            "p.mprog: steps[0].head[1]: head dim 'seq' is not a dim of q "
            "[batch=2, d=2]");
  // Operands without their roles' dims.
  EXPECT_EQ(forward([](json &s) {
              s["in"][0]["dims"] = {"batch", "seq", "memory", "d"};
            }),
            "p.mprog: steps[0].in[0]: q [batch=2, seq=3, memory=4, d=2] has "
            "the key dim 'memory'");
  EXPECT_EQ(forward([](json &s) {
              s["in"][0]["dims"] = {"seq", "d"};
            }),
            "p.mprog: steps[0].in[0]: q [seq=3, d=2] lacks the group dim "
            "'batch' (a dim of k that is neither the key nor a head dim)");
  EXPECT_EQ(forward([](json &s) {
              s["in"][2]["dims"] = {"batch", "d"};
            }),
            "p.mprog: steps[0].in[2]: v [batch=2, d=2] lacks the key dim "
            "'memory'");
  EXPECT_EQ(forward([](json &s) {
              s["in"][2]["dims"] = {"memory", "d"};
            }),
            "p.mprog: steps[0].in[2]: v [memory=4, d=2] lacks the group dim "
            "'batch'");
  EXPECT_EQ(forward([](json &s) {
              s["in"][2]["dims"] = {"batch", "memory", "seq"};
            }),
            "p.mprog: steps[0].in[2]: v's value dim 'seq' is a query dim of "
            "q [batch=2, seq=3, d=2]; the value dims (v's dims but the group "
            "and key dims) and the query dims (q's but the group and head "
            "dims) differ");
  EXPECT_EQ(forward([](json &s) {
              s["out"]["dims"] = {"batch", "seq"};
            }),
            "p.mprog: steps[0].out: o [batch=2, seq=3] must have exactly the "
            "group, query and value dims 'batch', 'seq', 'd' (in any order)");
  EXPECT_EQ(forward([](json &s) {
              s["lse"]["dims"] = {"seq", "d", "batch"};
            }),
            "p.mprog: steps[0].lse: lse [seq=3, d=2, batch=2] must have "
            "exactly the group and query dims 'batch', 'seq' (in any order)");
  EXPECT_EQ(grad([](json &s) {
              s["in"][5]["dims"] = {"batch", "seq"};
            }),
            "p.mprog: steps[0].in[5]: dout [batch=2, seq=3] must have exactly "
            "the group, query and value dims 'batch', 'seq', 'd' (in any "
            "order)");
  EXPECT_EQ(grad([](json &s) { s["in"][4]["dims"] = {"batch"}; }),
            "p.mprog: steps[0].in[4]: lse [batch=2] must have exactly the "
            "group and query dims 'batch', 'seq' (in any order)");
  EXPECT_EQ(grad([](json &s) {
              s["out"]["dims"] = {"batch", "seq"};
            }),
            "p.mprog: steps[0].out: dq [batch=2, seq=3] must have exactly the "
            "dims of q 'batch', 'seq', 'd' (in any order)");
  EXPECT_EQ(grad([](json &s) {
              s["dk"]["dims"] = {"memory", "batch"};
            }),
            "p.mprog: steps[0].dk: dk [memory=4, batch=2] must have exactly "
            "the dims of k 'batch', 'memory', 'd' (in any order)");
  EXPECT_EQ(grad([](json &s) {
              s["dv"]["dims"] = {"memory", "batch"};
            }),
            "p.mprog: steps[0].dv: dv [memory=4, batch=2] must have exactly "
            "the dims of v 'batch', 'memory', 'd' (in any order)");
  // A bias with a dim that is no group, query or key dim.
  EXPECT_EQ(forward([](json &s) {
              s["in"].push_back(attentionOperand(3, {"seq", "d"}));
            }),
            "p.mprog: steps[0].in[3]: bias dim 'd' of bias [seq=3, d=2] is "
            "not a group, query or key dim (bias is broadcast along the ones "
            "it lacks)");
  EXPECT_EQ(grad([](json &s) {
              s["in"].push_back(attentionOperand(3, {"memory", "x"}));
              s["sizes"]["x"] = 3;
            }),
            "p.mprog: steps[0].in[6]: bias dim 'x' of bias [memory=4, x=3] is "
            "not a group, query or key dim (bias is broadcast along the ones "
            "it lacks)");
  // Types, overlaps, the scale.
  EXPECT_EQ(forward([](json &s) { s["in"][1]["buf"] = 10; }),
            "p.mprog: steps[0].in[1]: attention needs float operands but "
            "buffer 10 (k) is i32");
  EXPECT_EQ(grad([](json &s) { s["dv"]["buf"] = 10; }),
            "p.mprog: steps[0].dv: attention_grad writes float outputs but "
            "buffer 10 (dv) is i32");
  EXPECT_EQ(forward([](json &s) { s["lse"]["buf"] = 1; }),
            "p.mprog: steps[0].lse: buffer 1 (lse) overlaps buffer 1 (k), "
            "which attention reads");
  EXPECT_EQ(forward([](json &s) { s["lse"]["buf"] = 4; }),
            "p.mprog: steps[0].lse: buffer 4 (lse) overlaps buffer 4 (o), "
            "which attention also writes");
  EXPECT_EQ(grad([](json &s) { s["out"]["buf"] = 6; }),
            "p.mprog: steps[0].out: buffer 6 (dq) overlaps buffer 6 (dout), "
            "which attention_grad reads");
  EXPECT_EQ(grad([](json &s) { s["dv"]["buf"] = 8; }),
            "p.mprog: steps[0].dv: buffer 8 (dv) overlaps buffer 8 (dk), "
            "which attention_grad also writes");
  EXPECT_EQ(forward([](json &s) { s["scale"] = "0.5"; }),
            "p.mprog: steps[0].scale: expected a number, got the string "
            "\"0.5\"");
}

/// validProgram() with two more buffers (4: [batch=2, io=4] of element
/// type `in`, 5: [hidden=4, batch=2] of `out`) and one step, a window of 4
/// into 5 (io becomes hidden and goes first).
Program windowProgram(const std::string &in, const std::string &out) {
  json program = validProgram();
  auto bytes = [](const std::string &dtype) {
    return dtype == "f32" ? 32 : 16;
  };
  program["buffers"].push_back({{"id", 4},
                                {"dtype", in},
                                {"shape", {2, 4}},
                                {"offset", 112},
                                {"bytes", bytes(in)}});
  program["buffers"].push_back({{"id", 5},
                                {"dtype", out},
                                {"shape", {4, 2}},
                                {"offset", 144},
                                {"bytes", bytes(out)}});
  program["arena_bytes"] = 176;
  program["steps"] = json::parse(R"([
    {"op": "window", "in": {"buf": 4, "dims": ["batch", "io"]},
     "out": {"buf": 5, "dims": ["hidden", "batch"]}, "from": "io",
     "to": "hidden", "offset": -1, "sizes": {"batch": 2, "io": 4,
     "hidden": 4}}])");
  return parseProgram(program.dump(), "p.mprog");
}

TEST(LoaderTest, WindowsOfOne16BitTypeMoveTheirElementsUnstaged) {
  // A window computes nothing: between buffers of one 16-bit type its
  // kernel moves the 16-bit elements, with no f32 copies in the scratch
  // (a pipeline's microbatches as ticks, the batch of a GPT-3 per device).
  for (const char *dtype : {"bf16", "f16"}) {
    SCOPED_TRACE(dtype);
    Program same = windowProgram(dtype, dtype);
    EXPECT_EQ(same.steps[0].in[0].staging, -1);
    EXPECT_EQ(same.steps[0].out.staging, -1);
    EXPECT_EQ(same.scratchBytes, 0);
  }
  // Two element types: the 16-bit side widened or narrowed through f32.
  Program mixed = windowProgram("bf16", "f32");
  EXPECT_EQ(mixed.steps[0].in[0].staging, 0);
  EXPECT_EQ(mixed.steps[0].out.staging, -1);
  EXPECT_EQ(mixed.scratchBytes, 64); // 8 floats, staging areas 64-aligned
  Program halves = windowProgram("bf16", "f16");
  EXPECT_EQ(halves.steps[0].in[0].staging, 0);
  EXPECT_EQ(halves.steps[0].out.staging, 64);
  EXPECT_EQ(halves.scratchBytes, 128);
}

} // namespace
