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
  /// Set by simplify(): every index and offset fits in 31 bits, so
  /// offsets() divides in 32 bits (several times faster on a GPU).
  bool narrow = false;

  /// Drops the dims of size 1 and merges each pair of adjacent dims that
  /// every operand walks as one (the outer's stride the inner's times its
  /// size; a broadcast, 0 and 0, too): the same indices map to the same
  /// offsets in the same order, with fewer divisions. Then sets `narrow`.
  MESHC_HOST_DEVICE void simplify() {
    int kept = 0;
    for (int d = 0; d < rank; ++d) {
      if (sizes[d] == 1)
        continue;
      bool asOne = kept > 0;
      for (int k = 0; k < Operands && asOne; ++k)
        asOne = strides[k][kept - 1] == strides[k][d] * sizes[d];
      int to = asOne ? kept - 1 : kept++;
      sizes[to] = asOne ? sizes[to] * sizes[d] : sizes[d];
      for (int k = 0; k < Operands; ++k)
        strides[k][to] = strides[k][d];
    }
    rank = kept;
    const int64_t limit = int64_t(1) << 31;
    narrow = count() < limit;
    for (int k = 0; k < Operands && narrow; ++k) {
      int64_t last = 0;
      for (int d = 0; d < rank; ++d) {
        narrow = narrow && strides[k][d] >= 0;
        last += (sizes[d] - 1) * strides[k][d];
      }
      narrow = narrow && last < limit;
    }
  }

  /// The operand offsets of index `linear` (last dim fastest), for
  /// 0 <= linear < count().
  MESHC_HOST_DEVICE void offsets(int64_t linear,
                                 int64_t (&out)[Operands]) const {
    if (narrow) {
      uint32_t rest = static_cast<uint32_t>(linear), at[Operands] = {};
      for (int d = rank - 1; d >= 0; --d) {
        uint32_t size = static_cast<uint32_t>(sizes[d]), index = rest;
        if (d > 0) { // the first dim takes what is left
          index = rest % size;
          rest /= size;
        }
        for (int k = 0; k < Operands; ++k)
          at[k] += index * static_cast<uint32_t>(strides[k][d]);
      }
      for (int k = 0; k < Operands; ++k)
        out[k] = at[k];
      return;
    }
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

/// Into how many chunks, each its own block of `threads` threads, a
/// reduction of `rows` rows of `inner` elements is cut: enough blocks to
/// fill the GPU (about 1024 in all) where the rows are few, and at least 16
/// elements per thread. A scalar sum of 2^25 elements in one block took
/// 678 ms on an H100; cut into 1024 chunks it takes a pass over memory.
MESHC_HOST_DEVICE inline int64_t splitChunks(int64_t rows, int64_t inner,
                                             int threads) {
  if (rows <= 0 || rows >= 1024)
    return 1;
  int64_t byWork = inner / (int64_t(threads) * 16);
  int64_t byGrid = 1024 / rows;
  int64_t chunks = byWork < byGrid ? byWork : byGrid;
  return chunks > 1 ? chunks : 1;
}

/// Elements [begin, end) of a row of `inner` that chunk `chunk` of `chunks`
/// covers.
MESHC_HOST_DEVICE inline void chunkRange(int64_t inner, int64_t chunks,
                                         int64_t chunk, int64_t &begin,
                                         int64_t &end) {
  int64_t length = (inner + chunks - 1) / chunks;
  begin = chunk * length < inner ? chunk * length : inner;
  end = begin + length < inner ? begin + length : inner;
}

#if defined(__CUDACC__)
/// Combines every thread's `value` in its block (blockDim.x a power of two,
/// at most 256) by `combine` in a fixed tree order, so that a launch of the
/// same shape always adds in the same order; every thread gets the result.
template <typename Combine>
__device__ float blockReduce(float value, Combine combine) {
  __shared__ float partial[256];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      partial[threadIdx.x] =
          combine(partial[threadIdx.x], partial[threadIdx.x + half]);
    __syncthreads();
  }
  float result = partial[0];
  __syncthreads(); // `partial` is free for the next call
  return result;
}
#endif

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
