//===- Meshrun.h - The meshrun command line ---------------------*- C++ -*-===//
//
// meshrun runs a compiled .mprog:
//
//   meshrun MODEL.mprog [--backend cpu] [--devices N] [--steps S]
//           [--input NAME=FILE.npy]... [--seed K] [--dump-outputs FILE.json]
//           [--quiet]
//
// It prints every output after every step (scalars as numbers, tensors as
// shape, first values and sum) with the step's time, then the mean and
// minimum step time. The library owns all of it; tools/meshrun.cpp is one
// call to meshrunMain. docs/runtime.md describes the flags. Started by mpirun
// with more than one rank, meshrunMain runs one mesh device per rank over MPI
// (when built with MPI) and only rank 0 prints and dumps outputs.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_MESHRUN_H
#define MESHC_RUNTIME_MESHRUN_H

#include "runtime/Session.h"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace meshc::runtime {

/// The parsed meshrun command line.
struct MeshrunOptions {
  /// The .mprog file.
  std::string programPath;
  SessionOptions session;
  /// How many times the program runs.
  int64_t steps = 1;
  /// Where to write the global outputs as JSON after the last step (empty:
  /// nowhere).
  std::string dumpOutputs;
  /// Print only the summary line.
  bool quiet = false;
  /// --help was given.
  bool help = false;
};

/// Parses the arguments after the program name. Throws RuntimeError for an
/// unknown flag, a missing or malformed value, or a missing .mprog file.
MeshrunOptions parseMeshrunArgs(const std::vector<std::string> &args);

/// Runs meshrun with `argv`; results go to `out`, errors to `err` as
/// "meshrun: error: <message>". Returns the exit code: 0, or 1 on any error.
int meshrunMain(int argc, const char *const *argv, std::ostream &out,
                std::ostream &err);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_MESHRUN_H
