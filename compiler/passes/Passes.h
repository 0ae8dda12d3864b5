//===- Passes.h - meshc compiler passes -------------------------*- C++ -*-===//
//
// Declarations and registration of the passes over the mtf dialect.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_PASSES_PASSES_H
#define MESHC_COMPILER_PASSES_PASSES_H

#include "compiler/passes/Remat.h"
#include "compiler/passes/Schedule.h"
#include "dialect/MtfDialect.h"
#include "mlir/Pass/Pass.h"

namespace meshc {

#define GEN_PASS_DECL
#include "compiler/passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/passes/Passes.h.inc"

} // namespace meshc

#endif // MESHC_COMPILER_PASSES_PASSES_H
