//===- CudaAttention.h - Fused attention on a GPU ---------------*- C++ -*-===//
//
// The attention and attention_grad steps (docs/mprog.md#attention) as
// FlashAttention computes them, in f32 (16-bit operands come staged, as for
// every computing kind). The operands are found through the step's offset
// tables (runtime/Attention.h), which CudaDevice copies to the GPU once, in
// allocate().
//
// Forward: a thread block per group and tile of query rows keeps the tile of
// q, its output accumulator and the running maxima and sums in shared
// memory and walks the keys a tile at a time (online softmax), never holding
// more than one tile of scores. Backward: a thread block per group and tile
// of keys keeps the tile's k, v and its dk, dv accumulators and walks the
// query tiles, recomputing the probabilities from lse; dq gets each key
// tile's terms through atomicAdd (so its sums round in no fixed order), on
// a dq zeroed first.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_CUDA_CUDAATTENTION_H
#define MESHC_CUDA_CUDAATTENTION_H

#include "cuda/CudaKernels.h"
#include "runtime/Program.h"

#include <array>

namespace meshc::runtime::cuda {

/// The step's operands on the GPU (f32; null for those it lacks).
using AttentionData = std::array<float *, kAttentionOperands>;

/// Enqueues an attention step: o and lse from q, k, v (and bias);
/// `tables` is the device copy of its offset tables
/// (AttentionGeometry::fillTables). Throws
/// RuntimeError when the head and value dims are too large for a tile of
/// one row in the GPU's shared memory.
void attentionKernel(const Exec &exec, const AttentionSpec &spec,
                     const AttentionData &data, const int64_t *tables);
/// Enqueues an attention_grad step: dq, dk and dv.
void attentionGradKernel(const Exec &exec, const AttentionSpec &spec,
                         const AttentionData &data, const int64_t *tables);

} // namespace meshc::runtime::cuda

#endif // MESHC_CUDA_CUDAATTENTION_H
