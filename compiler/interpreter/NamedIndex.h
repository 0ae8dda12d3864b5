//===- NamedIndex.h - walking tensors by dimension name ---------*- C++ -*-===//
//
// Every op of the interpreter is one walk over a space of named multi-indices
// (the result's dimensions, plus the summed-over ones for an einsum). Each
// tensor the op reads or writes is addressed through its strides along the
// walked dimensions, zero along the ones it lacks: broadcasting, reductions
// and contractions all follow from that one rule, so no op needs index
// arithmetic of its own.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_INTERPRETER_NAMEDINDEX_H
#define MESHC_COMPILER_INTERPRETER_NAMEDINDEX_H

#include "compiler/interpreter/Interpreter.h"

#include <cstdint>
#include <string>
#include <vector>

namespace meshc::interp {

/// Number of elements of `shape` (1 for a scalar), saturating at UINT64_MAX
/// so that guards can compare it with a limit without overflowing.
uint64_t countElements(const std::vector<int64_t> &shape);

/// The stride of each of `walkDims` in the row-major `tensor`; 0 for a
/// dimension the tensor lacks.
std::vector<int64_t> stridesAlong(const Tensor &tensor,
                                  const std::vector<std::string> &walkDims);

/// The offset of multi-index `index` under `strides`.
int64_t offsetAt(const std::vector<int64_t> &index,
                 const std::vector<int64_t> &strides);

/// The multi-index of row-major offset `offset` in `shape`.
std::vector<int64_t> indexAt(const std::vector<int64_t> &shape, int64_t offset);

/// Calls `visit(index)` for every multi-index of `shape` in row-major order:
/// once for a scalar, never if some size is zero.
template <typename Visit>
void forEachIndex(const std::vector<int64_t> &shape, Visit visit) {
  for (int64_t size : shape)
    if (size == 0)
      return;
  std::vector<int64_t> index(shape.size(), 0);
  while (true) {
    visit(static_cast<const std::vector<int64_t> &>(index));
    size_t d = shape.size();
    while (d > 0 && ++index[d - 1] == shape[d - 1])
      index[--d] = 0;
    if (d == 0)
      return;
  }
}

/// `[batch=8, d=4]`: dimension names with sizes (or with the coordinates of
/// one element), for messages.
std::string formatNamed(const std::vector<std::string> &dims,
                        const std::vector<int64_t> &values);

} // namespace meshc::interp

#endif // MESHC_COMPILER_INTERPRETER_NAMEDINDEX_H
