//===- CudaAttentionGemm.cu - Attention through cuBLAS --------------------===//
//
// Forward, per chunk of groups:  W = scale q k^T (cuBLAS), the softmax of
// each row of W + bias in place and lse (softmaxRows), o = W v (cuBLAS).
// Backward: W1 = scale q k^T, W2 = dout v^T (cuBLAS); p = exp(W1 + bias -
// lse) into W1 and ds = p (W2 - di) into W2, di = dout . o per row
// (gradRows); dv = W1^T dout, dq = scale W2 k, dk = scale W2^T q (cuBLAS).
// Every output element is written once (no group shares one), so nothing
// is zeroed first and no sum depends on timing.
//
// cuBLAS is column-major: a matrix whose rows are one stride apart with
// contiguous columns is the transpose of a column-major one, so a GEMM
// whose result is row-major runs as C^T = B^T A^T (gemm below).
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaAttentionGemm.h"

#include "cuda/CudaCheck.h"
#include "cuda/WarpReduce.cuh"
#include "runtime/Error.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <optional>
#include <vector>

namespace meshc::runtime::cuda {

namespace {

/// A matrix of `rows` x `cols` elements of each group: column-major
/// (element (r, c) at r + c * ld) or row-major (r * ld + c).
struct Matrix {
  float *data = nullptr;
  int64_t rows = 0, cols = 0, ld = 1;
  bool columnMajor = true;
  /// Elements from one group of the batched (last) group dim to the next.
  int64_t batchStride = 0;

