//===- WorkerPool.h - The cores of one CPU device ---------------*- C++ -*-===//
//
// When a process runs one device and may use several cores, the device runs
// its large steps on all of them: the device's own thread plus `threads - 1`
// helper threads of a WorkerPool. A step's range (a fused step's runs, a
// GEMM's parts, a row kernel's parts) is cut into up to kChunksPerThread
// chunks per thread at fixed boundaries, and the threads take chunks from a
// shared counter until none is left: a thread that the machine slows down
// (a busy neighbour on a shared VM) takes fewer chunks instead of holding
// the others up. The boundaries depend on the range and the thread count
// alone and each element is computed within one chunk, so which thread
// takes a chunk changes nothing: a fused step computes every element
// exactly as one thread would (bit-identical for any thread count), a
// shared GEMM as OpenBLAS computes that part of C.
//
// Helpers spin for a few microseconds after each task (the next step usually
// follows at once) and then sleep; they never run when the pool has one
// thread, which is how every device of a multi-device process runs.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CPU_WORKERPOOL_H
#define MESHC_RUNTIME_CPU_WORKERPOOL_H

#include "runtime/cpu/Share.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace meshc::runtime {

/// A fixed set of threads that run shares of a range together with the
/// caller.
class WorkerPool {
public:
  /// The caller's thread and `threads - 1` helpers (none for threads <= 1).
  /// Throws RuntimeError when the system cannot start them.
  explicit WorkerPool(int threads);
  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;
  ~WorkerPool();

  /// How many threads run a task (the caller included).
  int threads() const { return static_cast<int>(helpers.size()) + 1; }

  /// How many chunks per thread parallelFor cuts a range into at most.
  static constexpr int64_t kChunksPerThread = 4;

  /// Cuts [0, units) (with Share::range) into C = min(kChunksPerThread *
  /// threads(), units / minUnits) chunks (at least 1) and calls body(begin,
  /// end, worker) once per chunk, on the calling thread (worker 0) and the
  /// helpers (workers 1..threads() - 1), each of which may run several chunks
  /// one after another; returns when all are done. A range too small to be
  /// worth sharing (C = 1), or any range of a pool without helpers, runs on the
  /// caller as one chunk. When a chunk throws, the
  /// chunks no thread has started are skipped, and once every thread
  /// stopped the exception of the lowest-numbered worker that threw is
  /// rethrown.
  void parallelFor(int64_t units, int64_t minUnits,
                   const std::function<void(int64_t, int64_t, int)> &body);

private:
  void helperLoop(int worker);
  /// Runs chunks of the current task until none is left.
  void drain(int worker);
  /// Ends and joins the helpers.
  void stop();

  std::vector<std::thread> helpers;
  std::mutex mutex;
  std::condition_variable wake;
  /// Incremented for each task; a helper runs a task once per increment.
  std::atomic<uint64_t> generation{0};
  /// Helpers still running the current task.
  std::atomic<int> pending{0};
  std::atomic<bool> stopping{false};
  /// The current task: its body, range and number of chunks, and the next
  /// chunk to take.
  const std::function<void(int64_t, int64_t, int)> *body = nullptr;
  int64_t units = 0;
  int64_t chunks = 1;
  std::atomic<int64_t> next{0};
  std::vector<std::exception_ptr> errors;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_CPU_WORKERPOOL_H
