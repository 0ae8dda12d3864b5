//===- MtfSyntax.h - shared pieces of mtf assembly syntax -------*- C++ -*-===//
//
// The `name=size, ...` list appears in both `!mtf.tensor` (dimensions) and
// `#mtf.mesh` (axes); one parser, printer and verifier serve both.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_DIALECT_MTFSYNTAX_H
#define MESHC_DIALECT_MTFSYNTAX_H

#include "dialect/MtfDialect.h"
#include "mlir/IR/OpImplementation.h"

namespace mlir {
namespace mtf {

/// Parses a non-empty `name=size (, name=size)*` list.
ParseResult parseNamedDimList(AsmParser &parser,
                              SmallVectorImpl<NamedDim> &dims);
/// Prints `name=size, ...`.
void printNamedDimList(AsmPrinter &printer, ArrayRef<NamedDim> dims);
/// Checks names are non-empty and unique and sizes positive; `what` names an
/// entry in messages ("dimension", "mesh axis").
LogicalResult verifyNamedDimList(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<NamedDim> dims, StringRef what);

} // namespace mtf
} // namespace mlir

#endif // MESHC_DIALECT_MTFSYNTAX_H
