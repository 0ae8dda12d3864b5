//===- ProgramCost.h - Predicted time of a partitioned program --*- C++ -*-===//
//
// The cost model (runtime/core/cost) applied to a partitioned module: each
// op that becomes a launched step (what EmitMprog emits: not params, inputs,
// outputs or views) gets its work on one device -- an einsum 2·∏(its dims)
// FLOPs at the GEMM rate, a fused step one FLOP per body op and element,
// any other step one FLOP per element, each moving its operands' and
// results' bytes -- and each collective its ring time on the link its
// groups cross. Under device weights the profile is the heaviest device and
// a step takes its slowest device's time: work replicated over a weighted
// axis is max/min weight slower. A loop's body is predicted once and
// counted once per iteration; with microbatches the forward and backward
// steps once per microbatch. docs/cost.md states the model and its limits.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_LOWERING_PROGRAMCOST_H
#define MESHC_LOWERING_PROGRAMCOST_H

#include "runtime/core/StepKinds.h"
#include "runtime/core/cost/CostModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <algorithm>
#include <array>
#include <vector>

namespace meshc {

/// One collective of a partitioned program and its predicted time.
struct CollectiveCost {
  mlir::Operation *op = nullptr;
  layout::CollectiveKind kind = layout::CollectiveKind::AllReduce;
  std::vector<size_t> axes;
  /// The local input's bytes, and what each device receives.
  int64_t inBytes = 0;
  int64_t received = 0;
  int64_t group = 1;
  bool interNode = false;
  /// One run's time of this collective.
  double seconds = 0;
  /// How often a step runs it: the iterations of the loops around it.
  int64_t count = 1;
};

struct ProgramCost {
  cost::Prediction prediction;
  std::vector<CollectiveCost> collectives;
  /// The microbatches of a training step (mtf.training's "microbatches"):
  /// its forward and backward steps, collectives included, are counted
  /// once per microbatch, its update steps once, and the run overhead once
  /// per run (microbatches + 1).
  int64_t microbatches = 1;
};

/// One device's clocks as the cost model runs a program's steps in order:
/// a compute stream, and one lane per link class (Link) on which that
/// class's collectives run one after another in program order: NCCL
/// communicators on a stream of their own per class, as Megatron-LM runs
/// its tensor-parallel collectives inside a node beside its data-parallel
/// ones between nodes. A blocking collective waits for its lane and holds
/// the device; a started one (mtf.wait completes it) only queues on its
/// lane; a wait holds the device until its collective is done. On a machine
/// whose communication takes the computing cores, every collective blocks.
/// (The CPU runtimes give a device one lane, runtime/CommLane.h; their
/// profiles have one link class in use or overlap nothing.)
class StepClock {
public:
  /// The link classes, one lane each.
  enum Link { InNode = 0, BetweenNodes = 1, LinkCount = 2 };
  /// The class of `collective`'s link.
  static Link linkOf(const CollectiveCost &collective) {
    return collective.interNode ? BetweenNodes : InNode;
  }

  /// `overlaps`: whether started collectives run beside the steps
  /// (MachineProfile::overlapsCommunication); without, they block.
  explicit StepClock(bool overlaps = true) : overlaps(overlaps) {}
  /// A computing step of `seconds`; returns when it starts.
  double compute(double seconds);
  /// Collective `op` of `seconds` on a link of class `link`, started (true)
  /// or blocking; returns when it starts on its lane.
  double collective(mlir::Operation *op, double seconds, bool started,
                    Link link);
  /// The wait for started collective `start`; returns when it began (its
  /// stall is now() minus that).
  double wait(mlir::Operation *start);
  /// Moves the device on by `seconds` (iterations of the steps `repeated`
  /// known to repeat), and the end of those steps' collectives in flight
  /// and of the lanes they were queued on last; a lane whose last
  /// collective started before them keeps its end.
  void advance(double seconds, llvm::ArrayRef<mlir::Operation *> repeated);
  /// When the device is free.
  double now() const { return device; }
  /// When the device and every lane are free.
  double end() const;

private:
  bool overlaps;
  double device = 0;
  std::array<double, LinkCount> lanes = {};
  /// The collective queued last on each lane (its end is the lane's).
  std::array<mlir::Operation *, LinkCount> lastOnLane = {};
  llvm::DenseMap<mlir::Operation *, double> done;
};

/// The predicted time of one run of the program in the partitioned module
/// `spmd` on `mesh`, on a machine like `machine`.
ProgramCost predictProgram(mlir::ModuleOp spmd, const layout::Mesh &mesh,
                           const cost::MachineProfile &machine);

/// The run overhead of one training step of the program in `spmd`: the
/// machine's per run, once per run (a run per microbatch and one for the
/// update with microbatches).
double stepRunOverhead(mlir::ModuleOp spmd,
                       const cost::MachineProfile &machine);

/// One step a run launches, as the cost model sees it.
struct PredictedStep {
  mlir::Operation *op = nullptr;
  runtime::OpKind kind = runtime::OpKind::Fill;
  /// Its predicted time (a collective's on its link).
  double seconds = 0;
  /// A collective's figures (count 1); null for a computing step.
  const CollectiveCost *collective = nullptr;
  /// Its innermost loop's iteration, or -1 outside loops.
  int64_t iteration = -1;
};

/// Calls `visit` for every step one run of the program in `spmd` launches,
/// in the order a device runs them: a loop's body once per iteration (last
/// first in a reverse loop). Each step's time is the one predictProgram
/// sums.
void forEachPredictedStep(
    mlir::ModuleOp spmd, const layout::Mesh &mesh,
    const cost::MachineProfile &machine,
    llvm::function_ref<void(const PredictedStep &)> visit);

} // namespace meshc

#endif // MESHC_LOWERING_PROGRAMCOST_H
