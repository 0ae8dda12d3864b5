//===- Session.cpp - Running a program on a mesh of devices ---------------===//
//
// Device setup, input and parameter blocks, the per-step thread fan-out and
// the reassembly of global outputs. When one device fails, the collectives
// are aborted so the others stop instead of waiting for it forever, and the
// first real error is reported.
//
//===----------------------------------------------------------------------===//

#include "runtime/Session.h"

#include "runtime/Error.h"
#include "runtime/Npy.h"
#include "runtime/Random.h"

#include <chrono>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>

namespace meshc::runtime {

namespace {

/// More virtual devices than this in one process is surely a mistake.
constexpr int64_t kMaxDevices = 4096;

int64_t product(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

/// Copies the block at `offset` of shape `blockShape` of a global row-major
/// tensor of shape `globalShape` (4-byte elements) from `global` into
/// `block`, or back when `intoBlock` is false.
void copyBlock(const std::vector<int64_t> &globalShape,
               const std::vector<int64_t> &offset,
               const std::vector<int64_t> &blockShape, char *global,
               char *block, bool intoBlock) {
  size_t rank = blockShape.size();
  int64_t elements = product(blockShape);
  if (elements == 0)
    return;
  if (rank == 0) {
    std::memcpy(intoBlock ? block : global, intoBlock ? global : block, 4);
    return;
  }
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank - 1; d-- > 0;)
    stride[d] = stride[d + 1] * globalShape[d + 1];
  int64_t run = blockShape[rank - 1];
  std::vector<int64_t> index(rank, 0);
  for (int64_t row = 0; row < elements / run; ++row) {
    int64_t at = offset[rank - 1];
    for (size_t d = 0; d + 1 < rank; ++d)
      at += (offset[d] + index[d]) * stride[d];
    char *g = global + at * 4, *b = block + row * run * 4;
    std::memcpy(intoBlock ? b : g, intoBlock ? g : b, run * 4);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < blockShape[d])
        break;
      index[d] = 0;
    }
  }
}

std::string meshDescription(const layout::Mesh &mesh) {
  return mesh.rank() == 0 ? "a single device" : "mesh " + mesh.str();
}

} // namespace

int64_t HostTensor::elements() const {
  return static_cast<int64_t>(data.size() / 4);
}

double HostTensor::at(int64_t i) const {
  if (dtype == DType::F32) {
    float value;
    std::memcpy(&value, data.data() + i * 4, 4);
    return value;
  }
  int32_t value;
  std::memcpy(&value, data.data() + i * 4, 4);
  return value;
}

ProcessGroup::~ProcessGroup() = default;

Session::Session(const Program &program, const SessionOptions &options)
    : program(program), seedValue(options.seed.value_or(program.seed)),
      processes(options.processes), meshDevices(program.mesh.numDevices()) {
  if (options.devices != 0 && options.devices != meshDevices)
    throw RuntimeError("--devices " + std::to_string(options.devices) +
                       " does not match " + program.fileName +
                       ", which is compiled for " +
                       std::to_string(meshDevices) + " devices (" +
                       meshDescription(program.mesh) + ")");
  if (!processes && meshDevices > kMaxDevices)
    throw RuntimeError(program.fileName + " needs " +
                       std::to_string(meshDevices) +
                       " devices; one meshrun process runs at most " +
                       std::to_string(kMaxDevices));
  if (processes && processes->size() != meshDevices)
    throw RuntimeError(
        std::to_string(processes->size()) + " " + processes->transport() +
        " ranks do not match " + program.fileName + ", which is compiled for " +
        std::to_string(meshDevices) + " devices (" +
        meshDescription(program.mesh) + "); run one rank per device (mpirun " +
        "-np " + std::to_string(meshDevices) + ")");
  backend = createBackend(options.backend);
  if (processes)
    localIds.push_back(processes->rank());
  else
    for (int64_t d = 0; d < meshDevices; ++d)
      localIds.push_back(d);
  for (int64_t d : localIds) {
    devices.push_back(backend->createDevice(program, d));
    devices.back()->allocate(program.arenaBytes, program.scratchBytes);
  }
  Collectives &collectives =
      processes ? processes->collectives() : backend->collectives();
  for (const std::vector<std::string> &axes : program.groupAxes)
    communicators.push_back(
        collectives.split(partitionMesh(program.mesh, axes)));

  for (const auto &[name, path] : options.inputFiles)
    if (!program.findTensor(Role::Input, name)) {
      std::string inputs;
      for (const Tensor &tensor : program.tensors)
        if (tensor.role == Role::Input)
          inputs += (inputs.empty() ? "'" : ", '") + tensor.name + "'";
      throw RuntimeError("--input " + name + "=" + path + ": " +
                         program.fileName + " has no input '" + name +
                         "' (inputs: " + (inputs.empty() ? "none" : inputs) +
                         ")");
    }
  for (const Tensor &tensor : program.tensors) {
    if (tensor.role == Role::Param)
      initializeParam(tensor);
    else if (tensor.role == Role::Input)
      prepareInput(tensor, options);
  }
}

