//===- Trace.h - The step timeline behind meshrun --trace -------*- C++ -*-===//
//
// With tracing on, the session times every step on every device (steady
// clock, one read after each Device::run: a step starts where the previous
// one ended) into a per-device buffer sized before the first run, so
// recording is one clock read and an append; with tracing off the step loop
// pays one branch per step. The recorder then writes the Chrome
// trace event format (chrome://tracing, ui.perfetto.dev): one complete
// ("ph": "X") event per step per device per run, a thread per device and a
// process per rank, with the step's op, category (gemm, elementwise,
// reduction, collective, copy), phase, run and, for collectives, the bytes
// and the group's mesh axes. Under a ProcessGroup the events are gathered
// to rank 0, which writes the one file.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_TRACE_H
#define MESHC_RUNTIME_TRACE_H

#include "runtime/Device.h"
#include "runtime/ProcessGroup.h"
#include "runtime/Program.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace meshc::runtime {

/// One step run on one device (plain data: gathered as bytes under MPI).
struct TraceEvent {
  /// Step::index (training.sync steps follow the program's steps).
  uint32_t step = 0;
  /// 1 in an eval run.
  uint32_t eval = 0;
  /// RunContext::run: the training runs before this run.
  uint64_t run = 0;
  /// Nanoseconds since the recorder's clock started.
  int64_t startNs = 0;
  int64_t endNs = 0;
  /// In a loop's body: the innermost loop's iteration; else -1.
  int64_t iteration = -1;
};

/// "gemm", "elementwise", "reduction", "collective" or "copy": what kind of
/// work `step` is, its kind's category in StepKinds.def ("gemm" only for an
/// einsum with a GEMM stage; one without is a "reduction").
const char *stepCategory(const Step &step);

/// The step timeline of this process's devices.
class TraceRecorder {
public:
  using Clock = std::chrono::steady_clock;

  /// Records the steps of `program` (which must outlive the recorder) on
  /// `localDevices` devices, in the first `runLimit` runs (0: all).
  TraceRecorder(const Program &program, size_t localDevices, int64_t runLimit);

  /// Called before each run starts its devices: whether this run is
  /// recorded.
  bool beginRun(const RunContext &context);
  /// Restarts the clock unless it was restarted before: under MPI, called
  /// after the first barrier so that the ranks share an origin.
  void alignClock();
  /// Records `step` of the current run on local device `local`; only that
  /// device's thread calls it for `local`.
  void record(size_t local, const Step &step, Clock::time_point start,
              Clock::time_point end, int64_t iteration = -1) {
    events[local].push_back({static_cast<uint32_t>(step.index), currentEval,
                             currentRun, nanoseconds(start), nanoseconds(end),
                             iteration});
  }
  /// The events of local device `local`, in order.
  const std::vector<TraceEvent> &deviceEvents(size_t local) const {
    return events[local];
  }

  /// The Chrome trace JSON of every device: `localIds` are the local
  /// devices' ids. Under `processes` every process must call it and only
  /// rank 0 gets the text (the others get "").
  std::string json(const std::vector<int64_t> &localIds,
                   ProcessGroup *processes) const;

private:
  int64_t nanoseconds(Clock::time_point time) const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(time - origin)
        .count();
  }

  const Program &program;
  int64_t runLimit;
  int64_t runsSeen = 0;
  uint32_t currentEval = 0;
  uint64_t currentRun = 0;
  bool aligned = false;
  Clock::time_point origin;
  std::vector<std::vector<TraceEvent>> events;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_TRACE_H
