//===- KernelsTest.cpp - CPU step kernels against naive references --------===//
//
// Every local step kind runs through the loader and a CpuDevice and is
// compared with a direct double-precision formula: unary functions, cast,
// fill and copy, broadcasting binary ops (operands permuted or missing dims,
// in place), reductions, softmax along inner and middle dims, and softmax
// cross entropy including its out-of-range label error. A one_hot block of
// split classes calls its kernel directly (the harness has one device).
//
//===----------------------------------------------------------------------===//

#include "StepHarness.h"

#include "runtime/Error.h"
#include "runtime/cpu/CpuKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;
using nlohmann::json;

namespace {

void expectNear(const std::vector<float> &got,
                const std::vector<double> &expected, double tolerance = 1e-5) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], expected[i],
                tolerance * std::max(1.0, std::abs(expected[i])))
        << "element " << i;
}

struct UnaryCase {
  const char *fn;
  std::function<double(double)> reference;
};

/// How gtest prints a case (in test listings and failures).
void PrintTo(const UnaryCase &c, std::ostream *os) { *os << c.fn; }

class UnaryTest : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(UnaryTest, MatchesFormula) {
  std::vector<float> x = testData("x", 101);
  bool positiveOnly = std::string(GetParam().fn) == "log" ||
                      std::string(GetParam().fn) == "sqrt" ||
                      std::string(GetParam().fn) == "rsqrt";
  if (positiveOnly)
    for (float &v : x)
      v = std::abs(v) + 0.1f;
  StepHarness harness;
  int64_t in = harness.f32(x), out = harness.f32(std::vector<float>(101));
  harness.run({{"op", "unary"},
               {"fn", GetParam().fn},
               {"in", in},
               {"out", out},
               {"value", 2.5}});
  std::vector<double> expected;
  for (float v : x)
    expected.push_back(GetParam().reference(v));
  expectNear(harness.readF32(out), expected);
}

const double kPi = 3.141592653589793;

INSTANTIATE_TEST_SUITE_P(
    Functions, UnaryTest,
    ::testing::Values(
        UnaryCase{"relu", [](double x) { return x > 0 ? x : 0.0; }},
        UnaryCase{"gelu",
                  [](double x) {
                    return 0.5 * x *
                           (1 + std::tanh(std::sqrt(2 / kPi) *
                                          (x + 0.044715 * x * x * x)));
                  }},
        UnaryCase{"exp", [](double x) { return std::exp(x); }},
        UnaryCase{"log", [](double x) { return std::log(x); }},
        UnaryCase{"tanh", [](double x) { return std::tanh(x); }},
        UnaryCase{"sqrt", [](double x) { return std::sqrt(x); }},
        UnaryCase{"rsqrt", [](double x) { return 1 / std::sqrt(x); }},
        UnaryCase{"negate", [](double x) { return -x; }},
        UnaryCase{"scale", [](double x) { return 2.5 * x; }},
        UnaryCase{"positive", [](double x) { return x > 0 ? 1.0 : 0.0; }},
        // The derivative by central differences of gelu in double.
        UnaryCase{"gelu_grad",
                  [](double x) {
                    auto gelu = [](double v) {
                      return 0.5 * v *
                             (1 + std::tanh(std::sqrt(2 / kPi) *
                                            (v + 0.044715 * v * v * v)));
                    };
                    const double h = 1e-5;
                    return (gelu(x + h) - gelu(x - h)) / (2 * h);
                  }}),
    [](const ::testing::TestParamInfo<UnaryCase> &info) {
      return std::string(info.param.fn);
    });

