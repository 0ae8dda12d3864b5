//===- VectorMathTest.cpp - The CPU's vectorized element functions --------===//
//
// vmath (runtime/cpu/VectorMath.h) against the scalar formulas of
// ElementFunctions.h, which the reference interpreter and CUDA's host path
// run: exact where the formula is IEEE arithmetic, within the bounds
// docs/runtime.md states where it calls exp, log or tanh, with the C
// library's values at NaN, the infinities, zero and overflow, and the same
// value for an element wherever it lies in an array.
//
//===----------------------------------------------------------------------===//

#include "ElementBounds.h"

#include "runtime/core/HalfFloat.h"
#include "runtime/cpu/VectorMath.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace meshc::runtime {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// Runs `check` once on each SIMD target this CPU has and this build
/// generated (Highway's test switch), with the target's name in failures.
template <typename Check> void onEveryTarget(Check check) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(std::string("target ") + hwy::TargetName(target));
    EXPECT_EQ(std::string(vmath::targetName()), hwy::TargetName(target));
    check();
  }
  hwy::SetSupportedTargetsForTest(0);
}

float scalarBinary(BinaryFn fn, float x, float y) {
  switch (fn) {
#define MESHC_BINARY_FN(Fn, Spelling)                                          \
  case BinaryFn::Fn:                                                           \
    return binaryValue<BinaryFn::Fn>(x, y);
#include "runtime/core/ElementFunctions.def"
  }
  return kNaN;
}

/// Numbers of every magnitude from 1e-6 to ~100, both signs, and the
/// special values.
std::vector<float> sampleInputs() {
  std::mt19937 generator(12);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), exponent(-6, 2.1f);
  std::vector<float> xs;
  for (int i = 0; i < 100000; ++i)
    xs.push_back(unit(generator) * std::pow(10.0f, exponent(generator)));
  for (float special :
       {0.0f,    -0.0f,   kInf,    -kInf,    kNaN,   1e-40f, -1e-40f, 1e-30f,
        88.0f,   88.8f,   89.0f,   100.0f,   105.0f, 1e30f,  -1e30f,  -87.0f,
        -104.0f, -110.0f, 3.4e38f, -3.4e38f, 9.0f,   -9.0f,  18.72f,  -18.72f})
    xs.push_back(special);
  return xs;
}

TEST(VectorMathTest, UnaryKeepsToTheBoundsOfTheScalarFormulas) {
  onEveryTarget([&] {
    std::vector<float> xs = sampleInputs();
    std::vector<float> out(xs.size());
    for (size_t f = 0; f < kUnaryFnCount; ++f) {
      UnaryFn fn = static_cast<UnaryFn>(f);
      vmath::unary(fn, 1.5f, xs.data(), out.data(),
                   static_cast<int64_t>(xs.size()));
      int failures = 0;
      std::string why;
      for (size_t i = 0; i < xs.size() && failures < 5; ++i)
        if (!withinBound(fn, xs[i], scalarUnary(fn, xs[i], 1.5f), out[i],
                         why)) {
          ADD_FAILURE() << why;
          ++failures;
        }
    }
  });
}

TEST(VectorMathTest, SpecialValuesAreTheCLibrarys) {
  onEveryTarget([&] {
    struct Case {
      UnaryFn fn;
      float x, expected;
    };
    for (Case c : std::vector<Case>{{UnaryFn::Exp, kNaN, kNaN},
                                    {UnaryFn::Exp, 100.0f, kInf},
                                    {UnaryFn::Exp, 1e30f, kInf},
                                    {UnaryFn::Exp, kInf, kInf},
                                    {UnaryFn::Exp, -110.0f, 0.0f},
                                    {UnaryFn::Exp, -kInf, 0.0f},
                                    {UnaryFn::Exp, 0.0f, 1.0f},
                                    {UnaryFn::Log, 0.0f, -kInf},
                                    {UnaryFn::Log, -0.0f, -kInf},
                                    {UnaryFn::Log, -1.0f, kNaN},
                                    {UnaryFn::Log, -kInf, kNaN},
                                    {UnaryFn::Log, kInf, kInf},
                                    {UnaryFn::Log, kNaN, kNaN},
                                    {UnaryFn::Log, 1.0f, 0.0f},
                                    {UnaryFn::Tanh, kInf, 1.0f},
                                    {UnaryFn::Tanh, -kInf, -1.0f},
                                    {UnaryFn::Tanh, kNaN, kNaN},
                                    {UnaryFn::Tanh, 0.0f, 0.0f},
                                    {UnaryFn::Sigmoid, -200.0f, 0.0f},
                                    {UnaryFn::Sigmoid, 200.0f, 1.0f},
                                    {UnaryFn::Silu, 200.0f, 200.0f},
                                    {UnaryFn::Gelu, kInf, kInf},
                                    {UnaryFn::Gelu, kNaN, kNaN},
                                    {UnaryFn::Relu, kNaN, 0.0f},
                                    {UnaryFn::Positive, kNaN, 0.0f},
                                    {UnaryFn::Rsqrt, 0.0f, kInf},
                                    {UnaryFn::Sqrt, -1.0f, kNaN}}) {
      float out = 0;
      vmath::unary(c.fn, 1.0f, &c.x, &out, 1);
      if (std::isnan(c.expected))
        EXPECT_TRUE(std::isnan(out)) << unaryFnName(c.fn) << "(" << c.x << ")";
      else
        EXPECT_EQ(out, c.expected) << unaryFnName(c.fn) << "(" << c.x << ")";
    }
  });
}

