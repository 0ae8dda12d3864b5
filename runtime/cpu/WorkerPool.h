//===- WorkerPool.h - The cores of one CPU device ---------------*- C++ -*-===//
//
// When a process runs one device and may use several cores, the device runs
// its large steps on all of them: the device's own thread plus `threads - 1`
// helper threads of a WorkerPool, each taking a contiguous share of the
// step's runs (fused steps) or of a GEMM's batches, rows or columns. Shares
// are fixed by the range and the thread count alone, so a run is
// deterministic; a fused step computes every element exactly as one thread
// would (bit-identical for any thread count), a shared GEMM as OpenBLAS
// computes that part of C.
//
// Helpers spin for a few microseconds after each task (the next step usually
// follows at once) and then sleep; they never run when the pool has one
// thread, which is how every device of a multi-device process runs.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CPU_WORKERPOOL_H
#define MESHC_RUNTIME_CPU_WORKERPOOL_H

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

  /// The share [begin, end) of `units` that part `part` of `parts` takes.
  static void share(int64_t units, int parts, int part, int64_t &begin,
                    int64_t &end);

  /// Calls body(begin, end, part) for parts 0..P-1 of [0, units), part 0 on
  /// the calling thread and the others on helpers, and returns when all are
  /// done. P = min(threads(), units / minUnits), at least 1: a range too
  /// small to be worth sharing runs on the caller alone. After every part
  /// finished, rethrows the exception of the lowest-numbered part that
  /// threw.
  void parallelFor(int64_t units, int64_t minUnits,
                   const std::function<void(int64_t, int64_t, int)> &body);

private:
  void helperLoop(int part);
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
  /// The current task: its body, range and number of parts.
  const std::function<void(int64_t, int64_t, int)> *body = nullptr;
  int64_t units = 0;
  int parts = 1;
  std::vector<std::exception_ptr> errors;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_CPU_WORKERPOOL_H
