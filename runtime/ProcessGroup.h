//===- ProcessGroup.h - Devices spread over processes -----------*- C++ -*-===//
//
// A plain meshrun runs every mesh device as a thread of one process. Under
// mpirun each process (MPI rank) runs one device, and the processes need a
// few operations beside the device collectives: a barrier around the timed
// step, the reassembly of global outputs on rank 0, an agreement on setup
// errors and an exchange of what each process runs (mpi/MpiAgreement.h).
// ProcessGroup is that interface, free of MPI so that Session builds without
// it; runtime/mpi/ implements it (MpiProcessGroup).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_PROCESSGROUP_H
#define MESHC_RUNTIME_PROCESSGROUP_H

#include "runtime/Collectives.h"

#include <cstdint>
#include <string>
#include <vector>

namespace meshc::runtime {

/// The processes that together run one program, one mesh device each:
/// process rank() runs mesh device rank().
class ProcessGroup {
public:
  virtual ~ProcessGroup();

  /// This process's rank in [0, size()): the mesh device it runs.
  virtual int64_t rank() const = 0;
  /// The number of processes.
  virtual int64_t size() const = 0;
  /// A short name of the transport for messages ("MPI").
  virtual std::string transport() const = 0;
  /// The collectives between the processes. split() returns one
  /// communicator per device id of which only this process's is non-null.
  virtual Collectives &collectives() = 0;
  /// Blocks until every process has called it.
  virtual void barrier() = 0;
  /// Collective: `bytes` (the same on every process) from every process,
  /// concatenated in rank order, on rank 0; empty elsewhere.
  virtual std::vector<char> gatherToRoot(const void *data, int64_t bytes) = 0;
  /// Collective: `bytes` (the same on every process) from every process,
  /// concatenated in rank order, on every process.
  virtual std::vector<char> allGather(const void *data, int64_t bytes) = 0;
  /// Collective: the lowest-ranked non-empty `localError` prefixed with
  /// "rank R: ", or empty when every process passed an empty one.
  virtual std::string agreeOnError(const std::string &localError) = 0;
  /// True when collectives() may be called from a thread other than the
  /// one that made the group (one at a time): what lets a started
  /// collective run on the session's communication lane.
  virtual bool collectivesOnAnyThread() const { return false; }
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_PROCESSGROUP_H
