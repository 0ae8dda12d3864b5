//===- CudaKernels.h - Step kernels of the CUDA backend ---------*- C++ -*-===//
//
// One launcher per step kind, on raw device pointers and the iteration
// spaces of KernelSpaces.h. Every launcher enqueues on the stream of its
// Exec and returns without waiting; launch errors come back through
// MESHC_CUDA_CHECK(cudaGetLastError()). Each has the same contract as its
// CPU counterpart in runtime/cpu/CpuKernels.h.
//
// Exec::onHost runs the very same __host__ __device__ element functions in a
// loop on the host, on host pointers (softmax, whose device kernel takes a
// warp per row, runs its serial formula there). It exists for the tests, so
// that the index arithmetic and formulas of these kernels are checked
// against the CPU backend on machines without a GPU; devices never use it.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_CUDA_CUDAKERNELS_H
#define MESHC_CUDA_CUDAKERNELS_H

#include "cuda/KernelTypes.h"
#include "runtime/Program.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace meshc::runtime::cuda {

/// Where a launcher runs.
struct Exec {
  /// The stream the kernels go to.
  cudaStream_t stream = nullptr;
  /// Test-only: run the element functions on the host (pointers are host
  /// pointers).
  bool onHost = false;
  /// The device's workspace of kPartialFloats floats for the partial results
  /// of reductions split over several blocks (splitChunks); without it,
  /// reductions run a block or a thread per row.
  float *partials = nullptr;
};

/// The floats of Exec::partials (4 MiB per device).
constexpr int64_t kPartialFloats = int64_t(1) << 20;

/// The most members of a virtual-device collective group.
constexpr int kMaxGroup = 64;
/// The buffers of a group's members, in rank order.
struct MemberBuffers {
  const void *data[kMaxGroup] = {};
  int count = 0;
};

/// out[i] = value for i < count (of `dtype`).
void fillKernel(const Exec &exec, DType dtype, double value, void *out,
                int64_t count);
/// out[i] = fn(in[i]); `factor` is Scale's.
void unaryKernel(const Exec &exec, UnaryFn fn, float factor, const float *in,
                 float *out, int64_t count);
/// Converts between any two dtypes (nothing when from == to), as castKernel
/// on the CPU: 16-bit floats round to nearest, ties to even.
void castKernel(const Exec &exec, DType from, DType to, const void *in,
                void *out, int64_t count);
/// out[o2] = fn(lhs[o0], rhs[o1]) over `space` (operands lhs, rhs, out).
void binaryKernel(const Exec &exec, BinaryFn fn, const float *lhs,
                  const float *rhs, float *out, const IterationSpace<3> &space);
/// out[o2] = (lhs[o0] == rhs[o1]) for Eq, (lhs[o0] < rhs[o1]) for Lt, on
/// i32 operands.
void compareKernel(const Exec &exec, BinaryFn fn, const int32_t *lhs,
                   const int32_t *rhs, float *out,
                   const IterationSpace<3> &space);
/// out[i] = i for i < count (f32 or i32 by `dtype`).
void rangeKernel(const Exec &exec, DType dtype, void *out, int64_t count);
/// For each index of `outer` (operands src, dst): dst = fn over `inner`
/// (operand src) of src. Under 2048 elements a thread per output walks
/// `inner` in row-major order (the CPU's order, so sums round identically);
/// longer rows take a block each, or a block per chunk where the rows are
/// few (splitChunks, combined through Exec::partials), and sums agree with
/// the CPU's to rounding. Max starts at -inf and skips NaN as std::max.
void reduceKernel(const Exec &exec, Reduction fn, const float *src, float *dst,
                  const IterationSpace<2> &outer,
                  const IterationSpace<1> &inner);
/// A row walk: `rows` gives operand offsets of each row, `length` elements
/// along the row at strides step[0] / step[1] of operands 0 / 1.
struct RowWalk {
  IterationSpace<3> rows;
  int64_t length = 0;
  int64_t step[2] = {0, 0};
};
/// Softmax along rows (operands in, out).
void softmaxKernel(const Exec &exec, const float *in, float *out,
                   const RowWalk &walk);
/// The running sum along rows (operands in, out; steps in, out), from
/// coordinate 0 up or, `reverse`, from the last down.
void cumsumKernel(const Exec &exec, const float *in, float *out,
                  const RowWalk &walk, bool reverse);
/// out row = 1 at the k largest elements of the in row, else 0, in
/// topKValue's order (operands in, out; steps in, out); one index per
/// element.
void topKKernel(const Exec &exec, const float *in, float *out,
                const RowWalk &walk, int64_t k);
/// out row[j] = in row[j + offset] where 0 <= j + offset < inLength, else
/// 0, for j < walk.length (operands in, out; steps in, out). T is float, or
/// uint16_t for the bits of bf16 or f16 elements (moved as they are).
template <typename T>
void windowKernel(const Exec &exec, const T *in, T *out, const RowWalk &walk,
                  int64_t inLength, int64_t offset);
/// logsumexp(logits row) - logits[label] (operands logits, labels, out);
/// a label outside [0, length) records its row in `status`.
void crossEntropyKernel(const Exec &exec, const float *logits,
                        const int32_t *labels, float *out, const RowWalk &walk,
                        KernelStatus *status);
/// out row = the block [first, first + length) of the one-hot of in over
/// `classes` classes (operands out, in); an index outside [0, classes)
/// records its row in `status`.
void oneHotKernel(const Exec &exec, const int32_t *in, float *out,
                  const RowWalk &walk, int64_t first, int64_t classes,
                  KernelStatus *status);
/// out = logSumExpRow of the in row (operands in, out).
void logSumExpKernel(const Exec &exec, const float *in, float *out,
                     const RowWalk &walk);
/// out = index of the first maximum of the in row, NaNs skipped (operands
/// in, out).
void argmaxKernel(const Exec &exec, const float *in, int32_t *out,
                  const RowWalk &walk);
/// out[o1] = mask value of global index first + o0 over `space` (operands
/// global index, out).
void dropoutKernel(const Exec &exec, const DropoutParams &mask, int64_t first,
                   float *out, const IterationSpace<2> &space);
/// out[i] = fn over the members of inputs[m][i], m in rank order, for
/// i < count (`out` may be one of the inputs).
void groupReduceKernel(const Exec &exec, DType dtype, Reduction fn,
                       const MemberBuffers &inputs, void *out, int64_t count);

} // namespace meshc::runtime::cuda

#endif // MESHC_CUDA_CUDAKERNELS_H
