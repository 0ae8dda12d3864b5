//===- CpuKernels.cpp - Step kernels of the CPU backend -------------------===//
//
// Most kernels are one row-major walk over an iteration space (the output's
// or the input's dims) that carries one strided offset per operand: an
// operand lacking a dim has stride 0 along it, which is how broadcasting and
// reductions fall out of the same loop.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/VectorMath.h"

#include "runtime/ElementFunctions.h"
#include "runtime/Error.h"
#include "runtime/core/HalfFloat.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace meshc::runtime {

namespace {

/// A row-major iteration space with one strided offset per operand.
template <size_t Operands> struct Walk {
  size_t rank = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t strides[Operands][kMaxRank] = {};
  /// Where each operand's offsets start, and whether the walk has no index
  /// at all (a share that got none).
  int64_t base[Operands] = {};
  bool none = false;
  /// The dim share() cut (-1: none) and the range it kept.
  int cut = -1;
  int64_t first = 0, last = 0;

  /// Keeps share `share` of the walk: a contiguous range of one of its
  /// dims among those `allowed` (all when null): the outermost with at
  /// least `share.parts` indices, else the largest (some parts then keep
  /// none). When no allowed dim has two indices, part 0 keeps every index
  /// and the other parts none.
  void keep(Share share, const bool *allowed = nullptr) {
    if (share.parts == 1)
      return;
    int chosen = -1;
    for (size_t d = 0; d < rank; ++d) {
      if ((allowed && !allowed[d]) || sizes[d] < 2)
        continue;
      if (sizes[d] >= share.parts) {
        chosen = static_cast<int>(d);
        break;
      }
      if (chosen < 0 || sizes[d] > sizes[chosen])
        chosen = static_cast<int>(d);
    }
    if (chosen >= 0) {
      size_t d = size_t(chosen);
      share.range(sizes[d], first, last);
      for (size_t k = 0; k < Operands; ++k)
        base[k] += first * strides[k][d];
      sizes[d] = last - first;
      cut = chosen;
      return;
    }
    none = share.part != 0;
  }

  /// Appends a dim of `size` along which operand i advances by `step[i]`.
  void addDim(int64_t size, const int64_t (&step)[Operands]) {
    sizes[rank] = size;
    for (size_t k = 0; k < Operands; ++k)
      strides[k][rank] = step[k];
    ++rank;
  }

  /// Calls fn(offsets) for every index, last dim fastest.
  template <typename Fn> void run(Fn fn) const {
    if (none)
      return;
    for (size_t d = 0; d < rank; ++d)
      if (sizes[d] == 0)
        return;
    int64_t offset[Operands];
    for (size_t k = 0; k < Operands; ++k)
      offset[k] = base[k];
    if (rank == 0) {
      fn(offset);
      return;
    }
    int64_t index[kMaxRank] = {};
    size_t last = rank - 1;
    while (true) {
      for (int64_t i = 0; i < sizes[last]; ++i) {
        fn(offset);
        for (size_t k = 0; k < Operands; ++k)
          offset[k] += strides[k][last];
      }
      for (size_t k = 0; k < Operands; ++k)
        offset[k] -= sizes[last] * strides[k][last];
      size_t d = last;
      while (d-- > 0) {
        for (size_t k = 0; k < Operands; ++k)
          offset[k] += strides[k][d];
        if (++index[d] < sizes[d])
          break;
        for (size_t k = 0; k < Operands; ++k)
          offset[k] -= sizes[d] * strides[k][d];
        index[d] = 0;
      }
      if (d == static_cast<size_t>(-1))
        return;
    }
  }
};

/// The row-major strides of `shape`.
void contiguousStrides(const NamedShape &shape, int64_t *strides) {
  int64_t stride = 1;
  for (size_t d = shape.sizes.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape.sizes[d];
  }
}

/// The stride of dim `name` in `shape` (with row-major strides `strides`),
/// 0 when `shape` lacks it.
int64_t strideOf(const NamedShape &shape, const int64_t *strides,
                 const std::string &name) {
  int pos = shape.position(name);
  return pos < 0 ? 0 : strides[pos];
}

template <typename Op, typename T>
void binaryWith(Op op, const T *lhs, const NamedShape &lhsShape, const T *rhs,
                const NamedShape &rhsShape, float *out,
                const NamedShape &outShape) {
  if (lhsShape.names == outShape.names && rhsShape.names == outShape.names) {
    int64_t count = outShape.elements();
    for (int64_t i = 0; i < count; ++i)
      out[i] = op(lhs[i], rhs[i]);
    return;
  }
  int64_t lhsStrides[kMaxRank], rhsStrides[kMaxRank], outStrides[kMaxRank];
  contiguousStrides(lhsShape, lhsStrides);
  contiguousStrides(rhsShape, rhsStrides);
  contiguousStrides(outShape, outStrides);
  Walk<3> walk;
  for (size_t d = 0; d < outShape.names.size(); ++d) {
    const std::string &name = outShape.names[d];
    walk.addDim(outShape.sizes[d],
                {strideOf(lhsShape, lhsStrides, name),
                 strideOf(rhsShape, rhsStrides, name), outStrides[d]});
  }
  walk.run([&](const int64_t *o) { out[o[2]] = op(lhs[o[0]], rhs[o[1]]); });
}

/// z[k] = fn(x[k * l], y[k * r]) for k < n: a run of binaryKernel that
/// vmath cannot take (the same formulas: binary functions are exact).
template <BinaryFn Fn>
void stridedRun(const float *x, int64_t l, const float *y, int64_t r, float *z,
                int64_t n) {
  for (int64_t k = 0; k < n; ++k)
    z[k] = binaryValue<Fn>(x[k * l], y[k * r]);
}
void stridedBinary(BinaryFn fn, const float *x, int64_t l, const float *y,
                   int64_t r, float *z, int64_t n) {
  switch (fn) {
#define MESHC_BINARY_FN(Fn, Spelling)                                          \
  case BinaryFn::Fn:                                                           \
    return stridedRun<BinaryFn::Fn>(x, l, y, r, z, n);
#include "runtime/core/ElementFunctions.def"
  }
}

/// Rows of `shape` along `dim`: a walk over the other dims of `shape`
/// carrying the offset into `shape`'s data and into `other`'s (whose dims
/// are those others, in any order), and the stride of `dim`.
struct Rows {
  Walk<2> walk;
  int64_t length = 0;
  /// The stride of `dim` in `shape`, and in `other` (0 if it lacks it).
  int64_t step = 0;
  int64_t otherStep = 0;
};
Rows rowsAlong(const NamedShape &shape, const NamedShape &other,
               const std::string &dim) {
  int64_t strides[kMaxRank], otherStrides[kMaxRank];
  contiguousStrides(shape, strides);
  contiguousStrides(other, otherStrides);
  Rows rows;
  for (size_t d = 0; d < shape.names.size(); ++d)
    if (shape.names[d] != dim)
      rows.walk.addDim(
          shape.sizes[d],
          {strides[d], strideOf(other, otherStrides, shape.names[d])});
  rows.length = shape.sizes[shape.position(dim)];
  rows.step = strideOf(shape, strides, dim);
  rows.otherStep = strideOf(other, otherStrides, dim);
  return rows;
}

} // namespace

