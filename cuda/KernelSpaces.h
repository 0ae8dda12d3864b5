//===- KernelSpaces.h - Iteration spaces of the CUDA kernels ----*- C++ -*-===//
//
// Host code that turns a step's named shapes into the iteration spaces the
// kernels of CudaKernels.h decompose, exactly as the CPU backend builds its
// walks (dims matched by name, stride 0 where an operand lacks a dim, the
// same row-major order), so each thread computes what the CPU loop computes
// at the same position.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_CUDA_KERNELSPACES_H
#define MESHC_CUDA_KERNELSPACES_H

#include "cuda/CudaKernels.h"
#include "runtime/Program.h"

#include <string>
#include <vector>

namespace meshc::runtime::cuda {

/// out = fn(lhs, rhs) with broadcasting by name: operands lhs, rhs, out over
/// out's dims (one flat dim when all three have out's names).
IterationSpace<3> binarySpace(const NamedShape &lhs, const NamedShape &rhs,
                              const NamedShape &out);

/// dst = reduction of src over the dims dst lacks: `outer` runs over dst's
/// elements in dst order (operands src, dst), `inner` over the reduced dims
/// in src order (operand src).
struct ReduceSpaces {
  IterationSpace<2> outer;
  IterationSpace<1> inner;
};
ReduceSpaces reduceSpaces(const NamedShape &src, const NamedShape &dst);

/// Rows of `in` along `dim` for steps whose out has in's dims in any order
/// (softmax, cumsum): operands in, out; steps in, out.
RowWalk inOutRows(const NamedShape &in, const NamedShape &out,
                  const std::string &dim);
/// Window rows: out's dims except `to` (operands in, out), of out's `to`
/// length, stepping along in's `from` and out's `to`.
RowWalk windowRows(const NamedShape &in, const NamedShape &out,
                   const std::string &from, const std::string &to);
/// Cross-entropy rows over out's dims (operands logits, labels, out; step
/// of logits along `dim`).
RowWalk crossEntropyWalk(const NamedShape &logits, const NamedShape &labels,
                         const NamedShape &out, const std::string &dim);
/// One-hot rows: out's dims except `dim` (operands out, in; step of out).
RowWalk oneHotWalk(const NamedShape &in, const NamedShape &out,
                   const std::string &dim);
/// Argmax rows: in's dims except `dim` (operands in, out; step of in).
RowWalk argmaxWalk(const NamedShape &in, const NamedShape &out,
                   const std::string &dim);

/// A dropout block: operands (global row-major index, out offset) over the
/// block's dims, and the global index of its first element.
struct DropoutSpace {
  IterationSpace<2> space;
  int64_t first = 0;
};
DropoutSpace dropoutSpace(const std::vector<layout::Dim> &globalDims,
                          const std::vector<int64_t> &blockOffset,
                          const NamedShape &out);

/// The offset of operand `operand` at row `row` of `walk` (for the message
/// of a failed row).
int64_t rowOffset(const RowWalk &walk, int operand, int64_t row);

} // namespace meshc::runtime::cuda

#endif // MESHC_CUDA_KERNELSPACES_H
