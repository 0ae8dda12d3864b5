//===- KernelSharesTest.cpp - Row kernels run in shares -------------------===//
//
// The kernels a device with several cores shares (reducePermute, softmax,
// logsumexp, softmax cross-entropy): running every Share{p, P} of a call,
// in either order, onto an output full of garbage gives bit-identical
// results to the unshared call, for P = 2 to 8. The cases cover each way a
// reduction is cut: an outer dim dst keeps, the row when dst keeps only it
// (contiguous and strided), dims smaller than P, and reductions that part 0
// does alone.
//
//===----------------------------------------------------------------------===//

#include "StepHarness.h"

#include "runtime/cpu/CpuKernels.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <limits>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;

namespace {

NamedShape shape(std::vector<std::string> names, std::vector<int64_t> sizes) {
  NamedShape s;
  s.names = std::move(names);
  s.sizes = std::move(sizes);
  return s;
}

/// Runs `kernel` whole and in P shares for P = 2, 3, 4, 5 and 8 (first part
/// first, and last part first) onto `outCount` elements that start as NaN,
/// and expects the same bits.
void expectSharesEqualWhole(int64_t outCount,
                            const std::function<void(float *, Share)> &kernel,
                            const std::string &what) {
  const float garbage = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> whole(size_t(outCount), garbage);
  kernel(whole.data(), Share{});
  for (float v : whole)
    ASSERT_FALSE(std::isnan(v)) << what << ": the whole call left garbage";
  for (int64_t parts : {2, 3, 4, 5, 8})
    for (bool reverse : {false, true}) {
      std::vector<float> shared(size_t(outCount), garbage);
      for (int64_t k = 0; k < parts; ++k)
        kernel(shared.data(), Share{reverse ? parts - 1 - k : k, parts});
      for (size_t i = 0; i < whole.size(); ++i)
        ASSERT_EQ(std::memcmp(&shared[i], &whole[i], sizeof(float)), 0)
            << what << " in " << parts << " parts"
            << (reverse ? " (last first)" : "") << ", element " << i << ": "
            << shared[i] << " vs " << whole[i];
    }
}

struct ReduceCase {
  const char *name;
  NamedShape src, dst;
};

TEST(KernelSharesTest, ReducePermuteSharesEqualTheWholeCall) {
  std::vector<ReduceCase> cases = {
      // A transpose: the outer dim a is cut.
      {"transpose", shape({"a", "b", "c"}, {5, 7, 9}),
       shape({"c", "a", "b"}, {9, 5, 7})},
      // dst keeps only the row: the row is cut (contiguous in dst).
      {"bias gradient", shape({"a", "b", "c"}, {6, 5, 8}), shape({"c"}, {8})},
      // dst keeps an outer dim; the row is reduced.
      {"row sums", shape({"a", "b", "c"}, {6, 5, 8}), shape({"a"}, {6})},
      // a (size 2) is too small for 3+ parts and not kept; b is cut.
      {"middle dim", shape({"a", "b", "c"}, {2, 9, 4}),
       shape({"c", "b"}, {4, 9})},
      // a too small to cut, the row kept with a stride in dst.
      {"strided row", shape({"a", "c"}, {2, 10}), shape({"c", "a"}, {10, 2})},
      // Everything reduced: part 0 alone.
      {"full", shape({"c", "a"}, {8, 3}), shape({}, {})},
      // An empty dim: the output is the initial value.
      {"empty", shape({"a", "c"}, {4, 0}), shape({"a"}, {4})},
      // More parts than the cut dim has indices: some parts get none.
      {"small dims", shape({"a", "b", "c"}, {3, 2, 5}), shape({"a"}, {3})},
      // One dim: a copy (the row cut), and a sum (part 0 alone).
      {"copy", shape({"c"}, {7}), shape({"c"}, {7})},
      {"sum", shape({"c"}, {7}), shape({}, {})},
      // A scalar source.
      {"scalar", shape({}, {}), shape({}, {})},
  };
  for (const ReduceCase &c : cases)
    for (Reduction fn : {Reduction::Sum, Reduction::Max}) {
      std::vector<float> src = testData(c.name, c.src.elements());
      expectSharesEqualWhole(
          c.dst.elements(),
          [&](float *out, Share share) {
            reducePermute(fn, src.data(), c.src, out, c.dst, share);
          },
          std::string(c.name) + (fn == Reduction::Sum ? " (sum)" : " (max)"));
    }
}

TEST(KernelSharesTest, RowKernelsSharesEqualTheWholeCall) {
  NamedShape in = shape({"a", "b", "c"}, {3, 7, 5});
  // The output in another dim order: rows are strided in it.
  NamedShape out = shape({"c", "a", "b"}, {5, 3, 7});
  NamedShape reduced = shape({"c", "a"}, {5, 3});
  std::vector<float> x = testData("x", in.elements());
  expectSharesEqualWhole(
      out.elements(),
      [&](float *y, Share share) {
        softmaxKernel(x.data(), in, y, out, "b", share);
      },
      "softmax along b");
  expectSharesEqualWhole(
      in.elements(),
      [&](float *y, Share share) {
        softmaxKernel(x.data(), in, y, in, "c", share);
      },
      "softmax along the contiguous c");
  expectSharesEqualWhole(
      reduced.elements(),
      [&](float *y, Share share) {
        logSumExpKernel(x.data(), in, y, reduced, "b", share);
      },
      "logsumexp along b");
  // One row: nothing to cut, part 0 does it.
  NamedShape row = shape({"b"}, {7});
  expectSharesEqualWhole(
      row.elements(),
      [&](float *y, Share share) {
        softmaxKernel(x.data(), row, y, row, "b", share);
      },
      "softmax of one row");
  std::vector<int32_t> labels(size_t(reduced.elements()));
  for (size_t i = 0; i < labels.size(); ++i)
    labels[i] = int32_t(i % 7);
  expectSharesEqualWhole(
      reduced.elements(),
      [&](float *loss, Share share) {
        crossEntropyKernel(x.data(), in, labels.data(), reduced, loss, reduced,
                           "b", share);
      },
      "cross-entropy along b");
}

} // namespace
