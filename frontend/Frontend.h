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

namespace meshc::frontend {

/// Parses the main buffer of `sourceMgr` as a .mtf model and builds a module
/// holding one `mtf.program` named after the file stem (sanitised to an
/// identifier). Diagnostics go through `context`'s diagnostic engine with
/// FileLineColLoc locations (file:line:col, 1-based); returns null after the
/// first error.
mlir::OwningOpRef<mlir::ModuleOp> importMtf(llvm::SourceMgr &sourceMgr,
                                            mlir::MLIRContext &context);

} // namespace meshc::frontend

#endif // MESHC_FRONTEND_FRONTEND_H
