//===- EinsumTest.cpp - Einsum plans and their execution ------------------===//
//
// Each case runs an einsum step through the loader's planner and the CPU
// backend, compares it with a brute-force einsum, and pins how many GEMM and
// transpose/sum stages the plan uses (so a plain matmul stays copy-free).
//
//===----------------------------------------------------------------------===//

#include "StepHarness.h"

#include <gtest/gtest.h>

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

/// How gtest prints a case (in test listings and failures).
void PrintTo(const EinsumCase &c, std::ostream *os) { *os << c.name; }

int64_t countOf(const Names &dims, const Sizes &sizes) {
  int64_t count = 1;
  for (const std::string &dim : dims)
    count *= sizes.at(dim);
  return count;
}

class EinsumTest : public ::testing::TestWithParam<EinsumCase> {};

TEST_P(EinsumTest, MatchesNaiveEinsum) {
  const EinsumCase &c = GetParam();
  StepHarness harness;
  std::vector<std::vector<float>> data;
  nlohmann::json inputs = nlohmann::json::array();
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    data.push_back(
        testData("in" + std::to_string(i), countOf(c.inputs[i], c.sizes)));
    inputs.push_back(
        {{"buf", harness.f32(data.back())}, {"dims", c.inputs[i]}});
  }
  int64_t out = harness.f32(std::vector<float>(countOf(c.out, c.sizes), 7.0f));
  nlohmann::json step = {{"op", "einsum"},
                         {"in", inputs},
                         {"out", {{"buf", out}, {"dims", c.out}}},
                         {"sizes", c.sizes}};

  Program program = harness.load(step);
  int gemms = 0, reshapes = 0;
  for (const EinsumStage &stage :
       program.steps[0].as<EinsumAttrs>().plan.stages)
    ++(stage.isGemm ? gemms : reshapes);
  EXPECT_EQ(gemms, c.gemms);
  EXPECT_EQ(reshapes, c.reshapes);

  harness.run(step);
  std::vector<NaiveOperand> operands;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    operands.push_back({c.inputs[i], &data[i]});
  std::vector<float> expected = naiveEinsum(operands, c.out, c.sizes);
  std::vector<float> got = harness.readF32(out);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], expected[i],
                1e-4 * std::max(1.0f, std::abs(expected[i])))
        << "element " << i;
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
};

INSTANTIATE_TEST_SUITE_P(Cases, EinsumTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<EinsumCase> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
