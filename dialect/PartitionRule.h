//===- PartitionRule.h - How mtf-partition splits one op --------*- C++ -*-===//
//
// The value every mtf op returns from PartitionRuleOpInterface: the role of
// each of its named dimensions (or a structural kind), from which the one
// generic partitioner (lowering/Partitioner.cpp) derives the local op and
// its collectives. docs/spmd.md tables the rules.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_DIALECT_PARTITIONRULE_H
#define MESHC_DIALECT_PARTITIONRULE_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <utility>
#include <vector>

namespace mlir {
namespace mtf {

/// How the partitioner treats one named dimension of an op.
enum class DimRole {
  /// Each device works on its block; operands take the result's split. The
  /// role of every dimension a rule does not list.
  Parallel,
  /// In the operands, not in the result: each device sums its block and the
  /// partial sums are added over the dimension's mesh axes.
  Summed,
  /// As Summed, with the maximum.
  Maxed,
  /// Whole on every device: gathered in the operands, the result computed
  /// whole along it, then sliced to the result's layout.
  Whole,
};

/// "parallel", "summed", "maxed", "whole".
const char *dimRoleName(DimRole role);

/// What kind of partitioning an op needs.
enum class PartitionKind {
  /// Generic, from the roles of the dimensions.
  Dims,
  /// The result is the operand in the result's layout (constrain).
  Forward,
  /// Result dimension `to` is operand dimension `from` with its split.
  Rename,
  /// split_dim / merge_dims: the data stays where it is; a split's outer
  /// dimension takes the split dimension's split, a merged dimension its
  /// outer one's (the inner one gathered first).
  Reshape,
  /// A sink: the operand in the layout it has (output).
  Output,
  /// A sink: the operand in the layout of the parameter it names (assign).
  Assign,
  /// Local SGD: partial sums over the data-parallel axes stay per replica.
  LocalGrad,
  /// A loop: its body is partitioned once, its block arguments in the
  /// layouts of its operands (a stacked one's without the loop dim) and
  /// the carried values yielded in them.
  Loop,
  /// Fused attention and its gradient (lowering/PartitionAttention.cpp):
  /// the key and head dims whole, the others parallel, and a gradient
  /// summed over the query dims (and the value dims) where they are split.
  Attention,
  /// Not partitioned; `refusal` says why.
  Refuse,
};

/// The rule of one op.
struct PartitionRule {
  PartitionKind kind = PartitionKind::Dims;
  /// Dims: the dimensions that are not Parallel, with their roles.
  std::vector<std::pair<std::string, DimRole>> roles;
  /// Dims: the Summed dimensions are averaged (sum, then 1/count).
  bool mean = false;
  /// Dims: the result of two partial sums over the same axes is their
  /// partial sum (add, sub), so one reduction serves both.
  bool linear = false;
  /// Rename: the operand's dimension and its new name.
  std::string from, to;
  /// Assign: the parameter whose layout the operand takes.
  std::string param;
  /// Refuse: why the op cannot be partitioned.
  std::string refusal;

  /// The role of dimension `dim` (Parallel unless listed).
  DimRole roleOf(llvm::StringRef dim) const;
  /// True when some dimension is Summed or Maxed.
  bool reduces() const;

  /// Every dimension parallel (elementwise ops, sources).
  static PartitionRule parallel();
  /// Every dimension parallel, and sums of partial sums stay partial.
  static PartitionRule linearParallel();
  /// `dims` whole, the others parallel.
  static PartitionRule whole(llvm::ArrayRef<llvm::StringRef> dims);
  /// Every operand dimension the result of `op` lacks has `role`
  /// (einsum, reductions).
  static PartitionRule contraction(Operation *op, DimRole role,
                                   bool mean = false);
  static PartitionRule forward();
  static PartitionRule rename(llvm::StringRef from, llvm::StringRef to);
  static PartitionRule reshape();
  static PartitionRule output();
  static PartitionRule assign(llvm::StringRef param);
  static PartitionRule localGrad();
  static PartitionRule loop();
  static PartitionRule attention();
  static PartitionRule refuse(llvm::StringRef why);
};

} // namespace mtf
} // namespace mlir

#endif // MESHC_DIALECT_PARTITIONRULE_H
