//===- Bf16GemmTest.cpp - Which einsums run as oneDNN bf16 GEMMs ----------===//
//
// On a CPU with bf16 dot products (and a runtime built with oneDNN), an
// einsum planned as one GEMM over two bf16 operands runs as oneDNN matmuls
// on the bf16 buffers (cpu/Bf16Gemm.h); everything else keeps the f32 path.
// Here: which einsums are taken, and the results of the parts the device's
// threads share (batches, rows, columns; transposed operands) against a
// brute-force einsum over the stored values. (The conformance suite runs
// every bf16 einsum case through whichever path the machine takes.) Skipped,
// with the reason, where the path is not available.
//
//===----------------------------------------------------------------------===//

#include "StepHarness.h"

#include "runtime/cpu/Bf16Gemm.h"
#include "runtime/cpu/CpuDevice.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <thread>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;
using nlohmann::json;

namespace {

using Names = std::vector<std::string>;
using Sizes = std::map<std::string, int64_t>;

int64_t countOf(const Names &dims, const Sizes &sizes) {
  int64_t count = 1;
  for (const std::string &dim : dims)
    count *= sizes.at(dim);
  return count;
}

/// An einsum of two operands of `dtype` (and a `dtype` out) in `h`.
json einsum(StepHarness &h, const std::string &dtype, const Names &a,
            const Names &b, const Names &out, const Sizes &sizes,
            std::vector<std::vector<float>> *data = nullptr) {
  std::vector<float> x = roundedTo(dtype, testData("a", countOf(a, sizes))),
                     y = roundedTo(dtype, testData("b", countOf(b, sizes)));
  if (data)
    *data = {x, y};
  Sizes used;
  for (const Names &dims : {a, b, out})
    for (const std::string &dim : dims)
      used[dim] = sizes.at(dim);
  int64_t xb = h.floats(dtype, x), yb = h.floats(dtype, y),
          ob = h.floats(dtype, std::vector<float>(countOf(out, sizes)));
  return {{"op", "einsum"},
          {"in", {operand(xb, a), operand(yb, b)}},
          {"out", operand(ob, out)},
          {"sizes", used}};
}

/// How many einsums of the program made of `step` take the bf16 path on a
/// device of `threads` threads.
size_t taken(const StepHarness &h, const json &step, int threads = 1) {
  Program program = h.load(step);
  return CpuDevice(program, 0, threads).bf16GemmSteps();
}

class Bf16GemmTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!bf16GemmsAvailable())
      GTEST_SKIP() << "bf16 GEMMs: " << bf16GemmsDescription();
  }
};

TEST(Bf16GemmDescription, NamesTheLibraryOrWhyNot) {
  std::string description = bf16GemmsDescription();
  EXPECT_TRUE(description.find("oneDNN") != std::string::npos ||
              description == "built without oneDNN")
      << description;
}

TEST_F(Bf16GemmTest, TakenForOneGemmOverTwoBf16Operands) {
  Sizes sizes = {{"b", 64}, {"k", 32}, {"n", 48}, {"h", 3}};
  StepHarness plain;
  EXPECT_EQ(taken(plain, einsum(plain, "bf16", {"b", "k"}, {"k", "n"},
                                {"b", "n"}, sizes)),
            1u);
  StepHarness transposed;
  json step =
      einsum(transposed, "bf16", {"k", "b"}, {"n", "k"}, {"b", "n"}, sizes);
  EXPECT_EQ(taken(transposed, step), 1u);
  EXPECT_EQ(taken(transposed, step, 4), 1u);
  StepHarness batched;
  EXPECT_EQ(taken(batched, einsum(batched, "bf16", {"h", "b", "k"},
                                  {"h", "k", "n"}, {"h", "b", "n"}, sizes)),
            1u);
  // f16 and f32 operands, a plan with a transpose stage, and batched dot
  // products keep the f32 path.
  StepHarness half;
  EXPECT_EQ(taken(half, einsum(half, "f16", {"b", "k"}, {"k", "n"}, {"b", "n"},
                               sizes)),
            0u);
  StepHarness single;
  EXPECT_EQ(taken(single, einsum(single, "f32", {"b", "k"}, {"k", "n"},
                                 {"b", "n"}, sizes)),
            0u);
  StepHarness reshaped;
  EXPECT_EQ(taken(reshaped, einsum(reshaped, "bf16", {"b", "h", "k"},
                                   {"k", "h", "n"}, {"b", "h", "n"}, sizes)),
            0u);
  StepHarness dots;
  EXPECT_EQ(
      taken(dots, einsum(dots, "bf16", {"b", "k"}, {"b", "k"}, {"b"}, sizes)),
      0u);
}

/// Sets MESHC_CPU_THREADS for its lifetime.
class ScopedThreads {
public:
  explicit ScopedThreads(int threads) {
    setenv("MESHC_CPU_THREADS", std::to_string(threads).c_str(), 1);
  }
  ~ScopedThreads() { unsetenv("MESHC_CPU_THREADS"); }
};

