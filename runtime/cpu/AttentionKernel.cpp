//===- AttentionKernel.cpp - Fused attention on the CPU -------------------===//
//
// Blocks of rows of an operand are seen as row-major matrices (Block): in
// place where the operand's rows are evenly spaced and its columns
// contiguous, else packed into the unit's working memory. Results are
// accumulated in the working memory and stored through the offset tables
// once a block (or, for dq per group, the group) is done.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/AttentionKernel.h"

#include "runtime/cpu/VectorMath.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace meshc::runtime {

namespace {

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

/// A row-major matrix: row r starts at data + r * ld.
struct Block {
  const float *data = nullptr;
  int64_t ld = 1;
};

/// The row functions, chosen once.
struct RowMath {
  vmath::BinaryArrays add = vmath::binaryArrays(BinaryFn::Add);
  vmath::BinaryArrays sub = vmath::binaryArrays(BinaryFn::Sub);
  vmath::BinaryArrays mul = vmath::binaryArrays(BinaryFn::Mul);
};

const RowMath &rowMath() {
  static const RowMath math;
  return math;
}

/// One step's operands, sizes and blocks.
struct Attention {
  Attention(const AttentionSpec &spec, const AttentionPointers &data, bool grad)
      : spec(spec), geo(spec.geometry), data(data),
        work(attentionWork(spec.geometry, grad)),
        scale(static_cast<float>(spec.scale)), G(geo.size[kGroupRole]),
        M(geo.size[kQueryRole]), N(geo.size[kKeyRole]), D(geo.size[kHeadRole]),
        E(geo.size[kValueRole]),
        queryBlocks((M + work.queryBlock - 1) / work.queryBlock),
        keyBlocks((N + work.keyBlock - 1) / work.keyBlock) {}

  const AttentionSpec &spec;
  const AttentionGeometry &geo;
  const AttentionPointers &data;
  AttentionWork work;
  float scale;
  int64_t G, M, N, D, E;
  int64_t queryBlocks, keyBlocks;

  /// The offset table of operand `t` along `role`.
  const int64_t *offsets(AttentionOperand t, AttentionRole role) const {
    return geo.offsets(data.tables, t, role);
  }
  /// Where operand `t` of group g starts.
  float *groupBase(AttentionOperand t, int64_t g) const {
    return data.data[t] + offsets(t, kGroupRole)[g];
  }

  /// Rows [first, first + rows) of role `rowRole` by every index of
  /// `colRole` of operand `t` in group g: in place when they form a plain
  /// strided matrix, else copied into `buffer`.
  Block view(AttentionOperand t, int64_t g, AttentionRole rowRole,
             int64_t first, int64_t rows, AttentionRole colRole,
             float *buffer) const {
    const int64_t cols = geo.size[colRole];
    const float *base = groupBase(t, g);
    const int64_t *rowAt = offsets(t, rowRole);
    const int64_t *colAt = offsets(t, colRole);
    const int64_t rowStride = geo.stride[t][rowRole],
                  colStride = geo.stride[t][colRole];
    const int64_t width = std::max<int64_t>(cols, 1);
    const bool contiguous = cols <= 1 || colStride == 1;
    if (contiguous && rows > 0) {
      if (rows == 1)
        return {base + rowAt[first], width};
      if (rowStride >= width)
        return {base + rowAt[first], rowStride};
    }
    for (int64_t r = 0; r < rows; ++r) {
      const float *row = base + rowAt[first + r];
      float *to = buffer + r * cols;
      if (contiguous)
        std::memcpy(to, row, size_t(cols) * sizeof(float));
      else
        for (int64_t c = 0; c < cols; ++c)
          to[c] = row[colAt[c]];
    }
    return {buffer, width};
  }

