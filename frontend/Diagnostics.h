//===- Diagnostics.h - Reporting .mtf errors --------------------*- C++ -*-===//
//
// Turns source positions into MLIR locations (file:line:col) and emits errors
// through the MLIRContext's diagnostic engine, so the driver prints them and
// `--verify-diagnostics` can check them. Also the "did you mean" suggestion
// every "unknown name" error uses.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_FRONTEND_DIAGNOSTICS_H
#define MESHC_FRONTEND_DIAGNOSTICS_H

#include "frontend/AST.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"

#include "llvm/ADT/ArrayRef.h"

#include <string>

namespace meshc::frontend {

/// Makes locations in one source file and emits diagnostics at them.
class DiagnosticEmitter {
public:
  DiagnosticEmitter(mlir::MLIRContext &context, llvm::StringRef filename);

  /// The location `file:line:col` of `loc`.
  mlir::FileLineColLoc location(Loc loc) const;
  /// Starts an error at `loc`; stream the message into the result.
  mlir::InFlightDiagnostic error(Loc loc) const {
    return mlir::emitError(location(loc));
  }
  mlir::MLIRContext &getContext() const { return *context; }

private:
  mlir::MLIRContext *context;
  mlir::StringAttr filename;
};

/// The shortest spelling of `value` that reads back as the same double:
/// "0.5", "1e-05", "-3".
std::string formatNumber(double value);

/// "; did you mean 'x'?" when a candidate is within a few edits of `name`
/// (and not a rewrite of the whole name), else "".
std::string didYouMean(llvm::StringRef name,
                       llvm::ArrayRef<llvm::StringRef> candidates);

} // namespace meshc::frontend

#endif // MESHC_FRONTEND_DIAGNOSTICS_H
