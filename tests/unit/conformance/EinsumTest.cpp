//===- EinsumTest.cpp - Einsum steps against a brute-force einsum ---------===//
//
// Each case runs an einsum step through the loader's planner on the backend
// under test, in every float type, and compares it with a brute-force
// einsum in double over the inputs as stored; the plan's GEMM and
// transpose/sum stages are pinned (the loader plans for every backend, so a
// plain matmul stays copy-free everywhere). Also: bf16 operands widened and
// the result rounded once, exactly.
//
//===----------------------------------------------------------------------===//

#include "Conformance.h"

#include "runtime/core/HalfFloat.h"

#include <cmath>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;

namespace {

using Names = std::vector<std::string>;
using Sizes = std::map<std::string, int64_t>;

struct EinsumCase {
  const char *name;
  std::vector<Names> inputs;
  Names out;
  Sizes sizes;
  /// Expected plan: GEMM stages and transpose/sum stages.
  int gemms;
  int reshapes;
};

int64_t countOf(const Names &dims, const Sizes &sizes) {
  int64_t count = 1;
  for (const std::string &dim : dims)
    count *= sizes.at(dim);
  return count;
}

const EinsumCase kCases[] = {
    {"Matmul",
     {{"b", "i"}, {"i", "h"}},
     {"b", "h"},
     {{"b", 5}, {"i", 7}, {"h", 3}},
     1,
     0},
    {"TransposedLhs",
     {{"i", "b"}, {"i", "h"}},
     {"b", "h"},
     {{"b", 5}, {"i", 7}, {"h", 3}},
     1,
     0},
    {"TransposedRhs",
     {{"b", "i"}, {"h", "i"}},
     {"b", "h"},
     {{"b", 5}, {"i", 7}, {"h", 3}},
     1,
     0},
    {"TransposedOut",
     {{"b", "i"}, {"i", "h"}},
     {"h", "b"},
     {{"b", 5}, {"i", 7}, {"h", 3}},
     1,
     0},
    {"BatchDims",
     {{"p", "b", "i"}, {"p", "i", "h"}},
     {"p", "b", "h"},
     {{"p", 3}, {"b", 4}, {"i", 5}, {"h", 2}},
     1,
     0},
    {"BatchDimInside",
     {{"b", "p", "i"}, {"i", "p", "h"}},
     {"b", "p", "h"},
     {{"p", 3}, {"b", 4}, {"i", 5}, {"h", 2}},
     1,
     3},
    {"SeveralDimsPerGroup",
     {{"b", "s", "d"}, {"d", "k", "v"}},
     {"b", "s", "k", "v"},
     {{"b", 2}, {"s", 3}, {"d", 4}, {"k", 2}, {"v", 3}},
     1,
     0},
    {"TwoContractedDims",
     {{"b", "h", "d"}, {"h", "d", "f"}},
     {"b", "f"},
     {{"b", 3}, {"h", 2}, {"d", 4}, {"f", 5}},
     1,
     0},
    {"ContractedDimsPermuted",
     {{"b", "h", "d"}, {"d", "h", "f"}},
     {"b", "f"},
     {{"b", 3}, {"h", 2}, {"d", 4}, {"f", 5}},
     1,
     1},
    {"DimOnlyInOneOperandIsSummed",
     {{"b", "x", "i"}, {"i", "h", "y"}},
     {"b", "h"},
     {{"b", 3}, {"x", 4}, {"i", 5}, {"h", 2}, {"y", 3}},
     1,
     2},
    {"OuterProduct", {{"a"}, {"b"}}, {"a", "b"}, {{"a", 4}, {"b", 3}}, 1, 0},
    {"DotProduct", {{"a"}, {"a"}}, {}, {{"a", 9}}, 1, 0},
    {"Elementwise",
     {{"a", "b"}, {"a", "b"}},
     {"a", "b"},
     {{"a", 3}, {"b", 4}},
     1,
     0},
    {"OneOperandTranspose",
     {{"a", "b"}},
     {"b", "a"},
     {{"a", 3}, {"b", 5}},
     0,
     1},
    {"OneOperandReduce",
     {{"a", "b", "c"}},
     {"c", "a"},
     {{"a", 3}, {"b", 5}, {"c", 2}},
     0,
     1},
    {"ThreeOperandChain",
     {{"a", "b"}, {"b", "c"}, {"c", "d"}},
     {"a", "d"},
     {{"a", 3}, {"b", 4}, {"c", 5}, {"d", 2}},
     2,
     0},
    {"ThreeOperandsSharedDim",
     {{"a", "b"}, {"b"}, {"a"}},
     {"a"},
     {{"a", 6}, {"b", 4}},
     2,
     0},
    {"EmptyContraction",
     {{"b", "i"}, {"i", "h"}},
     {"b", "h"},
     {{"b", 2}, {"i", 0}, {"h", 3}},
     1,
     0},
    {"EmptyOutput",
     {{"b", "i"}, {"i", "h"}},
     {"b", "h"},
     {{"b", 0}, {"i", 4}, {"h", 3}},
     1,
     0},
    {"Larger",
     {{"b", "i"}, {"i", "h"}},
     {"b", "h"},
     {{"b", 32}, {"i", 48}, {"h", 40}},
     1,
     0},
    {"LargerOddSizesBatched",
     {{"h", "b", "k"}, {"h", "k", "o"}},
     {"b", "h", "o"},
     {{"b", 33}, {"k", 47}, {"o", 29}, {"h", 3}},
     1,
     1},
};

TEST_P(Conformance, Einsum_MatchesNaiveEinsumInEveryFloatType) {
  for (const EinsumCase &c : kCases)
    for (const std::string &dtype : kFloatTypes) {
      SCOPED_TRACE(std::string(c.name) + " " + dtype);
      StepHarness h = steps();
      std::vector<std::vector<float>> data;
      nlohmann::json inputs = nlohmann::json::array();
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        data.push_back(
            roundedTo(dtype, testData("in" + std::to_string(i),
                                      countOf(c.inputs[i], c.sizes))));
        inputs.push_back(operand(h.floats(dtype, data.back()), c.inputs[i]));
      }
      int64_t out =
          h.floats(dtype, std::vector<float>(countOf(c.out, c.sizes), 7.0f));
      nlohmann::json step = {{"op", "einsum"},
                             {"in", inputs},
                             {"out", operand(out, c.out)},
                             {"sizes", c.sizes}};
      if (dtype == "f32") {
        Program program = h.load(step);
        int gemms = 0, reshapes = 0;
        for (const EinsumStage &stage :
             program.steps[0].as<EinsumAttrs>().plan.stages)
          ++(stage.isGemm ? gemms : reshapes);
        EXPECT_EQ(gemms, c.gemms);
        EXPECT_EQ(reshapes, c.reshapes);
      }
      h.run(step);
      std::vector<NaiveOperand> operands;
      for (size_t i = 0; i < c.inputs.size(); ++i)
        operands.push_back({c.inputs[i], &data[i]});
      std::vector<float> naive = naiveEinsum(operands, c.out, c.sizes);
      // GEMMs add in another order than the brute force (and cuBLAS in
      // another than a CPU BLAS): 1e-4 relative in f32, then the stored
      // rounding.
      expectNear(h.readFloats(out),
                 std::vector<double>(naive.begin(), naive.end()),
                 dtype == "f32" ? 1e-4 : storedTolerance(dtype));
    }
}

