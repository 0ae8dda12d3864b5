//===- LayoutBridge.h - mtf attributes <-> the layout library ---*- C++ -*-===//
//
// The layout algebra (runtime/core/layout) is plain C++; these functions
// convert between its values and the mtf dialect's types and attributes, and
// turn its errors into MLIR diagnostics.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_PASSES_LAYOUTBRIDGE_H
#define MESHC_COMPILER_PASSES_LAYOUTBRIDGE_H

#include "dialect/MtfDialect.h"
#include "runtime/core/layout/Mesh.h"
#include "runtime/core/layout/TensorLayout.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace meshc {

/// The mesh an `#mtf.mesh` describes.
layout::Mesh toMesh(mlir::mtf::MeshAttr mesh);
/// The `#mtf.mesh` of a mesh (null for the single-device mesh).
mlir::mtf::MeshAttr toMeshAttr(mlir::MLIRContext *context,
                               const layout::Mesh &mesh);
/// The dimensions of a tensor type.
std::vector<layout::Dim> toDims(mlir::mtf::TensorType type);
/// The `#mtf.layout` of `tensorLayout` for a tensor of type `type`.
mlir::mtf::LayoutAttr toLayoutAttr(mlir::mtf::TensorType type,
                                   const layout::TensorLayout &tensorLayout,
                                   const layout::Mesh &mesh);
/// The layout `attr` gives a tensor of type `type` on `mesh`; checked like
/// any user layout (sizes may be indivisible where `weights` allow).
layout::Result<layout::TensorLayout>
fromLayoutAttr(llvm::StringRef tensorName, mlir::mtf::TensorType type,
               mlir::mtf::LayoutAttr attr, const layout::Mesh &mesh,
               const layout::AxisWeights *weights = nullptr);
/// The device weights of `program` on `mesh` (its mtf.axis_weights and
/// mtf.uneven): even, indivisible sizes refused, when it has neither.
layout::AxisWeights axisWeightsOf(mlir::mtf::ProgramOp program,
                                  const layout::Mesh &mesh);
/// Records `weights` on `program` (no attribute for plain weights).
void setAxisWeights(mlir::mtf::ProgramOp program,
                    const layout::AxisWeights &weights,
                    const layout::Mesh &mesh);
/// The first op of laid-out global `program` whose tensor's blocks differ
/// between devices under the program's weights; null when all are equal.
mlir::Operation *firstUnequalBlocks(mlir::mtf::ProgramOp program);
/// "16|16|32": the blocks of each dimension of `type` under `tensorLayout`,
/// by shard index, "[16|16|32, 64]"; one size where the blocks are equal.
std::string describeBlocks(mlir::mtf::TensorType type,
                           const layout::TensorLayout &tensorLayout,
                           const layout::Mesh &mesh,
                           const layout::AxisWeights &weights);
/// Records on `op`, whose one result is the block of a tensor of global type
/// `type` laid out as `tensorLayout`, the dims that `weights` cut into
/// unequal blocks (the mtf.blocks attribute), and the dims `dynamicDims` (by
/// index) whatever their blocks: those a ranked result leaves dynamic.
/// Removes the attribute when there is no such dim.
void setBlocks(mlir::Operation *op, mlir::mtf::TensorType type,
               const layout::TensorLayout &tensorLayout,
               const layout::Mesh &mesh, const layout::AxisWeights &weights,
               llvm::ArrayRef<size_t> dynamicDims = {});
