//===- MeshHarness.cpp - One-step programs on every device of a mesh ------===//

#include "MeshHarness.h"

#include "runtime/Error.h"
#include "runtime/core/HalfFloat.h"

#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

namespace meshc::runtime::testing {

namespace {

int64_t bytesPerElement(const std::string &dtype) {
  return dtype == "bf16" || dtype == "f16" ? 2 : 4;
}

} // namespace

MeshHarness::MeshHarness(std::string backend,
                         std::vector<std::pair<std::string, int64_t>> axes,
                         std::set<OpKind> *ran)
    : backendName(std::move(backend)), meshAxes(std::move(axes)),
      ranKinds(ran) {
  for (const auto &[name, size] : meshAxes)
    deviceCount *= size;
}

int64_t MeshHarness::coordinate(int64_t device, const std::string &axis) const {
  int64_t inner = 1;
  for (size_t a = meshAxes.size(); a-- > 0;) {
    if (meshAxes[a].first == axis)
      return device / inner % meshAxes[a].second;
    inner *= meshAxes[a].second;
  }
  throw std::logic_error("no mesh axis '" + axis + "'");
}

int64_t MeshHarness::buffer(const std::string &dtype, int64_t elements) {
  Buffer buffer{dtype, elements, arenaBytes, {}};
  int64_t bytes = elements * bytesPerElement(dtype);
  buffer.data.assign(size_t(deviceCount), std::vector<char>(size_t(bytes)));
  arenaBytes += (bytes + 63) / 64 * 64;
  buffers.push_back(std::move(buffer));
  return static_cast<int64_t>(buffers.size()) - 1;
}

void MeshHarness::set(int64_t id, int64_t device,
                      const std::vector<float> &values) {
  Buffer &buffer = buffers[size_t(id)];
  std::vector<char> &bytes = buffer.data[size_t(device)];
  for (size_t i = 0; i < values.size() && int64_t(i) < buffer.elements; ++i) {
    if (buffer.dtype == "f32") {
      std::memcpy(&bytes[4 * i], &values[i], 4);
    } else if (buffer.dtype == "i32") {
      int32_t v = static_cast<int32_t>(values[i]);
      std::memcpy(&bytes[4 * i], &v, 4);
    } else {
      uint16_t v = buffer.dtype == "bf16" ? half::bf16FromF32(values[i])
                                          : half::f16FromF32(values[i]);
      std::memcpy(&bytes[2 * i], &v, 2);
    }
  }
}

std::vector<float> MeshHarness::get(int64_t id, int64_t device) const {
  const Buffer &buffer = buffers[size_t(id)];
  const std::vector<char> &bytes = buffer.data[size_t(device)];
  std::vector<float> values(size_t(buffer.elements));
  for (size_t i = 0; i < values.size(); ++i) {
    if (buffer.dtype == "f32") {
      std::memcpy(&values[i], &bytes[4 * i], 4);
    } else if (buffer.dtype == "i32") {
      int32_t v;
      std::memcpy(&v, &bytes[4 * i], 4);
      values[i] = static_cast<float>(v);
    } else {
      uint16_t v;
      std::memcpy(&v, &bytes[2 * i], 2);
      values[i] =
          buffer.dtype == "bf16" ? half::f32FromBf16(v) : half::f32FromF16(v);
    }
  }
  return values;
}

Program MeshHarness::load(const nlohmann::json &step) const {
  nlohmann::json mesh = nlohmann::json::array(),
                 declared = nlohmann::json::array();
  for (const auto &[name, size] : meshAxes)
    mesh.push_back({{"name", name}, {"size", size}});
  for (size_t id = 0; id < buffers.size(); ++id)
    declared.push_back(
        {{"id", id},
         {"dtype", buffers[id].dtype},
         {"shape", {buffers[id].elements}},
         {"offset", buffers[id].offset},
         {"bytes", buffers[id].elements * bytesPerElement(buffers[id].dtype)}});
  nlohmann::json program = {
      {"format", "meshc-mprog"},
      {"version", 1},
      {"program", "step"},
      {"mesh", mesh},
      {"seed", 1},
      {"arena_bytes", arenaBytes},
      {"buffers", declared},
      {"tensors", nlohmann::json::array()},
      {"steps", step.is_array() ? step : nlohmann::json::array({step})}};
  return parseProgram(program.dump(), "step.mprog");
}

void MeshHarness::run(const nlohmann::json &step) {
  Program program = load(step);
  std::unique_ptr<Backend> backend = createBackend(backendName);
  backend->setLocalDevices(deviceCount);
  std::vector<std::unique_ptr<Device>> devices;
  for (int64_t d = 0; d < deviceCount; ++d) {
    const Program &own = program.on(d);
    devices.push_back(backend->createDevice(own, d));
    devices.back()->allocate(own.arenaBytes, own.scratchBytes);
    for (const Buffer &buffer : buffers)
      devices.back()->write(buffer.offset, buffer.data[size_t(d)].data(),
                            int64_t(buffer.data[size_t(d)].size()));
  }
  if (ranKinds)
    for (const Step &step : program.steps)
      ranKinds->insert(step.op());
  // The communicators of every group the program's steps use.
  std::vector<std::vector<std::unique_ptr<Communicator>>> groups;
  for (const std::vector<std::string> &axes : program.groupAxes)
    groups.push_back(
        backend->collectives().split(partitionMesh(program.mesh, axes)));
  std::vector<std::string> errors(static_cast<size_t>(deviceCount));
  std::vector<std::thread> threads;
  for (int64_t d = 0; d < deviceCount; ++d)
    threads.emplace_back([&, d] {
      try {
        for (const Step &own : program.on(d).steps) {
          std::optional<size_t> group = own.group();
          devices[size_t(d)]->run(own, group ? groups[*group][size_t(d)].get()
                                             : nullptr);
        }
      } catch (const CollectiveAborted &) {
        // Another device failed first; its error is the one to report.
      } catch (const std::exception &error) {
        errors[size_t(d)] = error.what();
        backend->collectives().abort();
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (const std::string &error : errors)
    if (!error.empty())
      throw RuntimeError(error);
  for (int64_t d = 0; d < deviceCount; ++d)
    for (Buffer &buffer : buffers)
      devices[size_t(d)]->read(buffer.offset, buffer.data[size_t(d)].data(),
                               int64_t(buffer.data[size_t(d)].size()));
}

} // namespace meshc::runtime::testing
