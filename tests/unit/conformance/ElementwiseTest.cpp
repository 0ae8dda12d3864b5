//===- ElementwiseTest.cpp - Element-wise steps against formulas ----------===//
//
// fill, copy, cast, unary, binary, range, one_hot, dropout, window, cumsum
// and top_k on the backend under test, in every dtype each takes, against
// a formula in double or a hand-worked result: unary functions, rounding to
// bf16 and f16 (ties to even, NaN, overflow), broadcasting binary ops
// (operands permuted or missing dims, in place), comparisons of f32, i32
// and bf16, windows that slice, pad and shift, the dropout generator, and
// the label and index errors' exact texts.
//
//===----------------------------------------------------------------------===//

#include "Conformance.h"
#include "Formulas.h"

#include "runtime/Error.h"
#include "runtime/core/Random.h"

#include <cmath>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;
using nlohmann::json;

namespace {

TEST_P(Conformance, Unary_EveryFunctionInEveryFloatType) {
  ASSERT_EQ(functionWithoutFormula(), "");
  for (const auto &[fn, formula] : unaryFormulas())
    for (const std::string &dtype : kFloatTypes) {
      SCOPED_TRACE(fn + " " + dtype);
      std::vector<float> x = testData("x", 1001);
      if (positiveDomain(fn))
        for (float &v : x)
          v = std::abs(v) + 0.1f;
      x = roundedTo(dtype, x);
      StepHarness h = steps();
      int64_t in = h.floats(dtype, x),
              out = h.floats(dtype, std::vector<float>(x.size()));
      h.run({{"op", "unary"},
             {"fn", fn},
             {"in", in},
             {"out", out},
             {"value", 2.5}});
      std::vector<double> want;
      for (float v : x)
        want.push_back(formula(v));
      expectNear(h.readFloats(out), want, storedTolerance(dtype));
    }
}

TEST_P(Conformance, Unary_PositiveAndGeluGradAtEdges) {
  StepHarness h = steps();
  std::vector<float> x = {NAN, 0.0f, -0.0f, 1e-30f, -5.0f, 30.0f, -30.0f};
  int64_t in = h.f32(x), pos = h.f32(std::vector<float>(7)),
          grad = h.f32(std::vector<float>(7));
  h.run({{"op", "unary"}, {"fn", "positive"}, {"in", in}, {"out", pos}});
  EXPECT_EQ(h.readF32(pos), (std::vector<float>{0, 0, 0, 1, 0, 1, 0}));
  h.run({{"op", "unary"}, {"fn", "gelu_grad"}, {"in", in}, {"out", grad}});
  std::vector<float> g = h.readF32(grad);
  EXPECT_FLOAT_EQ(g[1], 0.5f); // gelu'(0) = 1/2
  EXPECT_FLOAT_EQ(g[5], 1.0f); // gelu(x) ~ x for large x
  EXPECT_FLOAT_EQ(g[6], 0.0f); // and ~ 0 for very negative x
}

TEST_P(Conformance, Unary_InPlaceInEveryFloatType) {
  for (const std::string &dtype : kFloatTypes) {
    SCOPED_TRACE(dtype);
    StepHarness h = steps();
    int64_t buf = h.floats(dtype, {-1.0f, 2.0f, 3.0f});
    h.run({{"op", "unary"}, {"fn", "relu"}, {"in", buf}, {"out", buf}});
    EXPECT_EQ(h.readFloats(buf), (std::vector<float>{0.0f, 2.0f, 3.0f}));
    h.run({{"op", "unary"}, {"fn", "exp"}, {"in", buf}, {"out", buf}});
    std::vector<float> want =
        roundedTo(dtype, {1.0f, std::exp(2.0f), std::exp(3.0f)});
    expectNear(h.readFloats(buf), {want[0], want[1], want[2]},
               storedTolerance(dtype));
  }
}

TEST_P(Conformance, Fill_EveryDtypeWritesTheRoundedValue) {
  StepHarness h = steps();
  int64_t f = h.f32(std::vector<float>(3)), i = h.i32(std::vector<int32_t>(3)),
          b = h.half("bf16", std::vector<float>(2)),
          g = h.half("f16", std::vector<float>(2));
  h.run({{"op", "fill"}, {"out", f}, {"value", 0.5}});
  h.run({{"op", "fill"}, {"out", i}, {"value", -4}});
  h.run({{"op", "fill"}, {"out", b}, {"value", 0.1}});
  h.run({{"op", "fill"}, {"out", g}, {"value", 0.1}});
  EXPECT_EQ(h.readF32(f), (std::vector<float>{0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(h.readI32(i), (std::vector<int32_t>{-4, -4, -4}));
  EXPECT_EQ(h.readHalf(b), std::vector<float>(2, roundedTo("bf16", {0.1f})[0]));
  EXPECT_EQ(h.readHalf(g), std::vector<float>(2, roundedTo("f16", {0.1f})[0]));
}

TEST_P(Conformance, Copy_EveryDtypeBitForBit) {
  std::vector<float> x = testData("s", 77);
  for (std::string dtype : {"f32", "i32", "bf16", "f16"}) {
    SCOPED_TRACE(dtype);
    StepHarness h = steps();
    int64_t src, dst;
    if (dtype == "i32") {
      std::vector<int32_t> ints;
      for (float v : x)
        ints.push_back(static_cast<int32_t>(v * 1000));
      src = h.i32(ints);
      dst = h.i32(std::vector<int32_t>(77));
      h.run({{"op", "copy"}, {"in", src}, {"out", dst}});
      EXPECT_EQ(h.readI32(dst), ints);
      continue;
    }
    src = h.floats(dtype, x);
    dst = h.floats(dtype, std::vector<float>(77));
    h.run({{"op", "copy"}, {"in", src}, {"out", dst}});
    EXPECT_EQ(h.readFloats(dst), roundedTo(dtype, x));
  }
}

json cast(int64_t in, int64_t out, const char *from, const char *to) {
  return {{"op", "cast"}, {"in", in}, {"out", out}, {"from", from}, {"to", to}};
}

TEST_P(Conformance, Cast_F32AndI32BothWays) {
  StepHarness h = steps();
  int64_t f = h.f32({1.9f, -1.9f, 3e9f, -3e9f, NAN, 0.0f});
  int64_t i = h.i32(std::vector<int32_t>(6));
  h.run(cast(f, i, "f32", "i32"));
  EXPECT_EQ(h.readI32(i),
            (std::vector<int32_t>{1, -1, INT32_MAX, INT32_MIN, 0, 0}));
  int64_t ints = h.i32({-3, 7, 1 << 30}), floats = h.f32({0, 0, 0});
  h.run(cast(ints, floats, "i32", "f32"));
  EXPECT_EQ(h.readF32(floats), (std::vector<float>{-3.0f, 7.0f, 1 << 30}));
}

TEST_P(Conformance, Cast_RoundsToBf16AndF16TiesToEven) {
  // 1 + 2^-8 lies halfway between two bf16 values: it goes to the even one
  // (1); 1 + 3 * 2^-8 goes up to 1 + 2^-6; NaN stays NaN; 3.4e38 rounds up
  // to infinity.
  float half8 = 1.0f / 256;
  StepHarness h = steps();
  int64_t f = h.f32({1 + half8, 1 + 3 * half8, -2.5f, NAN, 3.4e38f});
  int64_t b = h.half("bf16", {0, 0, 0, 0, 0});
  h.run(cast(f, b, "f32", "bf16"));
  std::vector<float> got = h.readHalf(b);
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], 1.0f + 4 * half8);
  EXPECT_EQ(got[2], -2.5f);
  EXPECT_TRUE(std::isnan(got[3]));
  EXPECT_TRUE(std::isinf(got[4]));
  // f16: 1 + 2^-11 is halfway (to 1), 1e-6 is subnormal, 7e4 overflows.
  int64_t x = h.f32({1 + 1.0f / 2048, 1e-6f, 7e4f, -0.0f});
  int64_t g = h.half("f16", {0, 0, 0, 0});
  h.run(cast(x, g, "f32", "f16"));
  std::vector<float> hs = h.readHalf(g);
  EXPECT_EQ(hs[0], 1.0f);
  EXPECT_NEAR(hs[1], 1e-6f, 3e-8f);
  EXPECT_NE(hs[1], 1e-6f);
  EXPECT_TRUE(std::isinf(hs[2]));
  EXPECT_TRUE(std::signbit(hs[3]));
  // bf16 -> f16 goes through f32; i32 -> bf16 rounds the integer; bf16 ->
  // f32 and -> i32 are exact here.
  int64_t from = h.half("bf16", {1.5f, -3.0f}), to = h.half("f16", {0, 0});
  h.run(cast(from, to, "bf16", "f16"));
  EXPECT_EQ(h.readHalf(to), (std::vector<float>{1.5f, -3.0f}));
  int64_t i = h.i32({257, -3}), r = h.half("bf16", {0, 0});
  h.run(cast(i, r, "i32", "bf16"));
  EXPECT_EQ(h.readHalf(r), (std::vector<float>{256.0f, -3.0f}));
  int64_t wide = h.f32({0, 0}), whole = h.i32({0, 0});
  h.run(cast(from, wide, "bf16", "f32"));
  h.run(cast(from, whole, "bf16", "i32"));
  EXPECT_EQ(h.readF32(wide), (std::vector<float>{1.5f, -3.0f}));
  EXPECT_EQ(h.readI32(whole), (std::vector<int32_t>{1, -3}));
}

/// out[b, h] = fn(lhs[h, b], rhs[h]): a permuted lhs and a broadcast rhs.
TEST_P(Conformance, Binary_BroadcastsByNameInEveryFloatType) {
  const int64_t B = 37, H = 5;
  for (const auto &[fn, formula] : binaryFormulas())
    for (const std::string &dtype : kFloatTypes) {
      SCOPED_TRACE(fn + " " + dtype);
      std::vector<float> lhs = roundedTo(dtype, testData("lhs", B * H)),
                         rhs = testData("rhs", H);
      for (float &v : rhs)
        v += 3.0f; // keep div away from zero
      rhs = roundedTo(dtype, rhs);
      StepHarness h = steps();
      int64_t l = h.floats(dtype, lhs), r = h.floats(dtype, rhs),
              out = h.floats(dtype, std::vector<float>(B * H));
      h.run({{"op", "binary"},
             {"fn", fn},
             {"lhs", operand(l, {"h", "b"})},
             {"rhs", operand(r, {"h"})},
             {"out", operand(out, {"b", "h"})},
             {"sizes", {{"b", B}, {"h", H}}}});
      std::vector<double> want;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t k = 0; k < H; ++k)
          want.push_back(formula(lhs[k * B + b], rhs[k]));
      expectNear(h.readFloats(out), want, storedTolerance(dtype));
    }
}

TEST_P(Conformance, Binary_BothOperandsBroadcastAndInPlace) {
  // out[a, b] = lhs[b] + rhs[a]; then x[a, b] *= x[a, b] in place.
  StepHarness h = steps();
  int64_t l = h.f32({1, 2, 3}), r = h.f32({10, 20}),
          out = h.f32(std::vector<float>(6));
  json sizes = {{"a", 2}, {"b", 3}};
  h.run({{"op", "binary"},
         {"fn", "add"},
         {"lhs", operand(l, {"b"})},
         {"rhs", operand(r, {"a"})},
         {"out", operand(out, {"a", "b"})},
         {"sizes", sizes}});
  EXPECT_EQ(h.readF32(out), (std::vector<float>{11, 12, 13, 21, 22, 23}));
  int64_t x = h.f32({1, 2, 3, 4, 5, 6});
  h.run({{"op", "binary"},
         {"fn", "mul"},
         {"lhs", operand(x, {"a", "b"})},
         {"rhs", operand(x, {"a", "b"})},
         {"out", operand(x, {"a", "b"})},
         {"sizes", sizes}});
  EXPECT_EQ(h.readF32(x), (std::vector<float>{1, 4, 9, 16, 25, 36}));
}

/// out[a, b] = fn(lhs[b], rhs[a]) for a comparison `fn` of operands of
/// `dtype` (f32, bf16 or i32): 1 or 0 in an f32 out.
std::vector<float> compare(StepHarness h, const char *fn,
                           const std::string &dtype,
                           const std::vector<float> &lhs,
                           const std::vector<float> &rhs) {
  auto declare = [&](const std::vector<float> &values) {
    if (dtype != "i32")
      return h.floats(dtype, values);
    return h.i32(std::vector<int32_t>(values.begin(), values.end()));
  };
  int64_t l = declare(lhs), r = declare(rhs),
          out = h.f32(std::vector<float>(6, 9));
  h.run({{"op", "binary"},
         {"fn", fn},
         {"lhs", operand(l, {"b"})},
         {"rhs", operand(r, {"a"})},
         {"out", operand(out, {"a", "b"})},
         {"sizes", {{"a", 2}, {"b", 3}}}});
  return h.readF32(out);
}

TEST_P(Conformance, Binary_EqAndLtCompareF32Bf16AndI32) {
  for (std::string dtype : {"f32", "bf16"}) {
    SCOPED_TRACE(dtype);
    EXPECT_EQ(compare(steps(), "eq", dtype, {1.0f, 2.0f, NAN}, {2.0f, NAN}),
              (std::vector<float>{0, 1, 0, 0, 0, 0}));
    EXPECT_EQ(compare(steps(), "lt", dtype, {1.0f, 2.0f, NAN}, {2.0f, 0.5f}),
              (std::vector<float>{1, 0, 0, 0, 0, 0}));
  }
  EXPECT_EQ(compare(steps(), "eq", "i32", {7, -1, 3}, {3, 7}),
            (std::vector<float>{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(compare(steps(), "lt", "i32", {7, -1, 3}, {3, 8}),
            (std::vector<float>{0, 1, 0, 1, 1, 1}));
}

TEST_P(Conformance, Range_CountsInEveryDtype) {
  StepHarness h = steps();
  int64_t f = h.f32(std::vector<float>(300)),
          i = h.i32(std::vector<int32_t>(3)),
          b = h.half("bf16", std::vector<float>(5));
  h.run({{"op", "range"}, {"out", operand(f, {"s"})}, {"sizes", {{"s", 300}}}});
  h.run({{"op", "range"}, {"out", operand(i, {"t"})}, {"sizes", {{"t", 3}}}});
  h.run({{"op", "range"}, {"out", operand(b, {"u"})}, {"sizes", {{"u", 5}}}});
  std::vector<float> counts(300);
  for (int k = 0; k < 300; ++k)
    counts[k] = float(k);
  EXPECT_EQ(h.readF32(f), counts);
  EXPECT_EQ(h.readI32(i), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(h.readHalf(b), (std::vector<float>{0, 1, 2, 3, 4}));
}

TEST_P(Conformance, OneHot_IntoPermutedOutInEveryFloatType) {
  // out[classes, batch] = (in[batch] == classes).
  for (const std::string &dtype : kFloatTypes) {
    SCOPED_TRACE(dtype);
    StepHarness h = steps();
    int64_t in = h.i32({2, 0, 3}),
            out = h.floats(dtype, std::vector<float>(12, 9));
    h.run({{"op", "one_hot"},
           {"in", operand(in, {"batch"})},
           {"out", operand(out, {"classes", "batch"})},
           {"dim", "classes"},
           {"sizes", {{"batch", 3}, {"classes", 4}}}});
    EXPECT_EQ(h.readFloats(out), (std::vector<float>{0, 1, 0, //
                                                     0, 0, 0, //
                                                     1, 0, 0, //
                                                     0, 0, 1}));
  }
}

TEST_P(Conformance, OneHot_RejectsIndexOutOfRange) {
  for (int32_t bad : {4, -1}) {
    StepHarness h = steps();
    int64_t in = h.i32({1, bad}), out = h.f32(std::vector<float>(8));
    try {
      h.run({{"op", "one_hot"},
             {"in", operand(in, {"batch"})},
             {"out", operand(out, {"batch", "classes"})},
             {"dim", "classes"},
             {"sizes", {{"batch", 2}, {"classes", 4}}}});
      ADD_FAILURE() << "expected a RuntimeError for index " << bad;
    } catch (const RuntimeError &error) {
      EXPECT_EQ(error.what(), "index " + std::to_string(bad) +
                                  " (in element 1) is outside [0, 4)");
    }
  }
}

/// one_hot of classes split over m on mesh b:2, m:2: each device builds its
/// block of the 8 classes (evenly, or 3 and 5), and the range check is
/// against all 8.
TEST_P(Conformance, OneHot_ABlockOfClassesSplitOverTheMesh) {
  for (bool even : {true, false}) {
    SCOPED_TRACE(even ? "even" : "unequal");
    std::vector<int64_t> blocks =
        even ? std::vector<int64_t>{4, 4} : std::vector<int64_t>{3, 5};
    MeshHarness h = mesh({{"b", 2}, {"m", 2}});
    int64_t in = h.buffer("i32", 3), out = h.buffer("f32", 15);
    for (int64_t d = 0; d < h.devices(); ++d)
      h.set(in, d, {5, 2, 7});
    json classes = {{"size", 8}, {"axes", {"m"}}};
    json own = 4;
    if (!even) {
      classes["blocks"] = blocks;
      own = {{"axes", {"m"}}, {"blocks", blocks}};
    }
    json step = {{"op", "one_hot"},
                 {"in", operand(in, {"batch"})},
                 {"out", operand(out, {"batch", "classes"})},
                 {"dim", "classes"},
                 {"classes", classes},
                 {"sizes", {{"batch", 3}, {"classes", own}}}};
    h.run(step);
    for (int64_t d = 0; d < h.devices(); ++d) {
      int64_t m = h.coordinate(d, "m");
      int64_t first = m == 0 ? 0 : blocks[0], count = blocks[size_t(m)];
      std::vector<float> want;
      for (int32_t index : {5, 2, 7})
        for (int64_t c = 0; c < count; ++c)
          want.push_back(index == first + c ? 1.0f : 0.0f);
      std::vector<float> got = h.get(out, d);
      got.resize(want.size());
      EXPECT_EQ(got, want) << "device " << d;
    }
    for (int64_t d = 0; d < h.devices(); ++d)
      h.set(in, d, {5, 8, 0});
    try {
      h.run(step);
      ADD_FAILURE() << "expected a RuntimeError";
    } catch (const RuntimeError &error) {
      EXPECT_STREQ(error.what(), "index 8 (in element 1) is outside [0, 8)");
    }
  }
}

TEST_P(Conformance, Dropout_MatchesTheGeneratorAndKeepsAllInEval) {
  const int64_t A = 5, C = 400;
  const double rate = 0.25;
  for (const std::string &dtype : kFloatTypes) {
    SCOPED_TRACE(dtype);
    StepHarness h = steps();
    int64_t out = h.floats(dtype, std::vector<float>(A * C));
    json step = {
        {"op", "dropout"},
        {"out", operand(out, {"a", "c"})},
        {"sizes", {{"a", A}, {"c", C}}},
        {"name", "drop0"},
        {"rate", rate},
        {"dims", {{{"name", "a"}, {"size", A}}, {{"name", "c"}, {"size", C}}}}};
    h.run(step, {7, 3, false});
    std::vector<float> got = h.readFloats(out);
    int64_t dropped = 0;
    for (int64_t i = 0; i < A * C; ++i) {
      float want = roundedTo(
          dtype, {static_cast<float>(dropoutScale(7, "drop0", 3, i, rate))})[0];
      ASSERT_EQ(got[i], want) << "element " << i;
      dropped += got[i] == 0.0f;
    }
    EXPECT_GT(dropped, 400);
    EXPECT_LT(dropped, 600);
    h.run(step, {7, 4, false});
    EXPECT_NE(h.readFloats(out), got) << "the mask must change per run";
    h.run(step, {7, 3, true});
    EXPECT_EQ(h.readFloats(out), std::vector<float>(A * C, 1.0f));
  }
}

/// dropout of global dims [a=4 over b, c=9 over m] on mesh b:2, m:3: each
/// device draws its block of the one global mask.
TEST_P(Conformance, Dropout_EachDeviceDrawsItsBlockOfTheGlobalMask) {
  const double rate = 0.5;
  MeshHarness h = mesh({{"b", 2}, {"m", 3}});
  int64_t out = h.buffer("f32", 6);
  h.run({{"op", "dropout"},
         {"out", operand(out, {"a", "c"})},
         {"sizes", {{"a", 2}, {"c", 3}}},
         {"name", "drop1"},
         {"rate", rate},
         {"dims",
          {{{"name", "a"}, {"size", 4}, {"axes", {"b"}}},
           {{"name", "c"}, {"size", 9}, {"axes", {"m"}}}}}});
  for (int64_t d = 0; d < h.devices(); ++d) {
    int64_t a0 = 2 * h.coordinate(d, "b"), c0 = 3 * h.coordinate(d, "m");
    std::vector<float> want;
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t c = 0; c < 3; ++c)
        want.push_back(static_cast<float>(
            dropoutScale(0, "drop1", 0, (a0 + a) * 9 + c0 + c, rate)));
    EXPECT_EQ(h.get(out, d), want) << "device " << d;
  }
}

TEST_P(Conformance, Window_SlicesPadsAndShifts) {
  // in[a, s] = {1, 2, 3, 4}, {5, 6, 7, 8}.
  StepHarness h = steps();
  int64_t in = h.f32({1, 2, 3, 4, 5, 6, 7, 8}),
          half = h.f32(std::vector<float>(4)),
          wide = h.f32(std::vector<float>(12)),
          same = h.f32(std::vector<float>(8));
  auto window = [&](int64_t out, const char *to, int64_t size, int64_t offset) {
    h.run({{"op", "window"},
           {"in", operand(in, {"a", "s"})},
           {"out", operand(out, {to, "a"})},
           {"from", "s"},
           {"to", to},
           {"offset", offset},
           {"sizes", {{"a", 2}, {"s", 4}, {to, size}}}});
  };
  window(half, "h", 2, 1); // slice [1, 3)
  EXPECT_EQ(h.readF32(half), (std::vector<float>{2, 6, 3, 7}));
  window(wide, "w", 6, -1); // one zero before, one after
  EXPECT_EQ(h.readF32(wide),
            (std::vector<float>{0, 0, 1, 5, 2, 6, 3, 7, 4, 8, 0, 0}));
  h.run({{"op", "window"},
         {"in", operand(in, {"a", "s"})},
         {"out", operand(same, {"a", "s"})},
         {"from", "s"},
         {"to", "s"},
         {"offset", -2},
         {"sizes", {{"a", 2}, {"s", 4}}}});
  EXPECT_EQ(h.readF32(same), (std::vector<float>{0, 0, 1, 2, 0, 0, 5, 6}));
}

/// out[b, t, a] = in[a, t + offset, b] (0 outside in) for t in [0, 40).
TEST_P(Conformance, Window_LargerRowsInEveryFloatType) {
  const int64_t A = 2, S = 60, B = 3, T = 40;
  for (const std::string &dtype : kFloatTypes)
    for (int64_t offset : {-3, 0, 2, 70}) {
      SCOPED_TRACE(dtype + " offset " + std::to_string(offset));
      std::vector<float> x = roundedTo(dtype, testData("x", A * S * B));
      StepHarness h = steps();
      int64_t in = h.floats(dtype, x),
              out = h.floats(dtype, std::vector<float>(B * T * A, 9.0f));
      h.run({{"op", "window"},
             {"in", operand(in, {"a", "s", "b"})},
             {"out", operand(out, {"b", "t", "a"})},
             {"from", "s"},
             {"to", "t"},
             {"offset", offset},
             {"sizes", {{"a", A}, {"b", B}, {"s", S}, {"t", T}}}});
      std::vector<float> want;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t)
          for (int64_t a = 0; a < A; ++a) {
            int64_t s = t + offset;
            want.push_back(s >= 0 && s < S ? x[(a * S + s) * B + b] : 0.0f);
          }
      EXPECT_EQ(h.readFloats(out), want);
    }
}

TEST_P(Conformance, Cumsum_BothWaysIntoPermutedOut) {
  // in[a, s] = rows {1, 2, 3} and {10, 20, 30}; out[s, a].
  StepHarness h = steps();
  int64_t in = h.f32({1, 2, 3, 10, 20, 30}), out = h.f32(std::vector<float>(6));
  json step = {{"op", "cumsum"},
               {"in", operand(in, {"a", "s"})},
               {"out", operand(out, {"s", "a"})},
               {"dim", "s"},
               {"sizes", {{"a", 2}, {"s", 3}}}};
  h.run(step);
  EXPECT_EQ(h.readF32(out), (std::vector<float>{1, 10, 3, 30, 6, 60}));
  step["reverse"] = true;
  h.run(step);
  EXPECT_EQ(h.readF32(out), (std::vector<float>{6, 60, 5, 50, 3, 30}));
}

/// out[b, a, c] = the sum of in[a, c', b] over c' <= c (>= c reversed).
TEST_P(Conformance, Cumsum_LongerRowsInEveryFloatType) {
  const int64_t A = 2, C = 60, B = 3;
  for (const std::string &dtype : kFloatTypes)
    for (bool reverse : {false, true}) {
      SCOPED_TRACE(dtype + (reverse ? " reversed" : ""));
      std::vector<float> x = roundedTo(dtype, testData("x", A * C * B));
      StepHarness h = steps();
      int64_t in = h.floats(dtype, x),
              out = h.floats(dtype, std::vector<float>(A * C * B));
      h.run({{"op", "cumsum"},
             {"in", operand(in, {"a", "c", "b"})},
             {"out", operand(out, {"b", "a", "c"})},
             {"dim", "c"},
             {"reverse", reverse},
             {"sizes", {{"a", A}, {"b", B}, {"c", C}}}});
      std::vector<double> want;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t a = 0; a < A; ++a)
          for (int64_t c = 0; c < C; ++c) {
            double sum = 0;
            for (int64_t k = reverse ? c : 0; k < (reverse ? C : c + 1); ++k)
              sum += x[(a * C + k) * B + b];
            want.push_back(sum);
          }
      // Partial sums of up to 60 terms of size ~1: an absolute error of a
      // few f32 roundings of the running sum, or the stored rounding.
      expectNear(h.readFloats(out), want,
                 dtype == "f32" ? 1e-5 : storedTolerance(dtype));
    }
}

TEST_P(Conformance, TopK_MarksTheLargestFirstOfTiesNaNLast) {
  // in[a, e]: {3, 1, 3, 2} and {NaN, 5, -1, 5}; out[e, a], k = 2.
  StepHarness h = steps();
  int64_t in = h.f32({3, 1, 3, 2, NAN, 5, -1, 5}),
          out = h.f32(std::vector<float>(8));
  h.run({{"op", "top_k"},
         {"in", operand(in, {"a", "e"})},
         {"out", operand(out, {"e", "a"})},
         {"dim", "e"},
         {"k", 2},
         {"sizes", {{"a", 2}, {"e", 4}}}});
  EXPECT_EQ(h.readF32(out), (std::vector<float>{1, 0, 0, 1, 1, 0, 0, 1}));
}

/// out[b, a, e] marks the k largest of in[a, :, b] (the first of ties, a
/// NaN only when k reaches it, after every number).
TEST_P(Conformance, TopK_LongerRowsInEveryFloatType) {
  const int64_t A = 2, E = 60, B = 3;
  for (const std::string &dtype : kFloatTypes)
    for (int64_t k : {1, 3, 60}) {
      SCOPED_TRACE(dtype + " k " + std::to_string(k));
      std::vector<float> x = testData("x", A * E * B);
      x[5] = x[8] = x[11] = 4.0f; // ties along e
      x[14] = NAN;
      x = roundedTo(dtype, x);
      StepHarness h = steps();
      int64_t in = h.floats(dtype, x),
              out = h.floats(dtype, std::vector<float>(A * E * B, 9));
      h.run({{"op", "top_k"},
             {"in", operand(in, {"a", "e", "b"})},
             {"out", operand(out, {"b", "a", "e"})},
             {"dim", "e"},
             {"k", k},
             {"sizes", {{"a", A}, {"b", B}, {"e", E}}}});
      std::vector<float> want;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t a = 0; a < A; ++a) {
          auto at = [&](int64_t e) { return x[(a * E + e) * B + b]; };
          // Marked when fewer than k elements come before it: larger ones,
          // equal earlier ones; NaN after every number (docs/mprog.md).
          auto before = [&](int64_t o, int64_t e) {
            bool nanO = std::isnan(at(o)), nanE = std::isnan(at(e));
            if (nanO || nanE)
              return !nanO || (nanE && o < e);
            return at(o) > at(e) || (at(o) == at(e) && o < e);
          };
          for (int64_t e = 0; e < E; ++e) {
            int64_t count = 0;
            for (int64_t o = 0; o < E; ++o)
              count += o != e && before(o, e);
            want.push_back(count < k ? 1.0f : 0.0f);
          }
        }
      EXPECT_EQ(h.readFloats(out), want);
    }
}

} // namespace