TEST(KernelsTest, PositiveAndGeluGradAtEdges) {
  StepHarness harness;
  std::vector<float> x = {NAN, 0.0f, -0.0f, 1e-30f, -5.0f, 30.0f, -30.0f};
  int64_t in = harness.f32(x), pos = harness.f32(std::vector<float>(7)),
          grad = harness.f32(std::vector<float>(7));
  harness.run({{"op", "unary"}, {"fn", "positive"}, {"in", in}, {"out", pos}});
  EXPECT_EQ(harness.readF32(pos), (std::vector<float>{0, 0, 0, 1, 0, 1, 0}));
  harness.run(
      {{"op", "unary"}, {"fn", "gelu_grad"}, {"in", in}, {"out", grad}});
  std::vector<float> g = harness.readF32(grad);
  EXPECT_FLOAT_EQ(g[1], 0.5f); // gelu'(0) = 1/2
  EXPECT_FLOAT_EQ(g[5], 1.0f); // gelu(x) ~ x for large x
  EXPECT_FLOAT_EQ(g[6], 0.0f); // and ~ 0 for very negative x
}

TEST(KernelsTest, UnaryInPlace) {
  StepHarness harness;
  int64_t buf = harness.f32({-1.0f, 2.0f});
  harness.run({{"op", "unary"}, {"fn", "relu"}, {"in", buf}, {"out", buf}});
  EXPECT_EQ(harness.readF32(buf), (std::vector<float>{0.0f, 2.0f}));
}

TEST(KernelsTest, FillAndCopy) {
  StepHarness harness;
  int64_t f = harness.f32(std::vector<float>(3)),
          i = harness.i32(std::vector<int32_t>(3));
  harness.run({{"op", "fill"}, {"out", f}, {"value", 0.5}});
  EXPECT_EQ(harness.readF32(f), (std::vector<float>{0.5f, 0.5f, 0.5f}));
  harness.run({{"op", "fill"}, {"out", i}, {"value", -4}});
  EXPECT_EQ(harness.readI32(i), (std::vector<int32_t>{-4, -4, -4}));
  StepHarness copier;
  int64_t src = copier.f32({1, 2, 3}), dst = copier.f32({0, 0, 0});
  copier.run({{"op", "copy"}, {"in", src}, {"out", dst}});
  EXPECT_EQ(copier.readF32(dst), (std::vector<float>{1, 2, 3}));
}

TEST(KernelsTest, Cast) {
  StepHarness harness;
  int64_t f = harness.f32({1.9f, -1.9f, 3e9f, -3e9f, NAN, 0.0f});
  int64_t i = harness.i32(std::vector<int32_t>(6));
  harness.run(
      {{"op", "cast"}, {"in", f}, {"out", i}, {"from", "f32"}, {"to", "i32"}});
  EXPECT_EQ(harness.readI32(i),
            (std::vector<int32_t>{1, -1, INT32_MAX, INT32_MIN, 0, 0}));
  StepHarness back;
  int64_t ints = back.i32({-3, 7}), floats = back.f32({0, 0});
  back.run({{"op", "cast"},
            {"in", ints},
            {"out", floats},
            {"from", "i32"},
            {"to", "f32"}});
  EXPECT_EQ(back.readF32(floats), (std::vector<float>{-3.0f, 7.0f}));
}

