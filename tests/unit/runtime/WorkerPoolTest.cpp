//===- WorkerPoolTest.cpp - A device's steps on several cores -------------===//
//
// The WorkerPool's shares and error handling, and a one-device CPU program
// run with MESHC_CPU_THREADS = 1, 2, 3 and 5: fused steps (rows of a
// layer-norm body over two outer dims; blocks of an elementwise body, shares
// starting inside a row) give bit-identical results for every thread count,
// and GEMMs shared by batches, rows or columns (transposed operands included)
// equal a double-precision loop.
//
//===----------------------------------------------------------------------===//

#include "StepHarness.h"

#include "runtime/Error.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/WorkerPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;
using nlohmann::json;

namespace {

TEST(WorkerPoolTest, SharesCoverTheRangeInOrder) {
  for (int64_t units : {0, 1, 2, 7, 64, 1001})
    for (int parts = 1; parts <= 6; ++parts) {
      int64_t next = 0;
      for (int part = 0; part < parts; ++part) {
        int64_t begin, end;
        Share{part, parts}.range(units, begin, end);
        EXPECT_EQ(begin, next) << units << " units, part " << part;
        EXPECT_GE(end - begin, units / parts);
        EXPECT_LE(end - begin, units / parts + 1);
        next = end;
      }
      EXPECT_EQ(next, units) << units << " units in " << parts << " parts";
    }
}

TEST(WorkerPoolTest, EveryUnitRunsOnceInAsManyChunksAsWorthwhile) {
  for (int threads : {1, 2, 3, 5}) {
    WorkerPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (int64_t units : {0, 1, 5, 40, 997})
      for (int64_t minUnits : {1, 10, 1000}) {
        std::vector<int> runs(size_t(units), 0);
        std::vector<std::pair<int64_t, int64_t>> chunks;
        std::set<int> workers;
        std::set<std::thread::id> ids;
        std::mutex mutex;
        pool.parallelFor(units, minUnits,
                         [&](int64_t begin, int64_t end, int worker) {
                           std::lock_guard<std::mutex> lock(mutex);
                           chunks.push_back({begin, end});
                           workers.insert(worker);
                           ids.insert(std::this_thread::get_id());
                           for (int64_t u = begin; u < end; ++u)
                             ++runs[size_t(u)];
                         });
        std::string what = std::to_string(threads) + " threads, " +
                           std::to_string(units) + " units, min " +
                           std::to_string(minUnits);
        for (int64_t u = 0; u < units; ++u)
          ASSERT_EQ(runs[size_t(u)], 1) << what << ": unit " << u;
        int64_t want =
            threads == 1
                ? 1
                : std::max<int64_t>(
                      1,
                      std::min<int64_t>(WorkerPool::kChunksPerThread * threads,
                                        units / minUnits));
        EXPECT_EQ(int64_t(chunks.size()), want) << what;
        // The chunks are the fixed shares, whoever ran them.
        std::sort(chunks.begin(), chunks.end());
        for (size_t c = 0; c < chunks.size(); ++c) {
          int64_t begin, end;
          Share{int64_t(c), want}.range(units, begin, end);
          EXPECT_EQ(chunks[c], std::make_pair(begin, end)) << what;
        }
        EXPECT_LE(int64_t(workers.size()), std::min<int64_t>(threads, want));
        EXPECT_LE(*workers.rbegin(), threads - 1);
        EXPECT_EQ(ids.size(), workers.size());
        if (want == 1)
          EXPECT_EQ(*ids.begin(), std::this_thread::get_id());
      }
  }
}

TEST(WorkerPoolTest, AStalledThreadLeavesItsChunksToTheOthers) {
  // The helper's first chunk waits until every other chunk is done: with
  // chunks taken from a counter the caller runs them all meanwhile (with
  // fixed shares it would wait for the helper, and this would time out).
  WorkerPool pool(2);
  std::atomic<int> done{0};
  std::atomic<bool> stalled{false}, timedOut{false};
  pool.parallelFor(8, 1, [&](int64_t, int64_t, int worker) {
    if (worker == 1 && !stalled.exchange(true)) {
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (done.load() < 7 &&
             !(timedOut = std::chrono::steady_clock::now() > until))
        std::this_thread::yield();
    }
    ++done;
  });
  EXPECT_EQ(done.load(), 8);
  EXPECT_FALSE(timedOut.load())
      << "the other chunks waited for the stalled one";
}

TEST(WorkerPoolTest, AChunksExceptionReachesTheCallerAfterAllThreadsStopped) {
  WorkerPool pool(3);
  std::atomic<int> running{0}, finished{0};
  EXPECT_THROW(pool.parallelFor(12, 1,
                                [&](int64_t begin, int64_t, int) {
                                  ++running;
                                  if (begin == 5)
                                    throw std::runtime_error("chunk 5");
                                  std::this_thread::sleep_for(
                                      std::chrono::milliseconds(1));
                                  ++finished;
                                  --running;
                                }),
               std::runtime_error);
  // Every thread stopped before the exception came back.
  EXPECT_EQ(running.load(), 1);
  EXPECT_LE(finished.load(), 11);
  // The pool still works afterwards.
  int64_t sum = 0;
  std::mutex mutex;
  pool.parallelFor(100, 1, [&](int64_t begin, int64_t end, int) {
    std::lock_guard<std::mutex> lock(mutex);
    for (int64_t u = begin; u < end; ++u)
      sum += u;
  });
  EXPECT_EQ(sum, 4950);
}

/// Sets MESHC_CPU_THREADS for the life of the object.
class CpuThreads {
public:
  explicit CpuThreads(int threads) {
    setenv("MESHC_CPU_THREADS", std::to_string(threads).c_str(), 1);
  }
  ~CpuThreads() { unsetenv("MESHC_CPU_THREADS"); }
};

/// Runs a fused step over buffers made from `inputs` on `threads` threads
/// and returns its outputs (of `outSizes` elements).
std::vector<std::vector<float>>
runFused(int threads, const std::vector<std::vector<float>> &inputs,
         const std::vector<int64_t> &outSizes,
         const std::function<json(const std::vector<int64_t> &)> &step) {
  CpuThreads forced(threads);
  StepHarness harness;
  std::vector<int64_t> ids;
  for (const std::vector<float> &input : inputs)
    ids.push_back(harness.f32(input));
  for (int64_t size : outSizes)
    ids.push_back(harness.f32(std::vector<float>(size, 7.0f)));
  harness.run(step(ids));
  std::vector<std::vector<float>> outs;
  for (size_t o = 0; o < outSizes.size(); ++o)
    outs.push_back(harness.readF32(ids[inputs.size() + o]));
  return outs;
}

void expectBitIdentical(const std::vector<std::vector<float>> &got,
                        const std::vector<std::vector<float>> &want,
                        int threads) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < got.size(); ++o)
    for (size_t i = 0; i < got[o].size(); ++i)
      ASSERT_EQ(std::memcmp(&got[o][i], &want[o][i], sizeof(float)), 0)
          << threads << " threads, output " << o << " element " << i << ": "
          << got[o][i] << " vs " << want[o][i];
}

