//===- Meshrun.h - The meshrun command line ---------------------*- C++ -*-===//
//
// meshrun runs a compiled .mprog:
//
//   meshrun MODEL.mprog [--backend cpu] [--devices N] [--steps S]
//           [--input NAME=FILE.npy]... [--seed K] [--dump-outputs FILE.json]
//           [--eval-input NAME=FILE.npy]... [--eval-every K] [--no-shuffle]
//           [--csv FILE.csv] [--plot FILE.svg] [--dump-params DIR]
//           [--init-params DIR] [--verbose] [--quiet]
//           [--checkpoint DIR [--checkpoint-every K] [--keep-checkpoints N]]
//           [--restore DIR] [--trace FILE.json [--trace-runs N]]
//
// With up to 20 steps (or --verbose) it prints every output after every step
// (scalars as numbers, tensors as shape, first values and sum) with the
// step's time; with more, a progress line on stderr. Then the mean and
// minimum step time. Training programs add datasets, evaluations, a CSV log,
// a loss chart and parameter files; checkpoints
// (Checkpoint.h) and a step timeline (Trace.h) are written on request. The
// library owns all of it; tools/meshrun.cpp is one call to meshrunMain.
// docs/runtime.md describes the flags. Started by mpirun with more than one
// rank, meshrunMain runs one mesh device per rank over MPI (when built with
// MPI) and only rank 0 prints and writes files.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_MESHRUN_H
#define MESHC_RUNTIME_MESHRUN_H

#include "runtime/Session.h"

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace meshc::runtime {

/// The parsed meshrun command line.
struct MeshrunOptions {
  /// The .mprog file.
  std::string programPath;
  SessionOptions session;
  /// How many times the program runs (training runs; 0: only set up).
  int64_t steps = 1;
  /// Where to write the global outputs as JSON after the last step (empty:
  /// nowhere).
  std::string dumpOutputs;
  /// Evaluate after every this many training runs (0: only after the last);
  /// needs an eval set (session.evalInputFiles).
  int64_t evalEvery = 0;
  /// Where to write the log of the training runs as CSV (empty: nowhere).
  std::string csvPath;
  /// Where to draw the loss curve as SVG (empty: nowhere).
  std::string plotPath;
  /// Where to write every param as DIR/<name>.npy after the last step
  /// (empty: nowhere).
  std::string dumpParamsDir;
  /// Where to write checkpoints (empty: nowhere): DIR/step-<N>/.
  std::string checkpointDir;
  /// Write a checkpoint after every training run whose number is a multiple
  /// of this (0: only after the last).
  int64_t checkpointEvery = 0;
  /// Keep the newest this many checkpoints in checkpointDir.
  int64_t keepCheckpoints = 2;
  /// The checkpoint to continue from (empty: none): a checkpoint directory
  /// (its latest step) or one step folder. `steps` runs follow it.
  std::string restorePath;
  /// Where to write the Chrome trace JSON of the steps (empty: nowhere);
  /// session.trace and session.traceRuns go with it.
  std::string tracePath;
  /// Print the outputs of every step even when there are more than 20.
  bool verbose = false;
  /// Print only the summary (and eval) lines.
  bool quiet = false;
  /// Under mpirun: seconds a collective may take before the ranks give up
  /// (unset: $MESHC_COLLECTIVE_TIMEOUT or 20; 0: no limit).
  std::optional<double> collectiveTimeout;
  /// --help was given.
  bool help = false;
};

/// Parses the arguments after the program name. Throws RuntimeError for an
/// unknown flag, a missing or malformed value, or a missing .mprog file.
MeshrunOptions parseMeshrunArgs(const std::vector<std::string> &args);

/// The number of processes of the MPI job this process was started in by
/// mpirun (Open MPI, or a PMI launcher such as MPICH's), or 1.
int64_t launchedRanks();

/// Runs meshrun with `argv`; results go to `out`, errors to `err` as
/// "meshrun: error: <message>". Returns the exit code: 0, or 1 on any error.
int meshrunMain(int argc, const char *const *argv, std::ostream &out,
                std::ostream &err);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_MESHRUN_H
