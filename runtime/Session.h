//===- Session.h - Running a program on a mesh of devices -------*- C++ -*-===//
//
// A Session binds a loaded Program to a backend: it makes one Device per mesh
// device, allocates each arena and scratch once, creates the communicators
// of every collective group, initialises the parameters (once) and prepares
// each device's block of every input (from .npy files or the synthetic
// generator). runStep() then executes the whole program once on all devices,
// one thread per device, and gather() reassembles a global tensor from the
// device blocks.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_SESSION_H
#define MESHC_RUNTIME_SESSION_H

#include "runtime/Device.h"
#include "runtime/ProcessGroup.h"
#include "runtime/Program.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace meshc::runtime {

/// How to run a program.
struct SessionOptions {
  /// The backend name ("cpu").
  std::string backend = "cpu";
  /// The number of devices; 0 means the mesh's. Anything else must equal it.
  int64_t devices = 0;
  /// Overrides the program's seed when set.
  std::optional<uint64_t> seed;
  /// Input name to .npy file; inputs not listed are synthetic.
  std::map<std::string, std::string> inputFiles;
  /// When set (meshrun under mpirun), this process runs only mesh device
  /// processes->rank(), the group's size must equal the mesh's device count,
  /// and the collectives are the group's (not the backend's). Not owned.
  ProcessGroup *processes = nullptr;
};

/// A global tensor on the host, row-major.
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<std::string> dims;
  std::vector<int64_t> shape;
  /// The elements, 4 bytes each, as `dtype`.
  std::vector<char> data;

  /// The number of elements.
  int64_t elements() const;
  /// Element `i` as a double.
  double at(int64_t i) const;
};

/// A program set up on a mesh of devices.
class Session {
public:
  /// Sets up `program`, which must outlive the session. Throws RuntimeError
  /// for an unknown or unavailable backend, a device count other than the
  /// mesh's, and bad input files.
  Session(const Program &program, const SessionOptions &options);
  ~Session();

  /// The number of devices the program runs on (the mesh's), over all
  /// processes.
  int64_t numDevices() const { return meshDevices; }
  /// The ids of the devices this process runs: all of them, or under a
  /// ProcessGroup only its rank.
  const std::vector<int64_t> &localDevices() const { return localIds; }
  /// The seed parameters and synthetic inputs were generated with.
  uint64_t seed() const { return seedValue; }
  /// The backend's name.
  std::string backendName() const { return backend->name(); }

  /// Writes the inputs, then runs every step once on every device (one
  /// thread each); returns the wall time of the steps in seconds. Throws
  /// RuntimeError naming the step and device when a device fails; the
  /// session is unusable afterwards.
  double runStep();

  /// The global value of `tensor` assembled from the device blocks. Under a
  /// ProcessGroup every process must call it (it gathers to rank 0) and only
  /// rank 0's result holds the values; the others' data is zeros.
  HostTensor gather(const Tensor &tensor) const;

private:
  /// Computes every device's block of input `tensor` (from its .npy file
  /// or the generator) into inputBlocks.
  void prepareInput(const Tensor &tensor, const SessionOptions &options);
  /// Writes every device's block of parameter `tensor`.
  void initializeParam(const Tensor &tensor);

  const Program &program;
  uint64_t seedValue;
  std::unique_ptr<Backend> backend;
  ProcessGroup *processes = nullptr;
  int64_t meshDevices = 0;
  /// The device ids this process runs; devices[i] is device localIds[i].
  std::vector<int64_t> localIds;
  std::vector<std::unique_ptr<Device>> devices;
  /// communicators[group][device id], group indexing Program::groupAxes
  /// (null for devices of other processes).
  std::vector<std::vector<std::unique_ptr<Communicator>>> communicators;
  /// Per input: the tensor and each local device's block.
  std::vector<std::pair<const Tensor *, std::vector<std::vector<char>>>>
      inputBlocks;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_SESSION_H
