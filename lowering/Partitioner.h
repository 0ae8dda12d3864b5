//===- Partitioner.h - SPMD partitioning of one program ---------*- C++ -*-===//
//
// Turns one laid-out global mtf.program into its local SPMD form: every op on
// per-device blocks, with the collectives its layouts require. The rules per
// op family are documented in lowering/Passes.td and docs/spmd.md.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_LOWERING_PARTITIONER_H
#define MESHC_LOWERING_PARTITIONER_H

#include "dialect/MtfDialect.h"
#include "runtime/core/layout/Mesh.h"
#include "runtime/core/layout/ReshardPlan.h"
#include "runtime/core/layout/TensorLayout.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <map>
#include <optional>
#include <vector>

namespace meshc {

/// The mesh axes that split the first (example) dimension of some input of
/// a laid-out program: the data-parallel axes, over which local SGD keeps
/// per-replica gradients and averages parameters.
std::vector<size_t> dataParallelAxes(mlir::mtf::ProgramOp program,
                                     const layout::Mesh &mesh);

/// Partitions one program. Usage: `Partitioner(program, grid).run()`.
class Partitioner {
public:
  /// `grid` names the shard.grid of the program's mesh (null for a
  /// single-device program, which needs no collective).
  Partitioner(mlir::mtf::ProgramOp global, mlir::FlatSymbolRefAttr grid);

  /// Builds the local program right before the global one and returns it;
  /// null after reporting an error. The global program is left in place.
  mlir::mtf::ProgramOp run();

private:
  using Layout = layout::TensorLayout;
  /// Mesh axis indices per dimension name.
  using AxisMap = std::map<std::string, std::vector<size_t>>;

  /// Partitions `op` by the rule its PartitionRuleOpInterface states.
  mlir::LogicalResult partition(mlir::Operation &op);
  mlir::LogicalResult partitionDims(mlir::Operation &op,
                                    const mlir::mtf::PartitionRule &rule);
  mlir::LogicalResult
  partitionContraction(mlir::Operation &op,
                       const mlir::mtf::PartitionRule &rule);
  mlir::LogicalResult partitionRename(mlir::Operation &op,
                                      const mlir::mtf::PartitionRule &rule);
  /// split_dim and merge_dims (docs/spmd.md#split-and-merged-dimensions).
  mlir::LogicalResult partitionReshape(mlir::Operation &op);
  /// split_dim and merge_dims with blocks (a pipeline's uneven stages): the
  /// whole dim cut into those blocks over the outer dim's axes, and each
  /// device pads its block, or takes it back, with one window.
  mlir::LogicalResult partitionBlocks(mlir::Operation &op,
                                      llvm::ArrayRef<int64_t> blocks);
  mlir::LogicalResult defineView(mlir::Operation &op,
                                 const AxisMap &operandAxes,
                                 const AxisMap &viewedAxes,
                                 const std::string &why);
  mlir::LogicalResult partitionAssign(mlir::Operation &op,
                                      const mlir::mtf::PartitionRule &rule);
  mlir::LogicalResult partitionLocalGrad(mlir::Operation &op);
  /// A shift along a dimension split into equal blocks of at least its
  /// offset: a halo exchange (PartitionShift.cpp). False, emitting nothing,
  /// for any other window.
  bool partitionShift(mlir::mtf::WindowOp op);
  /// Fused attention and its gradient (PartitionAttention.cpp).
  mlir::LogicalResult partitionAttention(mlir::Operation &op);
  /// A loop: one local loop whose body is the global body partitioned.
  mlir::LogicalResult partitionLoop(mlir::mtf::LoopOp loop);
  /// Whether some input's first (example) dim is cut into unequal blocks.
  bool hasUnequalExamples();
  /// The layout a slice (global type `slice`) of loop result `stacked` has
  /// where the first op after the loop that reads it wants it (its result's
  /// layout, by dim name); none where that op cuts the layer dim `dim`.
  std::optional<Layout> stackedUse(mlir::Value stacked,
                                   mlir::mtf::TensorType slice,
                                   llvm::StringRef dim);
  mlir::LogicalResult addPartialSums(mlir::Operation &op, const Layout &layout,
                                     const AxisMap &target);
  static bool isWidening(mlir::Operation &op);
  /// Emits the all-reduce of a pending partial sum (once), right after the
  /// partial sums are computed.
  void materialize(mlir::Value value);

  /// The local value of global `value` resharded to `target`.
  mlir::Value operandAs(mlir::Value value, const Layout &target,
                        mlir::Operation *user);
  /// When `value` is a pending partial sum and `target` is its layout with
  /// one dimension split further over exactly the pending axes (a sharded
  /// optimizer's gradient), its reduce-scatter into `target`: one collective
  /// where materializing would all-reduce and then slice. The partial sums
  /// stay pending for other users; one reduce-scatter serves every user
  /// with the same target. `into` ends the collective's reason (default:
  /// the shard `user` updates).
  std::optional<mlir::Value>
  scatterPending(mlir::Value value, const Layout &target, mlir::Operation *user,
                 std::optional<std::string> into = std::nullopt);
  /// Emits the collectives that take local `value` (a block of a tensor of
  /// global type `type`) from layout `from` to `to`.
  mlir::Value reshard(mlir::Value value, mlir::mtf::TensorType type,
                      const Layout &from, const Layout &to, mlir::Location loc,
                      llvm::StringRef why);
  /// Sums (or maxes) local `value` over mesh axes `axes` in place of the
  /// partial results; with `scatterDim`, keeps only this device's block of
  /// that dimension (reduce-scatter).
  mlir::Value reduceOver(mlir::Value value, mlir::mtf::TensorType type,
                         const Layout &layout, std::vector<size_t> axes,
                         std::optional<size_t> scatterDim, bool isMax,
                         mlir::Location loc, llvm::StringRef why);

