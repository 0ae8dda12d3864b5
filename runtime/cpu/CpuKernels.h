//===- CpuKernels.h - Step kernels of the CPU backend -----------*- C++ -*-===//
//
// The arithmetic of the CPU backend on raw pointers, one function per step
// kind (einsum GEMM stages go to cblas_sgemm). Operands are row-major in the
// order of their NamedShape; kernels match dims by name, so broadcasting and
// transposed operands need no copies. They keep their index state on the
// stack and never allocate. Collectives use the block helpers to move a
// dim's blocks into contiguous chunks and back.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CPU_CPUKERNELS_H
#define MESHC_RUNTIME_CPU_CPUKERNELS_H

#include "runtime/Program.h"
#include "runtime/cpu/Share.h"

#include <cstdint>
#include <string>

namespace meshc::runtime {

/// dst = `fn` of src over the dims dst lacks, in dst's dim order; dst's dims
/// are a subset of src's with the same sizes. Max over no elements is -inf.
/// A share takes a range of a dim dst keeps (an outer one of src's, else
/// its last); when dst keeps none, part 0 does it all.
void reducePermute(Reduction fn, const float *src, const NamedShape &srcShape,
                   float *dst, const NamedShape &dstShape, Share share = {});

/// Into how many parts (at most `most`) runGemm shares `stage`: one unless
/// every part gets a worthwhile share of the multiply-adds.
int64_t gemmParts(const GemmStage &stage, int most);
/// Runs share `share` of `stage` with cblas_sgemm: a share of the
/// batches when there are at least `parts` of them, else of each batch's
/// rows of C (or columns, when it has more of those). The parts write
/// disjoint elements of C, so they may run at once on different threads.
void runGemm(const GemmStage &stage, const float *a, const float *b, float *c,
             Share share = {});

/// out[i] = fn(in[i]) for i < count; `value` is the factor of Scale.
void unaryKernel(UnaryFn fn, double value, const float *in, float *out,
                 int64_t count);

/// out = fn(lhs, rhs) with broadcasting by name: each operand's dims are a
/// subset of out's, and an operand lacking a dim is repeated along it.
void binaryKernel(BinaryFn fn, const float *lhs, const NamedShape &lhsShape,
                  const float *rhs, const NamedShape &rhsShape, float *out,
                  const NamedShape &outShape);

/// out = (lhs == rhs ? 1 : 0) for Eq, (lhs < rhs ? 1 : 0) for Lt, on i32
/// operands, broadcasting as binaryKernel does.
void compareKernel(BinaryFn fn, const int32_t *lhs, const NamedShape &lhsShape,
                   const int32_t *rhs, const NamedShape &rhsShape, float *out,
                   const NamedShape &outShape);

/// out[.., j, ..] = in[.., j + offset, ..] where 0 <= j + offset < size of
/// in's `from`, else 0; j runs over out's `to`. The other dims are the same
/// in both, in any order; in and out do not overlap. T is float, or
/// uint16_t for the bits of bf16 or f16 elements (moved as they are; 0 is
/// +0 in both).
template <typename T>
void windowKernel(const T *in, const NamedShape &inShape, T *out,
                  const NamedShape &outShape, const std::string &from,
                  const std::string &to, int64_t offset);

/// out = 1 at the k largest elements of in along `dim` (the first of equal
/// ones; NaN never before a number), else 0; out has the same dims as in,
/// in any order, and does not overlap it.
void topKKernel(const float *in, const NamedShape &inShape, float *out,
                const NamedShape &outShape, const std::string &dim, int64_t k);

/// out[i] = i for the `elements` elements of out (f32 or i32).
void rangeKernel(DType dtype, void *out, int64_t elements);

/// out = the running sum of in along `dim` from coordinate 0 up (`reverse`:
/// from the last down); out has the same dims as in, in any order, and does
/// not overlap it.
void cumsumKernel(const float *in, const NamedShape &inShape, float *out,
                  const NamedShape &outShape, const std::string &dim,
                  bool reverse);

/// out[..., c, ...] = (in[...] == first + c ? 1 : 0) for c < size of `dim`:
/// the block of classes [first, first + size) of a one-hot over `classes`
/// classes; out has the dims of in plus `dim`, in any order. Throws
/// RuntimeError for an index outside [0, classes).
void oneHotKernel(const int32_t *in, const NamedShape &inShape, float *out,
                  const NamedShape &outShape, const std::string &dim,
                  int64_t first, int64_t classes);

/// out = the index of the first maximum of in along `dim`; out has the dims
/// of in without `dim`, in any order. NaNs are never the maximum; a row of
/// NaNs (or an empty dim) gives 0.
void argmaxKernel(const float *in, const NamedShape &inShape, int32_t *out,
                  const NamedShape &outShape, const std::string &dim);

/// Fills `out`, this device's block (at `blockOffset`, shape outShape.sizes)
/// of a tensor with global dims `globalDims`, with mask.scale(i) for each
/// element's global row-major index i.
void dropoutKernel(const DropoutMask &mask,
                   const std::vector<layout::Dim> &globalDims,
                   const std::vector<int64_t> &blockOffset, float *out,
                   const NamedShape &outShape);

/// out = logsumexp of in along `dim` (logSumExpRow); out has the dims of in
/// without `dim`, in any order.
void logSumExpKernel(const float *in, const NamedShape &inShape, float *out,
                     const NamedShape &outShape, const std::string &dim,
                     Share share = {});

/// out = softmax of in along `dim` (numerically stable); out has the same
/// dims as in, in any order.
void softmaxKernel(const float *in, const NamedShape &inShape, float *out,
                   const NamedShape &outShape, const std::string &dim,
                   Share share = {});

/// out = logsumexp(logits) - logits[label] along `dim`; labels and out have
/// the dims of logits except `dim`, in any order. Throws RuntimeError for a
/// label outside [0, size of dim).
void crossEntropyKernel(const float *logits, const NamedShape &logitsShape,
                        const int32_t *labels, const NamedShape &labelsShape,
                        float *out, const NamedShape &outShape,
                        const std::string &dim, Share share = {});

/// Converts `count` elements; f32 to i32 truncates toward zero, saturates at
/// the i32 range and maps NaN to 0; to bf16 and f16 rounds to nearest, ties
/// to even (core/HalfFloat.h). Other pairs go through f32.
void castKernel(DType from, DType to, const void *in, void *out, int64_t count);
/// `count` elements of `from` as f32 (exact for bf16 and f16).
void widenKernel(DType from, const void *in, float *out, int64_t count);
/// `count` f32 elements converted to `to`, as castKernel does.
void narrowKernel(const float *in, DType to, void *out, int64_t count);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_CPU_CPUKERNELS_H
