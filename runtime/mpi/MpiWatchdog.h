//===- MpiWatchdog.h - Deadlines on MPI collectives -------------*- C++ -*-===//
//
// A blocking MPI collective waits forever for a rank that never arrives: a
// rank that is stopped (SIGSTOP), stuck outside MPI, or running a different
// program. So every collective of the MPI transport is posted nonblocking and
// waited for here, against a deadline per collective (not per run: a slow
// first step does not count against later collectives):
//
//   1. Poll MPI_Test until the request completes or `timeout` passes,
//      answering the other ranks' queries (below) meanwhile.
//   2. Past the deadline, ask every other rank where it is (a small message
//      on a private duplicate of the world) and wait up to `grace` for the
//      answers. A rank that waits in some collective answers with its
//      position ("all_reduce #17 over ranks {0,2}"); a rank that does not
//      answer is stopped, hung, dead or computing for longer than the
//      timeout: it is the one that did not reach the collective.
//   3. Throw CollectiveTimeout naming those ranks; the request is left
//      pending (MPI cannot cancel a collective). meshrun reports the error
//      and ends the job with MPI_Abort.
//
// A rank killed outright needs none of this: mpirun notices the lost process
// and ends the job itself, naming the rank. The timeout comes from the
// environment variable MESHC_COLLECTIVE_TIMEOUT (seconds; 0 waits forever),
// default 20 s, so that a hung rank ends the job in well under 30 s.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_MPI_MPIWATCHDOG_H
#define MESHC_RUNTIME_MPI_MPIWATCHDOG_H

#include "runtime/Error.h"

#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace meshc::runtime {

/// A collective that did not complete before its deadline; what() names the
/// collective and the ranks that did not reach it.
class CollectiveTimeout : public RuntimeError {
public:
  explicit CollectiveTimeout(const std::string &message)
      : RuntimeError(message) {}
};

/// The default deadline of one collective, in seconds.
constexpr double kDefaultCollectiveTimeout = 20.0;

/// The collective timeout in seconds from MESHC_COLLECTIVE_TIMEOUT (a
/// non-negative number; 0 means no deadline), or kDefaultCollectiveTimeout
/// when it is unset. Throws RuntimeError for any other value.
double collectiveTimeoutFromEnvironment();

/// Waits for the collectives of one process against a deadline; one per
/// process, shared by its communicators. Not thread-safe: the MPI transport
/// runs one device per process, on one thread.
class MpiWatchdog {
public:
  /// Collective over `world` (it duplicates it for its queries).
  /// `timeoutSeconds` 0 disables the deadline; `graceSeconds` is how long a
  /// timed-out rank waits for the others' answers.
  MpiWatchdog(MPI_Comm world, double timeoutSeconds, double graceSeconds = 2.0);
  ~MpiWatchdog();
  MpiWatchdog(const MpiWatchdog &) = delete;
  MpiWatchdog &operator=(const MpiWatchdog &) = delete;

  /// The deadline of one collective in seconds (0: none).
  double timeout() const { return timeoutSeconds; }
  /// Sets the deadline of the collectives that follow (0: none).
  void setTimeout(double seconds) { timeoutSeconds = seconds; }
  /// The number of collectives waited for so far on this rank.
  uint64_t collectives() const { return sequence; }
  /// Whether a wait has timed out: a collective is left pending and the
  /// job cannot end cleanly (MPI_Finalize could wait forever).
  bool timedOut() const { return expired; }

  /// Waits for `request`, the collective `op` (e.g. "all_reduce") among the
  /// world ranks `members` (empty: the whole world); `part` > 0 marks a
  /// later part of the same collective (the all-gather after the
  /// reduce-scatter of an all-reduce), which keeps its number. Throws
  /// RuntimeError when MPI reports an error and CollectiveTimeout past the
  /// deadline; the request then stays pending.
  void wait(MPI_Request &request, const char *op,
            const std::vector<int> &members, int part = 0);

private:
  struct Answer;
  struct PendingSend;

  /// Answers every query that has arrived; keeps the answers to query
  /// number `query` in `answers` (by rank) and drops the others.
  void serveQueries(std::map<int, Answer> &answers, int64_t query);
  /// Past the deadline: asks the other ranks where they are and returns
  /// the error message, or "" when `request` completed meanwhile.
  std::string diagnose(MPI_Request &request);

  MPI_Comm queries = MPI_COMM_NULL;
  int worldRank = 0;
  int worldSize = 1;
  double timeoutSeconds;
  double graceSeconds;
  bool expired = false;
  /// Collectives entered so far; the current one's number.
  uint64_t sequence = 0;
  /// "all_reduce #17 over ranks {0,2}": this rank's position, for answers.
  std::string position = "setup";
  /// Queries this rank has sent; numbers its answers.
  int64_t queriesSent = 0;
  /// Messages in flight (their buffers live until the sends complete).
  std::vector<std::unique_ptr<PendingSend>> sends;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_MPI_MPIWATCHDOG_H
