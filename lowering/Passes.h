//===- Passes.h - SPMD lowering passes --------------------------*- C++ -*-===//
//
// Declarations and registration of the passes in lowering/.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_LOWERING_PASSES_H
#define MESHC_LOWERING_PASSES_H

#include "dialect/MtfDialect.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace meshc {

#define GEN_PASS_DECL
#include "lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lowering/Passes.h.inc"

} // namespace meshc

#endif // MESHC_LOWERING_PASSES_H