  /// Stores `rows` rows of `from` (ld `cols` of `colRole`), each times
  /// rowScale[r] when given, as rows [first, first + rows) of `rowRole` of
  /// operand `t` in group g.
  void store(AttentionOperand t, int64_t g, AttentionRole rowRole,
             int64_t first, int64_t rows, AttentionRole colRole,
             const float *from, const float *rowScale = nullptr) const {
    const int64_t cols = geo.size[colRole];
    if (cols == 0)
      return;
    float *base = groupBase(t, g);
    const int64_t *rowAt = offsets(t, rowRole);
    const int64_t *colAt = offsets(t, colRole);
    const bool contiguous = cols == 1 || geo.stride[t][colRole] == 1;
    for (int64_t r = 0; r < rows; ++r) {
      float *row = base + rowAt[first + r];
      const float *src = from + r * cols;
      if (contiguous) {
        if (rowScale)
          rowMath().mul.scalarRhs(src, rowScale[r], row, cols);
        else
          std::memcpy(row, src, size_t(cols) * sizeof(float));
      } else {
        for (int64_t c = 0; c < cols; ++c)
          row[colAt[c]] = rowScale ? src[c] * rowScale[r] : src[c];
      }
    }
  }

  /// scores (bm x bn, ld bn) = scale q kᵀ + bias for the query rows from m0
  /// and the keys from n0 of group g.
  void scores(int64_t g, int64_t m0, int64_t bm, int64_t n0, int64_t bn,
              const Block &q, const Block &k, float *scores) const {
    if (D > 0)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(bm), int(bn),
                  int(D), scale, q.data, int(q.ld), k.data, int(k.ld), 0.0f,
                  scores, int(bn));
    else
      std::fill(scores, scores + bm * bn, 0.0f);
    if (!spec.bias)
      return;
    const float *base = groupBase(kBias, g);
    const int64_t *rowAt = offsets(kBias, kQueryRole);
    const int64_t *keyAt = offsets(kBias, kKeyRole) + n0;
    const int64_t keyStride = geo.stride[kBias][kKeyRole];
    for (int64_t r = 0; r < bm; ++r) {
      float *row = scores + r * bn;
      const float *bias = base + rowAt[m0 + r];
      if (keyStride == 1 || bn == 1)
        rowMath().add.both(row, bias + keyAt[0], row, bn);
      else if (keyStride == 0)
        rowMath().add.scalarRhs(row, bias[0], row, bn);
      else
        for (int64_t c = 0; c < bn; ++c)
          row[c] += bias[keyAt[c]];
    }
  }

  /// The log-sum-exp (lse) and the rows' dout · o (di) of the bm query rows
  /// from m0 of group g, with the blocks of q, dout and o.
  struct QueryRows {
    Block q, dout;
    const float *lse = nullptr, *di = nullptr;
  };
  QueryRows queryRows(int64_t g, int64_t m0, int64_t bm, float *w) const {
    QueryRows rows;
    rows.q = view(kQ, g, kQueryRole, m0, bm, kHeadRole, w + work.q);
    rows.dout = view(kDOut, g, kQueryRole, m0, bm, kValueRole, w + work.dout);
    Block o = view(kO, g, kQueryRole, m0, bm, kValueRole, w + work.o);
    float *lse = w + work.rowsA, *di = w + work.rowsB;
    const float *lseBase = groupBase(kLse, g);
    const int64_t *lseAt = offsets(kLse, kQueryRole);
    for (int64_t r = 0; r < bm; ++r) {
      lse[r] = lseBase[lseAt[m0 + r]];
      di[r] = E > 0 ? cblas_sdot(int(E), rows.dout.data + r * rows.dout.ld, 1,
                                 o.data + r * o.ld, 1)
                    : 0.0f;
    }
    rows.lse = lse;
    rows.di = di;
    return rows;
  }

