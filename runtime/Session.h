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

  /// The number of devices (threads) the program runs on.
  int64_t numDevices() const { return static_cast<int64_t>(devices.size()); }
  /// The seed parameters and synthetic inputs were generated with.
  uint64_t seed() const { return seedValue; }
  /// The backend's name.
  std::string backendName() const { return backend->name(); }

  /// Writes the inputs, then runs every step once on every device (one
  /// thread each); returns the wall time of the steps in seconds. Throws
  /// RuntimeError naming the step and device when a device fails; the
  /// session is unusable afterwards.
  double runStep();

  /// The global value of `tensor` assembled from the device blocks.
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
  std::vector<std::unique_ptr<Device>> devices;
  /// communicators[group][device], group indexing Program::groupAxes.
  std::vector<std::vector<std::unique_ptr<Communicator>>> communicators;
  /// Per input: the tensor and each device's block.
  std::vector<std::pair<const Tensor *, std::vector<std::vector<char>>>>
      inputBlocks;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_SESSION_H
