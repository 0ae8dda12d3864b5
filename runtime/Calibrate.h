//===- Calibrate.h - meshc-calibrate: a machine profile, measured -*- C++ -*-===//
//
// Measures the figures of a machine profile (runtime/core/cost,
// docs/cost.md) the way meshrun runs programs: each figure is the time of
// a small generated .mprog program run in a Session on the CPU backend --
// launched steps (step overhead), one-block einsums (GEMM rate), in-cache
// and out-of-cache element-wise adds (vector rate, memory bandwidth), and
// all-reduces of 4 B and 4 MiB over every device (link latency and
// bandwidth) -- in threads (virtual devices of one process), or under
// mpirun one device per rank with the MPI collectives. The JSON profile it
// writes says where each figure came from.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CALIBRATE_H
#define MESHC_RUNTIME_CALIBRATE_H

#include <iosfwd>

namespace meshc::runtime {

/// meshc-calibrate's command line; returns the exit code.
int calibrateMain(int argc, const char *const *argv, std::ostream &out,
                  std::ostream &err);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_CALIBRATE_H
