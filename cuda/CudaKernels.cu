//===- CudaKernels.cu - Step kernels of the CUDA backend ------------------===//
//
// Every kernel but softmax is a grid-stride loop over indices `i` calling
// one __host__ __device__ element function (an extended lambda), so the
// same function runs on the host under Exec::onHost. Element-wise kernels
// give one index per element; row kernels (cross entropy, one_hot, argmax,
// logsumexp, cumsum, window) one per row, top_k one per element of a row;
// reductions one per output element, which walks the reduced dims in the CPU's
// order so sums round the same way. Softmax, the largest row kernel of
// attention, takes a warp per row on the device (its sums then round
// differently from the CPU's; the host path keeps the serial order).
//
// The element formulas are runtime/ElementFunctions.h's, shared with the
// CPU backend, in f32 with CUDA's math library (expf/tanhf/logf may differ
// from glibc by an ulp or two).
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaKernels.h"

#include "cuda/CudaCheck.h"
#include "cuda/ElementAccess.cuh"
#include "runtime/ElementFunctions.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

namespace meshc::runtime::cuda {

namespace {

template <typename Body>
__global__ void forEachIndex(int64_t count, Body body) {
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride)
    body(i);
}

/// Runs body(i) for i < count on exec's stream (or on the host).
template <typename Body>
void forEach(const Exec &exec, int64_t count, Body body) {
  if (count <= 0)
    return;
  if (exec.onHost) {
    for (int64_t i = 0; i < count; ++i)
      body(i);
    return;
  }
  const int threads = 256;
  int64_t blocks = std::min<int64_t>((count + threads - 1) / threads, 1 << 20);
  forEachIndex<<<static_cast<unsigned>(blocks), threads, 0, exec.stream>>>(
      count, body);
  MESHC_CUDA_CHECK(cudaGetLastError());
}

/// Calls fn(offset) for every index of `space` (operand 0), last dim
/// fastest, carrying the offset incrementally as the CPU's Walk does.
template <typename Fn>
MESHC_HOST_DEVICE void walkOffsets(const IterationSpace<1> &space, Fn fn) {
  // Ranks 0 (a transpose's one element) and 1 (most spaces once simplified)
  // without the index array below, which lives in local memory.
  if (space.rank == 0) {
    fn(int64_t(0));
    return;
  }
  if (space.rank == 1) {
    for (int64_t k = 0; k < space.sizes[0]; ++k)
      fn(k * space.strides[0][0]);
    return;
  }
  for (int d = 0; d < space.rank; ++d)
    if (space.sizes[d] == 0)
      return;
  int64_t index[kSpaceRank] = {};
  int64_t offset = 0;
  while (true) {
    fn(offset);
    int d = space.rank - 1;
    for (; d >= 0; --d) {
      offset += space.strides[0][d];
      if (++index[d] < space.sizes[d])
        break;
      offset -= space.sizes[d] * space.strides[0][d];
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

MESHC_HOST_DEVICE inline void recordBadRow(KernelStatus *status,
                                           unsigned long long row) {
#if defined(__CUDA_ARCH__)
  atomicMin(&status->firstBadRow, row);
#else
  if (row < status->firstBadRow)
    status->firstBadRow = row;
#endif
}

/// unary fn `fn` of x, dispatched to ElementFunctions.h's formulas.
MESHC_HOST_DEVICE inline float unaryOf(UnaryFn fn, float factor, float x) {
  switch (fn) {
#define MESHC_UNARY_FN(Fn, Spelling)                                           \
  case UnaryFn::Fn:                                                            \
    return unaryValue<UnaryFn::Fn>(x, factor);
#include "runtime/core/ElementFunctions.def"
  }
  return x;
}

/// binary fn `fn` of x and y, dispatched to ElementFunctions.h's formulas.
MESHC_HOST_DEVICE inline float binaryOf(BinaryFn fn, float x, float y) {
  switch (fn) {
#define MESHC_BINARY_FN(Fn, Spelling)                                          \
  case BinaryFn::Fn:                                                           \
    return binaryValue<BinaryFn::Fn>(x, y);
#include "runtime/core/ElementFunctions.def"
  }
  return x;
}

} // namespace

void fillKernel(const Exec &exec, DType dtype, double value, void *out,
                int64_t count) {
  if (dtype == DType::F32) {
    float v = static_cast<float>(value);
    float *y = static_cast<float *>(out);
    forEach(exec, count, [=] __host__ __device__(int64_t i) { y[i] = v; });
  } else if (dtype == DType::I32) {
    int32_t v = static_cast<int32_t>(value);
    int32_t *y = static_cast<int32_t *>(out);
    forEach(exec, count, [=] __host__ __device__(int64_t i) { y[i] = v; });
  } else {
    float v = static_cast<float>(value);
    forEach(exec, count, [=] __host__ __device__(int64_t i) {
      storeFloat(dtype, out, i, v);
    });
  }
}

void unaryKernel(const Exec &exec, UnaryFn fn, float factor, const float *in,
                 float *out, int64_t count) {
  forEach(exec, count, [=] __host__ __device__(int64_t i) {
    out[i] = unaryOf(fn, factor, in[i]);
  });
}

void castKernel(const Exec &exec, DType from, DType to, const void *in,
                void *out, int64_t count) {
  if (from == to)
    return;
  if (from == DType::I32 && to == DType::F32) {
    const int32_t *x = static_cast<const int32_t *>(in);
    float *y = static_cast<float *>(out);
    forEach(exec, count, [=] __host__ __device__(int64_t i) {
      y[i] = static_cast<float>(x[i]);
    });
    return;
  }
  forEach(exec, count, [=] __host__ __device__(int64_t i) {
    storeFloat(to, out, i, loadFloat(from, in, i));
  });
}

void binaryKernel(const Exec &exec, BinaryFn fn, const float *lhs,
                  const float *rhs, float *out,
                  const IterationSpace<3> &space) {
  forEach(exec, space.count(), [=] __host__ __device__(int64_t i) {
    int64_t o[3];
    space.offsets(i, o);
    out[o[2]] = binaryOf(fn, lhs[o[0]], rhs[o[1]]);
  });
}

void compareKernel(const Exec &exec, BinaryFn fn, const int32_t *lhs,
                   const int32_t *rhs, float *out,
                   const IterationSpace<3> &space) {
  bool less = fn == BinaryFn::Lt;
  forEach(exec, space.count(), [=] __host__ __device__(int64_t i) {
    int64_t o[3];
    space.offsets(i, o);
    int32_t x = lhs[o[0]], y = rhs[o[1]];
    out[o[2]] = less ? lessOf(x, y) : equalOf(x, y);
  });
}

void rangeKernel(const Exec &exec, DType dtype, void *out, int64_t count) {
  if (dtype == DType::I32) {
    int32_t *y = static_cast<int32_t *>(out);
    forEach(exec, count, [=] __host__ __device__(int64_t i) {
      y[i] = static_cast<int32_t>(i);
    });
  } else {
    float *y = static_cast<float *>(out);
    forEach(exec, count, [=] __host__ __device__(int64_t i) {
      y[i] = static_cast<float>(i);
    });
  }
}

void cumsumKernel(const Exec &exec, const float *in, float *out,
                  const RowWalk &walk, bool reverse) {
  forEach(exec, walk.rows.count(), [=] __host__ __device__(int64_t i) {
    int64_t o[3];
    walk.rows.offsets(i, o);
    const float *x = in + o[0];
    float *y = out + o[1];
    int64_t n = walk.length;
    float sum = 0.0f;
    for (int64_t k = 0; k < n; ++k) {
      int64_t j = reverse ? n - 1 - k : k;
      sum += x[j * walk.step[0]];
      y[j * walk.step[1]] = sum;
    }
  });
}

void topKKernel(const Exec &exec, const float *in, float *out,
                const RowWalk &walk, int64_t k) {
  int64_t n = walk.length;
  forEach(exec, walk.rows.count() * n, [=] __host__ __device__(int64_t i) {
    int64_t o[3];
    walk.rows.offsets(i / n, o);
    int64_t c = i % n;
    out[o[1] + c * walk.step[1]] = topKValue(in + o[0], walk.step[0], n, c, k);
  });
}

/// Block b folds chunk b % chunks of row b / chunks into part[b].
static __global__ void reducePartialKernel(bool sum, const float *src,
                                           IterationSpace<2> outer,
                                           IterationSpace<1> inner,
                                           int64_t chunks, float *part) {
  int64_t row = blockIdx.x / chunks, begin, end;
  chunkRange(inner.count(), chunks, blockIdx.x % chunks, begin, end);
  int64_t o[2], at[1];
  outer.offsets(row, o);
  const float *x = src + o[0];
  float acc = sum ? 0.0f : -INFINITY;
  for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
    inner.offsets(k, at);
    acc = sum ? acc + x[at[0]] : maxOf(acc, x[at[0]]);
  }
  acc = blockReduce(
      acc, [sum](float a, float b) { return sum ? a + b : maxOf(a, b); });
  if (threadIdx.x == 0)
    part[blockIdx.x] = acc;
}

/// Each row's partials, in chunk order, into its output element.
static __global__ void reduceCombineKernel(bool sum, const float *part,
                                           float *dst, IterationSpace<2> outer,
                                           int64_t chunks) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= outer.count())
    return;
  float acc = sum ? 0.0f : -INFINITY;
  for (int64_t c = 0; c < chunks; ++c)
    acc =
        sum ? acc + part[row * chunks + c] : maxOf(acc, part[row * chunks + c]);
  int64_t o[2];
  outer.offsets(row, o);
  dst[o[1]] = acc;
}

