//===- MachineProfileTest.cpp - Machine profiles and their errors ---------===//

#include "ErrorMatchers.h"

#include "runtime/core/cost/MachineProfile.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace meshc::cost {
namespace {

constexpr const char *kMinimal = R"({
  "name": "box",
  "gemm_flops": {"f32": 1e11},
  "vector_flops": 2e10,
  "memory_bandwidth": 1e10,
  "links": {"intra_node": {"latency": 1e-6, "bandwidth": 5e9}}
})";

TEST(MachineProfileTest, AMinimalProfileGetsItsDefaults) {
  auto profile = parseMachineProfile(kMinimal, "box.json");
  ASSERT_TRUE(profile.ok()) << profile.error().str();
  EXPECT_TRUE(profile->overlapsCommunication); // the default
  EXPECT_FALSE(profile->treeAllReduce);        // rings only
  EXPECT_EQ(profile->name, "box");
  EXPECT_EQ(profile->gemmF32, 1e11);
  EXPECT_EQ(profile->gemmBf16, 1e11);
  EXPECT_EQ(profile->vectorFlops, 2e10);
  EXPECT_EQ(profile->fusedFlops, 2e10);  // the vector rate
  EXPECT_EQ(profile->attentionFlops, 0); // the GEMM rate of its type
  EXPECT_EQ(profile->memoryBandwidth, 1e10);
  EXPECT_EQ(profile->stepOverhead, 0);
  EXPECT_EQ(profile->devicesPerNode, 1);
  EXPECT_EQ(profile->intraNode.latency, 1e-6);
  EXPECT_EQ(profile->interNode.bandwidth, 5e9);
}

TEST(MachineProfileTest, EveryPresetParsesAndSaysWhereEachFigureIsFrom) {
  std::vector<std::string> names = machinePresetNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), kDefaultMachine),
            names.end());
  for (const std::string &name : names) {
    auto profile = loadMachineProfile(name);
    ASSERT_TRUE(profile.ok()) << name << ": " << profile.error().str();
    EXPECT_EQ(profile->name, name);
    for (const char *figure :
         {"gemm_flops.f32", "gemm_flops.bf16", "vector_flops",
          "memory_bandwidth", "step_overhead", "gemm_call_overhead",
          "run_overhead", "links.intra_node.latency",
          "links.intra_node.bandwidth"})
      EXPECT_TRUE(profile->sources.count(figure))
          << name << " says nothing of where " << figure << " is from";
  }
  auto h100 = loadMachineProfile("h100-sxm");
  ASSERT_TRUE(h100.ok());
  EXPECT_EQ(h100->devicesPerNode, 8);
  EXPECT_EQ(h100->gemmBf16, 9.89e14);
  EXPECT_EQ(h100->interNode.bandwidth, 5e10);
  // NCCL communicates beside the compute stream; the 2-core VM's cores do
  // both (meshrun --overlap auto runs started collectives where they start).
  EXPECT_TRUE(h100->overlapsCommunication);
  // NCCL all-reduces across nodes with trees, and says where that is from.
  EXPECT_TRUE(h100->treeAllReduce);
  EXPECT_TRUE(h100->sources.count("tree_all_reduce"));
  auto vm = loadMachineProfile("epyc-2core-threads");
  ASSERT_TRUE(vm.ok());
  EXPECT_FALSE(vm->overlapsCommunication);
  EXPECT_FALSE(vm->treeAllReduce);
}

TEST(MachineProfileTest, ErrorsNameThePlaceAndTheValue) {
  EXPECT_LAYOUT_ERROR(
      parseMachineProfile(R"({"name": "x", "gemm_flop": 1})", "m.json"),
      "unknown key \"gemm_flop\" in the profile",
      "did you mean \"gemm_flops\"? the known keys are \"name\", "
      "\"description\", \"devices_per_node\", \"gemm_flops\", "
      "\"vector_flops\", \"fused_flops\", \"attention_flops\", "
      "\"memory_bandwidth\", \"step_overhead\", "
      "\"gemm_call_overhead\", \"run_overhead\", "
      "\"overlaps_communication\", \"tree_all_reduce\", \"links\" and "
      "\"sources\"",
      1, 15);
  std::string overlaps = kMinimal;
  overlaps.replace(overlaps.find("\"name\""), 6,
                   "\"overlaps_communication\": 1, \"name\"");
  EXPECT_LAYOUT_ERROR(
      parseMachineProfile(overlaps, "m.json"),
      "\"overlaps_communication\": expected true or false, got 1", "", 2, 29);
  std::string tree = kMinimal;
  tree.replace(tree.find("\"name\""), 6,
               "\"tree_all_reduce\": \"yes\", \"name\"");
  EXPECT_LAYOUT_ERROR(
      parseMachineProfile(tree, "m.json"),
      "\"tree_all_reduce\": expected true or false, got \"yes\"", "", 2, 22);
  std::string negative = kMinimal;
  negative.replace(negative.find("2e10"), 4, "-2e0");
  EXPECT_LAYOUT_ERROR(parseMachineProfile(negative, "m.json"),
                      "\"vector_flops\": expected a positive number, got -2.0",
                      "", 4, 19);
  EXPECT_LAYOUT_ERROR(
      parseMachineProfile(R"({"gemm_flops": {"f32": 1}})", "m.json"),
      "the profile has no \"name\"",
      "a profile looks like {\"name\": \"box\", \"gemm_flops\": {\"f32\": "
      "1e11}, \"vector_flops\": 2e10, \"memory_bandwidth\": 1e10, \"links\": "
      "{\"intra_node\": {\"latency\": 1e-6, \"bandwidth\": 5e9}}} "
      "(docs/cost.md)",
      1, 1);
  std::string text = kMinimal;
  text.replace(text.find("\"latency\": 1e-6"), 15, "\"latency\": \"1\"");
  EXPECT_LAYOUT_ERROR(
      parseMachineProfile(text, "m.json"),
      "\"links\".\"intra_node\".\"latency\": expected a number >= 0, got \"1\"",
      "", 6, 39);
  std::string perNode = kMinimal;
  perNode.replace(perNode.find("\"name\""), 6,
                  "\"devices_per_node\": 2.5, \"name\"");
  EXPECT_LAYOUT_ERROR(
      parseMachineProfile(perNode, "m.json"),
      "\"devices_per_node\": expected a whole number of devices, got 2.5", "",
      2, 23);
  auto invalid = parseMachineProfile("{\"name\": }", "m.json");
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.error().message.rfind("invalid JSON: ", 0), 0u);
  EXPECT_EQ(invalid.error().source, "m.json");
}

TEST(MachineProfileTest, AnUnknownNameListsThePresets) {
  auto missing = loadMachineProfile("/nonexistent/tpu.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            "no machine preset named '/nonexistent/tpu.json' and no such "
            "file: No such file or directory");
  EXPECT_NE(missing.error().hint.find("h100-sxm"), std::string::npos)
      << missing.error().hint;
}

} // namespace
} // namespace meshc::cost