/// One dim's entry of mtf.blocks: the mesh axes it is split over and each
/// block's size by shard index.
struct DimBlocks {
  std::vector<std::string> axes;
  std::vector<int64_t> sizes;
};
/// The entry of dim `dim` in the mtf.blocks of `op`, if it has one.
std::optional<DimBlocks> blocksOf(mlir::Operation *op, llvm::StringRef dim);
/// The shape of local `value` (named, or ranked between mtf.to_tensor and
/// mtf.from_tensor): its type's, each dynamic size (a collective moving
/// unequal blocks) the largest block its op's mtf.blocks gives it; a dynamic
/// size without an entry stays dynamic.
std::vector<int64_t> largestLocalShape(mlir::Value value);
/// The bytes of a tensor of largestLocalShape(value) (0 where a size stays
/// dynamic, or for a value that is not a tensor).
int64_t largestLocalBytes(mlir::Value value);
/// A readable name for the tensor `op` produces: the input/parameter name,
/// the variable it was bound to (NameLoc), or the op name.
std::string tensorName(mlir::Operation *op);
/// The name --explain and --show-layout give op result `result`: its op's
/// tensorName, with a suffix for the results of an op with several (fused
/// attention's ".logsumexp", its gradient's ".dq", ".dk", ".dv").
std::string resultTensorName(mlir::OpResult result);
/// The layout attribute of `value`'s defining op for that result: its
/// mtf.layout, or its entry of mtf.layouts (an op with several results,
/// fused attention); null when it has none or `value` is an argument.
mlir::mtf::LayoutAttr resultLayoutAttr(mlir::Value value);
/// `rules` with a rule for each dim a pipeline made in `program`
/// (mtf.layout_aliases): the axes of the model dim it stands for ("batch"),
/// less those of the dims listed after it (["batch", "layers"]: a
/// microbatch is not split over the stages' axes), where that dim has a rule
/// and it has none (mtf-pipeline-stages, docs/pipeline.md).
layout::LayoutRules withLayoutAliases(mlir::mtf::ProgramOp program,
                                      layout::LayoutRules rules);
/// The layer dims of `program` that a layer's parameters keep whole under
/// --shard-params (their loop, or a pipeline's split, cuts them): each
/// loop's layer dim, each pipelined repeat's (mtf.pipelines) and the dims a
/// pipeline aliases to one (mtf.layout_aliases: "layers_stage").
std::vector<std::string> wholeLayerDims(mlir::mtf::ProgramOp program);
/// The data-parallel axes of `program` under `rules` on `mesh`: those that
/// split some dim of an input (mtf.input), in the order first met.
std::vector<size_t> dataParallelAxes(mlir::mtf::ProgramOp program,
                                     const layout::LayoutRules &rules,
                                     const layout::Mesh &mesh,
                                     const layout::AxisWeights *weights);
/// Every dimension name of the tensors under `root`, with its size.
std::map<std::string, int64_t> collectModelDims(mlir::Operation *root);
/// A dim name no tensor under `root` has: `base`, else `base_2`, `base_3`...
std::string freshDimName(mlir::Operation *root, llvm::StringRef base);
/// The dim names of each tensor type under `root`, each list once: which
/// dims meet in a tensor (layout::enumerateSearchLayouts).
std::vector<std::vector<std::string>> collectTensorDims(mlir::Operation *root);
/// Emits `error` at `loc`, its hint as a note.
mlir::InFlightDiagnostic emitLayoutError(mlir::Location loc,
                                         const layout::Error &error);
/// A parse error of a pass option's text, prefixed with the option and the
/// text ("in axis-weights \"p=1\" at column 3: ...").
layout::Error withOption(const layout::Error &error, llvm::StringRef option,
                         llvm::StringRef text);
/// The device weights a pass's options give on `mesh` (mtf-apply-layout's
/// and mtf-pipeline-stages' axis-weights and uneven): the option's text,
/// else the program's own where its mesh is `mesh`, even otherwise; text
/// that does not parse is an error at the program, naming the option.
mlir::FailureOr<layout::AxisWeights> optionWeights(mlir::mtf::ProgramOp program,
                                                   const layout::Mesh &mesh,
                                                   llvm::StringRef axisWeights,
                                                   bool uneven);

} // namespace meshc

#endif // MESHC_COMPILER_PASSES_LAYOUTBRIDGE_H