void reduceKernel(const Exec &exec, Reduction fn, const float *src, float *dst,
                  const IterationSpace<2> &outer,
                  const IterationSpace<1> &inner) {
  bool sum = fn == Reduction::Sum;
  // Rows of 2048 elements or more: a block per row, or per chunk of a row
  // where the rows are few (a thread per row walked a scalar sum of 2^25
  // elements alone).
  int64_t rows = outer.count(), n = inner.count();
  constexpr int kThreads = 256;
  int64_t chunks = splitChunks(rows, n, kThreads);
  if (!exec.onHost && exec.partials != nullptr && n >= 2048 && rows > 0 &&
      rows * chunks <= kPartialFloats) {
    reducePartialKernel<<<static_cast<unsigned>(rows * chunks), kThreads, 0,
                          exec.stream>>>(sum, src, outer, inner, chunks,
                                         exec.partials);
    reduceCombineKernel<<<static_cast<unsigned>((rows + 255) / 256), 256, 0,
                          exec.stream>>>(sum, exec.partials, dst, outer,
                                         chunks);
    MESHC_CUDA_CHECK(cudaGetLastError());
    return;
  }
  forEach(exec, outer.count(), [=] __host__ __device__(int64_t i) {
    int64_t o[2];
    outer.offsets(i, o);
    const float *x = src + o[0];
    float acc = sum ? 0.0f : -INFINITY;
    if (sum)
      walkOffsets(inner, [&](int64_t at) { acc += x[at]; });
    else
      walkOffsets(inner, [&](int64_t at) { acc = maxOf(acc, x[at]); });
    dst[o[1]] = acc;
  });
}

