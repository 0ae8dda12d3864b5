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

/// Whether `step` is an einsum planned as one GEMM stage (with work to do;
/// batched dot products excepted) over the f32 copies of two bf16 operands,
/// which a backend with bf16 GEMMs runs on the bf16 buffers themselves
/// (runtime/cpu/Bf16Gemm.h, cuda/CudaDevice.cpp); `aInput` and `bInput` are
/// then the inputs that are the stage's A and B.
bool directBf16Gemm(const Program &program, const Step &step, size_t &aInput,
                    size_t &bInput);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_EINSUMPLAN_H