TEST(WorkerPoolTest, FusedRowsOnSeveralThreadsAreBitIdentical) {
  // y = layer_norm(gelu(x) + r) * g over d, for each of 30 x 40 rows (s, t):
  // two outer dims, x stored [d, t, s] (the outer dims reversed) and the
  // per-row mean written [t, s], so a share starting at the wrong row is
  // caught. Each thread takes rows.
  const int64_t S = 30, T = 40, d = 37, rows = S * T;
  std::vector<std::vector<float>> inputs = {
      testData("x", rows * d), testData("r", rows * d), testData("g", d)};
  auto step = [&](const std::vector<int64_t> &ids) -> json {
    return {
        {"op", "fused"},
        {"dims", {"s", "t", "d"}},
        {"reduced", 1},
        {"sizes", {{"s", S}, {"t", T}, {"d", d}}},
        {"in",
         {operand(ids[0], {"d", "t", "s"}), operand(ids[1], {"s", "t", "d"}),
          operand(ids[2], {"d"})}},
        {"out",
         {output(ids[3], {"s", "t", "d"}, 15), output(ids[4], {"t", "s"}, 6)}},
        {"body", layerNormBody(d)}};
  };
  std::vector<std::vector<float>> one =
      runFused(1, inputs, {rows * d, rows}, step);
  // The one-thread result is the formula's (the conformance suite
  // checks the kernel in detail; here a spot check that the body is the
  // intended one).
  for (auto [s, t] :
       {std::pair<int64_t, int64_t>{0, 0}, {3, 17}, {S - 1, T - 1}}) {
    double mean = 0;
    for (int64_t i = 0; i < d; ++i) {
      double x = inputs[0][(i * T + t) * S + s];
      mean += 0.5 * x *
                  (1 + std::tanh(std::sqrt(2 / M_PI) *
                                 (x + 0.044715 * x * x * x))) +
              inputs[1][(s * T + t) * d + i];
    }
    EXPECT_NEAR(one[1][t * S + s], mean / d, 1e-5) << "row " << s << ", " << t;
  }
  for (int threads : {2, 3, 5})
    expectBitIdentical(runFused(threads, inputs, {rows * d, rows}, step), one,
                       threads);
}