/// Softmax with one warp per row: lanes stride over the row, and the
/// maximum and the sum are combined by shuffles.
static __global__ void softmaxWarpRows(const float *in, float *out,
                                       RowWalk walk) {
  const unsigned all = 0xffffffffu;
  int lane = threadIdx.x & 31;
  int64_t warp =
      (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  int64_t rows = walk.rows.count(), n = walk.length;
  int64_t inStep = walk.step[0], outStep = walk.step[1];
  for (int64_t r = warp; r < rows; r += warps) {
    int64_t o[3];
    walk.rows.offsets(r, o);
    const float *x = in + o[0];
    float *y = out + o[1];
    float top = -INFINITY;
    for (int64_t j = lane; j < n; j += 32)
      top = maxOf(top, x[j * inStep]);
    for (int offset = 16; offset > 0; offset >>= 1)
      top = maxOf(top, __shfl_xor_sync(all, top, offset));
    float sum = 0.0f;
    for (int64_t j = lane; j < n; j += 32) {
      float e = expf(x[j * inStep] - top);
      y[j * outStep] = e;
      sum += e;
    }
    for (int offset = 16; offset > 0; offset >>= 1)
      sum += __shfl_xor_sync(all, sum, offset);
    for (int64_t j = lane; j < n; j += 32)
      y[j * outStep] /= sum;
  }
}

void softmaxKernel(const Exec &exec, const float *in, float *out,
                   const RowWalk &walk) {
  if (!exec.onHost) {
    int64_t rows = walk.rows.count();
    if (rows == 0)
      return;
    const int threads = 256, rowsPerBlock = threads / 32;
    int64_t blocks =
        std::min<int64_t>((rows + rowsPerBlock - 1) / rowsPerBlock, 1 << 20);
    softmaxWarpRows<<<static_cast<unsigned>(blocks), threads, 0, exec.stream>>>(
        in, out, walk);
    MESHC_CUDA_CHECK(cudaGetLastError());
    return;
  }
  // The host reference of the same formula, row by row as the CPU does.
  forEach(exec, walk.rows.count(), [=] __host__ __device__(int64_t i) {
    int64_t o[3];
    walk.rows.offsets(i, o);
    const float *x = in + o[0];
    float *y = out + o[1];
    int64_t n = walk.length, inStep = walk.step[0], outStep = walk.step[1];
    float top = -INFINITY;
    for (int64_t j = 0; j < n; ++j)
      top = maxOf(top, x[j * inStep]);
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      float e = expf(x[j * inStep] - top);
      y[j * outStep] = e;
      sum += e;
    }
    for (int64_t j = 0; j < n; ++j)
      y[j * outStep] /= sum;
  });
}