void reducePermute(Reduction fn, const float *src, const NamedShape &srcShape,
                   float *dst, const NamedShape &dstShape, Share share) {
  float init =
      fn == Reduction::Sum ? 0.0f : -std::numeric_limits<float>::infinity();
  int64_t srcStrides[kMaxRank], dstStrides[kMaxRank];
  contiguousStrides(srcShape, srcStrides);
  contiguousStrides(dstShape, dstStrides);
  size_t rank = srcShape.names.size();
  // Rows along src's last dim (stride 1 in src), walked over the others. A
  // share takes a range of an outer dim that dst keeps (its elements get
  // no other share's sums), else of the row when dst keeps it.
  Walk<2> walk;
  bool kept[kMaxRank] = {};
  for (size_t d = 0; d + 1 < rank; ++d) {
    int64_t to = strideOf(dstShape, dstStrides, srcShape.names[d]);
    walk.addDim(srcShape.sizes[d], {srcStrides[d], to});
    kept[d] = to != 0;
  }
  int64_t n = rank == 0 ? 1 : srcShape.sizes[rank - 1];
  int64_t step =
      rank == 0 ? 0 : strideOf(dstShape, dstStrides, srcShape.names[rank - 1]);
  walk.keep(share, kept);
  int64_t rowFirst = 0, rowLast = n;
  if (share.parts > 1 && walk.cut < 0 && step != 0 && n > 1) {
    walk.none = false;
    share.range(n, rowFirst, rowLast);
  }
  // This share's elements of dst start at `init`: the dims of dst, the cut
  // one (or the row's) restricted to the share's range.
  {
    const std::string *cutName =
        walk.cut >= 0            ? &srcShape.names[size_t(walk.cut)]
        : rowLast - rowFirst < n ? &srcShape.names[rank - 1]
                                 : nullptr;
    bool whole = share.parts == 1 || (!cutName && share.part == 0);
    if (whole) {
      std::fill(dst, dst + dstShape.elements(), init);
    } else if (cutName) {
      int64_t first = walk.cut >= 0 ? walk.first : rowFirst,
              last = walk.cut >= 0 ? walk.last : rowLast;
      Walk<1> fill;
      for (size_t e = 0; e < dstShape.names.size(); ++e) {
        bool isCut = dstShape.names[e] == *cutName;
        fill.addDim(isCut ? last - first : dstShape.sizes[e], {dstStrides[e]});
        if (isCut)
          fill.base[0] = first * dstStrides[e];
      }
      fill.run([&](const int64_t *o) { dst[o[0]] = init; });
    }
  }
  if (srcShape.elements() == 0 || walk.none)
    return;
  if (rank == 0) {
    dst[0] = fn == Reduction::Sum ? dst[0] + src[0] : maxOf(dst[0], src[0]);
    return;
  }
  n = rowLast - rowFirst;
  bool sum = fn == Reduction::Sum;
  BinaryFn combine = sum ? BinaryFn::Add : BinaryFn::Max;
  walk.run([&](const int64_t *o) {
    const float *row = src + o[0] + rowFirst;
    float *to = dst + o[1] + rowFirst * step;
    if (step == 1) {
      // dst's row too: elementwise into it.
      vmath::binary(combine, to, row, to, n);
    } else if (step == 0) {
      // Reduced along the row.
      to[0] =
          sum ? to[0] + vmath::sum(row, n) : maxOf(to[0], vmath::max(row, n));
    } else if (sum) {
      for (int64_t k = 0; k < n; ++k)
        to[k * step] += row[k];
    } else {
      for (int64_t k = 0; k < n; ++k)
        to[k * step] = maxOf(to[k * step], row[k]);
    }
  });
}

