//===- WarpReduce.cuh - Maxima and sums over a warp -------------*- C++ -*-===//
//
// The butterfly reductions the attention kernels (CudaAttention.cu,
// CudaAttentionGemm.cu) use for a row held by one warp: every lane ends
// with the warp's maximum or sum.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_CUDA_WARPREDUCE_CUH
#define MESHC_CUDA_WARPREDUCE_CUH

namespace meshc::runtime::cuda {

__device__ inline float warpMax(float value) {
  for (int offset = 16; offset > 0; offset /= 2)
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

__device__ inline float warpSum(float value) {
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

} // namespace meshc::runtime::cuda

#endif // MESHC_CUDA_WARPREDUCE_CUH
