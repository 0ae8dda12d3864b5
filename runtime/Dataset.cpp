//===- Dataset.cpp - Inputs that change from run to run -------------------===//
//
// Block copies between global tensors and device blocks, and the epoch
// order of a dataset.
//
//===----------------------------------------------------------------------===//

#include "runtime/Dataset.h"

#include "runtime/core/Random.h"

#include <cstring>

namespace meshc::runtime {

void copyBlock(const std::vector<int64_t> &globalShape,
               const std::vector<int64_t> &offset,
               const std::vector<int64_t> &blockShape, char *global,
               char *block, bool intoBlock) {
  size_t rank = blockShape.size();
  int64_t elements = 1;
  for (int64_t size : blockShape)
    elements *= size;
  if (elements == 0)
    return;
  if (rank == 0) {
    std::memcpy(intoBlock ? block : global, intoBlock ? global : block, 4);
    return;
  }
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank - 1; d-- > 0;)
    stride[d] = stride[d + 1] * globalShape[d + 1];
  int64_t run = blockShape[rank - 1];
  std::vector<int64_t> index(rank, 0);
  for (int64_t row = 0; row < elements / run; ++row) {
    int64_t at = offset[rank - 1];
    for (size_t d = 0; d + 1 < rank; ++d)
      at += (offset[d] + index[d]) * stride[d];
    char *g = global + at * 4, *b = block + row * run * 4;
    std::memcpy(intoBlock ? b : g, intoBlock ? g : b, run * 4);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < blockShape[d])
        break;
      index[d] = 0;
    }
  }
}

EpochOrder::EpochOrder(uint64_t seed, int64_t examples, bool shuffle)
    : seed(seed), examples(examples), shuffle(shuffle) {}

int64_t EpochOrder::row(uint64_t example) {
  uint64_t n = static_cast<uint64_t>(examples);
  uint64_t epoch = example / n;
  int64_t position = static_cast<int64_t>(example % n);
  if (!shuffle)
    return position;
  auto found = permutations.find(epoch);
  if (found == permutations.end()) {
    // Runs move forward through the epochs: older ones are done with.
    while (permutations.size() >= 2)
      permutations.erase(permutations.begin());
    found = permutations.emplace(epoch, epochPermutation(seed, epoch, examples))
                .first;
  }
  return found->second[position];
}

} // namespace meshc::runtime
