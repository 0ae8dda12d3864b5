//===- Explain.h - meshc --explain ------------------------------*- C++ -*-===//
//
// The human-readable report of what a layout does to a program: each
// tensor's layout, its per-device slice and bytes, and per-device memory.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_DRIVER_EXPLAIN_H
#define MESHC_COMPILER_DRIVER_EXPLAIN_H

#include "dialect/MtfDialect.h"
#include "lowering/EmitMprog.h"
#include "runtime/core/cost/CostModel.h"
#include "runtime/core/cost/MachineProfile.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace meshc {

/// The device scratch the runtime sizes for an emitted .mprog: its loader
/// plans each step's temporaries (einsum staging, f32 copies of bf16
/// operands) and a device holds the largest. `error` is set instead where the
/// loader rejects the program (a compiler bug: it checks what meshc emits).
struct ScratchPlan {
  int64_t bytes = 0;
  std::string error;
};
ScratchPlan planScratch(const llvm::json::Value &mprog);

/// Prints the per-tensor layout table and memory summary of `program`, whose
/// ops must carry `mtf.layout` (see mtf-apply-layout); with `spmd`, the
/// partitioned module, also every collective it inserted (op, mesh axes,
/// bytes, predicted time, the model line that caused it and why), the
/// predicted step time on `machine` (lowering/ProgramCost.h) and the fused
/// steps; with `plan`, the planned per-device arena; with `scratch`, the
/// device scratch and the device's total. `grouped`: the tensors of a
/// repeat's instances, and identical collectives and fused steps, once
/// each with how many they stand for (meshc --explain; --explain-all lists
/// each).
void explainProgram(mlir::mtf::ProgramOp program, mlir::ModuleOp spmd,
                    const MemoryPlanStats *plan, const ScratchPlan *scratch,
                    const cost::MachineProfile &machine, bool grouped,
                    llvm::raw_ostream &os);

/// What explainProgram reports, as data (meshc --explain=json,
/// docs/explain-json.md): the program, mesh, pipelines, every tensor with
/// its layout and bytes per device (a loop's body once, with how often a
/// step computes it), the per-device memory, and with `spmd` every
/// collective (a loop's once, with its count) and the prediction on
/// `machine`; the plan's figures with `plan`, the scratch with `scratch`.
llvm::json::Value explanationJson(mlir::mtf::ProgramOp program,
                                  mlir::ModuleOp spmd,
                                  const MemoryPlanStats *plan,
                                  const ScratchPlan *scratch,
                                  const cost::MachineProfile &machine);

/// "12 B", "4.0 KiB", "1.5 MiB", ... (one home: the cost library).
using cost::formatBytes;

} // namespace meshc

#endif // MESHC_COMPILER_DRIVER_EXPLAIN_H
