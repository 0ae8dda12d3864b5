//===- ElementAccess.cuh - Elements of any dtype as f32 ---------*- CUDA
//-*-===//
//
// Loading and storing one element of a buffer of any .mprog dtype as f32, on
// the device and on the host (Exec::onHost): exact widening of bf16 and f16,
// rounding to nearest (ties to even) when storing, as the CPU's kernels and
// runtime/core/HalfFloat.h do. For the .cu files only.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_CUDA_ELEMENTACCESS_CUH
#define MESHC_CUDA_ELEMENTACCESS_CUH

#include "runtime/ElementFunctions.h"
#include "runtime/Program.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace meshc::runtime::cuda {

/// Element i of `data` (of `dtype`) as f32: exact for bf16, f16 and f32.
__host__ __device__ inline float loadFloat(DType dtype, const void *data,
                                           int64_t i) {
  switch (dtype) {
  case DType::F32:
    return static_cast<const float *>(data)[i];
  case DType::I32:
    return static_cast<float>(static_cast<const int32_t *>(data)[i]);
  case DType::BF16:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(data)[i]);
  case DType::F16:
    return __half2float(static_cast<const __half *>(data)[i]);
  }
  return 0.0f;
}

/// Stores `value` as element i of `data`, converted as the CPU's castKernel
/// does (to nearest, ties to even; to i32 by castToI32).
__host__ __device__ inline void storeFloat(DType dtype, void *data, int64_t i,
                                           float value) {
  switch (dtype) {
  case DType::F32:
    static_cast<float *>(data)[i] = value;
    return;
  case DType::I32:
    static_cast<int32_t *>(data)[i] = castToI32(value);
    return;
  case DType::BF16:
    static_cast<__nv_bfloat16 *>(data)[i] = __float2bfloat16_rn(value);
    return;
  case DType::F16:
    static_cast<__half *>(data)[i] = __float2half_rn(value);
    return;
  }
}

/// `value` rounded to `dtype` and back (bf16, f16; f32 unchanged): what a
/// step that stores it in `dtype` keeps.
__host__ __device__ inline float roundFloat(DType dtype, float value) {
  switch (dtype) {
  case DType::BF16:
    return __bfloat162float(__float2bfloat16_rn(value));
  case DType::F16:
    return __half2float(__float2half_rn(value));
  default:
    return value;
  }
}

} // namespace meshc::runtime::cuda

#endif // MESHC_CUDA_ELEMENTACCESS_CUH
