//===- AutoLayout.h - meshc --layout auto -----------------------*- C++ -*-===//
//
// The layout search: every layout of a model on a mesh
// (layout::enumerateLayouts), each laid out, partitioned and fused, its step
// time predicted by the cost model (lowering/ProgramCost.h) and its memory
// planned (the .mprog emitter's plan); the fastest that fits the memory
// limit wins. A model that repeats a block more than three times is searched
// on copies with two and three instances of it, and each figure extrapolated
// linearly to the written count (an instance between two others adds the
// same work and memory); with a memory limit, the winner's plan is then
// checked on the model as written. Deterministic: ties go to fewer bytes
// received per device, then to the layout's text. docs/layouts.md describes
// it.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_DRIVER_AUTOLAYOUT_H
#define MESHC_COMPILER_DRIVER_AUTOLAYOUT_H

#include "compiler/driver/Pipeline.h"
#include "frontend/Frontend.h"
#include "runtime/core/cost/MachineProfile.h"
#include "runtime/core/layout/LayoutRules.h"
#include "runtime/core/layout/Mesh.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace meshc {

struct AutoLayoutOptions {
  /// Per-device bytes a layout's planned arena may take (none: no limit).
  std::optional<int64_t> memoryLimit;
  /// How many of the best layouts to print.
  size_t listed = 5;
  /// How candidates are compiled (fused, optimizer sharded), as the
  /// program will be.
  PartitionOptions partition;
  /// Where errors go (compile() passes its own: CompileResult::errors).
  llvm::raw_ostream *errors = &llvm::errs();
};

/// The global program the search predicts from.
struct SearchModel {
  /// The model as written: differentiated, without layouts.
  mlir::ModuleOp full;
  /// Its source file, for messages.
  std::string file;
  /// Its repeats (none for IR input).
  std::vector<frontend::RepeatSite> repeats;
  /// The same model with other repeat counts (ImportOptions::repeatCounts),
  /// differentiated; null after an error. Unset for IR input.
  std::function<mlir::OwningOpRef<mlir::ModuleOp>(
      const frontend::ImportOptions &)>
      reimport;
  /// The model pipelined as `rules` say (they split the layer dim of a
  /// repeat), differentiated; null after an error, reported through the
  /// context. Unset: no layout that splits a layer dim is a candidate
  /// (meshc sets it for a model of loops with --microbatches above 1).
  std::function<mlir::OwningOpRef<mlir::ModuleOp>(const layout::LayoutRules &)>
      pipelined;
};

/// Chooses the layout of `model` on `mesh` for `machine`, printing the
/// search's summary, the best layouts and "chosen layout: <rules>" on `os`.
/// Fails (after an error on options.errors) when no layout is valid or none
/// fits the limit.
mlir::FailureOr<layout::LayoutRules>
chooseLayout(const SearchModel &model, const layout::Mesh &mesh,
             const cost::MachineProfile &machine,
             const AutoLayoutOptions &options, llvm::raw_ostream &os);

} // namespace meshc

#endif // MESHC_COMPILER_DRIVER_AUTOLAYOUT_H
