//===- Registration.h - what meshc tools register ---------------*- C++ -*-===//
//
// One place that lists the dialects and passes meshc's tools know, so that
// `meshc` and `meshc-opt` cannot drift apart.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_DRIVER_REGISTRATION_H
#define MESHC_COMPILER_DRIVER_REGISTRATION_H

#include "mlir/IR/DialectRegistry.h"

namespace meshc {

/// Adds meshc's dialects to `registry` and registers meshc's passes with the
/// global pass registry (idempotent).
void registerAll(mlir::DialectRegistry &registry);

} // namespace meshc

#endif // MESHC_COMPILER_DRIVER_REGISTRATION_H