int64_t gemmParts(const GemmStage &stage, int most) {
  // Below about 2^20 multiply-adds (some 20 us) a share is not worth a
  // helper's wake-up and its own packing of the panels.
  constexpr int64_t kMinShare = int64_t(1) << 20;
  int64_t work = stage.batch * stage.m * stage.n * stage.k;
  int64_t largest = std::max(stage.batch, std::max(stage.m, stage.n));
  return std::max<int64_t>(
      1, std::min<int64_t>({int64_t(most), work / kMinShare, largest}));
}

void runGemm(const GemmStage &stage, const float *a, const float *b, float *c,
             Share part) {
  if (stage.batch == 0 || stage.m == 0 || stage.n == 0)
    return;
  // `part` takes [first, last) of the batches, of C's rows or its columns.
  const int64_t parts = part.parts;
  int64_t first, last;
  if (stage.k == 0) {
    part.range(stage.batch * stage.m * stage.n, first, last);
    std::fill(c + first, c + last, 0.0f);
    return;
  }
  const int64_t m = stage.m, n = stage.n, k = stage.k;
  const CBLAS_TRANSPOSE ta = stage.transA ? CblasTrans : CblasNoTrans,
                        tb = stage.transB ? CblasTrans : CblasNoTrans;
  const int64_t lda = stage.transA ? m : k, ldb = stage.transB ? k : n;
  if (m == 1 && n == 1) {
    // Batched dot products (element-wise einsums): a GEMM call per element
    // would cost far more than the arithmetic.
    part.range(stage.batch, first, last);
    for (int64_t p = first; p < last; ++p)
      c[p] = cblas_sdot(k, a + p * k, 1, b + p * k, 1);
    return;
  }
  if (parts == 1 || stage.batch >= parts) {
    part.range(stage.batch, first, last);
    for (int64_t p = first; p < last; ++p)
      cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a + p * m * k, lda,
                  b + p * k * n, ldb, 0.0f, c + p * m * n, n);
    return;
  }
  for (int64_t p = 0; p < stage.batch; ++p) {
    const float *ap = a + p * m * k, *bp = b + p * k * n;
    float *cp = c + p * m * n;
    if (m >= n) {
      // Rows [first, last) of op(A) and of C.
      part.range(m, first, last);
      if (first < last)
        cblas_sgemm(CblasRowMajor, ta, tb, last - first, n, k, 1.0f,
                    ap + (stage.transA ? first : first * k), lda, bp, ldb, 0.0f,
                    cp + first * n, n);
    } else {
      // Columns [first, last) of op(B) and of C.
      part.range(n, first, last);
      if (first < last)
        cblas_sgemm(CblasRowMajor, ta, tb, m, last - first, k, 1.0f, ap, lda,
                    bp + (stage.transB ? first * k : first), ldb, 0.0f,
                    cp + first, n);
    }
  }
}