TEST(WorkerPoolTest, FusedBlocksOnSeveralThreadsAreBitIdentical) {
  // out[a, b] = tanh(x * w[b] + s) - max(x, 0) over 7 rows of 6000: runs of
  // 512 with a tail of 368, so shares start inside rows.
  const int64_t a = 7, b = 6000;
  std::vector<std::vector<float>> inputs = {
      testData("x", a * b), testData("w", b), {0.25f}};
  auto step = [&](const std::vector<int64_t> &ids) -> json {
    return {{"op", "fused"},
            {"dims", {"a", "b"}},
            {"reduced", 0},
            {"sizes", {{"a", a}, {"b", b}}},
            {"in",
             {operand(ids[0], {"a", "b"}), operand(ids[1], {"b"}),
              operand(ids[2], {})}},
            {"out", {output(ids[3], {"a", "b"}, 8)}},
            {"body",
             {instr("mul", {0, 1}),
              instr("add", {3, 2}),
              instr("tanh", {4}),
              {{"fn", "const"}, {"value", 0.0}},
              instr("max", {0, 6}),
              instr("sub", {5, 7})}}};
  };
  std::vector<std::vector<float>> one = runFused(1, inputs, {a * b}, step);
  for (int64_t i : {int64_t(0), int64_t(511), int64_t(512), a * b - 1}) {
    double x = inputs[0][i];
    EXPECT_NEAR(one[0][i],
                std::tanh(x * inputs[1][i % b] + 0.25) - std::max(x, 0.0), 2e-5)
        << "element " << i;
  }
  for (int threads : {2, 3, 5})
    expectBitIdentical(runFused(threads, inputs, {a * b}, step), one, threads);
}

struct GemmCase {
  const char *name;
  std::vector<std::string> lhs, rhs, out;
  std::map<std::string, int64_t> sizes;
};

void PrintTo(const GemmCase &c, std::ostream *os) { *os << c.name; }

class SharedGemmTest : public ::testing::TestWithParam<GemmCase> {};

/// out = lhs . rhs over the dims out lacks, in double, by loops over the
/// (few) named dims.
std::vector<double> reference(const GemmCase &c, const std::vector<float> &x,
                              const std::vector<float> &y) {
  std::vector<std::string> all;
  for (const auto &[name, size] : c.sizes)
    all.push_back(name);
  auto offset = [&](const std::vector<std::string> &dims,
                    const std::vector<int64_t> &index) {
    int64_t at = 0;
    for (const std::string &dim : dims) {
      size_t d = size_t(std::find(all.begin(), all.end(), dim) - all.begin());
      at = at * c.sizes.at(dim) + index[d];
    }
    return at;
  };
  int64_t outCount = 1;
  for (const std::string &dim : c.out)
    outCount *= c.sizes.at(dim);
  std::vector<double> out(size_t(outCount), 0.0);
  std::vector<int64_t> index(all.size(), 0);
  for (;;) {
    out[size_t(offset(c.out, index))] +=
        double(x[size_t(offset(c.lhs, index))]) *
        y[size_t(offset(c.rhs, index))];
    size_t d = all.size();
    while (d-- > 0 && ++index[d] == c.sizes.at(all[d]))
      index[d] = 0;
    if (d == size_t(-1))
      return out;
  }
}

