//===- CudaFusedKernel.h - The CUDA backend's fused steps -------*- C++ -*-===//
//
// A fused step (runtime/FusedStep.h) as one kernel that interprets its body
// per element. With no reduction, one thread per element of the iteration
// space evaluates the body in registers. With reductions, one block per
// outer row: for each reduction in order, every thread evaluates the body
// up to it on its elements (recomputing what came before: nothing but the
// operands is stored) and the block combines the partial results; a last
// pass evaluates the whole body and writes the outputs. Few long rows are
// cut into chunks, a block each (splitChunks), whose partial results are
// combined per row through Exec::partials. Exec::onHost runs
// the same evaluation in a loop (one "thread" per row, in row order).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_CUDA_CUDAFUSEDKERNEL_H
#define MESHC_CUDA_CUDAFUSEDKERNEL_H

#include "cuda/CudaKernels.h"

#include <vector>

namespace meshc::runtime::cuda {

/// The most operands (inputs and outputs) and values (operands and
/// instructions) of a fused step the kernel runs; mtf-fuse stays within
/// them (16 inputs, 8 outputs, 32 ops, a mean being two instructions).
constexpr int kFusedOperands = 24;
constexpr int kFusedValues = 96;

/// Runs fused step `step` on inputs `in` (one per Step::in) and outputs
/// `out` (one per FusedAttrs::outs), each of its FusedAttrs::types (a bf16
/// or f16 operand widened as it is read, rounded as it is written; a value
/// marked FusedInstr::round rounded once computed): device pointers, or host
/// pointers under Exec::onHost. Throws RuntimeError for a step larger than
/// the kernel's limits.
void fusedKernel(const Exec &exec, const Step &step,
                 const std::vector<const void *> &in,
                 const std::vector<void *> &out);

} // namespace meshc::runtime::cuda

#endif // MESHC_CUDA_CUDAFUSEDKERNEL_H