TEST(KernelsTest, CastRoundsToBf16AndF16TiesToEven) {
  // 1 + 2^-8 lies halfway between two bf16 values: it goes to the even one
  // (1); 1 + 3 * 2^-8 goes up to 1 + 2^-6; NaN stays NaN; 3.4e38 rounds up
  // to infinity.
  float half8 = 1.0f / 256;
  StepHarness harness;
  int64_t f = harness.f32({1 + half8, 1 + 3 * half8, -2.5f, NAN, 3.4e38f});
  int64_t b = harness.half("bf16", {0, 0, 0, 0, 0});
  harness.run(
      {{"op", "cast"}, {"in", f}, {"out", b}, {"from", "f32"}, {"to", "bf16"}});
  std::vector<float> got = harness.readHalf(b);
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], 1.0f + 4 * half8);
  EXPECT_EQ(got[2], -2.5f);
  EXPECT_TRUE(std::isnan(got[3]));
  EXPECT_TRUE(std::isinf(got[4]));
  // f16: 1 + 2^-11 is halfway (to 1), 1e-6 is subnormal, 7e4 overflows.
  StepHarness f16;
  int64_t x = f16.f32({1 + 1.0f / 2048, 1e-6f, 7e4f, -0.0f});
  int64_t h = f16.half("f16", {0, 0, 0, 0});
  f16.run(
      {{"op", "cast"}, {"in", x}, {"out", h}, {"from", "f32"}, {"to", "f16"}});
  std::vector<float> hs = f16.readHalf(h);
  EXPECT_EQ(hs[0], 1.0f);
  EXPECT_NEAR(hs[1], 1e-6f, 3e-8f);
  EXPECT_NE(hs[1], 1e-6f);
  EXPECT_TRUE(std::isinf(hs[2]));
  EXPECT_TRUE(std::signbit(hs[3]));
  // bf16 -> f16 goes through f32; i32 -> bf16 rounds the integer.
  StepHarness chain;
  int64_t from = chain.half("bf16", {1.5f, -3.0f});
  int64_t to = chain.half("f16", {0, 0});
  chain.run({{"op", "cast"},
             {"in", from},
             {"out", to},
             {"from", "bf16"},
             {"to", "f16"}});
  EXPECT_EQ(chain.readHalf(to), (std::vector<float>{1.5f, -3.0f}));
  StepHarness ints;
  int64_t i = ints.i32({257, -3});
  int64_t r = ints.half("bf16", {0, 0});
  ints.run(
      {{"op", "cast"}, {"in", i}, {"out", r}, {"from", "i32"}, {"to", "bf16"}});
  EXPECT_EQ(ints.readHalf(r), (std::vector<float>{256.0f, -3.0f}));
}

TEST(KernelsTest, Bf16OperandsAreWidenedAndResultsRounded) {
  // Multiples of 1/8 below 16: exact in bf16, and so are their products and
  // sums in f32, so the einsum's result is exact before its rounding.
  std::vector<float> a, w;
  for (int k = 0; k < 12; ++k)
    a.push_back(static_cast<float>(k % 7 - 3) / 8);
  for (int k = 0; k < 8; ++k)
    w.push_back(static_cast<float>(k % 5 + 1) / 4);
  StepHarness harness;
  int64_t ab = harness.half("bf16", a), wb = harness.half("bf16", w);
  int64_t out = harness.half("bf16", std::vector<float>(6));
  harness.run({{"op", "einsum"},
               {"in", {operand(ab, {"b", "k"}), operand(wb, {"k", "h"})}},
               {"out", operand(out, {"b", "h"})},
               {"sizes", {{"b", 3}, {"k", 4}, {"h", 2}}}});
  std::vector<float> want;
  for (int b = 0; b < 3; ++b)
    for (int h = 0; h < 2; ++h) {
      float sum = 0;
      for (int k = 0; k < 4; ++k)
        sum += a[b * 4 + k] * w[k * 2 + h];
      want.push_back(meshc::half::roundToBf16(sum));
    }
  EXPECT_EQ(harness.readHalf(out), want);
  // In place: a unary step reads and writes one bf16 buffer.
  StepHarness unary;
  int64_t x = unary.half("bf16", {1.0f, -2.0f, 3.0f});
  unary.run({{"op", "unary"}, {"fn", "exp"}, {"in", x}, {"out", x}});
  std::vector<float> e = unary.readHalf(x);
  for (int k = 0; k < 3; ++k)
    EXPECT_EQ(e[k], meshc::half::roundToBf16(
                        std::exp(std::vector<float>{1.0f, -2.0f, 3.0f}[k])));
  // Fill writes the rounded value.
  StepHarness fill;
  int64_t f = fill.half("f16", {0, 0});
  fill.run({{"op", "fill"}, {"out", f}, {"value", 0.1}});
  EXPECT_EQ(fill.readHalf(f),
            std::vector<float>(2, meshc::half::roundToF16(0.1f)));
}

struct BinaryCase {
  const char *fn;
  std::function<double(double, double)> reference;
};