TEST(VectorMathTest, AnElementsValueDoesNotDependOnWhereItLies) {
  onEveryTarget([&] {
    std::vector<float> xs;
    for (int i = 0; i < 37; ++i)
      xs.push_back(-6.0f + 0.33f * static_cast<float>(i));
    for (size_t f = 0; f < kUnaryFnCount; ++f) {
      UnaryFn fn = static_cast<UnaryFn>(f);
      std::vector<float> whole(xs.size());
      vmath::unary(fn, 0.5f, xs.data(), whole.data(), 37);
      std::vector<float> inPlace = xs;
      vmath::unary(fn, 0.5f, inPlace.data(), inPlace.data(), 37);
      for (size_t i = 0; i < xs.size(); ++i) {
        float alone = 0;
        vmath::unary(fn, 0.5f, &xs[i], &alone, 1);
        EXPECT_EQ(ulpsApart(whole[i], alone), 0)
            << unaryFnName(fn) << "(" << xs[i] << ") at " << i;
        EXPECT_EQ(ulpsApart(whole[i], inPlace[i]), 0) << unaryFnName(fn);
      }
    }
  });
}

TEST(VectorMathTest, BinaryIsTheScalarFormulaExactly) {
  onEveryTarget([&] {
    std::vector<float> lhs = {1.5f, -2.0f, 0.0f,  -0.0f,  kInf,  -kInf, kNaN,
                              3.0f, kNaN,  7.25f, 1e-40f, -5.0f, 2.0f,  0.1f,
                              9.0f, -1.0f, 4.0f,  6.5f,   -3.0f};
    std::vector<float> rhs = {2.5f,  -2.0f, -0.0f, 0.0f, kInf,  1.0f, 1.0f,
                              kNaN,  kNaN,  0.0f,  3.0f, -5.0f, 0.3f, 0.7f,
                              -kInf, kInf,  4.0f,  2.0f, 8.0f};
    int64_t n = static_cast<int64_t>(lhs.size());
    auto same = [](float a, float b) {
      return (std::isnan(a) && std::isnan(b)) || ulpsApart(a, b) == 0;
    };
    for (size_t f = 0; f < kBinaryFnCount; ++f) {
      BinaryFn fn = static_cast<BinaryFn>(f);
      std::vector<float> out(lhs.size()), left(lhs.size()), right(lhs.size());
      vmath::binary(fn, lhs.data(), rhs.data(), out.data(), n);
      vmath::binaryScalarRhs(fn, lhs.data(), rhs[6], right.data(), n);
      vmath::binaryScalarLhs(fn, lhs[7], rhs.data(), left.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_TRUE(same(out[i], scalarBinary(fn, lhs[i], rhs[i])))
            << binaryFnName(fn) << "(" << lhs[i] << ", " << rhs[i]
            << ") = " << out[i];
        EXPECT_TRUE(same(right[i], scalarBinary(fn, lhs[i], rhs[6])))
            << binaryFnName(fn) << " with a scalar rhs at " << i;
        EXPECT_TRUE(same(left[i], scalarBinary(fn, lhs[7], rhs[i])))
            << binaryFnName(fn) << " with a scalar lhs at " << i;
      }
    }
  });
}