Session::~Session() = default;

void Session::initializeParam(const Tensor &tensor) {
  std::vector<int64_t> blockShape =
      tensor.layout.sliceShape(tensor.dims, program.mesh);
  std::vector<float> block(product(blockShape));
  for (size_t i = 0; i < localIds.size(); ++i) {
    fillBlock(tensor.init, seedValue, tensor.name, tensor.globalShape(),
              tensor.layout.sliceOffset(tensor.dims, program.mesh, localIds[i]),
              blockShape, block.data());
    devices[i]->write(program.buffers[tensor.buffer].offset, block.data(),
                      block.size() * 4);
  }
}

void Session::prepareInput(const Tensor &tensor,
                           const SessionOptions &options) {
  std::vector<int64_t> globalShape = tensor.globalShape();
  std::vector<int64_t> blockShape =
      tensor.layout.sliceShape(tensor.dims, program.mesh);
  std::vector<std::vector<char>> blocks(
      localIds.size(), std::vector<char>(product(blockShape) * 4));
  auto file = options.inputFiles.find(tensor.name);
  if (file != options.inputFiles.end()) {
    NpyArray array = readNpy(file->second);
    if (array.dtype != tensor.dtype)
      throw RuntimeError(file->second + ": .npy dtype " +
                         dtypeName(array.dtype) + " does not match input '" +
                         tensor.name + "' (" + dtypeName(tensor.dtype) + ")");
    if (array.shape != globalShape)
      throw RuntimeError(file->second + ": .npy shape " +
                         npyShapeStr(array.shape) + " does not match input '" +
                         tensor.name + "' shape " + npyShapeStr(globalShape));
    for (size_t d = 0; d < localIds.size(); ++d)
      copyBlock(
          globalShape,
          tensor.layout.sliceOffset(tensor.dims, program.mesh, localIds[d]),
          blockShape, array.data.data(), blocks[d].data(), true);
  } else if (tensor.dtype == DType::F32) {
    InitSpec standardNormal{InitSpec::Kind::Normal, 0.0, 1.0};
    for (size_t d = 0; d < localIds.size(); ++d)
      fillBlock(
          standardNormal, seedValue, tensor.name, globalShape,
          tensor.layout.sliceOffset(tensor.dims, program.mesh, localIds[d]),
          blockShape, reinterpret_cast<float *>(blocks[d].data()));
  } else {
    if (!tensor.range)
      throw RuntimeError("input '" + tensor.name + "' is i32 and has no " +
                         "\"range\" for synthetic values; give --input " +
                         tensor.name + "=FILE.npy");
    for (size_t d = 0; d < localIds.size(); ++d)
      fillBlockInt(
          tensor.range->first, tensor.range->second, seedValue, tensor.name,
          globalShape,
          tensor.layout.sliceOffset(tensor.dims, program.mesh, localIds[d]),
          blockShape, reinterpret_cast<int32_t *>(blocks[d].data()));
  }
  inputBlocks.emplace_back(&tensor, std::move(blocks));
}

