//===- Device.cpp - The device and backend interfaces ---------------------===//
//
// The registry of backends built into this runtime. "cpu" is always there.
// Other backends live in their own libraries (cuda/ is MeshcCuda) and add
// themselves with registerBackend(), so MeshcRuntime never links them: a
// program that links the CUDA library (meshrun in a CUDA build) has "cuda",
// any other program gets the "not built with CUDA support" error.
//
//===----------------------------------------------------------------------===//

#include "runtime/Device.h"

#include "runtime/Error.h"
#include "runtime/cpu/CpuDevice.h"

#include <map>
#include <mutex>

namespace meshc::runtime {

namespace {

/// The registered backends. A function-local static, so registration from
/// another library's static initialiser never sees it unconstructed.
struct Registry {
  std::mutex mutex;
  std::map<std::string, BackendFactory> factories;
};

Registry &registry() {
  static Registry instance;
  return instance;
}

/// "cpu" or "cpu, cuda": the backends this program can make.
std::string availableBackends() {
  std::string names = "cpu";
  for (const auto &[name, factory] : registry().factories)
    if (name != "cpu")
      names += ", " + name;
  return names;
}

} // namespace

std::string RunContext::streamName(const std::string &name) const {
  if (!iterations)
    return name;
  std::string stream = name;
  for (int64_t iteration : *iterations)
    stream += "@" + std::to_string(iteration);
  return stream;
}

Device::~Device() = default;
Backend::~Backend() = default;

void registerBackend(const std::string &name, BackendFactory factory) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().factories[name] = factory;
}

void requireSupportedSteps(const Backend &backend, const Program &program) {
  auto check = [&](const Step &step, const std::string &where) {
    if (!backend.supports(step.op()))
      throw RuntimeError(where + " (" + opName(step.op()) + "): the " +
                         backend.name() +
                         " backend does not support this step kind");
  };
  for (const Step &step : program.steps)
    check(step, "step " + std::to_string(step.index));
  for (const std::vector<Step> &body : program.loopBodies)
    for (const Step &step : body)
      check(step, program.stepLabel(step.index));
  if (program.training && program.training->sync)
    for (const Step &step : program.training->sync->steps)
      check(step, "training.sync");
}

std::unique_ptr<Backend> createBackend(std::string_view name) {
  if (name == "cpu")
    return std::make_unique<CpuBackend>();
  BackendFactory factory = nullptr;
  std::string available;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    auto it = registry().factories.find(std::string(name));
    if (it != registry().factories.end())
      factory = it->second;
    available = availableBackends();
  }
  if (factory)
    return factory();
  if (name == "cuda")
    throw RuntimeError("backend 'cuda': meshrun is not built with CUDA "
                       "support yet (available backends: " +
                       available + ")");
  throw RuntimeError("unknown backend '" + std::string(name) +
                     "' (available backends: " + available + ")");
}

} // namespace meshc::runtime