TEST(VectorMathTest, RoundToBf16IsTheScalarRoundingBitForBit) {
  // Ties both ways, the largest finite values (rounding to infinity),
  // infinities, NaNs with payloads, subnormals, zeros of both signs, and
  // random bits; lengths that leave a tail after the vectors.
  std::vector<uint32_t> bits = {
      0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f7fffffu, 0xff7fffffu,
      0x7f800000u, 0xff800000u, 0x7fc00001u, 0x7f800001u, 0xffa00000u,
      0x00000001u, 0x80008000u, 0x00000000u, 0x80000000u};
  std::mt19937 random(11);
  for (int i = 0; i < 1000; ++i)
    bits.push_back(static_cast<uint32_t>(random()));
  for (size_t n : {bits.size(), size_t(7), size_t(1)}) {
    std::vector<float> values(n), want(n);
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(&values[i], &bits[i], 4);
      want[i] = meshc::half::roundToBf16(values[i]);
    }
    meshc::runtime::vmath::roundToBf16(values.data(), int64_t(n));
    for (size_t i = 0; i < n; ++i) {
      uint32_t got, expected;
      std::memcpy(&got, &values[i], 4);
      std::memcpy(&expected, &want[i], 4);
      ASSERT_EQ(got, expected) << "input bits " << std::hex << bits[i];
    }
  }
}

TEST(VectorMathTest, SumAddsEveryElement) {
  onEveryTarget([&] {
    EXPECT_EQ(vmath::sum(nullptr, 0), 0.0f);
    for (int64_t n : {1, 7, 16, 33, 1000}) {
      std::vector<float> xs(n);
      for (int64_t i = 0; i < n; ++i)
        xs[i] = static_cast<float>(i + 1);
      // Integers below 2^24: exact in any order.
      EXPECT_EQ(vmath::sum(xs.data(), n), static_cast<float>(n * (n + 1) / 2));
    }
    std::mt19937 generator(3);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::vector<float> xs(4099);
    double exact = 0, magnitude = 0;
    for (float &x : xs) {
      x = unit(generator);
      exact += x;
      magnitude += std::fabs(x);
    }
    EXPECT_NEAR(vmath::sum(xs.data(), 4099), exact,
                4099 * std::ldexp(1.0, -24) * magnitude);
    float withNaN[] = {1.0f, kNaN, 2.0f};
    EXPECT_TRUE(std::isnan(vmath::sum(withNaN, 3)));
    std::vector<float> nanLate(10000, 1.0f);
    nanLate[9000] = kNaN;
    EXPECT_TRUE(std::isnan(vmath::sum(nanLate.data(), 10000)));
  });
}

// A long row of positive values (a mean loss's squares) adds to within a
// few f32 roundings of the exact sum: each f32 lane adds a short block, the
// blocks add in double. The f32 lanes adding all 2^23 squares alone were
// 7.0e-5 below it with AVX-512's 32 lanes, 1.9e-4 with fewer.
TEST(VectorMathTest, SumOfALongRowIsAccurate) {
  const int64_t n = int64_t(1) << 23;
  std::mt19937 generator(5);
  std::normal_distribution<float> normal(0.0f, 1.2f);
  std::vector<float> xs(n);
  double exact = 0;
  for (float &x : xs) {
    float y = normal(generator);
    x = y * y;
    exact += x;
  }
  onEveryTarget(
      [&] { EXPECT_NEAR(vmath::sum(xs.data(), n), exact, 4e-7 * exact); });
}

TEST(VectorMathTest, MaxSkipsNaNAndIsMinusInfinityWhenEmpty) {
  onEveryTarget([&] {
    EXPECT_EQ(vmath::max(nullptr, 0), -kInf);
    float allNaN[] = {kNaN, kNaN, kNaN};
    EXPECT_EQ(vmath::max(allNaN, 3), -kInf);
    for (int64_t n : {1, 5, 16, 17, 40}) {
      std::vector<float> xs(n, -3.0f);
      xs[0] = kNaN;
      xs[n - 1] = n > 1 ? 2.5f : kNaN;
      EXPECT_EQ(vmath::max(xs.data(), n), n > 1 ? 2.5f : -kInf) << n;
    }
    float withInf[] = {-kInf, 1.0f, kInf, kNaN};
    EXPECT_EQ(vmath::max(withInf, 4), kInf);
  });
}

TEST(VectorMathTest, NamesItsTarget) {
  EXPECT_FALSE(std::string(vmath::targetName()).empty());
}

} // namespace
} // namespace meshc::runtime