TEST_F(Bf16GemmTest, SharedPartsMatchAPlainLoop) {
  // C[h, m, n] = sum over k of A[h, m, k] B[h, k, n], A stored [h, k, m]
  // when transA and B [h, n, k] when transB. Large enough to be shared on 3
  // threads: rows (m >= n), columns (m < n), batches.
  struct Case {
    int64_t h, m, k, n;
    bool transA, transB;
  };
  for (Case c :
       {Case{1, 1001, 130, 40, false, false},
        Case{1, 33, 200, 1025, true, true}, Case{7, 64, 128, 64, false, true}})
    for (int threads : {1, 3}) {
      SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.k) + "x" +
                   std::to_string(c.n) + " batch " + std::to_string(c.h) +
                   " on " + std::to_string(threads) + " threads");
      ScopedThreads scoped(threads);
      Sizes sizes = {{"h", c.h}, {"m", c.m}, {"k", c.k}, {"n", c.n}};
      Names a = c.transA ? Names{"h", "k", "m"} : Names{"h", "m", "k"};
      Names b = c.transB ? Names{"h", "n", "k"} : Names{"h", "k", "n"};
      StepHarness h;
      std::vector<std::vector<float>> data;
      json step = einsum(h, "bf16", a, b, {"h", "m", "n"}, sizes, &data);
      ASSERT_EQ(taken(h, step, threads), 1u);
      h.run(step);
      std::vector<float> got = h.readHalf(2);
      for (int64_t p = 0; p < c.h; ++p)
        for (int64_t i = 0; i < c.m; ++i)
          for (int64_t j = 0; j < c.n; ++j) {
            double sum = 0;
            for (int64_t l = 0; l < c.k; ++l)
              sum += double(data[0][c.transA ? (p * c.k + l) * c.m + i
                                             : (p * c.m + i) * c.k + l]) *
                     data[1][c.transB ? (p * c.n + j) * c.k + l
                                      : (p * c.k + l) * c.n + j];
            float value = got[size_t((p * c.m + i) * c.n + j)];
            ASSERT_NEAR(value, sum, std::max(1.0, std::abs(sum)) / 128)
                << "C[" << p << ", " << i << ", " << j << "]";
          }
    }
}

/// Devices run the same planned matmul at once (the primitives are shared):
/// each needs a scratchpad of its own. With oneDNN's library-owned one the
/// bf16 layout sweeps on two devices failed (relative error 0.79).
TEST_F(Bf16GemmTest, DevicesRunningOneMatmulAtOnceAgree) {
  Sizes sizes = {{"m", 32}, {"k", 64}, {"n", 128}};
  StepHarness h;
  std::vector<std::vector<float>> data;
  json step =
      einsum(h, "bf16", {"m", "k"}, {"k", "n"}, {"m", "n"}, sizes, &data);
  Program program = h.load(step);
  std::vector<double> want(32 * 128);
  for (int64_t i = 0; i < 32; ++i)
    for (int64_t j = 0; j < 128; ++j)
      for (int64_t l = 0; l < 64; ++l)
        want[size_t(i * 128 + j)] +=
            double(data[0][size_t(i * 64 + l)]) * data[1][size_t(l * 128 + j)];
  constexpr int kDevices = 4, kRuns = 20;
  std::vector<std::unique_ptr<CpuDevice>> devices;
  for (int d = 0; d < kDevices; ++d) {
    devices.push_back(std::make_unique<CpuDevice>(program, 0, 1));
    ASSERT_EQ(devices.back()->bf16GemmSteps(), 1u);
    devices.back()->allocate(program.arenaBytes, program.scratchBytes);
    for (size_t b = 0; b < 2; ++b) {
      std::vector<uint16_t> bits;
      for (float v : data[b])
        bits.push_back(meshc::half::bf16FromF32(v));
      devices.back()->write(program.buffers[b].offset, bits.data(),
                            int64_t(bits.size() * 2));
    }
  }
  std::vector<std::thread> threads;
  for (int d = 0; d < kDevices; ++d)
    threads.emplace_back([&, d] {
      for (int run = 0; run < kRuns; ++run)
        devices[size_t(d)]->run(program.steps[0], nullptr);
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int d = 0; d < kDevices; ++d) {
    std::vector<uint16_t> bits(32 * 128);
    devices[size_t(d)]->read(program.buffers[2].offset, bits.data(),
                             int64_t(bits.size() * 2));
    for (size_t i = 0; i < bits.size(); ++i)
      ASSERT_NEAR(meshc::half::f32FromBf16(bits[i]), want[i],
                  std::max(1.0, std::abs(want[i])) / 128)
          << "device " << d << ", element " << i;
  }
}

} // namespace
