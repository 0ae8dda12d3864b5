//===- CostModelTest.cpp - The cost model's formulas ----------------------===//

#include "runtime/core/cost/CostModel.h"

#include <gtest/gtest.h>

namespace meshc::cost {
namespace {

MachineProfile machine() {
  MachineProfile m;
  m.name = "test";
  m.gemmF32 = 1e12;
  m.gemmBf16 = 4e12;
  m.vectorFlops = 1e11;
  m.fusedFlops = 5e10;
  m.memoryBandwidth = 1e11;
  m.stepOverhead = 1e-6;
  m.devicesPerNode = 8;
  m.intraNode = {2e-6, 1e11};
  m.interNode = {1e-5, 1e10};
  return m;
}

layout::Mesh mesh(const char *text) { return *layout::Mesh::parse(text); }

TEST(CostModelTest, AStepIsARooflinePlusItsOverhead) {
  MachineProfile m = machine();
  // 2 GFLOP of f32 GEMM over 4 MB: compute-bound, 2 ms.
  EXPECT_DOUBLE_EQ(stepSeconds(m, {2e9, 4e6, true, false}), 1e-6 + 2e-3);
  // The same in bf16: four times the rate.
  EXPECT_DOUBLE_EQ(stepSeconds(m, {2e9, 4e6, true, true}), 1e-6 + 5e-4);
  // An elementwise step of 1 M elements, 12 MB: memory-bound, 120 us.
  EXPECT_DOUBLE_EQ(stepSeconds(m, {1e6, 1.2e7, false, false}), 1e-6 + 1.2e-4);
  // A batched einsum of 64 GEMMs pays each call's overhead; an
  // elementwise step never does.
  m.gemmCallOverhead = 2e-7;
  EXPECT_DOUBLE_EQ(stepSeconds(m, {2e6, 1e3, true, false, 64}),
                   1e-6 + 64 * 2e-7 + 2e-6);
  EXPECT_DOUBLE_EQ(stepSeconds(m, {1e3, 1e3, false, false, 64}), 1e-6 + 1e-8);
  // A fused step of 1 M elements times 20 body ops: at the fused rate
  // (5e10), 400 us, over its 12 MB at the bandwidth (120 us).
  EXPECT_DOUBLE_EQ(stepSeconds(m, {2e7, 1.2e7, false, false, 1, true}),
                   1e-6 + 4e-4);
  // Fused attention: 2 GFLOP at the GEMM rate of its type (one call)...
  StepWork attention{2e9, 4e6, true, true, 1, false, true};
  EXPECT_DOUBLE_EQ(stepSeconds(m, attention), 1e-6 + 2e-7 + 5e-4);
  // ... or at the profile's attention rate where it has one.
  m.attentionFlops = 2e11;
  EXPECT_DOUBLE_EQ(stepSeconds(m, attention), 1e-6 + 2e-7 + 1e-2);
}

TEST(CostModelTest, APredictionAddsItsParts) {
  Prediction p;
  p.compute = 1e-3;
  p.communication = 2e-4;
  p.overhead = 5e-5;
  EXPECT_DOUBLE_EQ(p.total(), 1.25e-3);
}

TEST(CostModelTest, CollectivesCostRingStepsAndReceivedBytes) {
  Link link{2e-6, 1e9};
  using layout::CollectiveKind;
  EXPECT_EQ(ringSteps(CollectiveKind::AllReduce, 4), 6);
  EXPECT_EQ(ringSteps(CollectiveKind::AllGather, 4), 3);
  EXPECT_EQ(ringSteps(CollectiveKind::Slice, 4), 0);
  EXPECT_EQ(ringSteps(CollectiveKind::AllReduce, 1), 0);
  // 16 KiB all-reduced over 4: 6 steps and 2·3/4·16 KiB = 24 KiB received.
  EXPECT_DOUBLE_EQ(collectiveSeconds(CollectiveKind::AllReduce, 16384, 4, link),
                   6 * 2e-6 + 24576 / 1e9);
  EXPECT_DOUBLE_EQ(collectiveSeconds(CollectiveKind::AllGather, 4096, 4, link),
                   3 * 2e-6 + 3072 / 1e9);
  EXPECT_DOUBLE_EQ(
      collectiveSeconds(CollectiveKind::ReduceScatter, 4096, 2, link),
      2e-6 + 2048 / 1e9);
  EXPECT_DOUBLE_EQ(collectiveSeconds(CollectiveKind::AllToAll, 800, 8, link),
                   7 * 2e-6 + 700 / 1e9);
  EXPECT_EQ(collectiveSeconds(CollectiveKind::AllReduce, 1 << 20, 1, link), 0);
  // A collective-permute (a shift's halo) receives one block in one step.
  EXPECT_EQ(ringSteps(CollectiveKind::Permute, 8), 1);
  EXPECT_DOUBLE_EQ(collectiveSeconds(CollectiveKind::Permute, 4096, 8, link),
                   2e-6 + 4096 / 1e9);
  EXPECT_EQ(collectiveSeconds(CollectiveKind::Permute, 4096, 1, link), 0);
}

TEST(CostModelTest, ATreeAllReduceTakesLogarithmicSteps) {
  Link link{1e-5, 1e9};
  using layout::CollectiveKind;
  EXPECT_EQ(treeSteps(1), 0);
  EXPECT_EQ(treeSteps(2), 2);
  EXPECT_EQ(treeSteps(5), 6);
  EXPECT_EQ(treeSteps(512), 18);
  // 4 bytes over 512 devices: 18 steps where the ring takes 1022; the same
  // bytes received.
  auto bytes = static_cast<double>(
      layout::collectiveBytesPerDevice(CollectiveKind::AllReduce, 4, 512));
  EXPECT_DOUBLE_EQ(collectiveSeconds(CollectiveKind::AllReduce, 4, 512, link),
                   1022 * 1e-5 + bytes / 1e9);
  EXPECT_DOUBLE_EQ(
      collectiveSeconds(CollectiveKind::AllReduce, 4, 512, link, true),
      18 * 1e-5 + bytes / 1e9);
  // Over 2 the ring is no longer; other kinds ring.
  EXPECT_DOUBLE_EQ(
      collectiveSeconds(CollectiveKind::AllReduce, 4096, 2, link, true),
      collectiveSeconds(CollectiveKind::AllReduce, 4096, 2, link));
  EXPECT_DOUBLE_EQ(
      collectiveSeconds(CollectiveKind::AllGather, 4096, 512, link, true),
      collectiveSeconds(CollectiveKind::AllGather, 4096, 512, link));
}

TEST(CostModelTest, AGroupInsideOneNodeTakesTheNodesLink) {
  MachineProfile m = machine();
  // 16 nodes of 8: the minor axis m stays in a node, b crosses nodes.
  layout::Mesh big = mesh("b:16;m:8");
  EXPECT_EQ(&linkOf(m, big, {1}), &m.intraNode);
  EXPECT_EQ(&linkOf(m, big, {0}), &m.interNode);
  EXPECT_EQ(&linkOf(m, big, {0, 1}), &m.interNode);
  // Device a·8 + b·4 + c: groups along c (4 consecutive devices) and along
  // b (devices 4 apart) stay in node a; groups along a cross nodes.
  layout::Mesh mid = mesh("a:4;b:2;c:4");
  EXPECT_EQ(&linkOf(m, mid, {2}), &m.intraNode);
  EXPECT_EQ(&linkOf(m, mid, {1}), &m.intraNode);
  EXPECT_EQ(&linkOf(m, mid, {0}), &m.interNode);
  // A mesh that fits one node never leaves it.
  EXPECT_EQ(&linkOf(m, mesh("b:2;m:4"), {0, 1}), &m.intraNode);
}

TEST(CostModelTest, FormatsSeconds) {
  EXPECT_EQ(formatSeconds(850e-9), "850 ns");
  EXPECT_EQ(formatSeconds(12.34e-6), "12.3 us");
  EXPECT_EQ(formatSeconds(4.567e-3), "4.57 ms");
  EXPECT_EQ(formatSeconds(1.234), "1.23 s");
}

TEST(CostModelTest, ParsesMemorySizes) {
  EXPECT_EQ(*parseMemorySize("80GiB"), 80LL << 30);
  EXPECT_EQ(*parseMemorySize(" 64 GiB "), 64LL << 30);
  EXPECT_EQ(*parseMemorySize("1.5TiB"), 3LL << 39);
  EXPECT_EQ(*parseMemorySize("512MB"), 512000000);
  EXPECT_EQ(*parseMemorySize("2KiB"), 2048);
  EXPECT_EQ(*parseMemorySize("1000000"), 1000000);
  EXPECT_EQ(*parseMemorySize("7B"), 7);
}

TEST(CostModelTest, RefusesBadMemorySizes) {
  for (const char *text : {"", "GiB", "-1GiB", "0", "0GiB", "1.2.3GiB", "."})
    EXPECT_EQ(parseMemorySize(text).error().message,
              std::string("expected a positive size such as 80GiB, got '") +
                  text + "'")
        << text;
  layout::Result<int64_t> unit = parseMemorySize("80gb");
  ASSERT_FALSE(unit.ok());
  EXPECT_EQ(unit.error().message, "unknown unit 'gb' in '80gb'");
  EXPECT_EQ(unit.error().hint, "use B, KiB, MiB, GiB, TiB (or KB, MB, GB, TB)");
  EXPECT_EQ(parseMemorySize("9000000TiB").error().message,
            "the size '9000000TiB' is too large");
  EXPECT_EQ(parseMemorySize("0.5").error().message,
            "the size '0.5' is less than a byte");
}

} // namespace
} // namespace meshc::cost