  /// `local` (a block of a tensor of global type `type` with `layout`) times
  /// a replicated constant.
  mlir::Value scaleLocal(mlir::Value local, mlir::mtf::TensorType type,
                         const Layout &layout, double factor,
                         mlir::Location loc);
  /// Records that global `value` is now `local` with `layout`; a `partial`
  /// local holds per-device partial sums (see `pending`).
  void define(mlir::Value value, mlir::Value local, const Layout &layout,
              bool partial = false);
  /// The layout `mtf-apply-layout` gave the result of `op`.
  Layout resultLayout(mlir::Operation *op);
  /// The per-device type of a tensor of global type `type` with `layout`:
  /// its largest block, when device weights cut blocks unequally.
  mlir::mtf::TensorType localType(mlir::mtf::TensorType type,
                                  const Layout &layout) const;
  /// Gives `local`, a block of a tensor of global type `type` with `layout`,
  /// its local type and records which of its dims are cut into unequal
  /// blocks (mtf.blocks); returns `local`. Every value the partitioner makes
  /// passes through here or track().
  mlir::Value setLocalType(mlir::Value local, mlir::mtf::TensorType type,
                           const Layout &layout);
  /// Records the unequal blocks of `local` (already of its local type), and
  /// the blocks of `dynamicDims`, which its ranked type leaves dynamic.
  mlir::Value track(mlir::Value local, mlir::mtf::TensorType type,
                    const Layout &layout,
                    llvm::ArrayRef<size_t> dynamicDims = {});
  /// The dims of `type` that the collectives of a move from `from` through
  /// `steps` cut or join while `weights` cut them unequally on either side.
  /// Their sizes stay dynamic in the collectives' ranked types: the shard
  /// dialect checks static sizes as if blocks were equal, and each
  /// device's size is in mtf.blocks.
  std::vector<size_t>
  unequalMoves(mlir::mtf::TensorType type, const Layout &from,
               const std::vector<layout::ReshardStep> &steps);
  AxisMap axesByName(mlir::mtf::TensorType type, const Layout &layout) const;
  Layout layoutFor(mlir::mtf::TensorType type, const AxisMap &axes) const;
  /// "[batch:b, hidden]".
  std::string describe(mlir::mtf::TensorType type, const Layout &layout) const;
  /// Names the tensor `value` holds, for reasons.
  std::string nameOf(mlir::Value value) const;
  mlir::DenseI16ArrayAttr gridAxes(const std::vector<size_t> &axes);

  mlir::mtf::ProgramOp global;
  layout::Mesh mesh;
  /// The program's device weights (axisWeightsOf).
  layout::AxisWeights weights;
  /// The first thing the partitioner cannot do with unequal blocks, for
  /// run() to report after the op that needed it.
  std::optional<std::pair<mlir::Location, layout::Error>> refusal;
  mlir::FlatSymbolRefAttr grid;
  mlir::OpBuilder builder;
  /// Global value -> its local value and layout.
  llvm::DenseMap<mlir::Value, std::pair<mlir::Value, size_t>> locals;
  std::vector<Layout> layouts;
  /// A value whose local holds partial sums still to be added up over mesh
  /// axes: why, and where in the model the sum arises.
  struct Pending {
    std::vector<size_t> axes;
    std::string why;
    mlir::LocationAttr loc;
    /// A widened 16-bit partial sum (isWidening): the element type the
    /// reduced total is rounded through, as the program rounds the sum.
    mlir::Type roundThrough;
  };
  llvm::DenseMap<mlir::Value, Pending> pending;
  /// The reduced total `local` of pending `sums` (a block of a tensor of
  /// global type `type` with `layout`), rounded through sums.roundThrough
  /// where it is set (two casts), else `local`.
  mlir::Value roundTotal(mlir::Value local, mlir::mtf::TensorType type,
                         const Layout &layout, const Pending &sums,
                         mlir::Location loc);
  /// scatterPending's results: (partial sum, target layout, local value).
  std::vector<std::tuple<mlir::Value, Layout, mlir::Value>> scattered;
  /// Global parameters (and slots) by name, for mtf.assign.
  llvm::StringMap<mlir::Value> params;
  /// The data-parallel axes (dataParallelAxes()).
  std::vector<size_t> dataAxes;
  /// Tags every op the builder inserts with the training phase of the op
  /// being partitioned (the collectives of a backward op are backward).
  struct PhaseListener : public mlir::OpBuilder::Listener {
    mlir::StringAttr phase;
    void notifyOperationInserted(mlir::Operation *op,
                                 mlir::OpBuilder::InsertPoint) override;
  } phaseListener;
};

} // namespace meshc

#endif // MESHC_LOWERING_PARTITIONER_H
