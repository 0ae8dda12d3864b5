//===- CostModel.h - Predicted step time from work and bytes ----*- C++ -*-===//
//
// The cost model of docs/cost.md, in plain formulas over a MachineProfile:
// a step's compute time is a roofline (FLOPs at the GEMM or vector rate,
// or bytes at the memory bandwidth, whichever is slower) plus the step's
// launch overhead; a collective's time is α per ring step plus the bytes a
// device receives (layout::collectiveBytesPerDevice: the ring factors) over
// the bandwidth of the slowest link its groups cross. A program's time is
// the sum: no overlap of compute and communication is assumed.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CORE_COST_COSTMODEL_H
#define MESHC_RUNTIME_CORE_COST_COSTMODEL_H

#include "runtime/core/cost/MachineProfile.h"
#include "runtime/core/layout/Mesh.h"
#include "runtime/core/layout/ReshardPlan.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace meshc::cost {

/// The work of one launched step on one device.
struct StepWork {
  double flops = 0;
  /// Bytes read and written in memory.
  double bytes = 0;
  /// A GEMM (runs at the GEMM rate), else elementwise (the vector rate).
  bool gemm = false;
  /// GEMM inputs in bf16 (the bf16 rate).
  bool bf16 = false;
  /// The GEMM calls of a batched einsum (its batch: the product of the
  /// dims every operand and the result have).
  double gemmCalls = 1;
  /// A fused step: its FLOPs at the fused rate (MachineProfile::fusedFlops).
  bool fused = false;
  /// Fused attention: its FLOPs at MachineProfile::attentionFlops where the
  /// profile has it.
  bool attention = false;
};

/// Seconds `work` takes on a device of `machine`: the step overhead, the
/// GEMM calls' overhead, and the slower of FLOPs at the rate and bytes at
/// the memory bandwidth.
double stepSeconds(const MachineProfile &machine, const StepWork &work);

/// The link a collective over `axes` of `mesh` crosses: inside a node when
/// every group of devices that differ only along `axes` lies in one node
/// (devices fill nodes of devicesPerNode in order, first axis most
/// significant), else between nodes.
const Link &linkOf(const MachineProfile &machine, const layout::Mesh &mesh,
                   const std::vector<size_t> &axes);

/// The ring steps of a collective over `group` devices: 2(g-1) for an
/// all-reduce, 1 for a permute, g-1 for the others, 0 for a slice or a
/// group of one.
int64_t ringSteps(layout::CollectiveKind kind, int64_t group);

/// The latency steps of a tree all-reduce over `group` devices (a double
/// binary tree: up and down, 2 ceil(log2 g)); 0 for a group of one.
int64_t treeSteps(int64_t group);

/// Seconds a collective of `kind` takes on `link` whose local buffer holds
/// `bytes` (the output for an all-gather, else the input) over `group`
/// devices. With `tree`, an all-reduce takes the tree's latency steps where
/// they are fewer than the ring's (the bytes are the ring's: a double
/// binary tree moves them at full bandwidth).
double collectiveSeconds(layout::CollectiveKind kind, int64_t bytes,
                         int64_t group, const Link &link, bool tree = false);

/// A program's predicted time per run, in parts: its steps' compute, its
/// collectives, and the machine's run overhead.
struct Prediction {
  double compute = 0;
  double communication = 0;
  /// The part of `communication` that runs beside compute (started
  /// collectives), not adding to the step.
  double hidden = 0;
  double overhead = 0;
  int64_t steps = 0;
  int64_t collectives = 0;
  /// The communication the step waits for.
  double exposed() const { return communication - hidden; }
  double total() const { return compute + exposed() + overhead; }
};

/// "850 ns", "12.3 us", "4.56 ms", "1.23 s".
std::string formatSeconds(double seconds);

/// "512 B", "1.5 KiB", "68.8 GiB": binary units, one decimal.
std::string formatBytes(int64_t bytes);

/// Parses a memory size: a positive number and an optional unit, binary
/// (KiB, MiB, GiB, TiB) or decimal (KB, MB, GB, TB) or B; no unit means
/// bytes. "80GiB", "64 GiB", "1.5TiB", "512MB", "1000000". Fractions of a
/// byte are dropped.
layout::Result<int64_t> parseMemorySize(std::string_view text);

} // namespace meshc::cost

#endif // MESHC_RUNTIME_CORE_COST_COSTMODEL_H