  /// For the query rows `rows` (from m0) and the keys from n0 of group g:
  /// the probabilities p = exp(scores - lse) into w's scores and their
  /// gradient ds = p (dout vᵀ - di) into w's dscores.
  void probabilities(int64_t g, int64_t m0, int64_t bm, int64_t n0, int64_t bn,
                     const QueryRows &rows, const Block &k, const Block &v,
                     float *w) const {
    const RowMath &math = rowMath();
    float *p = w + work.scores, *ds = w + work.dscores;
    scores(g, m0, bm, n0, bn, rows.q, k, p);
    for (int64_t r = 0; r < bm; ++r) {
      float *row = p + r * bn;
      if (rows.lse[r] == kMinusInfinity) {
        // Every score of the row is -inf: no probability, no gradient.
        std::fill(row, row + bn, 0.0f);
        continue;
      }
      vmath::expShifted(row, rows.lse[r], row, bn);
    }
    if (E > 0)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(bm), int(bn),
                  int(E), 1.0f, rows.dout.data, int(rows.dout.ld), v.data,
                  int(v.ld), 0.0f, ds, int(bn));
    else
      std::fill(ds, ds + bm * bn, 0.0f);
    for (int64_t r = 0; r < bm; ++r) {
      float *row = ds + r * bn;
      math.sub.scalarRhs(row, rows.di[r], row, bn);
      math.mul.both(p + r * bn, row, row, bn);
    }
  }

  /// dv += pᵀ dout and dk += scale dsᵀ q for the pair's blocks.
  void addKeyGradients(int64_t bm, int64_t bn, const QueryRows &rows,
                       float *w) const {
    const float *p = w + work.scores, *ds = w + work.dscores;
    if (E > 0)
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(bn), int(E),
                  int(bm), 1.0f, p, int(bn), rows.dout.data, int(rows.dout.ld),
                  1.0f, w + work.dv, int(E));
    if (D > 0)
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(bn), int(D),
                  int(bm), scale, ds, int(bn), rows.q.data, int(rows.q.ld),
                  1.0f, w + work.dk, int(D));
  }

  /// dq (bm x D, ld D) += scale ds k for the pair's blocks.
  void addQueryGradient(int64_t bm, int64_t bn, const Block &k, const float *w,
                        float *dq) const {
    if (D > 0)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(bm), int(D),
                  int(bn), scale, w + work.dscores, int(bn), k.data, int(k.ld),
                  1.0f, dq, int(D));
  }

  /// The keys [n0, n0 + bn) of group g: dk and dv over every query block,
  /// and, when dq is given (M x D, ld D), its terms of these keys.
  void keyBlock(int64_t g, int64_t n0, int64_t bn, float *w, float *dq) const {
    Block k = view(kK, g, kKeyRole, n0, bn, kHeadRole, w + work.k);
    Block v = view(kV, g, kKeyRole, n0, bn, kValueRole, w + work.v);
    std::fill(w + work.dk, w + work.dk + bn * D, 0.0f);
    std::fill(w + work.dv, w + work.dv + bn * E, 0.0f);
    for (int64_t m0 = 0; m0 < M; m0 += work.queryBlock) {
      int64_t bm = std::min(work.queryBlock, M - m0);
      QueryRows rows = queryRows(g, m0, bm, w);
      probabilities(g, m0, bm, n0, bn, rows, k, v, w);
      addKeyGradients(bm, bn, rows, w);
      if (dq)
        addQueryGradient(bm, bn, k, w, dq + m0 * D);
    }
    store(kDK, g, kKeyRole, n0, bn, kHeadRole, w + work.dk);
    store(kDV, g, kKeyRole, n0, bn, kValueRole, w + work.dv);
  }
};

} // namespace

int64_t attentionForwardUnits(const AttentionGeometry &geometry) {
  int64_t block = attentionWork(geometry, false).queryBlock;
  return geometry.size[kGroupRole] *
         ((geometry.size[kQueryRole] + block - 1) / block);
}