/// How gtest prints a case (in test listings and failures).
void PrintTo(const BinaryCase &c, std::ostream *os) { *os << c.fn; }

class BinaryTest : public ::testing::TestWithParam<BinaryCase> {};

/// out[b, h] = fn(lhs[h, b], rhs[h]): a permuted lhs and a broadcast rhs.
TEST_P(BinaryTest, BroadcastsByName) {
  const int64_t B = 3, H = 5;
  std::vector<float> lhs = testData("lhs", B * H), rhs = testData("rhs", H);
  for (float &v : rhs)
    v += 3.0f; // keep div away from zero
  StepHarness harness;
  int64_t l = harness.f32(lhs), r = harness.f32(rhs),
          out = harness.f32(std::vector<float>(B * H));
  harness.run({{"op", "binary"},
               {"fn", GetParam().fn},
               {"lhs", operand(l, {"h", "b"})},
               {"rhs", operand(r, {"h"})},
               {"out", operand(out, {"b", "h"})},
               {"sizes", {{"b", B}, {"h", H}}}});
  std::vector<double> expected;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      expected.push_back(GetParam().reference(lhs[h * B + b], rhs[h]));
  expectNear(harness.readF32(out), expected);
}

INSTANTIATE_TEST_SUITE_P(
    Functions, BinaryTest,
    ::testing::Values(
        BinaryCase{"add", [](double x, double y) { return x + y; }},
        BinaryCase{"sub", [](double x, double y) { return x - y; }},
        BinaryCase{"mul", [](double x, double y) { return x * y; }},
        BinaryCase{"div", [](double x, double y) { return x / y; }},
        BinaryCase{"max", [](double x, double y) { return std::max(x, y); }},
        BinaryCase{"min", [](double x, double y) { return std::min(x, y); }}),
    [](const ::testing::TestParamInfo<BinaryCase> &info) {
      return std::string(info.param.fn);
    });

TEST(KernelsTest, EqComparesF32AndI32WithBroadcasting) {
  // out[a, b] = (lhs[b] == rhs[a]).
  json sizes = {{"a", 2}, {"b", 3}};
  StepHarness floats;
  int64_t l = floats.f32({1.0f, 2.0f, NAN}), r = floats.f32({2.0f, NAN}),
          out = floats.f32(std::vector<float>(6));
  json step = {{"op", "binary"},
               {"fn", "eq"},
               {"lhs", operand(l, {"b"})},
               {"rhs", operand(r, {"a"})},
               {"out", operand(out, {"a", "b"})},
               {"sizes", sizes}};
  floats.run(step);
  EXPECT_EQ(floats.readF32(out), (std::vector<float>{0, 1, 0, 0, 0, 0}));
  StepHarness ints;
  l = ints.i32({7, -1, 3});
  r = ints.i32({3, 7});
  out = ints.f32(std::vector<float>(6));
  ints.run(step);
  EXPECT_EQ(ints.readF32(out), (std::vector<float>{0, 0, 1, 1, 0, 0}));
}

TEST(KernelsTest, LtComparesF32AndI32WithBroadcasting) {
  // out[a, b] = (lhs[b] < rhs[a]).
  json step = {{"op", "binary"},
               {"fn", "lt"},
               {"lhs", operand(0, {"b"})},
               {"rhs", operand(1, {"a"})},
               {"out", operand(2, {"a", "b"})},
               {"sizes", {{"a", 2}, {"b", 3}}}};
  StepHarness floats;
  floats.f32({1.0f, 2.0f, NAN});
  floats.f32({2.0f, 0.5f});
  floats.f32(std::vector<float>(6));
  floats.run(step);
  EXPECT_EQ(floats.readF32(2), (std::vector<float>{1, 0, 0, 0, 0, 0}));
  StepHarness ints;
  ints.i32({7, -1, 3});
  ints.i32({3, 8});
  ints.f32(std::vector<float>(6));
  ints.run(step);
  EXPECT_EQ(ints.readF32(2), (std::vector<float>{0, 1, 0, 1, 1, 1}));
}