  Matrix transposed() const {
    Matrix t = *this;
    std::swap(t.rows, t.cols);
    t.columnMajor = !columnMajor;
    return t;
  }
};

/// The matrix of `operand` with `row` and `col` as its roles, or nothing
/// where cuBLAS cannot read it (a role whose offsets are no single stride,
/// or neither role contiguous).
std::optional<Matrix> matrixOf(const AttentionGeometry &geometry,
                               AttentionOperand operand, AttentionRole row,
                               AttentionRole col) {
  Matrix m;
  m.rows = geometry.size[row];
  m.cols = geometry.size[col];
  const int64_t rs = geometry.stride[operand][row];
  const int64_t cs = geometry.stride[operand][col];
  // A role of one index has no stride (0): the matrix is a row or a column,
  // read along the other role's.
  if (m.rows <= 1 && m.cols <= 1) {
    m.columnMajor = true;
    m.ld = 1;
  } else if (m.rows <= 1 && cs >= 1) {
    m.columnMajor = true;
    m.ld = cs;
  } else if (m.cols <= 1 && rs >= 1) {
    m.columnMajor = false;
    m.ld = rs;
  } else if (rs == 1 && cs >= m.rows) {
    m.columnMajor = true;
    m.ld = cs;
  } else if (cs == 1 && rs >= m.cols) {
    m.columnMajor = false;
    m.ld = rs;
  } else {
    return std::nullopt;
  }
  const std::vector<int64_t> &groups = geometry.steps[operand][kGroupRole];
  m.batchStride = groups.empty() ? 0 : groups.back();
  return m;
}

/// The operands of the GEMMs with their roles (rows, columns).
struct GemmOperand {
  AttentionOperand operand;
  AttentionRole row, col;
};
constexpr GemmOperand kForwardOperands[] = {{kQ, kQueryRole, kHeadRole},
                                            {kK, kKeyRole, kHeadRole},
                                            {kV, kKeyRole, kValueRole},
                                            {kO, kQueryRole, kValueRole}};
constexpr GemmOperand kGradOperands[] = {
    {kQ, kQueryRole, kHeadRole},  {kK, kKeyRole, kHeadRole},
    {kV, kKeyRole, kValueRole},   {kDOut, kQueryRole, kValueRole},
    {kDQ, kQueryRole, kHeadRole}, {kDK, kKeyRole, kHeadRole},
    {kDV, kKeyRole, kValueRole}};

/// The floats of workspace one group needs (INT64_MAX where that
/// overflows: no workspace holds it).
int64_t floatsPerGroup(const AttentionGeometry &geometry, bool grad) {
  int64_t scores = 0, floats = 0;
  if (__builtin_mul_overflow(geometry.size[kQueryRole], geometry.size[kKeyRole],
                             &scores) ||
      __builtin_mul_overflow(scores, int64_t(grad ? 2 : 1), &floats))
    return INT64_MAX;
  return floats;
}

/// Whether every operand of the step's GEMMs is a matrix cuBLAS reads, and
/// the sizes are ones the path handles (none 0; the tile kernels do those).
bool gemmReadable(const AttentionGeometry &geometry, bool grad) {
  for (int64_t size : geometry.size)
    if (size <= 0)
      return false;
  auto readable = [&](const auto &operands) {
    for (const GemmOperand &o : operands)
      if (!matrixOf(geometry, o.operand, o.row, o.col))
        return false;
    return true;
  };
  return grad ? readable(kGradOperands) : readable(kForwardOperands);
}

int64_t innerGroups(const AttentionGeometry &geometry) {
  const std::vector<int64_t> &sizes = geometry.dimSizes[kGroupRole];
  return sizes.empty() ? 1 : sizes.back();
}

/// C = alpha A B (+ beta C), batched over `batch` groups.
void gemm(cublasHandle_t cublas, bool tf32, int64_t batch, float alpha,
          const Matrix &a, const Matrix &b, const Matrix &c) {
  if (!c.columnMajor) {
    gemm(cublas, tf32, batch, alpha, b.transposed(), a.transposed(),
         c.transposed());
    return;
  }
  const float zero = 0.0f;
  MESHC_CUBLAS_CHECK(cublasGemmStridedBatchedEx_64(
      cublas, a.columnMajor ? CUBLAS_OP_N : CUBLAS_OP_T,
      b.columnMajor ? CUBLAS_OP_N : CUBLAS_OP_T, c.rows, c.cols, a.cols, &alpha,
      a.data, CUDA_R_32F, a.ld, a.batchStride, b.data, CUDA_R_32F, b.ld,
      b.batchStride, &zero, c.data, CUDA_R_32F, c.ld, c.batchStride, batch,
      tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT));
}

/// What the row kernels need: the tables of the operands they read by
/// index, and the chunk's first group.
struct RowParams {
  float *w1, *w2;
  const float *bias, *o, *dout;
  float *lse;
  const int64_t *biasGroup, *biasRow, *biasKey;
  const int64_t *lseGroup, *lseRow;
  const int64_t *oGroup, *oRow, *oCol;
  const int64_t *doutGroup, *doutRow, *doutCol;
  int64_t firstGroup, rows, M, N, E;
};

constexpr int kRowThreads = 256;
constexpr int kRowWarps = kRowThreads / 32;

/// A warp per row of the chunk's scores: adds the bias, takes the softmax
/// in place and writes lse (a row without a finite score: p = 0, lse =
/// -inf, as the tile kernels and the CPU).
__global__ void __launch_bounds__(kRowThreads) softmaxRows(RowParams p) {
  int64_t row = int64_t(blockIdx.x) * kRowWarps + threadIdx.x / 32;
  if (row >= p.rows)
    return;
  const int lane = threadIdx.x % 32;
  const int64_t j = row / p.M, m = row % p.M, g = p.firstGroup + j;
  float *w = p.w1 + row * p.N;
  const float *bias = p.bias ? p.bias + p.biasGroup[g] + p.biasRow[m] : nullptr;
  float top = -INFINITY;
  for (int64_t n = lane; n < p.N; n += 32) {
    float s = w[n];
    if (bias)
      s += bias[p.biasKey[n]];
    w[n] = s;
    top = fmaxf(top, s);
  }
  top = warpMax(top);
  float shift = top == -INFINITY ? 0.0f : top;
  float sum = 0.0f;
  for (int64_t n = lane; n < p.N; n += 32) {
    float e = expf(w[n] - shift);
    w[n] = e;
    sum += e;
  }
  sum = warpSum(sum);
  float scale = sum > 0.0f ? 1.0f / sum : 0.0f;
  for (int64_t n = lane; n < p.N; n += 32)
    w[n] *= scale;
  if (lane == 0)
    p.lse[p.lseGroup[g] + p.lseRow[m]] =
        sum > 0.0f ? top + logf(sum) : -INFINITY;
}

/// A warp per row: p = exp(W1 + bias - lse) into W1, ds = p (W2 - di) into
/// W2, di = dout . o.
__global__ void __launch_bounds__(kRowThreads) gradRows(RowParams p) {
  int64_t row = int64_t(blockIdx.x) * kRowWarps + threadIdx.x / 32;
  if (row >= p.rows)
    return;
  const int lane = threadIdx.x % 32;
  const int64_t j = row / p.M, m = row % p.M, g = p.firstGroup + j;
  const float *o = p.o + p.oGroup[g] + p.oRow[m];
  const float *dout = p.dout + p.doutGroup[g] + p.doutRow[m];
  float di = 0.0f;
  for (int64_t e = lane; e < p.E; e += 32)
    di = fmaf(dout[p.doutCol[e]], o[p.oCol[e]], di);
  di = warpSum(di);
  float lse = p.lse[p.lseGroup[g] + p.lseRow[m]];
  const float *bias = p.bias ? p.bias + p.biasGroup[g] + p.biasRow[m] : nullptr;
  float *w1 = p.w1 + row * p.N, *w2 = p.w2 + row * p.N;
  for (int64_t n = lane; n < p.N; n += 32) {
    float s = w1[n];
    if (bias)
      s += bias[p.biasKey[n]];
    float prob = lse == -INFINITY ? 0.0f : expf(s - lse);
    w1[n] = prob;
    w2[n] = prob * (w2[n] - di);
  }
}

unsigned rowBlocks(int64_t rows) {
  return static_cast<unsigned>((rows + kRowWarps - 1) / kRowWarps);
}

} // namespace

std::optional<AttentionGemmPlan>
planAttentionGemm(const AttentionGeometry &geometry, bool grad,
                  int64_t workspaceFloats) {
  if (!gemmReadable(geometry, grad))
    return std::nullopt;
  int64_t perGroup = floatsPerGroup(geometry, grad);
  if (perGroup > workspaceFloats)
    return std::nullopt;
  AttentionGemmPlan plan;
  plan.inner = innerGroups(geometry);
  plan.chunk = std::min(plan.inner, workspaceFloats / perGroup);
  plan.workspaceFloats = plan.chunk * perGroup;
  return plan;
}

int64_t attentionWorkspaceWanted(const AttentionGeometry &geometry, bool grad) {
  if (!gemmReadable(geometry, grad))
    return 0;
  int64_t perGroup = floatsPerGroup(geometry, grad);
  if (perGroup > kAttentionWorkspaceCap)
    return 0;
  return std::min(kAttentionWorkspaceCap / perGroup, innerGroups(geometry)) *
         perGroup;
}

bool attentionGemm(const Exec &exec, const AttentionGemmContext &context,
                   const AttentionSpec &spec, bool grad,
                   const AttentionData &data, const int64_t *tables) {
  const AttentionGeometry &geometry = spec.geometry;
  std::optional<AttentionGemmPlan> plan =
      planAttentionGemm(geometry, grad, context.workspaceFloats);
  if (!plan)
    return false;
  const int64_t M = geometry.size[kQueryRole], N = geometry.size[kKeyRole];
  const float scale = static_cast<float>(spec.scale);
  auto table = [&](AttentionOperand operand, AttentionRole role) {
    return geometry.has(operand) ? geometry.offsets(tables, operand, role)
                                 : nullptr;
  };
  RowParams rows{};
  rows.bias = spec.bias ? data[kBias] : nullptr;
  if (spec.bias) {
    rows.biasGroup = table(kBias, kGroupRole);
    rows.biasRow = table(kBias, kQueryRole);
    rows.biasKey = table(kBias, kKeyRole);
  }
  rows.lse = data[kLse];
  rows.lseGroup = table(kLse, kGroupRole);
  rows.lseRow = table(kLse, kQueryRole);
  if (grad) {
    rows.o = data[kO];
    rows.oGroup = table(kO, kGroupRole);
    rows.oRow = table(kO, kQueryRole);
    rows.oCol = table(kO, kValueRole);
    rows.dout = data[kDOut];
    rows.doutGroup = table(kDOut, kGroupRole);
    rows.doutRow = table(kDOut, kQueryRole);
    rows.doutCol = table(kDOut, kValueRole);
  }
  rows.M = M;
  rows.N = N;
  rows.E = geometry.size[kValueRole];
  rows.w1 = context.workspace;
  rows.w2 = context.workspace + plan->chunk * M * N;

  // The group dims but the last, walked here: their sizes and each
  // operand's strides along them.
  const std::vector<int64_t> &groupSizes = geometry.dimSizes[kGroupRole];
  const size_t outerDims = groupSizes.empty() ? 0 : groupSizes.size() - 1;
  const int64_t outerCount = geometry.size[kGroupRole] / plan->inner;
  std::array<std::optional<Matrix>, kAttentionOperands> base;
  for (const GemmOperand &o :
       grad ? std::vector<GemmOperand>(std::begin(kGradOperands),
                                       std::end(kGradOperands))
            : std::vector<GemmOperand>(std::begin(kForwardOperands),
                                       std::end(kForwardOperands)))
    base[o.operand] = matrixOf(geometry, o.operand, o.row, o.col);
  std::vector<int64_t> index(outerDims, 0);
  for (int64_t outer = 0; outer < outerCount; ++outer) {
    // index = outer, row-major over the outer group dims.
    for (size_t d = outerDims, rest = size_t(outer); d-- > 0;) {
      index[d] = int64_t(rest % size_t(groupSizes[d]));
      rest /= size_t(groupSizes[d]);
    }
    for (int64_t first = 0; first < plan->inner; first += plan->chunk) {
      const int64_t count = std::min(plan->chunk, plan->inner - first);
      auto at = [&](AttentionOperand operand) {
        Matrix m = *base[operand];
        const std::vector<int64_t> &steps = geometry.steps[operand][kGroupRole];
        int64_t offset = first * m.batchStride;
        for (size_t d = 0; d < outerDims; ++d)
          offset += index[d] * steps[d];
        m.data = data[operand] + offset;
        return m;
      };
      Matrix w1;
      w1.data = rows.w1;
      w1.rows = M;
      w1.cols = N;
      w1.ld = N;
      w1.columnMajor = false;
      w1.batchStride = M * N;
      Matrix w2 = w1;
      w2.data = rows.w2;
      rows.firstGroup = outer * plan->inner + first;
      rows.rows = count * M;
      Matrix q = at(kQ), k = at(kK), v = at(kV);
      gemm(context.cublas, context.tf32, count, scale, q, k.transposed(), w1);
      if (!grad) {
        softmaxRows<<<rowBlocks(rows.rows), kRowThreads, 0, exec.stream>>>(
            rows);
        MESHC_CUDA_CHECK(cudaGetLastError());
        gemm(context.cublas, context.tf32, count, 1.0f, w1, v, at(kO));
        continue;
      }
      Matrix dout = at(kDOut);
      gemm(context.cublas, context.tf32, count, 1.0f, dout, v.transposed(), w2);
      gradRows<<<rowBlocks(rows.rows), kRowThreads, 0, exec.stream>>>(rows);
      MESHC_CUDA_CHECK(cudaGetLastError());
      gemm(context.cublas, context.tf32, count, 1.0f, w1.transposed(), dout,
           at(kDV));
      gemm(context.cublas, context.tf32, count, scale, w2, k, at(kDQ));
      gemm(context.cublas, context.tf32, count, scale, w2.transposed(), q,
           at(kDK));
    }
  }
  return true;
}

} // namespace meshc::runtime::cuda
