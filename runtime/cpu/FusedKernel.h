//===- FusedKernel.h - The CPU's fused steps --------------------*- C++ -*-===//
//
// Runs a fused step's body (FusedStep.h) row by row of its plan: each inner
// run (a block of at most FusedPlan::kBlock elements when the body does not
// reduce, else a whole row) is read once, every instruction runs on it as
// a vector (VectorMath.h) or, for values the same all along it, as a
// scalar, and the outputs are written once. A bf16 or f16 operand is read
// and written as it is: widened into an f32 vector as its run is read,
// rounded as it is written; a value marked FusedInstr::round is rounded to
// that type once computed, as the unfused step would store it.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CPU_FUSEDKERNEL_H
#define MESHC_RUNTIME_CPU_FUSEDKERNEL_H

#include "runtime/Program.h"

namespace meshc::runtime {

/// Runs units [begin, end) of FusedPlan::units() of `attrs` with inputs
/// `in` (one pointer per Step::in) and outputs `out` (one per
/// FusedAttrs::outs), each holding elements of its FusedAttrs::types;
/// `scratch` holds the plan's vectors for this thread
/// (FusedPlan::scratchFloats). Units are independent: threads may run
/// disjoint ranges at once, each with its own scratch.
void fusedKernel(const FusedAttrs &attrs, const std::vector<const char *> &in,
                 const std::vector<char *> &out, float *scratch, int64_t begin,
                 int64_t end);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_CPU_FUSEDKERNEL_H
