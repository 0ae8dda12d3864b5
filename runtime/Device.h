//===- Device.h - The device and backend interfaces -------------*- C++ -*-===//
//
// A Device is one mesh device as a backend sees it: it owns one arena of the
// program's arena_bytes plus one scratch area, both allocated once before the
// first step (static memory: buffers are offsets, and no step allocates), and
// it runs one step at a time on them. A Backend makes the devices and the
// collectives that connect them. The CPU backend is cpu/; a CUDA backend
// slots in beside it behind the same two interfaces.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_DEVICE_H
#define MESHC_RUNTIME_DEVICE_H

#include "runtime/Collectives.h"
#include "runtime/Program.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace meshc::runtime {

/// What a step may depend on besides its operands: which run this is.
struct RunContext {
  /// The seed of the session (dropout masks).
  uint64_t seed = 0;
  /// The number of training runs before this one (the step counter).
  uint64_t run = 0;
  /// An eval run: dropout keeps every element.
  bool eval = false;
  /// Inside loop steps: per buffer, the bytes the loops moved it by (null
  /// outside loops).
  const int64_t *shifts = nullptr;
  /// Inside loop steps: the iteration of each active loop, outermost first
  /// (a dropout mask in a loop body is drawn anew per iteration).
  const std::vector<int64_t> *iterations = nullptr;
  /// For a collective step: the part to run (a started one that reads its
  /// inputs at its start is run in two: CollectivePart).
  CollectivePart part = CollectivePart::Whole;

  /// The bytes buffer `buffer` is moved by.
  int64_t shift(size_t buffer) const { return shifts ? shifts[buffer] : 0; }
  /// The random stream of dropout mask `name` in this iteration: the name,
  /// then "@i" per active loop ("dropout_0@3").
  std::string streamName(const std::string &name) const;
};

/// One mesh device.
class Device {
public:
  virtual ~Device();

  /// Allocates the arena and the scratch; called once, before anything else.
  virtual void allocate(int64_t arenaBytes, int64_t scratchBytes) = 0;
  /// Copies `bytes` from host memory `src` into the arena at `offset`.
  virtual void write(int64_t offset, const void *src, int64_t bytes) = 0;
  /// Copies `bytes` of the arena at `offset` into host memory `dst`.
  virtual void read(int64_t offset, void *dst, int64_t bytes) const = 0;
  /// Runs `step` (validated by the loader; never a loop, whose body steps
  /// the session runs one by one) on this device. `comm` is the
  /// device's communicator for the step's group when usesGroup(step.op()),
  /// else null; `context` says which run this is. Throws RuntimeError for
  /// data errors (a label out of range).
  virtual void run(const Step &step, Communicator *comm,
                   const RunContext &context) = 0;
  /// Runs `step` as in the first training run with seed 0.
  void run(const Step &step, Communicator *comm) {
    run(step, comm, RunContext());
  }
  /// The bytes of this device's memory that are physically in use: what
  /// meshrun reports against the plan. The CPU counts the pages of its
  /// arena and scratch that steps have touched (the high-water mark, since
  /// nothing is given back); a GPU counts its one allocation.
  virtual int64_t residentBytes() const = 0;
};

/// A kind of device with its collectives.
class Backend {
public:
  virtual ~Backend();

  /// The --backend name.
  virtual std::string name() const = 0;
  /// Makes the device with id `deviceId` of `program`'s mesh.
  virtual std::unique_ptr<Device> createDevice(const Program &program,
                                               int64_t deviceId) = 0;
  /// The collectives between this backend's devices.
  virtual Collectives &collectives() = 0;
  /// True when this backend's devices run steps of kind `op`: every
  /// backend declares its kinds against StepKinds.def.
  virtual bool supports(OpKind op) const = 0;
  /// Told before the first createDevice how many devices this process
  /// runs (its threads), so a backend can share the cores among them.
  virtual void setLocalDevices(int64_t /*count*/) {}
  /// The threads each device of this process runs on (after
  /// setLocalDevices).
  virtual int threadsPerDevice() const { return 1; }
  /// True when a started collective (Step::ticket) may run on a thread of
  /// its own beside the device's next steps (the session's CommLane): the
  /// backend's collectives block their caller and Device::run of a
  /// collective touches nothing another step uses. Otherwise a started
  /// collective runs to completion where it starts (correct, not
  /// overlapped).
  virtual bool overlapsCollectives() const { return false; }
  /// Whether overlapping pays on this machine, so that started collectives
  /// run on lanes by default (meshrun --overlap auto): where communication
  /// does not take the cores the devices compute on.
  virtual bool overlapPays() const { return true; }
  /// Told after setLocalDevices when each local device's collectives run
  /// on a lane thread of their own (the session's CommLane), so that the
  /// backend counts those threads too.
  virtual void setCollectiveLanes() {}
};

/// Refuses `program` on `backend` before anything runs: throws RuntimeError
/// "step N (kind): the B backend does not support this step kind" for the
/// first step (training.sync steps included) whose kind `backend` lacks.
void requireSupportedSteps(const Backend &backend, const Program &program);

/// The backend called `name` ("cpu", "cuda" where registered). Throws
/// RuntimeError for a backend this build lacks ("cuda" in a build without
/// the CUDA backend) or does not know, and the factory's error (no GPU).
std::unique_ptr<Backend> createBackend(std::string_view name);

/// Makes a backend; throws RuntimeError when it cannot (no device).
using BackendFactory = std::unique_ptr<Backend> (*)();
/// Adds (or replaces) the backend called `name`. Backends in their own
/// libraries (cuda/) register themselves, so MeshcRuntime never links them.
void registerBackend(const std::string &name, BackendFactory factory);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_DEVICE_H