double Session::runStep() {
  for (const auto &[tensor, blocks] : inputBlocks)
    for (size_t d = 0; d < localIds.size(); ++d)
      devices[d]->write(program.buffers[tensor->buffer].offset,
                        blocks[d].data(),
                        static_cast<int64_t>(blocks[d].size()));

  std::mutex errorMutex;
  std::string firstError;
  // `d` indexes the local devices; localIds[d] is the device id.
  auto runDevice = [&](size_t d) {
    const Step *current = nullptr;
    int64_t id = localIds[d];
    try {
      for (const Step &step : program.steps) {
        current = &step;
        Communicator *comm =
            usesGroup(step.op) ? communicators[step.group][id].get() : nullptr;
        devices[d]->run(step, comm);
      }
    } catch (const CollectiveAborted &) {
      // Another device failed first; its error is the one reported.
    } catch (const std::exception &error) {
      std::lock_guard<std::mutex> lock(errorMutex);
      if (firstError.empty())
        firstError = "step " + std::to_string(current->index) + " (" +
                     opName(current->op) + ") on device " + std::to_string(id) +
                     ": " + error.what();
      backend->collectives().abort();
    }
  };

  if (processes) {
    // One device in this process, run on this thread; the barriers make the
    // time that of the slowest rank. A failing rank cannot wake the others
    // (MPI collectives cannot be interrupted): its caller ends the job.
    processes->barrier();
    auto start = std::chrono::steady_clock::now();
    runDevice(0);
    if (!firstError.empty())
      throw RuntimeError(firstError);
    processes->barrier();
    std::chrono::duration<double> elapsed =
        std::chrono::steady_clock::now() - start;
    return elapsed.count();
  }

  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  try {
    for (size_t d = 0; d < localIds.size(); ++d)
      threads.emplace_back(runDevice, d);
  } catch (const std::system_error &error) {
    // The started devices may wait for the missing ones in a collective.
    backend->collectives().abort();
    std::lock_guard<std::mutex> lock(errorMutex);
    if (firstError.empty())
      firstError = "cannot start the thread of device " +
                   std::to_string(threads.size()) + ": " + error.what();
  }
  for (std::thread &thread : threads)
    thread.join();
  std::chrono::duration<double> elapsed =
      std::chrono::steady_clock::now() - start;
  if (!firstError.empty())
    throw RuntimeError(firstError);
  return elapsed.count();
}

HostTensor Session::gather(const Tensor &tensor) const {
  HostTensor host;
  host.dtype = tensor.dtype;
  host.shape = tensor.globalShape();
  for (const layout::Dim &dim : tensor.dims)
    host.dims.push_back(dim.name);
  host.data.resize(product(host.shape) * 4);
  std::vector<int64_t> blockShape =
      tensor.layout.sliceShape(tensor.dims, program.mesh);
  std::vector<char> block(product(blockShape) * 4);
  if (processes) {
    devices[0]->read(program.buffers[tensor.buffer].offset, block.data(),
                     static_cast<int64_t>(block.size()));
    std::vector<char> all = processes->gatherToRoot(
        block.data(), static_cast<int64_t>(block.size()));
    if (processes->rank() == 0)
      for (int64_t d = 0; d < meshDevices; ++d)
        copyBlock(host.shape,
                  tensor.layout.sliceOffset(tensor.dims, program.mesh, d),
                  blockShape, host.data.data(),
                  all.data() + d * static_cast<int64_t>(block.size()), false);
    return host;
  }
  for (size_t d = 0; d < localIds.size(); ++d) {
    devices[d]->read(program.buffers[tensor.buffer].offset, block.data(),
                     static_cast<int64_t>(block.size()));
    copyBlock(host.shape,
              tensor.layout.sliceOffset(tensor.dims, program.mesh, localIds[d]),
              blockShape, host.data.data(), block.data(), false);
  }
  return host;
}

} // namespace meshc::runtime
