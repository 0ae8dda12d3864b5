//===- EinsumPlan.h - Lowering einsums to GEMMs at load time ----*- C++ -*-===//
//
// An einsum names its dims; BLAS wants [batch, m, k] x [batch, k, n]. The
// planner classifies the dims of a pair of operands (batch: in both and the
// output; m: lhs and output; n: rhs and output; k: both, not the output),
// sums away dims that only one operand has, and inserts a transpose into the
// device scratch only when an operand or the result is in neither the plain
// nor the transposed GEMM order. More than two operands are contracted left
// to right through scratch temporaries; one operand is a transpose/sum.
// Planning happens once, at load time, so a step allocates nothing.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_EINSUMPLAN_H
#define MESHC_RUNTIME_EINSUMPLAN_H

#include "runtime/Program.h"

#include <vector>

namespace meshc::runtime {

/// Plans out = einsum(inputs): every dim of `out` must occur in some input;
/// input dims absent from `out` are summed. Inputs and `out` are arena
/// tensors (their offsets are buffer offsets); the plan's scratch tensors
/// are laid out from scratch offset 0, 64-byte aligned.
EinsumPlan planEinsum(const std::vector<PlannedTensor> &inputs,
                      const PlannedTensor &out);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_EINSUMPLAN_H
