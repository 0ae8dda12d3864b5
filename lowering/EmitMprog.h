//===- EmitMprog.h - local mtf programs to .mprog ---------------*- C++ -*-===//
//
// Translates a partitioned (local) mtf.program into the .mprog JSON the
// runtime executes (docs/mprog.md): one buffer per value, placed in a
// per-device arena by a liveness-based static memory plan, and one step per
// local op or collective.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_LOWERING_EMITMPROG_H
#define MESHC_LOWERING_EMITMPROG_H

#include "dialect/MtfDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <array>

#include <cstdint>

namespace meshc {

/// Options of the translation.
struct MprogOptions {
  /// Seed of parameter init and synthetic inputs.
  uint64_t seed = 0;
};

/// Statistics of the memory plan, for --explain.
/// What a buffer of the memory plan holds, by the op that defines it.
enum class MemoryUse {
  Parameters,
  OptimizerSlots,
  Inputs,
  /// Forward values (kept for the backward pass while they live there).
  Activations,
  /// Forward values computed again in the backward pass (mtf-remat).
  Recomputed,
  /// Gradients and the backward pass's other values.
  Backward,
  /// The optimizer update's values.
  Update,
  /// The results of collectives.
  Collectives,
};
constexpr size_t kMemoryUses = 8;
/// "parameters", "optimizer slots", ... for --explain.
const char *memoryUseName(MemoryUse use);

struct MemoryPlanStats {
  int64_t arenaBytes = 0;
  /// Sum of all buffer sizes: the arena without reuse.
  int64_t unplannedBytes = 0;
  int64_t buffers = 0;
  /// The most bytes live at one step: a lower bound of any plan's arena
  /// (the arena is larger where first-fit leaves gaps).
  int64_t peakLiveBytes = 0;
  /// The live bytes at that peak by what they hold (indexed by MemoryUse).
  std::array<int64_t, kMemoryUses> peakByUse = {};
};

/// The .mprog of the one local program in `module`; reports an error through
/// the context and fails on anything it cannot translate.
mlir::FailureOr<llvm::json::Value> emitMprog(mlir::ModuleOp module,
                                             const MprogOptions &options,
                                             MemoryPlanStats *stats = nullptr);

/// The memory plan emitMprog would make for `module`, without the rest of
/// the .mprog (what --layout auto compares with a memory limit).
mlir::FailureOr<MemoryPlanStats> planMprogMemory(mlir::ModuleOp module);

} // namespace meshc

#endif // MESHC_LOWERING_EMITMPROG_H