template <typename T>
void windowKernel(const Exec &exec, const T *in, T *out, const RowWalk &walk,
                  int64_t inLength, int64_t offset) {
  forEach(exec, walk.rows.count(), [=] __host__ __device__(int64_t i) {
    int64_t o[3];
    walk.rows.offsets(i, o);
    const T *x = in + o[0];
    T *y = out + o[1];
    for (int64_t j = 0; j < walk.length; ++j) {
      int64_t source = j + offset;
      y[j * walk.step[1]] =
          source >= 0 && source < inLength ? x[source * walk.step[0]] : T(0);
    }
  });
}
template void windowKernel<float>(const Exec &, const float *, float *,
                                  const RowWalk &, int64_t, int64_t);
template void windowKernel<uint16_t>(const Exec &, const uint16_t *, uint16_t *,
                                     const RowWalk &, int64_t, int64_t);

void crossEntropyKernel(const Exec &exec, const float *logits,
                        const int32_t *labels, float *out, const RowWalk &walk,
                        KernelStatus *status) {
  forEach(exec, walk.rows.count(), [=] __host__ __device__(int64_t i) {
    int64_t o[3];
    walk.rows.offsets(i, o);
    const float *x = logits + o[0];
    int32_t label = labels[o[1]];
    int64_t n = walk.length, step = walk.step[0];
    if (label < 0 || label >= n) {
      recordBadRow(status, static_cast<unsigned long long>(i));
      return;
    }
    out[o[2]] = logSumExpRow(x, step, n) - x[label * step];
  });
}

