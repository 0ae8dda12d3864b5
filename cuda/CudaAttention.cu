//===- CudaAttention.cu - Fused attention on a GPU ------------------------===//
//
// Plain f32 FMA kernels on shared-memory tiles (no tensor cores): square
// tiles of 32 query rows by 32 keys where the head and value dims let them
// fit the GPU's shared memory, smaller ones where they do not. Tiles of k
// and v are stored with rows padded by one float, so that the lanes of a
// warp reading one column of successive rows hit different banks.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaAttention.h"

#include "cuda/CudaCheck.h"
#include "cuda/WarpReduce.cuh"
#include "runtime/Error.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace meshc::runtime::cuda {

namespace {

/// Threads per block: four warps.
constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
/// The largest tile (query rows, keys).
constexpr int kLargestTile = 32;
/// Dynamic shared memory a kernel gets without opting in.
constexpr size_t kDefaultShared = 48 * 1024;

/// What a kernel needs of the step, by value.
struct Params {
  float *data[kAttentionOperands];
  const int64_t *tables;
  int64_t start[kAttentionOperands][kAttentionRoles];
  int64_t G, M, N;
  int D, E;
  float scale;
  bool bias;
  /// Query rows and keys per tile; tiles per group (of query rows in the
  /// forward kernel, of keys in the backward one).
  int bm, bn;
  int64_t tiles;
};

__device__ inline const int64_t *tableOf(const Params &p, int operand,
                                         int role) {
  return p.tables + p.start[operand][role];
}

/// Where operand `operand` of group g starts.
__device__ inline float *groupOf(const Params &p, int operand, int64_t g) {
  return p.data[operand] + tableOf(p, operand, kGroupRole)[g];
}

/// Loads rows [first, first + rows) of `rowRole` by every index of
/// `colRole` of operand `operand` in group g into `to` (row pitch `ld`).
__device__ void loadTile(const Params &p, int operand, int64_t g, int rowRole,
                         int64_t first, int rows, int colRole, int cols,
                         float *to, int ld) {
  const float *base = groupOf(p, operand, g);
  const int64_t *rowAt = tableOf(p, operand, rowRole) + first;
  const int64_t *colAt = tableOf(p, operand, colRole);
  for (int i = threadIdx.x; i < rows * cols; i += blockDim.x) {
    int r = i / cols, c = i % cols;
    to[r * ld + c] = base[rowAt[r] + colAt[c]];
  }
}

/// The shared memory of the forward kernel, in floats.
size_t forwardFloats(int bm, int bn, int D, int E) {
  return size_t(bm) * D + size_t(bn) * (D + 1) + size_t(bn) * (E + 1) +
         size_t(bm) * bn + size_t(bm) * E + 3 * size_t(bm);
}

/// The shared memory of the backward kernel, in floats.
size_t gradFloats(int bm, int bn, int D, int E) {
  return size_t(bn) * (D + 1) + size_t(bn) * (E + 1) + size_t(bn) * D +
         size_t(bn) * E + size_t(bm) * D + size_t(bm) * E +
         2 * size_t(bm) * bn + 2 * size_t(bm);
}

__global__ void __launch_bounds__(kThreads) attentionForwardTiles(Params p) {
  extern __shared__ float shared[];
  const int bm = p.bm, bn = p.bn, D = p.D, E = p.E;
  const int kld = D + 1, vld = E + 1;
  float *sQ = shared;
  float *sK = sQ + bm * D;
  float *sV = sK + bn * kld;
  float *sS = sV + bn * vld;
  float *sO = sS + bm * bn;
  float *sTop = sO + bm * E;
  float *sSum = sTop + bm;
  float *sRescale = sSum + bm;
  const int64_t g = blockIdx.x / p.tiles;
  const int64_t m0 = blockIdx.x % p.tiles * bm;
  const int rows = int(min(int64_t(bm), p.M - m0));
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;

  loadTile(p, kQ, g, kQueryRole, m0, rows, kHeadRole, D, sQ, D);
  for (int i = tid; i < rows * E; i += kThreads)
    sO[i] = 0.0f;
  for (int r = tid; r < rows; r += kThreads) {
    sTop[r] = -INFINITY;
    sSum[r] = 0.0f;
  }
  const float *bias = p.bias ? groupOf(p, kBias, g) : nullptr;
  const int64_t *biasRow =
      p.bias ? tableOf(p, kBias, kQueryRole) + m0 : nullptr;
  const int64_t *biasKey = p.bias ? tableOf(p, kBias, kKeyRole) : nullptr;
  for (int64_t n0 = 0; n0 < p.N; n0 += bn) {
    const int cols = int(min(int64_t(bn), p.N - n0));
    __syncthreads(); // the last tile's readers are done
    loadTile(p, kK, g, kKeyRole, n0, cols, kHeadRole, D, sK, kld);
    loadTile(p, kV, g, kKeyRole, n0, cols, kValueRole, E, sV, vld);
    __syncthreads();
    for (int i = tid; i < rows * cols; i += kThreads) {
      int r = i / cols, c = i % cols;
      float dot = 0.0f;
      for (int d = 0; d < D; ++d)
        dot = fmaf(sQ[r * D + d], sK[c * kld + d], dot);
      float score = p.scale * dot;
      if (bias)
        score += bias[biasRow[r] + biasKey[n0 + c]];
      sS[r * bn + c] = score;
    }
    __syncthreads();
    // The online softmax, a warp per row: scores become exp(score - the
    // running maximum), the sums and outputs so far are rescaled to it.
    for (int r = warp; r < rows; r += kWarps) {
      float *row = sS + r * bn;
      float top = -INFINITY;
      for (int c = lane; c < cols; c += 32)
        top = fmaxf(top, row[c]);
      top = warpMax(top);
      float highest = fmaxf(sTop[r], top);
      float shift = highest == -INFINITY ? 0.0f : highest;
      float sum = 0.0f;
      for (int c = lane; c < cols; c += 32) {
        float e = expf(row[c] - shift);
        row[c] = e;
        sum += e;
      }
      sum = warpSum(sum);
      if (lane == 0) {
        float rescale = expf(sTop[r] - shift);
        sRescale[r] = rescale;
        sSum[r] = sSum[r] * rescale + sum;
        sTop[r] = highest;
      }
    }
    __syncthreads();
    for (int i = tid; i < rows * E; i += kThreads) {
      int r = i / E, e = i % E;
      float acc = sO[i] * sRescale[r];
      for (int c = 0; c < cols; ++c)
        acc = fmaf(sS[r * bn + c], sV[c * vld + e], acc);
      sO[i] = acc;
    }
  }
  __syncthreads();
  // o = out / sum and lse = max + log(sum); a row without a finite score
  // has o = 0 and lse = -inf.
  float *o = groupOf(p, kO, g);
  const int64_t *oRow = tableOf(p, kO, kQueryRole) + m0;
  const int64_t *oCol = tableOf(p, kO, kValueRole);
  for (int i = tid; i < rows * E; i += kThreads) {
    int r = i / E, e = i % E;
    float sum = sSum[r];
    o[oRow[r] + oCol[e]] = sum > 0.0f ? sO[i] / sum : 0.0f;
  }
  float *lse = groupOf(p, kLse, g);
  const int64_t *lseRow = tableOf(p, kLse, kQueryRole) + m0;
  for (int r = tid; r < rows; r += kThreads)
    lse[lseRow[r]] = sSum[r] > 0.0f ? sTop[r] + logf(sSum[r]) : -INFINITY;
}

__global__ void __launch_bounds__(kThreads) attentionGradTiles(Params p) {
  extern __shared__ float shared[];
  const int bm = p.bm, bn = p.bn, D = p.D, E = p.E;
  const int kld = D + 1, vld = E + 1;
  float *sK = shared;
  float *sV = sK + bn * kld;
  float *sdK = sV + bn * vld;
  float *sdV = sdK + bn * D;
  float *sQ = sdV + bn * E;
  float *sdO = sQ + bm * D;
  float *sP = sdO + bm * E;
  float *sdS = sP + bm * bn;
  float *sLse = sdS + bm * bn;
  float *sDi = sLse + bm;
  const int64_t g = blockIdx.x / p.tiles;
  const int64_t n0 = blockIdx.x % p.tiles * bn;
  const int cols = int(min(int64_t(bn), p.N - n0));
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;

  loadTile(p, kK, g, kKeyRole, n0, cols, kHeadRole, D, sK, kld);
  loadTile(p, kV, g, kKeyRole, n0, cols, kValueRole, E, sV, vld);
  for (int i = tid; i < cols * D; i += kThreads)
    sdK[i] = 0.0f;
  for (int i = tid; i < cols * E; i += kThreads)
    sdV[i] = 0.0f;
  const float *o = groupOf(p, kO, g);
  const int64_t *oRow = tableOf(p, kO, kQueryRole);
  const int64_t *oCol = tableOf(p, kO, kValueRole);
  const float *lse = groupOf(p, kLse, g);
  const int64_t *lseRow = tableOf(p, kLse, kQueryRole);
  const float *bias = p.bias ? groupOf(p, kBias, g) : nullptr;
  const int64_t *biasRow = p.bias ? tableOf(p, kBias, kQueryRole) : nullptr;
  const int64_t *biasKey = p.bias ? tableOf(p, kBias, kKeyRole) + n0 : nullptr;
  float *dq = groupOf(p, kDQ, g);
  const int64_t *dqRow = tableOf(p, kDQ, kQueryRole);
  const int64_t *dqCol = tableOf(p, kDQ, kHeadRole);
  for (int64_t m0 = 0; m0 < p.M; m0 += bm) {
    const int rows = int(min(int64_t(bm), p.M - m0));
    __syncthreads(); // the last tile's readers are done
    loadTile(p, kQ, g, kQueryRole, m0, rows, kHeadRole, D, sQ, D);
    loadTile(p, kDOut, g, kQueryRole, m0, rows, kValueRole, E, sdO, E);
    __syncthreads();
    // di = dout · o per row, a warp per row.
    for (int r = warp; r < rows; r += kWarps) {
      float sum = 0.0f;
      for (int e = lane; e < E; e += 32)
        sum = fmaf(sdO[r * E + e], o[oRow[m0 + r] + oCol[e]], sum);
      sum = warpSum(sum);
      if (lane == 0) {
        sDi[r] = sum;
        sLse[r] = lse[lseRow[m0 + r]];
      }
    }
    __syncthreads();
    // p = exp(scale q k + bias - lse), ds = p (dout v - di).
    for (int i = tid; i < rows * cols; i += kThreads) {
      int r = i / cols, c = i % cols;
      float dot = 0.0f;
      for (int d = 0; d < D; ++d)
        dot = fmaf(sQ[r * D + d], sK[c * kld + d], dot);
      float score = p.scale * dot;
      if (bias)
        score += bias[biasRow[m0 + r] + biasKey[c]];
      float prob = sLse[r] == -INFINITY ? 0.0f : expf(score - sLse[r]);
      float dp = 0.0f;
      for (int e = 0; e < E; ++e)
        dp = fmaf(sdO[r * E + e], sV[c * vld + e], dp);
      sP[r * bn + c] = prob;
      sdS[r * bn + c] = prob * (dp - sDi[r]);
    }
    __syncthreads();
    for (int i = tid; i < cols * E; i += kThreads) {
      int c = i / E, e = i % E;
      float acc = 0.0f;
      for (int r = 0; r < rows; ++r)
        acc = fmaf(sP[r * bn + c], sdO[r * E + e], acc);
      sdV[i] += acc;
    }
    for (int i = tid; i < cols * D; i += kThreads) {
      int c = i / D, d = i % D;
      float acc = 0.0f;
      for (int r = 0; r < rows; ++r)
        acc = fmaf(sdS[r * bn + c], sQ[r * D + d], acc);
      sdK[i] += p.scale * acc;
    }
    for (int i = tid; i < rows * D; i += kThreads) {
      int r = i / D, d = i % D;
      float acc = 0.0f;
      for (int c = 0; c < cols; ++c)
        acc = fmaf(sdS[r * bn + c], sK[c * kld + d], acc);
      atomicAdd(dq + dqRow[m0 + r] + dqCol[d], p.scale * acc);
    }
  }
  __syncthreads();
  float *dk = groupOf(p, kDK, g);
  const int64_t *dkRow = tableOf(p, kDK, kKeyRole) + n0;
  const int64_t *dkCol = tableOf(p, kDK, kHeadRole);
  for (int i = tid; i < cols * D; i += kThreads)
    dk[dkRow[i / D] + dkCol[i % D]] = sdK[i];
  float *dv = groupOf(p, kDV, g);
  const int64_t *dvRow = tableOf(p, kDV, kKeyRole) + n0;
  const int64_t *dvCol = tableOf(p, kDV, kValueRole);
  for (int i = tid; i < cols * E; i += kThreads)
    dv[dvRow[i / E] + dvCol[i % E]] = sdV[i];
}

Params paramsOf(const AttentionSpec &spec, const AttentionData &data,
                const int64_t *tables) {
  const AttentionGeometry &geometry = spec.geometry;
  Params p{};
  for (int t = 0; t < kAttentionOperands; ++t) {
    p.data[t] = data[size_t(t)];
    for (int r = 0; r < kAttentionRoles; ++r)
      p.start[t][r] = geometry.start[size_t(t)][size_t(r)];
  }
  p.tables = tables;
  p.G = geometry.size[kGroupRole];
  p.M = geometry.size[kQueryRole];
  p.N = geometry.size[kKeyRole];
  p.D = int(std::min<int64_t>(geometry.size[kHeadRole], INT_MAX / 2));
  p.E = int(std::min<int64_t>(geometry.size[kValueRole], INT_MAX / 2));
  p.scale = static_cast<float>(spec.scale);
  p.bias = spec.bias;
  return p;
}

/// Picks the largest square tile whose shared memory (`floats`) fits the
/// GPU, lets `kernel` use that much, and returns its bytes.
template <typename Floats>
size_t chooseTile(Params &p, const void *kernel, Floats floats,
                  const char *what) {
  int device = 0, most = 0;
  MESHC_CUDA_CHECK(cudaGetDevice(&device));
  MESHC_CUDA_CHECK(cudaDeviceGetAttribute(
      &most, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  int tile = kLargestTile;
  while (tile > 1 &&
         floats(tile, tile, p.D, p.E) * sizeof(float) > size_t(most))
    tile /= 2;
  size_t bytes = floats(tile, tile, p.D, p.E) * sizeof(float);
  if (bytes > size_t(most))
    throw RuntimeError(std::string(what) + " on CUDA: head dims of " +
                       std::to_string(p.D) + " and value dims of " +
                       std::to_string(p.E) + " elements need " +
                       std::to_string(bytes) +
                       " bytes of shared memory for a tile of one row, more "
                       "than the GPU's " +
                       std::to_string(most));
  if (bytes > kDefaultShared)
    MESHC_CUDA_CHECK(cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  p.bm = p.bn = tile;
  return bytes;
}

/// The grid of `units` blocks, which must fit one dimension.
unsigned gridOf(int64_t units, const char *what) {
  if (units > INT_MAX)
    throw RuntimeError(std::string(what) +
                       " on CUDA: " + std::to_string(units) +
                       " tiles are more than one grid dimension holds");
  return static_cast<unsigned>(units);
}

} // namespace

void attentionKernel(const Exec &exec, const AttentionSpec &spec,
                     const AttentionData &data, const int64_t *tables) {
  Params p = paramsOf(spec, data, tables);
  size_t bytes =
      chooseTile(p, reinterpret_cast<const void *>(&attentionForwardTiles),
                 forwardFloats, "attention");
  p.tiles = (p.M + p.bm - 1) / p.bm;
  int64_t units = p.G * p.tiles;
  if (units == 0)
    return;
  attentionForwardTiles<<<gridOf(units, "attention"), kThreads, bytes,
                          exec.stream>>>(p);
  MESHC_CUDA_CHECK(cudaGetLastError());
}

void attentionGradKernel(const Exec &exec, const AttentionSpec &spec,
                         const AttentionData &data, const int64_t *tables) {
  Params p = paramsOf(spec, data, tables);
  // dq gathers every key tile's terms.
  int64_t dqElements = p.G * p.M * int64_t(p.D);
  if (dqElements > 0)
    MESHC_CUDA_CHECK(cudaMemsetAsync(
        data[kDQ], 0, size_t(dqElements) * sizeof(float), exec.stream));
  size_t bytes =
      chooseTile(p, reinterpret_cast<const void *>(&attentionGradTiles),
                 gradFloats, "attention_grad");
  p.tiles = (p.N + p.bn - 1) / p.bn;
  int64_t units = p.G * p.tiles;
  if (units == 0)
    return;
  attentionGradTiles<<<gridOf(units, "attention_grad"), kThreads, bytes,
                       exec.stream>>>(p);
  MESHC_CUDA_CHECK(cudaGetLastError());
}

} // namespace meshc::runtime::cuda