void unaryKernel(UnaryFn fn, double value, const float *in, float *out,
                 int64_t count) {
  vmath::unary(fn, static_cast<float>(value), in, out, count);
}

void binaryKernel(BinaryFn fn, const float *lhs, const NamedShape &lhsShape,
                  const float *rhs, const NamedShape &rhsShape, float *out,
                  const NamedShape &outShape) {
  if (lhsShape.names == outShape.names && rhsShape.names == outShape.names) {
    vmath::binary(fn, lhs, rhs, out, outShape.elements());
    return;
  }
  size_t rank = outShape.names.size();
  int64_t lhsStrides[kMaxRank], rhsStrides[kMaxRank], outStrides[kMaxRank];
  contiguousStrides(lhsShape, lhsStrides);
  contiguousStrides(rhsShape, rhsStrides);
  contiguousStrides(outShape, outStrides);
  // Runs along out's last dim, walked over the others; a run that is
  // contiguous in each operand or the same element of one goes to vmath.
  Walk<3> walk;
  for (size_t d = 0; d + 1 < rank; ++d) {
    const std::string &name = outShape.names[d];
    walk.addDim(outShape.sizes[d],
                {strideOf(lhsShape, lhsStrides, name),
                 strideOf(rhsShape, rhsStrides, name), outStrides[d]});
  }
  const std::string &last = outShape.names[rank - 1];
  int64_t n = outShape.sizes[rank - 1];
  int64_t l = strideOf(lhsShape, lhsStrides, last);
  int64_t r = strideOf(rhsShape, rhsStrides, last);
  walk.run([&](const int64_t *o) {
    const float *x = lhs + o[0], *y = rhs + o[1];
    float *z = out + o[2];
    if (l == 1 && r == 1)
      vmath::binary(fn, x, y, z, n);
    else if (l == 1 && r == 0)
      vmath::binaryScalarRhs(fn, x, y[0], z, n);
    else if (l == 0 && r == 1)
      vmath::binaryScalarLhs(fn, x[0], y, z, n);
    else
      stridedBinary(fn, x, l, y, r, z, n);
  });
}