TEST_P(SharedGemmTest, EqualsTheLoopOnEveryThreadCount) {
  const GemmCase &c = GetParam();
  auto count = [&](const std::vector<std::string> &dims) {
    int64_t n = 1;
    for (const std::string &dim : dims)
      n *= c.sizes.at(dim);
    return n;
  };
  std::vector<float> x = testData("x", count(c.lhs)),
                     y = testData("y", count(c.rhs));
  std::vector<double> want = reference(c, x, y);
  for (int threads : {1, 2, 3, 5}) {
    CpuThreads forced(threads);
    StepHarness harness;
    int64_t xb = harness.f32(x), yb = harness.f32(y),
            ob = harness.f32(std::vector<float>(size_t(count(c.out)), 7.0f));
    json step = {{"op", "einsum"},
                 {"in", {operand(xb, c.lhs), operand(yb, c.rhs)}},
                 {"out", operand(ob, c.out)},
                 {"sizes", c.sizes}};
    if (threads == 1) {
      // The case is large enough to be cut into 4 parts (2 threads). (The
      // program is kept: a range-for over a member of a temporary read it
      // after it was destroyed, as AddressSanitizer found.)
      Program loaded = harness.load(step);
      for (const EinsumStage &stage :
           loaded.steps[0].as<EinsumAttrs>().plan.stages)
        if (stage.isGemm)
          EXPECT_EQ(gemmParts(stage.gemm, 4), 4);
    }
    harness.run(step);
    std::vector<float> got = harness.readF32(ob);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4 * std::max(1.0, std::abs(want[i])))
          << threads << " threads, element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shares, SharedGemmTest,
    ::testing::Values(
        // Rows of C (m >= n), plain and with A transposed.
        GemmCase{"rows",
                 {"m", "k"},
                 {"k", "n"},
                 {"m", "n"},
                 {{"m", 401}, {"k", 96}, {"n", 120}}},
        GemmCase{"rowsTransposedA",
                 {"k", "m"},
                 {"k", "n"},
                 {"m", "n"},
                 {{"m", 401}, {"k", 96}, {"n", 120}}},
        // Columns of C (n > m), plain and with B transposed.
        GemmCase{"columns",
                 {"m", "k"},
                 {"k", "n"},
                 {"m", "n"},
                 {{"m", 90}, {"k", 96}, {"n", 501}}},
        GemmCase{"columnsTransposedB",
                 {"m", "k"},
                 {"n", "k"},
                 {"m", "n"},
                 {{"m", 90}, {"k", 96}, {"n", 501}}},
        // Fewer batches than chunks (rows of each), and more (batches).
        GemmCase{"fewBatches",
                 {"p", "m", "k"},
                 {"p", "k", "n"},
                 {"p", "m", "n"},
                 {{"p", 2}, {"m", 201}, {"k", 96}, {"n", 120}}},
        GemmCase{"manyBatches",
                 {"p", "m", "k"},
                 {"p", "k", "n"},
                 {"p", "m", "n"},
                 {{"p", 9}, {"m", 60}, {"k", 96}, {"n", 90}}}),
    [](const ::testing::TestParamInfo<GemmCase> &info) {
      return std::string(info.param.name);
    });

TEST(WorkerPoolTest, MeshcCpuThreadsMustBeACount) {
  for (const char *bad : {"", "0", "-2", "two", "3x", "100000"}) {
    setenv("MESHC_CPU_THREADS", bad, 1);
    StepHarness harness;
    int64_t in = harness.f32({1, 2, 3}), out = harness.f32({0});
    try {
      harness.run({{"op", "einsum"},
                   {"in", {operand(in, {"i"}), operand(in, {"i"})}},
                   {"out", operand(out, {})},
                   {"sizes", {{"i", 3}}}});
      ADD_FAILURE() << "MESHC_CPU_THREADS='" << bad << "' was accepted";
    } catch (const RuntimeError &error) {
      EXPECT_NE(std::string(error.what())
                    .find(std::string("MESHC_CPU_THREADS='") + bad +
                          "': expected a number of threads from 1 to 1024"),
                std::string::npos)
          << error.what();
    }
  }
  unsetenv("MESHC_CPU_THREADS");
}

} // namespace