TEST_P(Conformance, Einsum_Bf16OperandsAreWidenedAndTheResultRoundedOnce) {
  // Multiples of 1/8 below 16: exact in bf16, and so are their products and
  // sums in f32, so the einsum's result is exact before its rounding.
  std::vector<float> a, w;
  for (int k = 0; k < 12; ++k)
    a.push_back(static_cast<float>(k % 7 - 3) / 8);
  for (int k = 0; k < 8; ++k)
    w.push_back(static_cast<float>(k % 5 + 1) / 4);
  StepHarness h = steps();
  int64_t ab = h.half("bf16", a), wb = h.half("bf16", w);
  int64_t out = h.half("bf16", std::vector<float>(6));
  h.run({{"op", "einsum"},
         {"in", {operand(ab, {"b", "k"}), operand(wb, {"k", "h"})}},
         {"out", operand(out, {"b", "h"})},
         {"sizes", {{"b", 3}, {"k", 4}, {"h", 2}}}});
  std::vector<float> want;
  for (int b = 0; b < 3; ++b)
    for (int k = 0; k < 2; ++k) {
      float sum = 0;
      for (int i = 0; i < 4; ++i)
        sum += a[b * 4 + i] * w[i * 2 + k];
      want.push_back(meshc::half::roundToBf16(sum));
    }
  EXPECT_EQ(h.readHalf(out), want);
}

} // namespace