void compareKernel(BinaryFn fn, const int32_t *lhs, const NamedShape &lhsShape,
                   const int32_t *rhs, const NamedShape &rhsShape, float *out,
                   const NamedShape &outShape) {
  if (fn == BinaryFn::Lt)
    binaryWith([](int32_t x, int32_t y) { return lessOf(x, y); }, lhs, lhsShape,
               rhs, rhsShape, out, outShape);
  else
    binaryWith([](int32_t x, int32_t y) { return equalOf(x, y); }, lhs,
               lhsShape, rhs, rhsShape, out, outShape);
}

template <typename T>
void windowKernel(const T *in, const NamedShape &inShape, T *out,
                  const NamedShape &outShape, const std::string &from,
                  const std::string &to, int64_t offset) {
  int64_t inStrides[kMaxRank], outStrides[kMaxRank];
  contiguousStrides(inShape, inStrides);
  contiguousStrides(outShape, outStrides);
  Walk<2> rows;
  for (size_t d = 0; d < outShape.names.size(); ++d)
    if (outShape.names[d] != to)
      rows.addDim(
          outShape.sizes[d],
          {strideOf(inShape, inStrides, outShape.names[d]), outStrides[d]});
  int64_t n = inShape.sizes[inShape.position(from)];
  int64_t m = outShape.sizes[outShape.position(to)];
  int64_t inStep = strideOf(inShape, inStrides, from);
  int64_t outStep = strideOf(outShape, outStrides, to);
  rows.run([&](const int64_t *o) {
    const T *x = in + o[0];
    T *y = out + o[1];
    for (int64_t j = 0; j < m; ++j) {
      int64_t source = j + offset;
      y[j * outStep] = source >= 0 && source < n ? x[source * inStep] : T(0);
    }
  });
}
template void windowKernel<float>(const float *, const NamedShape &, float *,
                                  const NamedShape &, const std::string &,
                                  const std::string &, int64_t);
template void windowKernel<uint16_t>(const uint16_t *, const NamedShape &,
                                     uint16_t *, const NamedShape &,
                                     const std::string &, const std::string &,
                                     int64_t);

void topKKernel(const float *in, const NamedShape &inShape, float *out,
                const NamedShape &outShape, const std::string &dim, int64_t k) {
  Rows rows = rowsAlong(inShape, outShape, dim);
  int64_t n = rows.length, inStep = rows.step, outStep = rows.otherStep;
  rows.walk.run([&](const int64_t *o) {
    for (int64_t c = 0; c < n; ++c)
      out[o[1] + c * outStep] = topKValue(in + o[0], inStep, n, c, k);
  });
}

void rangeKernel(DType dtype, void *out, int64_t elements) {
  for (int64_t i = 0; i < elements; ++i) {
    if (dtype == DType::I32)
      static_cast<int32_t *>(out)[i] = static_cast<int32_t>(i);
    else
      static_cast<float *>(out)[i] = static_cast<float>(i);
  }
}

void cumsumKernel(const float *in, const NamedShape &inShape, float *out,
                  const NamedShape &outShape, const std::string &dim,
                  bool reverse) {
  Rows rows = rowsAlong(inShape, outShape, dim);
  int64_t n = rows.length, inStep = rows.step, outStep = rows.otherStep;
  rows.walk.run([&](const int64_t *o) {
    const float *x = in + o[0];
    float *y = out + o[1];
    float sum = 0.0f;
    for (int64_t k = 0; k < n; ++k) {
      int64_t j = reverse ? n - 1 - k : k;
      sum += x[j * inStep];
      y[j * outStep] = sum;
    }
  });
}

