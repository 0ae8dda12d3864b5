//===- CudaAttentionGemm.h - Attention through cuBLAS -----------*- C++ -*-===//
//
// The attention and attention_grad steps (docs/mprog.md#attention) as
// batched cuBLAS GEMMs over chunks of groups, with the scores of one chunk
// at a time in a workspace of the device's, and row kernels of our own for
// the softmax (forward) and for p and ds (backward). The GEMMs run on the
// tensor cores where cuBLAS does (TF32 with MESHC_CUDA_TF32=1), which the
// tile kernels of CudaAttention.cu do not; those stay for the steps this
// path cannot take.
//
// A step takes this path when each operand a GEMM reads or writes is a
// strided matrix per group: its offsets along each of its two roles (query
// or key rows, head or value columns) are one stride apart
// (AttentionGeometry::stride) and one of the two strides is 1 (or its role
// has one index), which cuBLAS needs of a leading dimension; and when the
// scores of one group (two score matrices for attention_grad) fit the
// workspace. Groups are walked as the tables number them: the last group
// dim batched by cuBLAS (its stride per operand), the others by the host.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_CUDA_CUDAATTENTIONGEMM_H
#define MESHC_CUDA_CUDAATTENTIONGEMM_H

#include "cuda/CudaAttention.h"

#include <cublas_v2.h>

#include <cstdint>
#include <optional>

namespace meshc::runtime::cuda {

/// The most workspace (in floats) a device keeps for the GEMM path: 256 MiB.
constexpr int64_t kAttentionWorkspaceCap = int64_t(64) << 20;

/// How the GEMM path walks a step: `chunk` groups of the last group dim per
/// batch of GEMMs, `inner` the size of that dim (1 without group dims).
struct AttentionGemmPlan {
  int64_t inner = 1;
  int64_t chunk = 1;
  /// The floats of workspace the step uses.
  int64_t workspaceFloats = 0;
};

/// The plan of an attention step (`grad`: attention_grad) on the GEMM path
/// with `workspaceFloats` of workspace, or nothing where the step cannot
/// take it (an operand that is no strided matrix per group, or one group's
/// scores larger than the workspace). Host only, no GPU needed.
std::optional<AttentionGemmPlan>
planAttentionGemm(const AttentionGeometry &geometry, bool grad,
                  int64_t workspaceFloats);

/// The workspace (floats) that lets the step run its whole last group dim
/// per batch, capped at kAttentionWorkspaceCap; 0 where the step cannot take
/// the GEMM path even with that much.
int64_t attentionWorkspaceWanted(const AttentionGeometry &geometry, bool grad);

/// What the GEMM path needs of the device besides the step.
struct AttentionGemmContext {
  cublasHandle_t cublas = nullptr;
  bool tf32 = false;
  float *workspace = nullptr;
  int64_t workspaceFloats = 0;
};

/// Enqueues the step on the GEMM path; false (nothing enqueued) where
/// planAttentionGemm refuses it (the device then runs the tile kernels, as
/// it does for every step under MESHC_CUDA_ATTENTION_TILES=1).
bool attentionGemm(const Exec &exec, const AttentionGemmContext &context,
                   const AttentionSpec &spec, bool grad,
                   const AttentionData &data, const int64_t *tables);

} // namespace meshc::runtime::cuda

#endif // MESHC_CUDA_CUDAATTENTIONGEMM_H
