//===- CommLane.h - Collectives on a thread of their own --------*- C++ -*-===//
//
// A started collective (Step::ticket, docs/mprog.md#overlapped-collectives)
// runs beside the device's next steps until its wait. On backends whose
// collectives block the calling thread (the CPU's in-process rings, MPI),
// the session gives each local device a lane: one thread that runs the
// device's collectives, all of them and in program order, so that every
// device meets its group's members in the same order and no communicator is
// used by two threads at once. The device's own thread submits a started
// collective and goes on; it waits for its ticket at the wait step. A
// collective that runs to completion is submitted and waited for at once.
//
// Deadlock freedom: every device submits the same collectives in the same
// order (one SPMD program), and each lane runs its queue in order.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_COMMLANE_H
#define MESHC_RUNTIME_COMMLANE_H

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace meshc::runtime {

class CommLane {
public:
  CommLane() = default;
  CommLane(const CommLane &) = delete;
  CommLane &operator=(const CommLane &) = delete;
  /// Drains the queue and joins the thread.
  ~CommLane();

  /// Queues `work` after everything submitted before it under `ticket`
  /// (>= 0, not pending), and returns. Starts the thread on first use.
  void submit(int64_t ticket, std::function<void()> work);
  /// Blocks until the work of `ticket` has run, then forgets the ticket;
  /// rethrows what the work threw. A ticket never submitted is an error
  /// (std::logic_error: the loader's checks prevent it).
  void wait(int64_t ticket);
  /// Runs `work` after everything submitted before it and returns when it
  /// has run, rethrowing what it threw.
  void run(std::function<void()> work);
  /// Blocks until the queue is empty and nothing runs, and forgets every
  /// ticket (and what its work threw): after a failed run.
  void drain();

private:
  void loop();

  std::mutex mutex;
  std::condition_variable wake, finished;
  std::deque<std::pair<int64_t, std::function<void()>>> queue;
  /// Submitted tickets: null while queued or running or done without an
  /// error, else what the work threw; `done` says which have run.
  std::map<int64_t, std::exception_ptr> errors;
  std::map<int64_t, bool> done;
  bool running = false, stopping = false;
  /// Tickets of run(): below -1, never the caller's.
  int64_t nextPrivate = -2;
  std::thread thread;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_COMMLANE_H
