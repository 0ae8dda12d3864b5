//===- CostModel.cpp - Predicted step time from work and bytes ------------===//

#include "runtime/core/cost/CostModel.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace meshc::cost {

double stepSeconds(const MachineProfile &machine, const StepWork &work) {
  double rate = work.attention && machine.attentionFlops > 0
                    ? machine.attentionFlops
                : work.fused ? machine.fusedFlops
                : !work.gemm ? machine.vectorFlops
                : work.bf16  ? machine.gemmBf16
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
  if (kind == layout::CollectiveKind::Permute)
    return 1;
  return kind == layout::CollectiveKind::AllReduce ? 2 * (group - 1)
                                                   : group - 1;
}

int64_t treeSteps(int64_t group) {
  int64_t depth = 0;
  while ((int64_t(1) << depth) < group)
    ++depth;
  return 2 * depth;
}

double collectiveSeconds(layout::CollectiveKind kind, int64_t bytes,
                         int64_t group, const Link &link, bool tree) {
  double received =
      static_cast<double>(layout::collectiveBytesPerDevice(kind, bytes, group));
  int64_t steps = ringSteps(kind, group);
  if (tree && kind == layout::CollectiveKind::AllReduce)
    steps = std::min(steps, treeSteps(group));
  return static_cast<double>(steps) * link.latency + received / link.bandwidth;
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

std::string formatBytes(int64_t bytes) {
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  static const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = -1;
  do {
    value /= 1024.0;
    ++unit;
  } while (value >= 1024.0 && unit < 3);
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

layout::Result<int64_t> parseMemorySize(std::string_view text) {
  auto isSpace = [](char c) {
    return std::isspace(static_cast<unsigned char>(c));
  };
  std::string_view rest = text;
  while (!rest.empty() && isSpace(rest.front()))
    rest.remove_prefix(1);
  while (!rest.empty() && isSpace(rest.back()))
    rest.remove_suffix(1);
  size_t digits = 0;
  while (digits < rest.size() &&
         (std::isdigit(static_cast<unsigned char>(rest[digits])) ||
          rest[digits] == '.'))
    ++digits;
  std::string number(rest.substr(0, digits));
  char *end = nullptr;
  double value = digits ? std::strtod(number.c_str(), &end) : 0;
  if (digits == 0 || end != number.c_str() + number.size() ||
      !std::isfinite(value) || value <= 0)
    return layout::Error("expected a positive size such as 80GiB, got '" +
                         std::string(text) + "'");
  std::string_view unit = rest.substr(digits);
  while (!unit.empty() && isSpace(unit.front()))
    unit.remove_prefix(1);
  static const std::pair<const char *, double> units[] = {
      {"", 1},
      {"B", 1},
      {"KiB", 1024.0},
      {"MiB", 1048576.0},
      {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0},
      {"KB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"TB", 1e12}};
  for (const auto &[name, scale] : units)
    if (unit == name) {
      double bytes = value * scale;
      if (bytes >= 9.2e18)
        return layout::Error("the size '" + std::string(text) +
                             "' is too large");
      if (bytes < 1)
        return layout::Error("the size '" + std::string(text) +
                             "' is less than a byte");
      return static_cast<int64_t>(bytes);
    }
  return layout::Error("unknown unit '" + std::string(unit) + "' in '" +
                           std::string(text) + "'",
                       "use B, KiB, MiB, GiB, TiB (or KB, MB, GB, TB)");
}

} // namespace meshc::cost