TEST(KernelsTest, RangeCountsInF32AndI32) {
  StepHarness harness;
  int64_t f = harness.f32(std::vector<float>(4)),
          i = harness.i32(std::vector<int32_t>(3));
  harness.run(
      {{"op", "range"}, {"out", operand(f, {"s"})}, {"sizes", {{"s", 4}}}});
  harness.run(
      {{"op", "range"}, {"out", operand(i, {"t"})}, {"sizes", {{"t", 3}}}});
  EXPECT_EQ(harness.readF32(f), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(harness.readI32(i), (std::vector<int32_t>{0, 1, 2}));
}

TEST(KernelsTest, CumsumBothWaysIntoPermutedOut) {
  // in[a, s] = rows {1, 2, 3} and {10, 20, 30}; out[s, a].
  StepHarness harness;
  int64_t in = harness.f32({1, 2, 3, 10, 20, 30}),
          out = harness.f32(std::vector<float>(6));
  json step = {{"op", "cumsum"},
               {"in", operand(in, {"a", "s"})},
               {"out", operand(out, {"s", "a"})},
               {"dim", "s"},
               {"sizes", {{"a", 2}, {"s", 3}}}};
  harness.run(step);
  EXPECT_EQ(harness.readF32(out), (std::vector<float>{1, 10, 3, 30, 6, 60}));
  step["reverse"] = true;
  harness.run(step);
  EXPECT_EQ(harness.readF32(out), (std::vector<float>{6, 60, 5, 50, 3, 30}));
}

TEST(KernelsTest, TopKMarksTheLargestFirstOfTiesNeverNaN) {
  // in[a, e]: {3, 1, 3, 2} and {NaN, 5, -1, 5}; out[e, a], k = 2.
  StepHarness harness;
  int64_t in = harness.f32({3, 1, 3, 2, NAN, 5, -1, 5}),
          out = harness.f32(std::vector<float>(8));
  harness.run({{"op", "top_k"},
               {"in", operand(in, {"a", "e"})},
               {"out", operand(out, {"e", "a"})},
               {"dim", "e"},
               {"k", 2},
               {"sizes", {{"a", 2}, {"e", 4}}}});
  EXPECT_EQ(harness.readF32(out), (std::vector<float>{1, 0, 0, 1, 1, 0, 0, 1}));
}

TEST(KernelsTest, WindowSlicesPadsAndShifts) {
  // in[a, s] = {1, 2, 3, 4}, {5, 6, 7, 8}.
  StepHarness harness;
  int64_t in = harness.f32({1, 2, 3, 4, 5, 6, 7, 8}),
          half = harness.f32(std::vector<float>(4)),
          wide = harness.f32(std::vector<float>(12)),
          same = harness.f32(std::vector<float>(8));
  auto window = [&](int64_t out, const char *to, int64_t size, int64_t offset) {
    harness.run({{"op", "window"},
                 {"in", operand(in, {"a", "s"})},
                 {"out", operand(out, {to, "a"})},
                 {"from", "s"},
                 {"to", to},
                 {"offset", offset},
                 {"sizes", {{"a", 2}, {"s", 4}, {to, size}}}});
  };
  window(half, "h", 2, 1); // slice [1, 3)
  EXPECT_EQ(harness.readF32(half), (std::vector<float>{2, 6, 3, 7}));
  window(wide, "w", 6, -1); // one zero before, one after
  EXPECT_EQ(harness.readF32(wide),
            (std::vector<float>{0, 0, 1, 5, 2, 6, 3, 7, 4, 8, 0, 0}));
  harness.run({{"op", "window"},
               {"in", operand(in, {"a", "s"})},
               {"out", operand(same, {"a", "s"})},
               {"from", "s"},
               {"to", "s"},
               {"offset", -2},
               {"sizes", {{"a", 2}, {"s", 4}}}});
  EXPECT_EQ(harness.readF32(same),
            (std::vector<float>{0, 0, 1, 2, 0, 0, 5, 6}));
}

TEST(KernelsTest, OneHotIntoPermutedOut) {
  // out[classes, batch] = (in[batch] == classes).
  StepHarness harness;
  int64_t in = harness.i32({2, 0, 3}),
          out = harness.f32(std::vector<float>(12));
  harness.run({{"op", "one_hot"},
               {"in", operand(in, {"batch"})},
               {"out", operand(out, {"classes", "batch"})},
               {"dim", "classes"},
               {"sizes", {{"batch", 3}, {"classes", 4}}}});
  EXPECT_EQ(harness.readF32(out), (std::vector<float>{0, 1, 0, //
                                                      0, 0, 0, //
                                                      1, 0, 0, //
                                                      0, 0, 1}));
}

TEST(KernelsTest, OneHotRejectsIndexOutOfRange) {
  for (int32_t bad : {4, -1}) {
    StepHarness harness;
    int64_t in = harness.i32({1, bad}),
            out = harness.f32(std::vector<float>(8));
    try {
      harness.run({{"op", "one_hot"},
                   {"in", operand(in, {"batch"})},
                   {"out", operand(out, {"batch", "classes"})},
                   {"dim", "classes"},
                   {"sizes", {{"batch", 2}, {"classes", 4}}}});
      FAIL() << "expected a RuntimeError";
    } catch (const RuntimeError &error) {
      EXPECT_EQ(error.what(), "index " + std::to_string(bad) +
                                  " (in element 1) is outside [0, 4)");
    }
  }
}

TEST(KernelsTest, OneHotBuildsOneBlockOfSplitClasses) {
  // Classes [4, 8) of 8: index 5 is column 1 of the block, 2 is in another
  // block (a zero row here), 7 is the last column.
  std::vector<int32_t> in = {5, 2, 7};
  std::vector<float> out(12, -1.0f);
  NamedShape inShape{{"batch"}, {3}}, outShape{{"batch", "classes"}, {3, 4}};
  oneHotKernel(in.data(), inShape, out.data(), outShape, "classes", 4, 8);
  EXPECT_EQ(out, std::vector<float>({0, 1, 0, 0, //
                                     0, 0, 0, 0, //
                                     0, 0, 0, 1}));
  // The range check is against all 8 classes, not the block.
  in = {5, 8, 0};
  try {
    oneHotKernel(in.data(), inShape, out.data(), outShape, "classes", 4, 8);
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(), "index 8 (in element 1) is outside [0, 8)");
  }
}

