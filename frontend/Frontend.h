//===- Frontend.h - The .mtf model language frontend ------------*- C++ -*-===//
//
// The one entry point of the frontend: .mtf text in, an mtf-dialect module
// out. The language is described in docs/language.md.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_FRONTEND_FRONTEND_H
#define MESHC_FRONTEND_FRONTEND_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace meshc::frontend {

/// A `repeat N f(...)` of the model, as the frontend expanded it.
struct RepeatSite {
  /// Where `repeat` is written (1-based).
  unsigned line = 0;
  unsigned column = 0;
  /// The count written in the model.
  int64_t count = 0;
  /// Whether it was expanded inside an instance of another repeat (then the
  /// model's size is not linear in its count).
  bool nested = false;
};

/// What importMtf may change, and what it tells, beyond the text.
struct ImportOptions {
  /// Instances to expand for the repeat written at (line, column) instead of
  /// its count: --layout auto predicts a deep model from shallow copies.
  std::map<std::pair<unsigned, unsigned>, int64_t> repeatCounts;
  /// When set, receives each repeat expanded, once per site, in the order of
  /// their first expansion.
  std::vector<RepeatSite> *repeats = nullptr;
  /// Each outermost `repeat` becomes one mtf.loop over its layer dim, its
  /// parameters stacked along it (meshc --repeat=loop); else the repeats are
  /// unrolled into instances.
  bool loops = false;
  /// Gradient accumulation (meshc --microbatches): when above 1, the model is
  /// built for one of `microbatches` microbatches, its dim `microbatchDim`
  /// declared that many times smaller, and the program says so in
  /// `mtf.microbatches`. A model without the dim, or a size it does not
  /// divide, is an error.
  int64_t microbatches = 1;
  std::string microbatchDim = "batch";
};

/// Parses the main buffer of `sourceMgr` as a .mtf model and builds a module
/// holding one `mtf.program` named after the file stem (sanitised to an
/// identifier). Diagnostics go through `context`'s diagnostic engine with
/// FileLineColLoc locations (file:line:col, 1-based); returns null after the
/// first error.
mlir::OwningOpRef<mlir::ModuleOp> importMtf(llvm::SourceMgr &sourceMgr,
                                            mlir::MLIRContext &context,
                                            const ImportOptions &options = {});

} // namespace meshc::frontend

#endif // MESHC_FRONTEND_FRONTEND_H