void oneHotKernel(const Exec &exec, const int32_t *in, float *out,
                  const RowWalk &walk, int64_t first, int64_t classes,
                  KernelStatus *status) {
  forEach(exec, walk.rows.count(), [=] __host__ __device__(int64_t i) {
    int64_t o[3];
    walk.rows.offsets(i, o);
    float *y = out + o[0];
    int32_t index = in[o[1]];
    if (index < 0 || index >= classes) {
      recordBadRow(status, static_cast<unsigned long long>(i));
      return;
    }
    for (int64_t c = 0; c < walk.length; ++c)
      y[c * walk.step[0]] = first + c == index ? 1.0f : 0.0f;
  });
}

void logSumExpKernel(const Exec &exec, const float *in, float *out,
                     const RowWalk &walk) {
  forEach(exec, walk.rows.count(), [=] __host__ __device__(int64_t i) {
    int64_t o[3];
    walk.rows.offsets(i, o);
    out[o[1]] = logSumExpRow(in + o[0], walk.step[0], walk.length);
  });
}

void argmaxKernel(const Exec &exec, const float *in, int32_t *out,
                  const RowWalk &walk) {
  forEach(exec, walk.rows.count(), [=] __host__ __device__(int64_t i) {
    int64_t o[3];
    walk.rows.offsets(i, o);
    const float *x = in + o[0];
    int64_t best = -1;
    float top = 0.0f;
    for (int64_t c = 0; c < walk.length; ++c) {
      float v = x[c * walk.step[0]];
      if (argmaxTakes(v, best, top)) {
        best = c;
        top = v;
      }
    }
    out[o[1]] = static_cast<int32_t>(best < 0 ? 0 : best);
  });
}

void dropoutKernel(const Exec &exec, const DropoutParams &mask, int64_t first,
                   float *out, const IterationSpace<2> &space) {
  forEach(exec, space.count(), [=] __host__ __device__(int64_t i) {
    int64_t o[2];
    space.offsets(i, o);
    out[o[1]] = dropoutValue(mask, static_cast<uint64_t>(first + o[0]));
  });
}

void groupReduceKernel(const Exec &exec, DType dtype, Reduction fn,
                       const MemberBuffers &inputs, void *out, int64_t count) {
  bool sum = fn == Reduction::Sum;
  if (dtype == DType::F32) {
    float *y = static_cast<float *>(out);
    forEach(exec, count, [=] __host__ __device__(int64_t i) {
      float acc = static_cast<const float *>(inputs.data[0])[i];
      for (int m = 1; m < inputs.count; ++m) {
        float v = static_cast<const float *>(inputs.data[m])[i];
        acc = sum ? acc + v : maxOf(acc, v);
      }
      y[i] = acc;
    });
    return;
  }
  if (dtype != DType::I32) {
    // 16-bit floats: accumulated in f32, rounded once.
    forEach(exec, count, [=] __host__ __device__(int64_t i) {
      float acc = loadFloat(dtype, inputs.data[0], i);
      for (int m = 1; m < inputs.count; ++m) {
        float v = loadFloat(dtype, inputs.data[m], i);
        acc = sum ? acc + v : maxOf(acc, v);
      }
      storeFloat(dtype, out, i, acc);
    });
    return;
  }
  int32_t *y = static_cast<int32_t *>(out);
  forEach(exec, count, [=] __host__ __device__(int64_t i) {
    int32_t acc = static_cast<const int32_t *>(inputs.data[0])[i];
    for (int m = 1; m < inputs.count; ++m) {
      int32_t v = static_cast<const int32_t *>(inputs.data[m])[i];
      acc = sum ? acc + v : maxOf(acc, v);
    }
    y[i] = acc;
  });
}

} // namespace meshc::runtime::cuda