TEST(KernelsTest, ArgmaxTakesTheFirstMaximumAndSkipsNaN) {
  // in[classes, batch]; out[batch].
  StepHarness harness;
  std::vector<float> x = {1, NAN, NAN, 5, //
                          3, 2,   NAN, 5, //
                          3, 7,   NAN, 1};
  int64_t in = harness.f32(x), out = harness.i32(std::vector<int32_t>(4, -9));
  harness.run({{"op", "argmax"},
               {"in", operand(in, {"classes", "batch"})},
               {"out", operand(out, {"batch"})},
               {"dim", "classes"},
               {"sizes", {{"batch", 4}, {"classes", 3}}}});
  EXPECT_EQ(harness.readI32(out), (std::vector<int32_t>{1, 2, 0, 0}));
}

TEST(KernelsTest, LogSumExpOfEachRowIsStable) {
  // in[classes, batch]; out[batch]. Column 1 would overflow exp unshifted.
  StepHarness harness;
  std::vector<float> x = {0, 1000, -1, std::log(2.0f), //
                          0, 1000, -1, 0,              //
                          0, 1000, -1, -INFINITY};
  int64_t in = harness.f32(x), out = harness.f32(std::vector<float>(4, -9));
  harness.run({{"op", "logsumexp"},
               {"in", operand(in, {"classes", "batch"})},
               {"out", operand(out, {"batch"})},
               {"dim", "classes"},
               {"sizes", {{"batch", 4}, {"classes", 3}}}});
  std::vector<float> got = harness.readF32(out);
  const float log3 = std::log(3.0f);
  EXPECT_NEAR(got[0], log3, 1e-6);
  EXPECT_NEAR(got[1], 1000.0f + log3, 1e-3);
  EXPECT_NEAR(got[2], -1.0f + log3, 1e-6);
  EXPECT_NEAR(got[3], std::log(3.0f), 1e-6); // log(2 + 1 + 0)
}