void oneHotKernel(const int32_t *in, const NamedShape &inShape, float *out,
                  const NamedShape &outShape, const std::string &dim,
                  int64_t first, int64_t classes) {
  Rows rows = rowsAlong(outShape, inShape, dim);
  rows.walk.run([&](const int64_t *o) {
    float *y = out + o[0];
    int32_t index = in[o[1]];
    if (index < 0 || index >= classes)
      throw RuntimeError("index " + std::to_string(index) + " (in element " +
                         std::to_string(o[1]) + ") is outside [0, " +
                         std::to_string(classes) + ")");
    for (int64_t c = 0; c < rows.length; ++c)
      y[c * rows.step] = first + c == index ? 1.0f : 0.0f;
  });
}

void argmaxKernel(const float *in, const NamedShape &inShape, int32_t *out,
                  const NamedShape &outShape, const std::string &dim) {
  Rows rows = rowsAlong(inShape, outShape, dim);
  rows.walk.run([&](const int64_t *o) {
    const float *x = in + o[0];
    int64_t best = -1;
    float top = 0.0f;
    for (int64_t c = 0; c < rows.length; ++c) {
      float v = x[c * rows.step];
      if (argmaxTakes(v, best, top)) {
        best = c;
        top = v;
      }
    }
    out[o[1]] = static_cast<int32_t>(best < 0 ? 0 : best);
  });
}

void dropoutKernel(const DropoutMask &mask,
                   const std::vector<layout::Dim> &globalDims,
                   const std::vector<int64_t> &blockOffset, float *out,
                   const NamedShape &outShape) {
  size_t rank = globalDims.size();
  int64_t globalStrides[kMaxRank], outStrides[kMaxRank];
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    globalStrides[d] = stride;
    stride *= globalDims[d].size;
  }
  contiguousStrides(outShape, outStrides);
  int64_t first = 0;
  for (size_t d = 0; d < rank; ++d)
    first += blockOffset[d] * globalStrides[d];
  Walk<2> walk;
  for (size_t d = 0; d < rank; ++d)
    walk.addDim(outShape.sizes[d], {globalStrides[d], outStrides[d]});
  walk.run([&](const int64_t *o) {
    out[o[1]] =
        static_cast<float>(mask.scale(static_cast<uint64_t>(first + o[0])));
  });
}

void logSumExpKernel(const float *in, const NamedShape &inShape, float *out,
                     const NamedShape &outShape, const std::string &dim,
                     Share share) {
  Rows rows = rowsAlong(inShape, outShape, dim);
  rows.walk.keep(share);
  rows.walk.run([&](const int64_t *o) {
    out[o[1]] = logSumExpRow(in + o[0], rows.step, rows.length);
  });
}

void softmaxKernel(const float *in, const NamedShape &inShape, float *out,
                   const NamedShape &outShape, const std::string &dim,
                   Share share) {
  Rows rows = rowsAlong(inShape, outShape, dim);
  rows.walk.keep(share);
  int64_t n = rows.length, inStep = rows.step, outStep = rows.otherStep;
  // A row that is not contiguous in and out is gathered into a buffer.
  std::vector<float> buffer(inStep == 1 && outStep == 1 ? 0 : n);
  rows.walk.run([&](const int64_t *o) {
    const float *x = in + o[0];
    float *y = outStep == 1 && inStep == 1 ? out + o[1] : buffer.data();
    if (inStep != 1 || outStep != 1) {
      for (int64_t j = 0; j < n; ++j)
        y[j] = x[j * inStep];
      x = y;
    }
    float top = vmath::max(x, n);
    vmath::binaryScalarRhs(BinaryFn::Sub, x, top, y, n);
    vmath::unary(UnaryFn::Exp, 1.0f, y, y, n);
    vmath::binaryScalarRhs(BinaryFn::Div, y, vmath::sum(y, n), y, n);
    if (inStep != 1 || outStep != 1)
      for (int64_t j = 0; j < n; ++j)
        out[o[1] + j * outStep] = y[j];
  });
}

