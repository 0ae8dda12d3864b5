//===- CudaConformanceTest.cpp - Every step kind on cpu and cuda ----------===//
//
// The conformance suite: each case builds a one-step program with the
// runtime's StepHarness (real loader, real einsum plans), runs it on a CPU
// device and on a CUDA device, and compares every buffer afterwards. Data
// movement, dropout, one_hot, argmax, comparisons and reductions must agree
// bit for bit (the reduction kernels sum in the CPU's order); transcendental
// functions to 1e-5 relative (CUDA's expf/tanhf are not glibc's); GEMMs to
// 1e-4 relative (different summation order). Errors must read the same.
// Every test needs a GPU and skips without one.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"
#include "StepHarness.h"

#include "runtime/Error.h"

#include <gtest/gtest.h>

#include <functional>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;
using nlohmann::json;

namespace {

/// A step and the buffers to compare after it ran.
struct Built {
  json step;
  std::vector<int64_t> f32s;
  std::vector<int64_t> i32s;
};
using Builder = std::function<Built(StepHarness &)>;

json operand(int64_t buf, std::vector<std::string> dims) {
  return {{"buf", buf}, {"dims", dims}};
}

/// Runs `build`'s step on both backends and compares every listed buffer.
void expectSameOnBoth(const Builder &build, double tolerance,
                      const RunContext &context = {}) {
  StepHarness cpu("cpu"), gpu("cuda");
  Built a = build(cpu), b = build(gpu);
  cpu.run(a.step, context);
  gpu.run(b.step, context);
  for (int64_t id : a.f32s) {
    SCOPED_TRACE("buffer " + std::to_string(id));
    if (tolerance == 0)
      EXPECT_EQ(gpu.readF32(id), cpu.readF32(id));
    else
      expectClose(gpu.readF32(id), cpu.readF32(id), tolerance);
  }
  for (int64_t id : a.i32s)
    EXPECT_EQ(gpu.readI32(id), cpu.readI32(id)) << "buffer " << id;
}

/// The message `build`'s step fails with on `backend`.
std::string failureOn(const std::string &backend, const Builder &build) {
  StepHarness harness(backend);
  Built built = build(harness);
  try {
    harness.run(built.step);
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "";
}

class CudaConformance : public ::testing::Test {
protected:
  void SetUp() override { MESHC_REQUIRE_GPU(); }
};

TEST_F(CudaConformance, Unary) {
  for (const char *fn : {"relu", "gelu", "exp", "log", "tanh", "sqrt", "rsqrt",
                         "negate", "scale", "positive", "gelu_grad"}) {
    SCOPED_TRACE(fn);
    bool positive = std::string(fn) == "log" || std::string(fn) == "sqrt" ||
                    std::string(fn) == "rsqrt";
    expectSameOnBoth(
        [&](StepHarness &h) {
          std::vector<float> x = testData("x", 1001);
          if (positive)
            for (float &v : x)
              v = std::abs(v) + 0.1f;
          int64_t in = h.f32(x), out = h.f32(std::vector<float>(1001));
          return Built{{{"op", "unary"},
                        {"fn", fn},
                        {"in", in},
                        {"out", out},
                        {"value", 2.5}},
                       {in, out}};
        },
        1e-5);
  }
}

TEST_F(CudaConformance, FillCopyCast) {
  expectSameOnBoth(
      [](StepHarness &h) {
        int64_t f = h.f32(std::vector<float>(5));
        return Built{{{"op", "fill"}, {"out", f}, {"value", 0.5}}, {f}};
      },
      0);
  expectSameOnBoth(
      [](StepHarness &h) {
        int64_t i = h.i32(std::vector<int32_t>(5));
        return Built{{{"op", "fill"}, {"out", i}, {"value", -4}}, {}, {i}};
      },
      0);
  expectSameOnBoth(
      [](StepHarness &h) {
        int64_t src = h.f32(testData("s", 77)),
                dst = h.f32(std::vector<float>(77));
        return Built{{{"op", "copy"}, {"in", src}, {"out", dst}}, {dst}};
      },
      0);
  expectSameOnBoth(
      [](StepHarness &h) {
        int64_t f = h.f32({1.9f, -1.9f, 3e9f, -3e9f, NAN, 0.0f});
        int64_t i = h.i32(std::vector<int32_t>(6));
        return Built{{{"op", "cast"},
                      {"in", f},
                      {"out", i},
                      {"from", "f32"},
                      {"to", "i32"}},
                     {},
                     {i}};
      },
      0);
  expectSameOnBoth(
      [](StepHarness &h) {
        int64_t i = h.i32({-3, 7, 1 << 30}), f = h.f32({0, 0, 0});
        return Built{{{"op", "cast"},
                      {"in", i},
                      {"out", f},
                      {"from", "i32"},
                      {"to", "f32"}},
                     {f}};
      },
      0);
}

TEST_F(CudaConformance, BroadcastingBinary) {
  for (const char *fn :
       {"add", "sub", "mul", "div", "max", "min", "eq", "lt"}) {
    SCOPED_TRACE(fn);
    expectSameOnBoth(
        [&](StepHarness &h) {
          std::vector<float> rhs = testData("rhs", 5);
          for (float &v : rhs)
            v += 3.0f;
          int64_t l = h.f32(testData("lhs", 5 * 37)), r = h.f32(rhs),
                  out = h.f32(std::vector<float>(5 * 37));
          return Built{{{"op", "binary"},
                        {"fn", fn},
                        {"lhs", operand(l, {"h", "b"})},
                        {"rhs", operand(r, {"h"})},
                        {"out", operand(out, {"b", "h"})},
                        {"sizes", {{"b", 37}, {"h", 5}}}},
                       {out}};
        },
        0);
  }
  for (const char *fn : {"eq", "lt"})
    expectSameOnBoth(
        [&](StepHarness &h) {
          int64_t l = h.i32({7, -1, 3}), r = h.i32({3, 7}),
                  out = h.f32(std::vector<float>(6));
          return Built{{{"op", "binary"},
                        {"fn", fn},
                        {"lhs", operand(l, {"b"})},
                        {"rhs", operand(r, {"a"})},
                        {"out", operand(out, {"a", "b"})},
                        {"sizes", {{"a", 2}, {"b", 3}}}},
                       {out}};
        },
        0);
}

TEST_F(CudaConformance, ReduceSumAndMax) {
  for (const char *fn : {"sum", "max"})
    for (std::vector<std::string> dims :
         {std::vector<std::string>{"c", "a"}, {}, {"b"}}) {
      SCOPED_TRACE(std::string(fn) + " to " + std::to_string(dims.size()));
      expectSameOnBoth(
          [&](StepHarness &h) {
            std::map<std::string, int64_t> sizes = {
                {"a", 7}, {"b", 300}, {"c", 5}};
            int64_t count = 1;
            for (const std::string &d : dims)
              count *= sizes[d];
            int64_t in = h.f32(testData("x", 7 * 300 * 5)),
                    out = h.f32(std::vector<float>(count));
            return Built{{{"op", "reduce"},
                          {"fn", fn},
                          {"in", operand(in, {"a", "b", "c"})},
                          {"out", operand(out, dims)},
                          {"sizes", sizes}},
                         {out}};
          },
          // A maximum is exact; a sum is added in another order on the GPU
          // (a tree per block) than on the CPU (vector lanes): equal to
          // rounding, 2e-6 relative over 2,100 terms on an H100.
          std::string(fn) == "max" ? 0 : 1e-5);
    }
}

// Long rows, few of them: the kernels cut each row into chunks, a block
// each, and combine the chunks' partial results (a scalar of 2^25 elements
// in one block took 678 ms on an H100).
TEST_F(CudaConformance, ReduceLongRowsInChunks) {
  for (const char *fn : {"sum", "max"})
    for (std::vector<std::string> dims :
         {std::vector<std::string>{}, {"a"}, {"b"}}) {
      SCOPED_TRACE(std::string(fn) + " to " + std::to_string(dims.size()) +
                   (dims.empty() ? "" : " " + dims[0]));
      expectSameOnBoth(
          [&](StepHarness &h) {
            std::map<std::string, int64_t> sizes = {{"a", 3}, {"b", 200000}};
            int64_t count = 1;
            for (const std::string &d : dims)
              count *= sizes[d];
            int64_t in = h.f32(testData("x", 3 * 200000)),
                    out = h.f32(std::vector<float>(count));
            return Built{{{"op", "reduce"},
                          {"fn", fn},
                          {"in", operand(in, {"a", "b"})},
                          {"out", operand(out, dims)},
                          {"sizes", sizes}},
                         {out}};
          },
          std::string(fn) == "max" ? 0 : 1e-5);
    }
}

/// A fused softmax over `b` of x[a, b] with its row sums; `reduced` 2 sums
/// everything into a scalar instead.
Builder fusedSoftmax(int64_t a, int64_t b, int reduced) {
  return [=](StepHarness &h) {
    int64_t x = h.f32(testData("x", a * b));
    json sizes = {{"a", a}, {"b", b}};
    if (reduced == 2) {
      int64_t total = h.f32(std::vector<float>(1));
      return Built{
          {{"op", "fused"},
           {"dims", {"a", "b"}},
           {"reduced", 2},
           {"in", {operand(x, {"a", "b"})}},
           {"out", {{{"buf", total}, {"dims", json::array()}, {"value", 3}}}},
           {"sizes", sizes},
           {"body",
            {{{"fn", "mul"}, {"args", {0, 0}}},
             {{"fn", "reduce_sum"}, {"args", {1}}},
             {{"fn", "scale"}, {"args", {2}}, {"value", 0.5}}}}},
          {total}};
    }
    int64_t y = h.f32(std::vector<float>(a * b)),
            sums = h.f32(std::vector<float>(a));
    return Built{{{"op", "fused"},
                  {"dims", {"a", "b"}},
                  {"reduced", 1},
                  {"in", {operand(x, {"a", "b"})}},
                  {"out",
                   {{{"buf", y}, {"dims", {"a", "b"}}, {"value", 5}},
                    {{"buf", sums}, {"dims", {"a"}}, {"value", 4}}}},
                  {"sizes", sizes},
                  {"body",
                   {{{"fn", "reduce_max"}, {"args", {0}}},
                    {{"fn", "sub"}, {"args", {0, 1}}},
                    {{"fn", "exp"}, {"args", {2}}},
                    {{"fn", "reduce_sum"}, {"args", {3}}},
                    {{"fn", "div"}, {"args", {3, 4}}}}}},
                 {y, sums}};
  };
}

TEST_F(CudaConformance, FusedReductionsByRowAndInChunks) {
  // Many short rows (a block per row), few long rows (chunks), a scalar of
  // 2^20 elements (one row in 1024 chunks).
  expectSameOnBoth(fusedSoftmax(2000, 300, 1), 1e-5);
  expectSameOnBoth(fusedSoftmax(3, 200000, 1), 1e-5);
  expectSameOnBoth(fusedSoftmax(256, 4096, 2), 1e-5);
}

TEST_F(CudaConformance, SoftmaxCrossEntropyOneHotArgmax) {
  expectSameOnBoth(
      [](StepHarness &h) {
        std::vector<float> x = testData("x", 2 * 60 * 3);
        x[0] = 80.0f;
        int64_t in = h.f32(x), out = h.f32(std::vector<float>(x.size()));
        return Built{{{"op", "softmax"},
                      {"in", operand(in, {"a", "c", "b"})},
                      {"out", operand(out, {"b", "a", "c"})},
                      {"dim", "c"},
                      {"sizes", {{"a", 2}, {"b", 3}, {"c", 60}}}},
                     {out}};
      },
      1e-5);
  expectSameOnBoth(
      [](StepHarness &h) {
        std::vector<int32_t> labels(64);
        for (int i = 0; i < 64; ++i)
          labels[i] = (i * 7) % 10;
        int64_t l = h.f32(testData("logits", 640)), y = h.i32(labels),
                out = h.f32(std::vector<float>(64));
        return Built{{{"op", "softmax_cross_entropy"},
                      {"logits", operand(l, {"classes", "batch"})},
                      {"labels", operand(y, {"batch"})},
                      {"out", operand(out, {"batch"})},
                      {"dim", "classes"},
                      {"sizes", {{"batch", 64}, {"classes", 10}}}},
                     {out}};
      },
      1e-5);
  expectSameOnBoth(
      [](StepHarness &h) {
        int64_t in = h.i32({2, 0, 3}), out = h.f32(std::vector<float>(12));
        return Built{{{"op", "one_hot"},
                      {"in", operand(in, {"batch"})},
                      {"out", operand(out, {"classes", "batch"})},
                      {"dim", "classes"},
                      {"sizes", {{"batch", 3}, {"classes", 4}}}},
                     {out}};
      },
      0);
  expectSameOnBoth(
      [](StepHarness &h) {
        std::vector<float> x = testData("x", 12);
        x[1] = NAN;
        int64_t in = h.f32(x), out = h.i32(std::vector<int32_t>(4, -9));
        return Built{{{"op", "argmax"},
                      {"in", operand(in, {"classes", "batch"})},
                      {"out", operand(out, {"batch"})},
                      {"dim", "classes"},
                      {"sizes", {{"batch", 4}, {"classes", 3}}}},
                     {},
                     {out}};
      },
      0);
}

TEST_F(CudaConformance, RangeAndCumsum) {
  for (const char *dtype : {"f32", "i32"})
    expectSameOnBoth(
        [&](StepHarness &h) {
          int64_t out = std::string(dtype) == "f32"
                            ? h.f32(std::vector<float>(300))
                            : h.i32(std::vector<int32_t>(300));
          Built built{{{"op", "range"},
                       {"out", operand(out, {"n"})},
                       {"sizes", {{"n", 300}}}}};
          (std::string(dtype) == "f32" ? built.f32s : built.i32s)
              .push_back(out);
          return built;
        },
        0);
  for (bool reverse : {false, true})
    expectSameOnBoth(
        [&](StepHarness &h) {
          int64_t in = h.f32(testData("x", 2 * 60 * 3)),
                  out = h.f32(std::vector<float>(2 * 60 * 3));
          return Built{{{"op", "cumsum"},
                        {"in", operand(in, {"a", "c", "b"})},
                        {"out", operand(out, {"b", "a", "c"})},
                        {"dim", "c"},
                        {"reverse", reverse},
                        {"sizes", {{"a", 2}, {"b", 3}, {"c", 60}}}},
                       {out}};
        },
        0);
}

TEST_F(CudaConformance, Window) {
  for (int64_t offset : {-3, 0, 2, 70})
    expectSameOnBoth(
        [&](StepHarness &h) {
          int64_t in = h.f32(testData("x", 2 * 60 * 3)),
                  out = h.f32(std::vector<float>(3 * 40 * 2, 9.0f));
          return Built{{{"op", "window"},
                        {"in", operand(in, {"a", "s", "b"})},
                        {"out", operand(out, {"b", "t", "a"})},
                        {"from", "s"},
                        {"to", "t"},
                        {"offset", offset},
                        {"sizes", {{"a", 2}, {"b", 3}, {"s", 60}, {"t", 40}}}},
                       {out}};
        },
        0);
}

TEST_F(CudaConformance, TopK) {
  for (int64_t k : {1, 3, 60})
    expectSameOnBoth(
        [&](StepHarness &h) {
          std::vector<float> x = testData("x", 2 * 60 * 3);
          x[5] = x[8] = x[11] = 4.0f; // ties along e
          x[14] = std::nanf("");
          int64_t in = h.f32(x), out = h.f32(std::vector<float>(2 * 60 * 3));
          return Built{{{"op", "top_k"},
                        {"in", operand(in, {"a", "e", "b"})},
                        {"out", operand(out, {"b", "a", "e"})},
                        {"dim", "e"},
                        {"k", k},
                        {"sizes", {{"a", 2}, {"b", 3}, {"e", 60}}}},
                       {out}};
        },
        0);
}

TEST_F(CudaConformance, DropoutTrainingAndEval) {
  Builder build = [](StepHarness &h) {
    int64_t out = h.f32(std::vector<float>(5 * 400));
    return Built{
        {{"op", "dropout"},
         {"out", operand(out, {"a", "c"})},
         {"sizes", {{"a", 5}, {"c", 400}}},
         {"name", "drop0"},
         {"rate", 0.25},
         {"dims",
          {{{"name", "a"}, {"size", 5}}, {{"name", "c"}, {"size", 400}}}}},
        {out}};
  };
  expectSameOnBoth(build, 0, {7, 3, false});
  expectSameOnBoth(build, 0, {7, 4, false});
  expectSameOnBoth(build, 0, {7, 3, true});
}

TEST_F(CudaConformance, Einsums) {
  using Names = std::vector<std::string>;
  struct Case {
    std::vector<Names> inputs;
    Names out;
  };
  std::map<std::string, int64_t> sizes = {{"b", 33}, {"i", 47}, {"o", 29},
                                          {"h", 3},  {"k", 17}, {"z", 2}};
  for (const Case &c : std::vector<Case>{
           {{{"b", "i"}, {"i", "o"}}, {"b", "o"}},                // plain GEMM
           {{{"i", "b"}, {"o", "i"}}, {"o", "b"}},                // transposed
           {{{"h", "b", "k"}, {"h", "k", "o"}}, {"b", "h", "o"}}, // batched
           {{{"b", "i", "z"}, {"i", "o"}}, {"o", "b"}}, // a dim summed alone
           {{{"b", "i"}, {"i", "o"}, {"o", "k"}}, {"b", "k"}}, // 3 operands
           {{{"b", "i"}}, {"i"}},                              // a sum
           {{{"b", "i"}, {"b", "i"}}, {"b"}},                  // batched dots
       }) {
    SCOPED_TRACE(json(c.inputs).dump());
    expectSameOnBoth(
        [&](StepHarness &h) {
          json inputs = json::array();
          for (size_t i = 0; i < c.inputs.size(); ++i) {
            int64_t count = 1;
            for (const std::string &d : c.inputs[i])
              count *= sizes[d];
            inputs.push_back(operand(
                h.f32(testData("in" + std::to_string(i), count)), c.inputs[i]));
          }
          int64_t count = 1;
          for (const std::string &d : c.out)
            count *= sizes[d];
          int64_t out = h.f32(std::vector<float>(count, 7.0f));
          std::map<std::string, int64_t> used;
          for (const Names &names : c.inputs)
            for (const std::string &d : names)
              used[d] = sizes[d];
          return Built{{{"op", "einsum"},
                        {"in", inputs},
                        {"out", operand(out, c.out)},
                        {"sizes", used}},
                       {out}};
        },
        1e-4);
  }
}

TEST_F(CudaConformance, LabelAndIndexErrorsReadTheSame) {
  Builder crossEntropy = [](StepHarness &h) {
    int64_t l = h.f32(std::vector<float>(12)), y = h.i32({1, 3, 0, 5}),
            out = h.f32(std::vector<float>(4));
    return Built{{{"op", "softmax_cross_entropy"},
                  {"logits", operand(l, {"batch", "classes"})},
                  {"labels", operand(y, {"batch"})},
                  {"out", operand(out, {"batch"})},
                  {"dim", "classes"},
                  {"sizes", {{"batch", 4}, {"classes", 3}}}}};
  };
  EXPECT_EQ(failureOn("cuda", crossEntropy), failureOn("cpu", crossEntropy));
  EXPECT_EQ(failureOn("cuda", crossEntropy),
            "label 3 (labels element 1) is outside [0, 3)");
  Builder oneHot = [](StepHarness &h) {
    int64_t in = h.i32({1, -1}), out = h.f32(std::vector<float>(8));
    return Built{{{"op", "one_hot"},
                  {"in", operand(in, {"batch"})},
                  {"out", operand(out, {"batch", "classes"})},
                  {"dim", "classes"},
                  {"sizes", {{"batch", 2}, {"classes", 4}}}}};
  };
  EXPECT_EQ(failureOn("cuda", oneHot), failureOn("cpu", oneHot));
}

} // namespace