TEST(KernelsTest, DropoutMatchesTheGeneratorAndKeepsAllInEval) {
  const int64_t A = 5, C = 40;
  const double rate = 0.25;
  StepHarness harness;
  int64_t out = harness.f32(std::vector<float>(A * C));
  json step = {
      {"op", "dropout"},
      {"out", operand(out, {"a", "c"})},
      {"sizes", {{"a", A}, {"c", C}}},
      {"name", "drop0"},
      {"rate", rate},
      {"dims", {{{"name", "a"}, {"size", A}}, {{"name", "c"}, {"size", C}}}}};
  harness.run(step, {7, 3, false});
  std::vector<float> got = harness.readF32(out);
  int64_t dropped = 0;
  for (int64_t i = 0; i < A * C; ++i) {
    float expected = static_cast<float>(dropoutScale(7, "drop0", 3, i, rate));
    ASSERT_EQ(got[i], expected) << "element " << i;
    ASSERT_TRUE(got[i] == 0.0f || got[i] == static_cast<float>(1 / 0.75));
    dropped += got[i] == 0.0f;
  }
  EXPECT_GT(dropped, 20);
  EXPECT_LT(dropped, 80);
  harness.run(step, {7, 4, false});
  EXPECT_NE(harness.readF32(out), got) << "the mask must change per run";
  harness.run(step, {7, 3, true});
  EXPECT_EQ(harness.readF32(out), std::vector<float>(A * C, 1.0f));
}

TEST(KernelsTest, BinaryBothOperandsBroadcastAndInPlace) {
  // out[a, b] = lhs[b] + rhs[a]; then x[a, b] *= x[a, b] in place.
  StepHarness harness;
  int64_t l = harness.f32({1, 2, 3}), r = harness.f32({10, 20}),
          out = harness.f32(std::vector<float>(6));
  json sizes = {{"a", 2}, {"b", 3}};
  harness.run({{"op", "binary"},
               {"fn", "add"},
               {"lhs", operand(l, {"b"})},
               {"rhs", operand(r, {"a"})},
               {"out", operand(out, {"a", "b"})},
               {"sizes", sizes}});
  EXPECT_EQ(harness.readF32(out), (std::vector<float>{11, 12, 13, 21, 22, 23}));
  StepHarness inPlace;
  int64_t x = inPlace.f32({1, 2, 3, 4, 5, 6});
  inPlace.run({{"op", "binary"},
               {"fn", "mul"},
               {"lhs", operand(x, {"a", "b"})},
               {"rhs", operand(x, {"a", "b"})},
               {"out", operand(x, {"a", "b"})},
               {"sizes", sizes}});
  EXPECT_EQ(inPlace.readF32(x), (std::vector<float>{1, 4, 9, 16, 25, 36}));
}

TEST(KernelsTest, ReduceSumAndMaxToPermutedDims) {
  const int64_t A = 3, B = 4, C = 5;
  std::vector<float> x = testData("x", A * B * C);
  for (const char *fn : {"sum", "max"}) {
    StepHarness harness;
    int64_t in = harness.f32(x), out = harness.f32(std::vector<float>(C * A));
    harness.run({{"op", "reduce"},
                 {"fn", fn},
                 {"in", operand(in, {"a", "b", "c"})},
                 {"out", operand(out, {"c", "a"})},
                 {"sizes", {{"a", A}, {"b", B}, {"c", C}}}});
    std::vector<double> expected;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t a = 0; a < A; ++a) {
        double acc = std::string(fn) == "sum" ? 0.0 : -INFINITY;
        for (int64_t b = 0; b < B; ++b) {
          double v = x[(a * B + b) * C + c];
          acc = std::string(fn) == "sum" ? acc + v : std::max(acc, v);
        }
        expected.push_back(acc);
      }
    SCOPED_TRACE(fn);
    expectNear(harness.readF32(out), expected);
  }
}

