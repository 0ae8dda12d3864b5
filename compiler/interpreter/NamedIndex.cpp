//===- NamedIndex.cpp - walking tensors by dimension name -----------------===//
//
// Strides by name, offsets and multi-indices of row-major tensors.
//
//===----------------------------------------------------------------------===//

#include "compiler/interpreter/NamedIndex.h"

#include "llvm/Support/MathExtras.h"

#include <cassert>

namespace meshc::interp {

uint64_t countElements(const std::vector<int64_t> &shape) {
  uint64_t count = 1;
  for (int64_t size : shape)
    count = llvm::SaturatingMultiply(count, static_cast<uint64_t>(size));
  return count;
}

std::vector<int64_t> stridesAlong(const Tensor &tensor,
                                  const std::vector<std::string> &walkDims) {
  std::vector<int64_t> strides(walkDims.size(), 0);
  int64_t stride = 1;
  for (size_t d = tensor.dims.size(); d-- > 0;) {
    for (size_t w = 0; w < walkDims.size(); ++w)
      if (walkDims[w] == tensor.dims[d])
        strides[w] = stride;
    stride *= tensor.shape[d];
  }
  return strides;
}

int64_t offsetAt(const std::vector<int64_t> &index,
                 const std::vector<int64_t> &strides) {
  assert(index.size() == strides.size() && "index and strides differ in rank");
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d)
    offset += index[d] * strides[d];
  return offset;
}

std::vector<int64_t> indexAt(const std::vector<int64_t> &shape,
                             int64_t offset) {
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = offset % shape[d];
    offset /= shape[d];
  }
  return index;
}

std::string formatNamed(const std::vector<std::string> &dims,
                        const std::vector<int64_t> &values) {
  std::string text = "[";
  for (size_t d = 0; d < dims.size(); ++d) {
    if (d > 0)
      text += ", ";
    text += dims[d] + "=" + std::to_string(values[d]);
  }
  return text + "]";
}

} // namespace meshc::interp