void attentionForward(const AttentionSpec &spec, const AttentionPointers &data,
                      int64_t unit, float *w) {
  Attention a(spec, data, /*grad=*/false);
  const RowMath &math = rowMath();
  const AttentionWork &work = a.work;
  const int64_t g = unit / a.queryBlocks,
                m0 = unit % a.queryBlocks * work.queryBlock;
  const int64_t bm = std::min(work.queryBlock, a.M - m0), E = a.E;
  float *out = w + work.o, *scores = w + work.scores;
  float *top = w + work.rowsA, *sum = w + work.rowsB;
  std::fill(out, out + bm * E, 0.0f);
  std::fill(top, top + bm, kMinusInfinity);
  std::fill(sum, sum + bm, 0.0f);
  Block q = a.view(kQ, g, kQueryRole, m0, bm, kHeadRole, w + work.q);
  for (int64_t n0 = 0; n0 < a.N; n0 += work.keyBlock) {
    const int64_t bn = std::min(work.keyBlock, a.N - n0);
    Block k = a.view(kK, g, kKeyRole, n0, bn, kHeadRole, w + work.k);
    a.scores(g, m0, bm, n0, bn, q, k, scores);
    // The online softmax: scores become exp(score - the running maximum),
    // the rows' sums and outputs so far are rescaled to the new maximum.
    for (int64_t r = 0; r < bm; ++r) {
      float *row = scores + r * bn;
      float highest = std::max(top[r], vmath::max(row, bn));
      float shift = highest == kMinusInfinity ? 0.0f : highest;
      float added = vmath::expShifted(row, shift, row, bn);
      float rescale = std::exp(top[r] - shift);
      if (rescale != 1.0f && E > 0)
        math.mul.scalarRhs(out + r * E, rescale, out + r * E, E);
      sum[r] = sum[r] * rescale + added;
      top[r] = highest;
    }
    if (E > 0) {
      Block v = a.view(kV, g, kKeyRole, n0, bn, kValueRole, w + work.v);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(bm), int(E),
                  int(bn), 1.0f, scores, int(bn), v.data, int(v.ld), 1.0f, out,
                  int(E));
    }
  }
  // o = out / sum, lse = max + log(sum); a row without a finite score (no
  // keys, or every bias -inf) has o = 0 and lse = -inf.
  float *lse = a.groupBase(kLse, g);
  const int64_t *lseAt = a.offsets(kLse, kQueryRole);
  for (int64_t r = 0; r < bm; ++r) {
    bool empty = !(sum[r] > 0.0f);
    lse[lseAt[m0 + r]] = empty ? kMinusInfinity : top[r] + std::log(sum[r]);
    sum[r] = empty ? 0.0f : 1.0f / sum[r];
  }
  a.store(kO, g, kQueryRole, m0, bm, kValueRole, out, sum);
}

int64_t attentionKeyUnits(const AttentionGeometry &geometry) {
  int64_t block = attentionWork(geometry, true).keyBlock;
  return geometry.size[kGroupRole] *
         ((geometry.size[kKeyRole] + block - 1) / block);
}

int64_t attentionQueryUnits(const AttentionGeometry &geometry) {
  int64_t block = attentionWork(geometry, true).queryBlock;
  return geometry.size[kGroupRole] *
         ((geometry.size[kQueryRole] + block - 1) / block);
}

void attentionGradGroup(const AttentionSpec &spec,
                        const AttentionPointers &data, int64_t g, float *w) {
  Attention a(spec, data, /*grad=*/true);
  float *dq = w + a.work.dq;
  std::fill(dq, dq + a.M * a.D, 0.0f);
  for (int64_t n0 = 0; n0 < a.N; n0 += a.work.keyBlock)
    a.keyBlock(g, n0, std::min(a.work.keyBlock, a.N - n0), w, dq);
  a.store(kDQ, g, kQueryRole, 0, a.M, kHeadRole, dq);
}

void attentionGradKeys(const AttentionSpec &spec, const AttentionPointers &data,
                       int64_t unit, float *w) {
  Attention a(spec, data, /*grad=*/true);
  const int64_t g = unit / a.keyBlocks,
                n0 = unit % a.keyBlocks * a.work.keyBlock;
  a.keyBlock(g, n0, std::min(a.work.keyBlock, a.N - n0), w, nullptr);
}

void attentionGradQueries(const AttentionSpec &spec,
                          const AttentionPointers &data, int64_t unit,
                          float *w) {
  Attention a(spec, data, /*grad=*/true);
  const AttentionWork &work = a.work;
  const int64_t g = unit / a.queryBlocks,
                m0 = unit % a.queryBlocks * work.queryBlock;
  const int64_t bm = std::min(work.queryBlock, a.M - m0);
  float *dq = w + work.dq;
  std::fill(dq, dq + bm * a.D, 0.0f);
  Attention::QueryRows rows = a.queryRows(g, m0, bm, w);
  for (int64_t n0 = 0; n0 < a.N; n0 += work.keyBlock) {
    const int64_t bn = std::min(work.keyBlock, a.N - n0);
    Block k = a.view(kK, g, kKeyRole, n0, bn, kHeadRole, w + work.k);
    Block v = a.view(kV, g, kKeyRole, n0, bn, kValueRole, w + work.v);
    a.probabilities(g, m0, bm, n0, bn, rows, k, v, w);
    a.addQueryGradient(bm, bn, k, w, dq);
  }
  a.store(kDQ, g, kQueryRole, m0, bm, kHeadRole, dq);
}

} // namespace meshc::runtime
