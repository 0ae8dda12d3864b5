//===- ElementFunctions.h - Scalar formulas of the step kernels -*- C++ -*-===//
//
// The scalar formulas the CPU kernels (cpu/CpuKernels.cpp) and the CUDA
// kernels (cuda/CudaKernels.cu) share, defined once: under nvcc they are
// __host__ __device__, elsewhere plain inline functions. A kernel owns its
// loops and memory layout; what it computes per element comes from here, so
// the backends cannot drift apart.
//
// Host code calls the C library's float functions (expf, tanhf, ...), which
// is what std::exp(float) and friends call, so the CPU's results are those
// of the standard library; device code gets CUDA's functions of the same
// names (which may differ from glibc's by an ulp or two).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_ELEMENTFUNCTIONS_H
#define MESHC_RUNTIME_ELEMENTFUNCTIONS_H

#include <cstdint>

#if defined(__CUDACC__)
#define MESHC_HOST_DEVICE __host__ __device__
#else
#define MESHC_HOST_DEVICE
#endif

namespace meshc::runtime {

/// std::isnan, on host and device.
MESHC_HOST_DEVICE inline bool isNaN(float x) { return x != x; }

/// top_k's order: true when the element w at position j of a row comes
/// before the element v at position c. Larger elements first, the earlier
/// of equal ones first, NaN after every number (the earlier of two NaNs
/// first).
MESHC_HOST_DEVICE inline bool topKBefore(float w, int64_t j, float v,
                                         int64_t c) {
  return isNaN(v) ? (!isNaN(w) || j < c)
                  : (!isNaN(w) && (w > v || (w == v && j < c)));
}

/// top_k's output at position c of a row of n elements `row[j * stride]`:
/// 1 when fewer than k elements come before it, else 0.
MESHC_HOST_DEVICE inline float topKValue(const float *row, int64_t stride,
                                         int64_t n, int64_t c, int64_t k) {
  float v = row[c * stride];
  int64_t before = 0;
  for (int64_t j = 0; j < n && before < k; ++j)
    before += topKBefore(row[j * stride], j, v, c) ? 1 : 0;
  return before < k ? 1.0f : 0.0f;
}

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_ELEMENTFUNCTIONS_H
