//===- Device.cpp - The device and backend interfaces ---------------------===//
//
// The registry of backends built into this runtime.
//
//===----------------------------------------------------------------------===//

#include "runtime/Device.h"

#include "runtime/Error.h"
#include "runtime/cpu/CpuDevice.h"

namespace meshc::runtime {

Device::~Device() = default;
Backend::~Backend() = default;

std::unique_ptr<Backend> createBackend(std::string_view name) {
  if (name == "cpu")
    return std::make_unique<CpuBackend>();
  if (name == "cuda")
    throw RuntimeError("backend 'cuda': meshrun is not built with CUDA "
                       "support yet (available backends: cpu)");
  throw RuntimeError("unknown backend '" + std::string(name) +
                     "' (available backends: cpu)");
}

} // namespace meshc::runtime
