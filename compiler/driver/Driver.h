//===- Driver.h - the meshc compiler driver ---------------------*- C++ -*-===//
//
// The whole `meshc` command line: options, reading the model, the pass
// pipeline, and what gets emitted. tools/meshc/meshc.cpp only calls this.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_DRIVER_DRIVER_H
#define MESHC_COMPILER_DRIVER_DRIVER_H

namespace meshc {

/// Runs meshc with the given command line; returns the process exit code
/// (0 on success, 1 on any error, which has then been reported on stderr).
int meshcMain(int argc, char **argv);

} // namespace meshc

#endif // MESHC_COMPILER_DRIVER_DRIVER_H
