//===- MachineProfile.h - What a machine computes and moves, per second -*- C++
//-*-===//
//
// The figures the cost model (CostModel.h) predicts step times from: a
// device's GEMM and vector rates and memory bandwidth, what launching one
// step costs, and the two links between devices (inside a node and between
// nodes) as latency α and bandwidth. Profiles are JSON files (docs/cost.md);
// the presets (cost/machines/*.json: this development CPU, measured by
// meshc-calibrate, and an H100 SXM node from published figures) are built
// into the library. Like the rest of the core, errors are values.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CORE_COST_MACHINEPROFILE_H
#define MESHC_RUNTIME_CORE_COST_MACHINEPROFILE_H

#include "runtime/core/layout/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace meshc::cost {

/// A link between the devices of a collective: α, the seconds one step of a
/// ring algorithm costs besides the bytes, and the bytes per second a device
/// sends (and receives) on it.
struct Link {
  double latency = 0;
  double bandwidth = 0;
};

struct MachineProfile {
  std::string name;
  std::string description;
  /// Per device: GEMM FLOP/s in f32 and in bf16 (inputs bf16, f32
  /// accumulation), elementwise FLOP/s, and memory bytes per second.
  double gemmF32 = 0;
  double gemmBf16 = 0;
  double vectorFlops = 0;
  double memoryBandwidth = 0;
  /// Per device: body ops per second of a fused step (one per element per
  /// op): the vector rate where a fused step is one kernel (a GPU); on the
  /// CPU, whose fused steps run an instruction at a time over rows, what
  /// meshc-calibrate measures ("fused_flops"; default vectorFlops).
  double fusedFlops = 0;
  /// Per device: FLOP/s of fused attention (its GEMM FLOPs, as the model
  /// counts them): 0 where a profile lacks "attention_flops", for the GEMM
  /// rate of its inputs' type (a tensor-core kernel); on the CPU, whose
  /// attention kernel is not BLAS, what meshc-calibrate measures.
  double attentionFlops = 0;
  /// Seconds every launched step costs besides its work (a kernel launch,
  /// a step's dispatch on the CPU).
  double stepOverhead = 0;
  /// Seconds each run of a program (a training step) costs besides its
  /// steps: starting the devices' work and waiting for all of them.
  double runOverhead = 0;
  /// Seconds each GEMM call of a batched einsum costs besides its FLOPs (the
  /// CPU calls BLAS once per batch element; a GPU's strided-batched GEMM is
  /// one call, so 0 there).
  double gemmCallOverhead = 0;
  /// Whether communication runs beside compute on this machine, so that a
  /// started collective (meshc's mtf-overlap-collectives) hides behind the
  /// steps up to its wait ("overlaps_communication"; default true: NCCL on
  /// a stream of its own, a NIC). False where the collectives are work of
  /// the computing cores and meshrun --overlap auto runs them where they
  /// start: the cost model then prices them as blocking.
  bool overlapsCommunication = true;
  /// Whether the collective library all-reduces across nodes with a tree
  /// where that is faster than a ring ("tree_all_reduce"; default false):
  /// NCCL's double binary trees, 2 ceil(log2 g) latency steps at the ring's
  /// bandwidth (CostModel.h treeSteps).
  bool treeAllReduce = false;
  /// Devices numbered 0..n-1 fill nodes of this many in order.
  int64_t devicesPerNode = 1;
  Link intraNode;
  Link interNode;
  /// Where each figure comes from, by its JSON path ("gemm_flops.bf16").
  std::map<std::string, std::string> sources;
};

/// Parses a profile; errors name the file, the JSON path and the line and
/// column of the offending value.
layout::Result<MachineProfile> parseMachineProfile(std::string_view text,
                                                   std::string_view fileName);

/// The built-in profile `name` (a preset), or else the profile in file
/// `name`.
layout::Result<MachineProfile> loadMachineProfile(const std::string &name);

/// The names of the presets, sorted.
std::vector<std::string> machinePresetNames();

/// The preset a --machine flag defaults to.
constexpr const char *kDefaultMachine = "h100-sxm";

} // namespace meshc::cost

#endif // MESHC_RUNTIME_CORE_COST_MACHINEPROFILE_H
