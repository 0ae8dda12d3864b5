//===- Dataset.h - Inputs that change from run to run -----------*- C++ -*-===//
//
// A training input whose .npy file has more (or fewer) rows than the
// input's first dim is a dataset: run s reads global examples s*B .. s*B+B-1
// (B the input's first dim), example k being row order_e[k mod N] of the
// file in epoch e = k / N, where order_e is epochPermutation(seed, e, N)
// (Random.h) or the identity. Each device copies only its own block of the
// rows. An eval set is read the same way, in file order, batch by batch.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_DATASET_H
#define MESHC_RUNTIME_DATASET_H

#include "runtime/Npy.h"

#include <cstdint>
#include <map>
#include <vector>

namespace meshc::runtime {

/// Copies the block at `offset` of shape `blockShape` of a global row-major
/// tensor of shape `globalShape` (4-byte elements) from `global` into
/// `block`, or back when `intoBlock` is false.
void copyBlock(const std::vector<int64_t> &globalShape,
               const std::vector<int64_t> &offset,
               const std::vector<int64_t> &blockShape, char *global,
               char *block, bool intoBlock);

/// The file row of every global example of a dataset of `examples` rows,
/// epoch after epoch.
class EpochOrder {
public:
  /// The order of `examples` rows; shuffled per epoch with `seed` when
  /// `shuffle`, else the identity.
  EpochOrder(uint64_t seed, int64_t examples, bool shuffle);

  /// The file row global example `example` reads.
  int64_t row(uint64_t example);

private:
  uint64_t seed;
  int64_t examples;
  bool shuffle;
  /// The permutations of the epochs used lately (a batch spans at most a
  /// few).
  std::map<uint64_t, std::vector<int64_t>> permutations;
};

/// Writes into `block` the device block (at `blockOffset`, of `blockShape`)
/// of a batch whose global row g is file row rowOf(g) of `data`; `data` has
/// the batch's shape except for its first dim.
template <typename RowOf>
void copyBatchBlock(const NpyArray &data, RowOf rowOf,
                    const std::vector<int64_t> &blockOffset,
                    const std::vector<int64_t> &blockShape, char *block) {
  std::vector<int64_t> rowShape(data.shape.begin() + 1, data.shape.end());
  std::vector<int64_t> rowOffset(blockOffset.begin() + 1, blockOffset.end());
  std::vector<int64_t> rowBlock(blockShape.begin() + 1, blockShape.end());
  int64_t rowElements = 1, blockRowElements = 1;
  for (int64_t size : rowShape)
    rowElements *= size;
  for (int64_t size : rowBlock)
    blockRowElements *= size;
  char *rows = const_cast<char *>(data.bytes());
  for (int64_t i = 0; i < blockShape[0]; ++i) {
    int64_t row = rowOf(blockOffset[0] + i);
    copyBlock(rowShape, rowOffset, rowBlock, rows + row * rowElements * 4,
              block + i * blockRowElements * 4, true);
  }
}

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_DATASET_H
