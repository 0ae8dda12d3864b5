//===- CostModel.cpp - Predicted step time from work and bytes ------------===//

#include "runtime/core/cost/CostModel.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace meshc::cost {

double stepSeconds(const MachineProfile &machine, const StepWork &work) {
  double rate = !work.gemm  ? machine.vectorFlops
                : work.bf16 ? machine.gemmBf16
                            : machine.gemmF32;
  double calls = work.gemm ? work.gemmCalls * machine.gemmCallOverhead : 0;
  return machine.stepOverhead + calls +
         std::max(work.flops / rate, work.bytes / machine.memoryBandwidth);
}

const Link &linkOf(const MachineProfile &machine, const layout::Mesh &mesh,
                   const std::vector<size_t> &axes) {
  int64_t devices = mesh.numDevices();
  if (devices <= machine.devicesPerNode)
    return machine.intraNode;
  // The node of the first member of each group; a member elsewhere means
  // the group crosses nodes.
  std::map<std::vector<int64_t>, int64_t> nodeOfGroup;
  for (int64_t id = 0; id < devices; ++id) {
    std::vector<int64_t> key = mesh.coordinates(id);
    for (size_t axis : axes)
      key[axis] = 0;
    int64_t node = id / machine.devicesPerNode;
    auto [it, fresh] = nodeOfGroup.emplace(key, node);
    if (!fresh && it->second != node)
      return machine.interNode;
  }
  return machine.intraNode;
}

int64_t ringSteps(layout::CollectiveKind kind, int64_t group) {
  if (group <= 1 || kind == layout::CollectiveKind::Slice)
    return 0;
  return kind == layout::CollectiveKind::AllReduce ? 2 * (group - 1)
                                                   : group - 1;
}

double collectiveSeconds(layout::CollectiveKind kind, int64_t bytes,
                         int64_t group, const Link &link) {
  double received =
      static_cast<double>(layout::collectiveBytesPerDevice(kind, bytes, group));
  return static_cast<double>(ringSteps(kind, group)) * link.latency +
         received / link.bandwidth;
}

std::string formatSeconds(double seconds) {
  char text[32];
  if (seconds < 1e-6)
    std::snprintf(text, sizeof text, "%.0f ns", seconds * 1e9);
  else if (seconds < 1e-3)
    std::snprintf(text, sizeof text, "%.3g us", seconds * 1e6);
  else if (seconds < 1)
    std::snprintf(text, sizeof text, "%.3g ms", seconds * 1e3);
  else
    std::snprintf(text, sizeof text, "%.3g s", seconds);
  return text;
}

} // namespace meshc::cost
