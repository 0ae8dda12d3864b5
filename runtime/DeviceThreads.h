//===- DeviceThreads.h - One thread per device, kept for a session -------===//
//
// A Session runs each local device's steps on a thread of its own, all at
// once (the devices meet in collectives). The threads are started once,
// with the session, and each run hands every thread its device's task:
// starting threads per run cost every run the copy of each loaded
// library's static TLS (CUDA's libcublasLt alone holds 94 KB) into each new
// thread, 0.4 ms of a 1.2 ms step on 8 CPU devices (docs/performance.md,
// "meshc from Python"). Thread d always runs device d: the devices meet in
// collectives, so every one must run at once (a WorkerPool's threads take
// chunks from a shared counter, one thread possibly running two).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_DEVICETHREADS_H
#define MESHC_RUNTIME_DEVICETHREADS_H

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace meshc::runtime {

class DeviceThreads {
public:
  /// Starts `count` threads. Throws RuntimeError when the system cannot.
  explicit DeviceThreads(size_t count);
  DeviceThreads(const DeviceThreads &) = delete;
  DeviceThreads &operator=(const DeviceThreads &) = delete;
  /// Ends and joins the threads (after the run in progress, if any).
  ~DeviceThreads();

  /// Runs task(d) on thread d for every d, all at once, and returns when
  /// every one returned. An exception a task lets out is rethrown here
  /// (the lowest thread's) after all of them ended.
  void run(const std::function<void(size_t)> &task);

private:
  void loop(size_t index);
  void stop();

  std::vector<std::thread> threads;
  std::mutex mutex;
  std::condition_variable start, done;
  const std::function<void(size_t)> *task = nullptr;
  /// Incremented for each run; a thread runs the task once per increment.
  uint64_t generation = 0;
  size_t running = 0;
  bool stopping = false;
  std::vector<std::exception_ptr> errors;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_DEVICETHREADS_H