void crossEntropyKernel(const float *logits, const NamedShape &logitsShape,
                        const int32_t *labels, const NamedShape &labelsShape,
                        float *out, const NamedShape &outShape,
                        const std::string &dim, Share share) {
  int64_t logitStrides[kMaxRank], labelStrides[kMaxRank], outStrides[kMaxRank];
  contiguousStrides(logitsShape, logitStrides);
  contiguousStrides(labelsShape, labelStrides);
  contiguousStrides(outShape, outStrides);
  Walk<3> rows;
  for (size_t d = 0; d < outShape.names.size(); ++d) {
    const std::string &name = outShape.names[d];
    rows.addDim(outShape.sizes[d],
                {strideOf(logitsShape, logitStrides, name),
                 strideOf(labelsShape, labelStrides, name), outStrides[d]});
  }
  int64_t n = logitsShape.sizes[logitsShape.position(dim)];
  int64_t step = strideOf(logitsShape, logitStrides, dim);
  rows.keep(share);
  rows.run([&](const int64_t *o) {
    const float *x = logits + o[0];
    int32_t label = labels[o[1]];
    if (label < 0 || label >= n)
      throw RuntimeError("label " + std::to_string(label) +
                         " (labels element " + std::to_string(o[1]) +
                         ") is outside [0, " + std::to_string(n) + ")");
    out[o[2]] = logSumExpRow(x, step, n) - x[label * step];
  });
}

void widenKernel(DType from, const void *in, float *out, int64_t count) {
  const uint16_t *src = static_cast<const uint16_t *>(in);
  switch (from) {
  case DType::BF16:
    for (int64_t i = 0; i < count; ++i)
      out[i] = half::f32FromBf16(src[i]);
    return;
  case DType::F16:
    for (int64_t i = 0; i < count; ++i)
      out[i] = half::f32FromF16(src[i]);
    return;
  case DType::I32: {
    const int32_t *ints = static_cast<const int32_t *>(in);
    for (int64_t i = 0; i < count; ++i)
      out[i] = static_cast<float>(ints[i]);
    return;
  }
  case DType::F32:
    std::memmove(out, in, count * sizeof(float));
    return;
  }
}

void narrowKernel(const float *in, DType to, void *out, int64_t count) {
  uint16_t *dst = static_cast<uint16_t *>(out);
  switch (to) {
  case DType::BF16:
    for (int64_t i = 0; i < count; ++i)
      dst[i] = half::bf16FromF32(in[i]);
    return;
  case DType::F16:
    for (int64_t i = 0; i < count; ++i)
      dst[i] = half::f16FromF32(in[i]);
    return;
  case DType::I32: {
    int32_t *ints = static_cast<int32_t *>(out);
    for (int64_t i = 0; i < count; ++i)
      ints[i] = castToI32(in[i]);
    return;
  }
  case DType::F32:
    std::memmove(out, in, count * sizeof(float));
    return;
  }
}

void castKernel(DType from, DType to, const void *in, void *out,
                int64_t count) {
  if (from == to) {
    std::memmove(out, in, count * dtypeBytes(from));
    return;
  }
  if (from == DType::F32) {
    narrowKernel(static_cast<const float *>(in), to, out, count);
    return;
  }
  if (to == DType::F32) {
    widenKernel(from, in, static_cast<float *>(out), count);
    return;
  }
  // Through f32, a block at a time.
  constexpr int64_t kBlock = 1024;
  float wide[kBlock];
  const char *src = static_cast<const char *>(in);
  char *dst = static_cast<char *>(out);
  for (int64_t begin = 0; begin < count; begin += kBlock) {
    int64_t n = std::min(kBlock, count - begin);
    widenKernel(from, src + begin * dtypeBytes(from), wide, n);
    narrowKernel(wide, to, dst + begin * dtypeBytes(to), n);
  }
}

} // namespace meshc::runtime
