//===- Timeline.h - The predicted step as a Chrome trace --------*- C++ -*-===//
//
// meshc --timeline FILE: one run of a partitioned program as the cost model
// predicts it (ProgramCost.h), in the Chrome trace event format meshrun
// --trace writes (chrome://tracing, ui.perfetto.dev), so the predicted and
// the measured step open side by side. Every device runs the same steps, so
// one device is drawn: each step a complete ("X") event named by its .mprog
// op, with meshrun's categories, its source location, a loop body's
// iteration, and a collective's bytes and mesh axes. Collectives block, as
// the runtimes run them today, so steps follow each other; the run overhead
// closes the run.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_LOWERING_TIMELINE_H
#define MESHC_LOWERING_TIMELINE_H

#include "runtime/core/cost/MachineProfile.h"
#include "runtime/core/layout/Mesh.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace meshc {

/// Writes the predicted timeline of one run of the program in `spmd` on
/// `mesh` and `machine` to `os`.
void writePredictedTimeline(mlir::ModuleOp spmd, const layout::Mesh &mesh,
                            const cost::MachineProfile &machine,
                            llvm::raw_ostream &os);

} // namespace meshc

#endif // MESHC_LOWERING_TIMELINE_H
