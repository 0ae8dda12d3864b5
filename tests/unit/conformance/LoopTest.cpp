//===- LoopTest.cpp - The loop step against the recurrence it computes ----===//
//
// A program whose loop step runs a layer per iteration over stacked
// weights, h = tanh(all_reduce_sum(h * w[l])) on both devices of mesh b:2,
// runs in a Session on the backend under test, forward and reversed, and is
// compared with the recurrence in double over the session's own input and
// parameter values. (tests/unit/runtime/LoopTest.cpp compares loops with
// the same steps unrolled, bit for bit, and pins the loader's errors.)
//
//===----------------------------------------------------------------------===//

#include "Conformance.h"

#include "runtime/Session.h"

#include <cmath>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;
using nlohmann::json;

namespace {

const int64_t kLayers = 3, kD = 4;

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

json dim(const std::string &name, int64_t size) {
  return {{"name", name}, {"size", size}, {"axes", json::array()}};
}

/// Buffers: 0 x[d], 1 w[layers, d], 2 h[d], 3 the moved slice w[l].
json loopProgram(bool reverse) {
  json body = {
      {{"op", "binary"},
       {"fn", "mul"},
       {"lhs", operand(2, {"d"})},
       {"rhs", operand(3, {"d"})},
       {"out", operand(2, {"d"})},
       {"sizes", {{"d", kD}}}},
      {{"op", "all_reduce"}, {"buf", 2}, {"axes", {"b"}}, {"reduction", "sum"}},
      {{"op", "unary"}, {"fn", "tanh"}, {"in", 2}, {"out", 2}}};
  json loop = {{"op", "loop"},
               {"count", kLayers},
               {"reverse", reverse},
               {"stacked", {{{"buf", 3}, {"stride", kD * 4}}}},
               {"body", body}};
  return {{"format", "meshc-mprog"},
          {"version", 1},
          {"program", "loop"},
          {"mesh", {{{"name", "b"}, {"size", 2}}}},
          {"seed", 3},
          {"arena_bytes", 192},
          {"buffers",
           {buffer(0, {kD}, 0), buffer(1, {kLayers, kD}, 64),
            buffer(2, {kD}, 128), buffer(3, {kD}, 64)}},
          {"tensors",
           {{{"role", "input"},
             {"name", "x"},
             {"buffer", 0},
             {"dtype", "f32"},
             {"dims", {dim("d", kD)}}},
            {{"role", "param"},
             {"name", "w"},
             {"buffer", 1},
             {"dtype", "f32"},
             {"dims", {dim("layers", kLayers), dim("d", kD)}},
             {"init", {{"kind", "normal"}, {"args", {0.0, 0.6}}}}},
            {{"role", "output"},
             {"name", "y"},
             {"buffer", 2},
             {"dtype", "f32"},
             {"dims", {dim("d", kD)}}}}},
          {"steps", {{{"op", "copy"}, {"in", 0}, {"out", 2}}, loop}}};
}

TEST_P(Conformance, Loop_RunsTheBodyPerIterationOnItsSlice) {
  for (bool reverse : {false, true}) {
    SCOPED_TRACE(reverse ? "reversed" : "forward");
    Program program = parseProgram(loopProgram(reverse).dump(), "loop.mprog");
    ASSERT_EQ(program.steps[1].op(), OpKind::Loop);
    SessionOptions options;
    options.backend = backend();
    Session session(program, options);
    session.runStep();
    ranKind(OpKind::Loop);
    HostTensor x = session.gather(*program.findTensor(Role::Input, "x"));
    HostTensor w = session.gather(*program.findTensor(Role::Param, "w"));
    std::vector<double> h(kD);
    for (int64_t i = 0; i < kD; ++i)
      h[i] = x.at(i);
    for (int64_t step = 0; step < kLayers; ++step) {
      int64_t l = reverse ? kLayers - 1 - step : step;
      for (int64_t i = 0; i < kD; ++i)
        h[i] = std::tanh(2 * h[i] * w.at(l * kD + i));
    }
    HostTensor y = session.gather(*program.findTensor(Role::Output, "y"));
    std::vector<float> got;
    for (int64_t i = 0; i < y.elements(); ++i)
      got.push_back(static_cast<float>(y.at(i)));
    expectNear(got, h, 1e-5);
  }
}

} // namespace
