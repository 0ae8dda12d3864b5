//===- MpiCollectives.h - Collectives between MPI ranks ---------*- C++ -*-===//
//
// The MPI transport: one mesh device per MPI rank (rank r is mesh device r).
// Each collective group of partitionMesh becomes an MPI communicator made by
// MPI_Comm_split(world, color = group, key = rank in group), so the MPI rank
// in the sub-communicator is the shard index over the axes, first axis most
// significant, as in the CPU backend. The collectives keep the CPU
// communicator's chunk conventions (Collectives.h):
//
//   allReduce      MPI_Reduce_scatter (chunks [r*count/n, (r+1)*count/n))
//                  then MPI_Allgatherv, so each element is reduced once and
//                  every member ends with bit-identical values
//   reduceScatter  MPI_Reduce_scatter_block, own chunk moved to chunk rank
//   allGather      MPI_Allgather in place
//   allToAll       MPI_Alltoall
//   allGatherV     MPI_Allgatherv in place
//   reduceScatterV MPI_Reduce_scatter, own chunk moved to its offset
//   allToAllV      MPI_Alltoallv
//
// Each collective is posted nonblocking (MPI_Ireduce_scatter, ...) and
// waited for by the process's MpiWatchdog against a per-collective deadline,
// so a rank that never arrives ends the job with an error naming it instead
// of a hang (MpiWatchdog.h); so are the process group's barrier, gather and
// error agreement. Every MPI call goes through MESHC_MPI_CHECK, which turns a
// failure into a RuntimeError naming the call, the file and the line (the
// communicators use MPI_ERRORS_RETURN). Only built when CMake finds MPI
// (MESHC_HAVE_MPI).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_MPI_MPICOLLECTIVES_H
#define MESHC_RUNTIME_MPI_MPICOLLECTIVES_H

#include "runtime/Collectives.h"
#include "runtime/ProcessGroup.h"
#include "runtime/mpi/MpiWatchdog.h"

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace meshc::runtime {

/// Throws RuntimeError for an MPI return code other than MPI_SUCCESS.
void checkMpi(int code, const char *call, const char *file, int line);

/// Checks the return code of MPI call `call` (an expression).
#define MESHC_MPI_CHECK(call)                                                  \
  ::meshc::runtime::checkMpi((call), #call, __FILE__, __LINE__)

/// One member's MPI communicator for its group; frees it when destroyed.
class MpiCommunicator : public Communicator {
public:
  /// Takes ownership of `comm` (rank `rank` of `size`), whose members are
  /// the world ranks `members` in rank order; waits through `watchdog`.
  MpiCommunicator(MPI_Comm comm, int64_t rank, int64_t size,
                  std::vector<int> members,
                  std::shared_ptr<MpiWatchdog> watchdog);
  ~MpiCommunicator() override;

  void allReduce(void *data, int64_t count, DType dtype,
                 Reduction reduction) override;
  void reduceScatter(void *data, int64_t chunkCount, DType dtype,
                     Reduction reduction) override;
  void allGather(void *data, int64_t chunkBytes) override;
  void allToAll(const void *in, void *out, int64_t chunkBytes) override;
  void allGatherV(void *data, const std::vector<int64_t> &chunkBytes) override;
  void reduceScatterV(void *data, const std::vector<int64_t> &chunkCounts,
                      DType dtype, Reduction reduction) override;
  void allToAllV(const void *in, const std::vector<int64_t> &sendBytes,
                 void *out, const std::vector<int64_t> &receiveBytes) override;

  /// The underlying communicator.
  MPI_Comm comm() const { return communicator; }

private:
  MPI_Comm communicator;
  std::vector<int> members;
  std::shared_ptr<MpiWatchdog> watchdog;
};

/// The collectives between the ranks of `world`: split() makes this rank's
/// communicator (the others' entries are null).
class MpiCollectives : public Collectives {
public:
  /// Collective over `world`: waits for each collective up to
  /// `timeoutSeconds` (0: forever).
  MpiCollectives(MPI_Comm world, double timeoutSeconds);

  std::vector<std::unique_ptr<Communicator>>
  split(const GroupPartition &partition) override;
  /// MPI collectives cannot be woken; a failing rank ends the job instead
  /// (meshrun calls MPI_Abort). This only marks later calls as aborted.
  void abort() override {}

  /// The watchdog every communicator made here waits through.
  MpiWatchdog &watchdog() { return *sharedWatchdog; }

private:
  MPI_Comm world;
  std::shared_ptr<MpiWatchdog> sharedWatchdog;
};

/// MPI_COMM_WORLD as a ProcessGroup. Initialises MPI if needed and finalises
/// it when destroyed if it initialised it, unless a collective timed out:
/// then the job cannot end cleanly and the destructor calls MPI_Abort.
class MpiProcessGroup : public ProcessGroup {
public:
  /// Throws RuntimeError for a bad MESHC_COLLECTIVE_TIMEOUT (before MPI is
  /// initialised) or when MPI fails.
  MpiProcessGroup();
  ~MpiProcessGroup() override;

  int64_t rank() const override { return worldRank; }
  int64_t size() const override { return worldSize; }
  std::string transport() const override { return "MPI"; }
  Collectives &collectives() override { return *mpiCollectives; }
  void barrier() override;
  std::vector<char> gatherToRoot(const void *data, int64_t bytes) override;
  std::vector<char> allGather(const void *data, int64_t bytes) override;
  /// A timeout while agreeing is returned as this rank's error.
  std::string agreeOnError(const std::string &localError) override;
  /// MPI gave MPI_THREAD_SERIALIZED or more (asked for at MPI_Init_thread).
  bool collectivesOnAnyThread() const override { return serialized; }
  /// Ends every rank of the job with `code` (MPI_Abort).
  [[noreturn]] void abortJob(int code);
  /// Overrides MESHC_COLLECTIVE_TIMEOUT for the collectives that follow
  /// (seconds; 0: no deadline), e.g. from a command-line flag.
  void setCollectiveTimeout(double seconds) {
    mpiCollectives->watchdog().setTimeout(seconds);
  }

private:
  bool initialised = false;
  bool serialized = false;
  int64_t worldRank = 0;
  int64_t worldSize = 1;
  std::unique_ptr<MpiCollectives> mpiCollectives;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_MPI_MPICOLLECTIVES_H
