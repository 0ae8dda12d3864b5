//===- AxisWeights.h - Device weights along mesh axes -----------*- C++ -*-===//
//
// Heterogeneous meshes, after HetSeq: each device along a mesh axis may carry
// a weight (its relative speed or memory), and a dimension split over that
// axis is then cut into blocks in proportion to the weights instead of
// evenly. The text form names each weighted axis and one weight per device
// along it, "b=1,1,2;m=1,3" (items separated by ';' or whitespace, weights by
// ','). splitByWeights is the one rounding rule: largest remainder.
//
// --uneven (allowIndivisible) lets even axes cut a dimension they do not
// divide into the most even blocks. TensorLayout's block functions take the
// weights; docs/layouts.md#device-weights says how far meshc takes them.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CORE_LAYOUT_AXISWEIGHTS_H
#define MESHC_RUNTIME_CORE_LAYOUT_AXISWEIGHTS_H

#include "runtime/core/layout/Error.h"
#include "runtime/core/layout/Mesh.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace meshc::layout {

/// The weights of the devices along each axis of one mesh.
class AxisWeights {
public:
  /// Every axis of `mesh` even (all weights 1).
  static AxisWeights even(const Mesh &mesh);

  /// Parses "b=1,1,2;m=1,3" against `mesh`: each item names a mesh axis once
  /// and gives one positive finite weight per device along it; axes not
  /// named stay even. Errors carry the 1-based column of the offending word.
  static Result<AxisWeights> parse(std::string_view text, const Mesh &mesh);

  /// The weights of axis `axis` by coordinate (all 1 where it is even).
  const std::vector<double> &of(size_t axis) const;
  /// Whether every weight of axis `axis` is the same.
  bool isEven(size_t axis) const;
  /// Whether every axis is even.
  bool isEven() const;

  /// Lets a dimension split over even axes have a size they do not divide
  /// (--uneven): it is cut into the most even blocks.
  void allowIndivisible() { indivisible = true; }
  /// Whether allowIndivisible() was called.
  bool allowsIndivisible() const { return indivisible; }
  /// Whether a dimension split over mesh axes `axes` may have a size they do
  /// not divide: under allowIndivisible(), or when one of them is weighted
  /// (then every axis of the split cuts by largest remainder).
  bool allowsIndivisible(const std::vector<size_t> &axes) const;
  /// Whether the blocks are those of an even mesh: no axis weighted and
  /// indivisible sizes refused.
  bool isPlain() const { return !indivisible && isEven(); }

  /// The text form of the uneven axes ("b=1,1,2;m=1,3"), which parse() reads
  /// back; "" when every axis is even (which parse() refuses as empty: a
  /// flag given must weigh something).
  std::string str(const Mesh &mesh) const;

private:
  std::vector<std::vector<double>> perAxis;
  bool indivisible = false;
};

/// The sizes of the blocks `size` elements are cut into, one per weight, in
/// proportion to `weights` (each positive and finite), by the largest
/// remainder method: block i first gets floor(size * w_i / sum w), and the
/// elements left over go one each to the blocks with the largest fractional
/// parts, ties to the lower index. Equal weights give the most even split
/// (the first size % n blocks one larger). The sizes always sum to `size`;
/// a block may be empty when `size` is smaller than the number of blocks or
/// its weight is small. The quotas are computed in long double, whose width
/// differs between platforms, so near-ties may round differently elsewhere:
/// the compiler is to compute the sizes once and write them into the
/// program, never the runtime again.
std::vector<int64_t> splitByWeights(int64_t size,
                                    const std::vector<double> &weights);

/// The blocks a dimension of `size` elements split over mesh axes `axes`
/// (major to minor) is cut into, by shard index (the first axis most
/// significant): the size is cut by the first axis's weights, then each of
/// those blocks by the second's, and so on. Consecutive shard indices are
/// consecutive blocks, so a block's offset is the sum of the blocks before
/// it. With even weights and sizes the axes divide, every block is
/// size / (product of the axis sizes).
std::vector<int64_t> cutBlocks(int64_t size, const std::vector<size_t> &axes,
                               const Mesh &mesh, const AxisWeights &weights);

} // namespace meshc::layout

#endif // MESHC_RUNTIME_CORE_LAYOUT_AXISWEIGHTS_H
