//===- MeshrunLoop.h - meshrun's run loop -----------------------*- C++ -*-===//
//
// What meshrun does with a set-up Session: the header, the training runs
// with their per-step report or progress line, the evaluations, and the
// files (--dump-outputs, --csv, --plot, --dump-params, --checkpoint,
// --trace). Internal to
// meshrun (Meshrun.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_MESHRUNLOOP_H
#define MESHC_RUNTIME_MESHRUNLOOP_H

#include "runtime/Checkpoint.h"
#include "runtime/Meshrun.h"

#include <iosfwd>

namespace meshc::runtime {

/// Where the loop reports.
struct MeshrunStreams {
  /// The report (stdout).
  std::ostream &out;
  /// The progress line (stderr).
  std::ostream &progress;
  /// False off MPI rank 0: gathers still run, nothing is printed or written.
  bool root = true;
  /// The progress stream is a terminal: redraw the line in place.
  bool terminal = false;
};

/// Runs `options.steps` training runs of `program` on `session` with the
/// evaluations and reports `options` asks for, after the session's
/// trainingRuns() (non-zero when `restored`, the checkpoint the session was
/// restored from, is given: runs are numbered on from it). Under MPI every
/// rank calls it (gathers are collective). Throws RuntimeError.
void runMeshrunLoop(const MeshrunOptions &options, const Program &program,
                    Session &session, const MeshrunStreams &streams,
                    const CheckpointIndex *restored = nullptr);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_MESHRUNLOOP_H
