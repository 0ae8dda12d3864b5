//===- CpuCollectives.h - In-process collectives between threads -*- C++
//-*-===//
//
// The CPU backend runs each mesh device on its own thread, so collectives are
// shared-memory algorithms: the members of a group publish pointers to their
// buffers, then take turns reading their neighbours' buffers between barrier
// phases. allReduce is the classic ring (reduce-scatter then all-gather, each
// in size-1 phases where member r only reads member r-1), reduceScatter and
// allGather are its two halves, allToAll is a direct exchange. Every member
// only ever writes its own buffer. The equal-chunk forms are the variable
// ones with equal counts.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CPU_CPUCOLLECTIVES_H
#define MESHC_RUNTIME_CPU_CPUCOLLECTIVES_H

#include "runtime/Collectives.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace meshc::runtime {

/// A reusable barrier for a fixed number of threads that can be aborted.
/// A spinning barrier first waits on its phase counter for a few
/// microseconds before it sleeps: when every member has a core of its own,
/// the others usually arrive within that, and a sleeping thread takes tens
/// of microseconds to wake.
class Barrier {
public:
  explicit Barrier(int64_t count, bool spin = false)
      : count(count), spin(spin) {}

  /// Blocks until `count` threads have called wait() in this phase; throws
  /// CollectiveAborted once abort() was called.
  void wait();
  /// Releases every waiting thread with CollectiveAborted, now and later.
  void abort();

private:
  std::mutex mutex;
  std::condition_variable released;
  const int64_t count;
  const bool spin;
  std::atomic<int64_t> arrived{0};
  std::atomic<uint64_t> phase{0};
  std::atomic<bool> aborted{false};
};

/// What the members of one group share.
struct CpuGroup {
  explicit CpuGroup(int64_t size, bool spin = false)
      : barrier(size, spin), slots(size, nullptr), starts(size) {}
  Barrier barrier;
  /// The buffer each member published for the current collective.
  std::vector<const void *> slots;
  /// allToAllV: where each member's chunks start in its buffer. Owned here,
  /// so a peer still reading them after an abort reads live memory.
  std::vector<std::vector<int64_t>> starts;
};

/// One member's view of a CpuGroup.
class CpuCommunicator : public Communicator {
public:
  /// Member `rank` of `group`.
  CpuCommunicator(std::shared_ptr<CpuGroup> group, int64_t rank);

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

private:
  /// Publishes `data`, waits for every member to do the same and returns the
  /// left neighbour's (rank - 1) buffer.
  const char *publish(const void *data);

  std::shared_ptr<CpuGroup> group;
};

/// The collectives of the CPU backend.
class CpuCollectives : public Collectives {
public:
  std::vector<std::unique_ptr<Communicator>>
  split(const GroupPartition &partition) override;
  void abort() override;
  /// Whether the barriers of groups split from now on spin before they
  /// sleep: only when every device thread has a core of its own.
  void setSpinning(bool on) { spinning = on; }

private:
  bool spinning = false;
  std::mutex mutex;
  std::vector<std::shared_ptr<CpuGroup>> groups;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_CPU_CPUCOLLECTIVES_H
