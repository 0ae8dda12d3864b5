//===- KernelTypes.h - What host code hands to CUDA kernels -----*- C++ -*-===//
//
// Plain structs and __host__ __device__ functions shared by the kernels
// (CudaKernels.cu, compiled by nvcc) and the host code that prepares their
// launches (g++): iteration spaces and the counter-based generator.
//
// An IterationSpace is the CPU backend's Walk (cpu/CpuKernels.cpp) made
// random access: a row-major index space of up to 16 dims with one stride
// per operand and dim, so thread `i` finds its operands' offsets by
// decomposing `i`. An operand lacking a dim has stride 0 along it, which
// gives broadcasting and reductions as on the CPU.
//
// The generator is runtime/core/Random.h's splitmix64 stream, transcribed so
// that kernels draw bit-identical dropout masks (only integer arithmetic and
// one exact double multiply, so host and device agree bit for bit).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_CUDA_KERNELTYPES_H
#define MESHC_CUDA_KERNELTYPES_H

#include "runtime/ElementFunctions.h"

#include <cstdint>

namespace meshc::runtime::cuda {

/// The most dims of an iteration space (runtime::kMaxRank).
constexpr int kSpaceRank = 16;

/// A row-major index space with a strided offset per operand.
template <int Operands> struct IterationSpace {
  int rank = 0;
  int64_t sizes[kSpaceRank] = {};
  int64_t strides[Operands][kSpaceRank] = {};

  /// Appends a dim of `size` along which operand k advances by step[k].
  MESHC_HOST_DEVICE void addDim(int64_t size, const int64_t (&step)[Operands]) {
    sizes[rank] = size;
    for (int k = 0; k < Operands; ++k)
      strides[k][rank] = step[k];
    ++rank;
  }
  /// The number of indices (1 for rank 0, 0 when a dim is empty).
  MESHC_HOST_DEVICE int64_t count() const {
    int64_t total = 1;
    for (int d = 0; d < rank; ++d)
      total *= sizes[d];
    return total;
  }
  /// The operand offsets of index `linear` (last dim fastest).
  MESHC_HOST_DEVICE void offsets(int64_t linear,
                                 int64_t (&out)[Operands]) const {
    for (int k = 0; k < Operands; ++k)
      out[k] = 0;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t index = linear % sizes[d];
      linear /= sizes[d];
      for (int k = 0; k < Operands; ++k)
        out[k] += index * strides[k][d];
    }
  }
};

/// runtime::splitmix64.
MESHC_HOST_DEVICE inline uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// TensorRandom::withKey(key).uniform(index, j).
MESHC_HOST_DEVICE inline double uniformAt(uint64_t key, uint64_t index,
                                          unsigned j) {
  uint64_t bits = splitmix64(key + (2 * index + j) * 0x9e3779b97f4a7c15ULL);
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

/// A dropout step's mask parameters: DropoutMask(seed, name, run, rate).
struct DropoutParams {
  /// runKey(seed, name, run).
  uint64_t key = 0;
  double rate = 0;
  /// 1 / (1 - rate).
  double keptScale = 1;
};

/// DropoutMask::scale(index), rounded to f32 as the dropout step writes it.
MESHC_HOST_DEVICE inline float dropoutValue(const DropoutParams &mask,
                                            uint64_t index) {
  return static_cast<float>(
      uniformAt(mask.key, index, 0) >= mask.rate ? mask.keptScale : 0.0);
}

/// Where a kernel that can fail (a label out of range) records the first
/// failing row, in the CPU backend's walk order.
struct KernelStatus {
  /// The smallest failing row index; kNoFailure when none failed.
  unsigned long long firstBadRow;
};
constexpr unsigned long long kNoFailure = ~0ULL;

} // namespace meshc::runtime::cuda

#endif // MESHC_CUDA_KERNELTYPES_H