TEST(KernelsTest, ReduceToScalar) {
  StepHarness harness;
  int64_t in = harness.f32({1, 2, 3, 4}), out = harness.f32({0});
  harness.run({{"op", "reduce"},
               {"fn", "sum"},
               {"in", operand(in, {"a"})},
               {"out", operand(out, {})},
               {"sizes", {{"a", 4}}}});
  EXPECT_EQ(harness.readF32(out), (std::vector<float>{10}));
}

/// Softmax along the middle dim c of [a, c, b], written as [b, a, c].
TEST(KernelsTest, SoftmaxAlongMiddleDimIntoPermutedOut) {
  const int64_t A = 2, C = 6, B = 3;
  std::vector<float> x = testData("x", A * C * B);
  x[0] = 80.0f; // exp would overflow without the max shift
  StepHarness harness;
  int64_t in = harness.f32(x), out = harness.f32(std::vector<float>(A * C * B));
  harness.run({{"op", "softmax"},
               {"in", operand(in, {"a", "c", "b"})},
               {"out", operand(out, {"b", "a", "c"})},
               {"dim", "c"},
               {"sizes", {{"a", A}, {"b", B}, {"c", C}}}});
  std::vector<double> expected;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t a = 0; a < A; ++a) {
      double top = -INFINITY, total = 0;
      for (int64_t c = 0; c < C; ++c)
        top = std::max(top, double(x[(a * C + c) * B + b]));
      for (int64_t c = 0; c < C; ++c)
        total += std::exp(x[(a * C + c) * B + b] - top);
      for (int64_t c = 0; c < C; ++c)
        expected.push_back(std::exp(x[(a * C + c) * B + b] - top) / total);
    }
  expectNear(harness.readF32(out), expected);
}

TEST(KernelsTest, SoftmaxCrossEntropy) {
  const int64_t N = 4, K = 5;
  std::vector<float> logits = testData("logits", K * N);
  std::vector<int32_t> labels = {0, 4, 2, 1};
  StepHarness harness;
  int64_t l = harness.f32(logits), y = harness.i32(labels),
          out = harness.f32(std::vector<float>(N));
  harness.run({{"op", "softmax_cross_entropy"},
               {"logits", operand(l, {"classes", "batch"})},
               {"labels", operand(y, {"batch"})},
               {"out", operand(out, {"batch"})},
               {"dim", "classes"},
               {"sizes", {{"batch", N}, {"classes", K}}}});
  std::vector<double> expected;
  for (int64_t n = 0; n < N; ++n) {
    double total = 0;
    for (int64_t k = 0; k < K; ++k)
      total += std::exp(double(logits[k * N + n]));
    expected.push_back(std::log(total) - logits[labels[n] * N + n]);
  }
  expectNear(harness.readF32(out), expected);
}

TEST(KernelsTest, CrossEntropyRejectsLabelOutOfRange) {
  StepHarness harness;
  int64_t l = harness.f32(std::vector<float>(6)), y = harness.i32({1, 3}),
          out = harness.f32(std::vector<float>(2));
  json step = {{"op", "softmax_cross_entropy"},
               {"logits", operand(l, {"batch", "classes"})},
               {"labels", operand(y, {"batch"})},
               {"out", operand(out, {"batch"})},
               {"dim", "classes"},
               {"sizes", {{"batch", 2}, {"classes", 3}}}};
  try {
    harness.run(step);
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(), "label 3 (labels element 1) is outside [0, 3)");
  }
}

} // namespace
