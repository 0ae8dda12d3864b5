//===- Session.cpp - Running a program on a mesh of devices ---------------===//
//
// Device setup, input and parameter blocks, the per-step thread fan-out and
// the reassembly of global outputs. When one device fails, the collectives
// are aborted so the others stop instead of waiting for it forever, and the
// first real error is reported.
//
//===----------------------------------------------------------------------===//

#include "runtime/Session.h"

#include "runtime/CommLane.h"
#include "runtime/DeviceThreads.h"
#include "runtime/StartedCollectives.h"

#include "runtime/Error.h"
#include "runtime/Npy.h"
#include "runtime/core/Random.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <thread>

namespace meshc::runtime {

namespace {

/// More virtual devices than this in one process is surely a mistake.
constexpr int64_t kMaxDevices = 4096;

/// "'x', 'labels'", the inputs of `program`.
std::string inputNames(const Program &program) {
  std::string inputs;
  for (const Tensor &tensor : program.tensors)
    if (tensor.role == Role::Input)
      inputs += (inputs.empty() ? "'" : ", '") + tensor.name + "'";
  return inputs.empty() ? "none" : inputs;
}

/// Fails unless every name of `files` and `arrays` is an input of
/// `program`, and none is in both.
void checkInputNames(
    const Program &program, const std::map<std::string, std::string> &files,
    const std::map<std::string, std::shared_ptr<const NpyArray>> &arrays,
    const std::string &flag) {
  for (const auto &[name, path] : files)
    if (!program.findTensor(Role::Input, name))
      throw RuntimeError(flag + " " + name + "=" + path + ": " +
                         program.fileName + " has no input '" + name +
                         "' (inputs: " + inputNames(program) + ")");
  for (const auto &[name, array] : arrays) {
    if (!program.findTensor(Role::Input, name))
      throw RuntimeError(std::string(flag == "--input" ? "" : "eval ") +
                         "input array '" + name + "': " + program.fileName +
                         " has no input '" + name +
                         "' (inputs: " + inputNames(program) + ")");
    if (files.count(name))
      throw RuntimeError(flag + " " + name + "=" + files.at(name) +
                         " and an array both give input '" + name + "'");
  }
}

/// Where input `name` comes from in messages: "--input x=FILE" (`flag`
/// with the file) or "input array 'x'".
std::string sourceName(const std::string &flag, const std::string &name,
                       const std::map<std::string, std::string> &files) {
  auto file = files.find(name);
  if (file != files.end())
    return flag + " " + name + "=" + file->second;
  return std::string(flag == "--input" ? "" : "eval ") + "input array '" +
         name + "'";
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
  requireSupportedSteps(*backend, program);
  if (processes)
    localIds.push_back(processes->rank());
  else
    for (int64_t d = 0; d < meshDevices; ++d)
      localIds.push_back(d);
  backend->setLocalDevices(static_cast<int64_t>(localIds.size()));
  // Started collectives run on a lane per device where the backend (and
  // MPI) allows and --overlap asks (auto: where it pays); elsewhere they run
  // to completion where they start.
  bool wanted = options.overlap == Overlap::On ||
                (options.overlap == Overlap::Auto && backend->overlapPays());
  if (wanted && startsCollectives(program) && backend->overlapsCollectives() &&
      (!processes || processes->collectivesOnAnyThread())) {
    for (size_t d = 0; d < localIds.size(); ++d)
      lanes.push_back(std::make_unique<CommLane>());
    backend->setCollectiveLanes();
  }
  for (int64_t d : localIds) {
    devices.push_back(backend->createDevice(program.on(d), d));
    devices.back()->allocate(program.arenaBytes, program.scratchBytes);
  }
  // Under a ProcessGroup the one device runs on the caller's thread.
  if (!processes)
    deviceThreads = std::make_unique<DeviceThreads>(localIds.size());
  Collectives &collectives =
      processes ? processes->collectives() : backend->collectives();
  for (const std::vector<std::string> &axes : program.groupAxes)
    communicators.push_back(
        collectives.split(partitionMesh(program.mesh, axes)));

  for (const Tensor &tensor : program.tensors) {
    if (isAccumulator(program, tensor)) {
      // Zero, whatever --init-params holds.
      for (size_t d = 0; d < localIds.size(); ++d) {
        std::vector<char> zeros(
            size_t(product(tensor.blockShape(program.mesh, localIds[d])) * 4));
        writeBlock(tensor, d, zeros.data());
      }
    } else if (tensor.role == Role::Param) {
      initializeParam(tensor, options.initParamsDir);
    }
  }
  if (!options.bindInputsLater)
    bindInputs(options);

  for (const Step &step : program.steps) {
    trainSteps.push_back(&step);
    if (step.phase == Phase::Forward)
      evalSteps.push_back(&step);
  }
  for (const Step &step : program.steps)
    (step.phase == Phase::Update ? updateSteps : microbatchSteps)
        .push_back(&step);
  trainSyncSteps = trainSteps;
  if (program.training && program.training->sync)
    for (const Step &step : program.training->sync->steps)
      trainSyncSteps.push_back(&step);
  if (options.trace)
    tracer = std::make_unique<TraceRecorder>(program, localIds.size(),
                                             options.traceRuns);
}

void Session::bindInputs(const SessionOptions &options) {
  inputsBound = false;
  inputs.clear();
  evalInputs.clear();
  order.reset();
  trainExamples = evalSetExamples = batch = tokens = 0;
  checkInputNames(program, options.inputFiles, options.inputArrays, "--input");
  checkInputNames(program, options.evalInputFiles, options.evalInputArrays,
                  "--eval-input");
  for (const Tensor &tensor : program.tensors) {
    if (tensor.role != Role::Input)
      continue;
    std::shared_ptr<const NpyArray> array;
    std::string path;
    if (auto file = options.inputFiles.find(tensor.name);
        file != options.inputFiles.end())
      array = std::make_shared<NpyArray>(readNpy(path = file->second));
    else if (auto given = options.inputArrays.find(tensor.name);
             given != options.inputArrays.end())
      array = given->second;
    inputs.push_back(prepareInput(
        tensor, array, path,
        array ? sourceName("--input", tensor.name, options.inputFiles) : "",
        false));
  }
  // All datasets read the same examples in each run: one N, one order.
  const InputFeed *first = nullptr;
  for (const InputFeed &feed : inputs) {
    if (!feed.rows)
      continue;
    int64_t examples = feed.rows->shape[0];
    if (first && examples != trainExamples)
      throw RuntimeError(feed.source + " has " + std::to_string(examples) +
                         " examples but " + first->source + " has " +
                         std::to_string(trainExamples) +
                         "; dataset inputs need the same number of examples");
    if (!first) {
      first = &feed;
      trainExamples = examples;
      batch = feed.tensor->dims[0].size;
    }
  }
  if (!first)
    for (const InputFeed &feed : inputs)
      if (!feed.tensor->dims.empty()) {
        first = &feed;
        batch = feed.tensor->dims[0].size;
        break;
      }
  // Token ids: an i32 input of rank >= 2 ([batch, seq, ...]).
  if (first && first->tensor->dtype == DType::I32 &&
      first->tensor->dims.size() >= 2) {
    tokens = 1;
    for (size_t d = 1; d < first->tensor->dims.size(); ++d)
      tokens *= first->tensor->dims[d].size;
  }
  if (first)
    order.emplace(seedValue, trainExamples, options.shuffle);
  checkEvalSet(options);
  inputsBound = true;
}

std::string paramFileName(const std::string &name) {
  std::string file;
  for (char c : name)
    file += c == '/' ? std::string("__") : std::string(1, c);
  return file + ".npy";
}

Session::~Session() = default;

void Session::initializeParam(const Tensor &tensor,
                              const std::string &initDir) {
  std::optional<NpyArray> values;
  if (!initDir.empty()) {
    std::string path =
        (std::filesystem::path(initDir) / paramFileName(tensor.name)).string();
    if (!std::filesystem::exists(path))
      throw RuntimeError("--init-params: no file '" + path + "' for param '" +
                         tensor.name + "'");
    values = readNpy(path);
    if (values->dtype != DType::F32)
      throw RuntimeError(path + ": .npy dtype " + dtypeName(values->dtype) +
                         " does not match param '" + tensor.name + "' (f32)");
    // In the model's dims: the same elements in the same order.
    if (values->shape != tensor.declaredShape())
      throw RuntimeError(path + ": .npy shape " + npyShapeStr(values->shape) +
                         " does not match param '" + tensor.name + "' shape " +
                         npyShapeStr(tensor.declaredShape()));
    values->shape = tensor.globalShape();
  }
  for (size_t i = 0; i < localIds.size(); ++i) {
    std::vector<int64_t> blockShape =
        tensor.blockShape(program.mesh, localIds[i]);
    std::vector<int64_t> offset = tensor.blockOffset(program.mesh, localIds[i]);
    std::vector<float> block(product(blockShape));
    if (values)
      copyBlock(values->shape, offset, blockShape,
                const_cast<char *>(values->bytes()),
                reinterpret_cast<char *>(block.data()), true);
    else
      fillBlock(tensor.init, seedValue, tensor.name, tensor.globalShape(),
                offset, blockShape, block.data());
    devices[i]->write(program.buffers[tensor.buffer].offset, block.data(),
                      block.size() * 4);
  }
}

Session::InputFeed Session::prepareInput(const Tensor &tensor,
                                         std::shared_ptr<const NpyArray> given,
                                         const std::string &file,
                                         const std::string &source, bool eval) {
  InputFeed feed;
  feed.tensor = &tensor;
  feed.file = file;
  feed.source = source;
  // "x.npy: .npy shape ...", "input array 'x': shape ...".
  const std::string what = file.empty() ? source + ":" : file + ": .npy";
  std::vector<int64_t> globalShape = tensor.globalShape();
  for (int64_t id : localIds) {
    feed.blockShapes.push_back(tensor.blockShape(program.mesh, id));
    feed.blockOffsets.push_back(tensor.blockOffset(program.mesh, id));
    feed.blocks.emplace_back(product(feed.blockShapes.back()) * 4);
  }
  if (given) {
    const NpyArray &array = *given;
    if (array.dtype != tensor.dtype)
      throw RuntimeError(what + " dtype " + dtypeName(array.dtype) +
                         " does not match input '" + tensor.name + "' (" +
                         dtypeName(tensor.dtype) + ")");
    // [N, rest...] for an input [B, rest...] is a set of N examples.
    bool examples = !globalShape.empty() &&
                    array.shape.size() == globalShape.size() &&
                    !array.shape.empty() && array.shape[0] >= 1 &&
                    std::equal(array.shape.begin() + 1, array.shape.end(),
                               globalShape.begin() + 1);
    if (eval || array.shape != globalShape) {
      if (!examples)
        throw RuntimeError(what + " shape " + npyShapeStr(array.shape) +
                           " does not match input '" + tensor.name +
                           "' shape " + npyShapeStr(globalShape));
      feed.rows = std::move(given);
      return feed;
    }
    for (size_t d = 0; d < localIds.size(); ++d)
      copyBlock(globalShape, feed.blockOffsets[d], feed.blockShapes[d],
                const_cast<char *>(array.bytes()), feed.blocks[d].data(), true);
  } else if (tensor.dtype == DType::F32) {
    InitSpec standardNormal{InitSpec::Kind::Normal, 0.0, 1.0};
    for (size_t d = 0; d < localIds.size(); ++d)
      fillBlock(standardNormal, seedValue, tensor.name, globalShape,
                feed.blockOffsets[d], feed.blockShapes[d],
                reinterpret_cast<float *>(feed.blocks[d].data()));
  } else {
    if (!tensor.range)
      throw RuntimeError("input '" + tensor.name + "' is i32 and has no " +
                         "\"range\" for synthetic values; give --input " +
                         tensor.name + "=FILE.npy");
    for (size_t d = 0; d < localIds.size(); ++d)
      fillBlockInt(tensor.range->first, tensor.range->second, seedValue,
                   tensor.name, globalShape, feed.blockOffsets[d],
                   feed.blockShapes[d],
                   reinterpret_cast<int32_t *>(feed.blocks[d].data()));
  }
  return feed;
}

void Session::checkEvalSet(const SessionOptions &options) {
  if (options.evalInputFiles.empty() && options.evalInputArrays.empty())
    return;
  for (const InputFeed &feed : inputs) {
    const std::string &name = feed.tensor->name;
    if (feed.source.empty() || options.evalInputFiles.count(name) ||
        options.evalInputArrays.count(name))
      continue;
    throw RuntimeError(
        feed.file.empty()
            ? "eval inputs: input '" + name +
                  "' is an array in training but has no eval array"
            : "--eval-input: input '" + name + "' is read from " + feed.file +
                  " in training but has no eval file; give --eval-input " +
                  name + "=FILE.npy");
  }
  const InputFeed *first = nullptr;
  evalInputs.reserve(inputs.size()); // `first` points into it
  for (const InputFeed &train : inputs) {
    const std::string &name = train.tensor->name;
    std::shared_ptr<const NpyArray> array;
    std::string path;
    if (auto file = options.evalInputFiles.find(name);
        file != options.evalInputFiles.end())
      array = std::make_shared<NpyArray>(readNpy(path = file->second));
    else if (auto given = options.evalInputArrays.find(name);
             given != options.evalInputArrays.end())
      array = given->second;
    else
      continue;
    evalInputs.push_back(prepareInput(
        *train.tensor, array, path,
        sourceName("--eval-input", name, options.evalInputFiles), true));
    const InputFeed &feed = evalInputs.back();
    int64_t examples = feed.rows->shape[0], rows = feed.tensor->dims[0].size;
    if (first && examples != evalSetExamples)
      throw RuntimeError(feed.source + " has " + std::to_string(examples) +
                         " examples but " + first->source + " has " +
                         std::to_string(evalSetExamples) +
                         "; eval inputs need the same number of examples");
    if (examples < rows)
      throw RuntimeError(feed.source + " has " + std::to_string(examples) +
                         " examples, fewer than one batch of " +
                         std::to_string(rows));
    if (!first) {
      first = &feed;
      evalSetExamples = examples;
    }
  }
}

void Session::requireInputs() const {
  // The collectives were aborted and the devices stopped mid-program.
  if (!failedRun.empty())
    throw RuntimeError("a run of " + program.fileName + " failed before (" +
                       failedRun +
                       "); the session cannot run again: set up a new one "
                       "(and restore a checkpoint to go on)");
  if (!inputsBound)
    throw RuntimeError("the inputs of " + program.fileName +
                       " are not bound: bind them (Session::bindInputs) "
                       "before a run, again after a failed binding");
}

int64_t Session::evalBatches() const {
  int64_t batches = 0;
  for (const InputFeed &feed : evalInputs) {
    int64_t count = evalSetExamples / feed.tensor->dims[0].size;
    batches = batches == 0 ? count : std::min(batches, count);
  }
  return batches;
}

template <typename RowOf>
void Session::writeFeed(InputFeed &feed, RowOf rowOf) {
  for (size_t d = 0; d < localIds.size(); ++d) {
    if (feed.rows)
      copyBatchBlock(*feed.rows, rowOf, feed.blockOffsets[d],
                     feed.blockShapes[d], feed.blocks[d].data());
    devices[d]->write(program.buffers[feed.tensor->buffer].offset,
                      feed.blocks[d].data(),
                      static_cast<int64_t>(feed.blocks[d].size()));
  }
}

double Session::runStep(RunMode mode) {
  requireInputs();
  if (mode == RunMode::Train && program.training &&
      program.training->microbatches)
    return runMicrobatches(*program.training->microbatches);
  for (InputFeed &feed : inputs) {
    // Run s reads global examples s*B .. s*B+B-1 (only datasets use them).
    uint64_t first = feed.rows ? runCount * feed.tensor->dims[0].size : 0;
    writeFeed(feed, [&](int64_t row) { return order->row(first + row); });
  }
  RunContext context{seedValue, runCount, mode == RunMode::Eval};
  if (mode == RunMode::Eval)
    return runSteps(evalSteps, context);
  ++runCount;
  const SyncSpec *sync = program.training && program.training->sync
                             ? &*program.training->sync
                             : nullptr;
  bool syncing = sync && runCount % static_cast<uint64_t>(sync->every) == 0;
  return runSteps(syncing ? trainSyncSteps : trainSteps, context);
}

double Session::runMicrobatches(const MicrobatchSpec &micro) {
  auto count = static_cast<uint64_t>(micro.count);
  std::vector<const Tensor *> outputs;
  for (const Tensor &tensor : program.tensors)
    if (tensor.role == Role::Output)
      outputs.push_back(&tensor);
  std::vector<double> sums(outputs.size(), 0.0);
  double seconds = 0;
  for (uint64_t k = 0; k < count; ++k) {
    // Microbatch k of training run s is run s*count + k of the program:
    // its examples, dropout masks and trace.
    uint64_t run = runCount * count + k;
    for (InputFeed &feed : inputs) {
      uint64_t first = feed.rows ? run * feed.tensor->dims[0].size : 0;
      writeFeed(feed, [&](int64_t row) { return order->row(first + row); });
    }
    seconds += runSteps(microbatchSteps, {seedValue, run, false});
    // Outputs are replicated scalars (the loader checks): every device
    // holds the value, so each process reads its own.
    for (size_t o = 0; o < outputs.size(); ++o) {
      float value = 0;
      readBlock(*outputs[o], 0, &value);
      sums[o] += value;
    }
  }
  seconds +=
      runSteps(updateSteps, {seedValue, runCount * count + count - 1, false});
  ++runCount;
  for (size_t d = 0; d < devices.size(); ++d) {
    const Program &own = program.on(localIds[d]);
    for (size_t buffer : micro.accumulators) {
      const Buffer &zeroed = own.buffers[buffer];
      std::vector<char> zeros(static_cast<size_t>(zeroed.bytes), 0);
      devices[d]->write(zeroed.offset, zeros.data(), zeroed.bytes);
    }
    for (size_t o = 0; o < outputs.size(); ++o) {
      auto mean = static_cast<float>(sums[o] / static_cast<double>(count));
      writeBlock(*outputs[o], d, &mean);
    }
  }
  return seconds;
}

double Session::runEvalBatch(int64_t batchIndex) {
  requireInputs();
  if (batchIndex < 0 || batchIndex >= evalBatches())
    throw RuntimeError("eval batch " + std::to_string(batchIndex) +
                       " is outside [0, " + std::to_string(evalBatches()) +
                       ")");
  for (InputFeed &feed : inputs) {
    bool fromEvalSet = false;
    for (const InputFeed &eval : evalInputs)
      fromEvalSet = fromEvalSet || eval.tensor == feed.tensor;
    if (!fromEvalSet)
      writeFeed(feed, [](int64_t row) { return row; });
  }
  for (InputFeed &feed : evalInputs) {
    int64_t first = batchIndex * feed.tensor->dims[0].size;
    writeFeed(feed, [&](int64_t row) { return first + row; });
  }
  return runSteps(evalSteps, {seedValue, runCount, true});
}

void Session::runLoop(const Step &loop, const Program &own,
                      std::vector<int64_t> &shifts,
                      std::vector<int64_t> &iterations, RunContext &context,
                      const std::function<void(const Step &)> &run) const {
  const LoopAttrs &attrs = loop.as<LoopAttrs>();
  if (shifts.empty())
    shifts.assign(own.buffers.size(), 0);
  std::vector<int64_t> base;
  for (const StackedBuffer &stacked : attrs.stacked)
    base.push_back(shifts[stacked.buffer]);
  context.shifts = shifts.data();
  context.iterations = &iterations;
  iterations.push_back(0);
  auto carriedWait = [](const Step &step) {
    return step.op() == OpKind::Wait && step.as<WaitAttrs>().carried;
  };
  for (int64_t k = 0; k < attrs.count; ++k) {
    int64_t i = attrs.reverse ? attrs.count - 1 - k : k;
    iterations.back() = i;
    for (size_t s = 0; s < attrs.stacked.size(); ++s)
      shifts[attrs.stacked[s].buffer] = base[s] + i * attrs.stacked[s].stride;
    for (const Step &step : own.bodyOf(loop))
      // A carried wait completes the iteration before's collectives: the
      // first iteration has none.
      if (k > 0 || !carriedWait(step))
        run(step);
  }
  // The last iteration's carried collectives complete with the loop.
  for (const Step &step : own.bodyOf(loop))
    if (carriedWait(step))
      run(step);
  iterations.pop_back();
  for (size_t s = 0; s < attrs.stacked.size(); ++s)
    shifts[attrs.stacked[s].buffer] = base[s];
}

void Session::runOnLane(CommLane &lane, Device &device, const Step &step,
                        Communicator *comm, const RunContext &context) const {
  // The lane may run it after the loops have moved on: it keeps its own
  // copy of where they are.
  std::vector<int64_t> shifts;
  if (context.shifts)
    shifts.assign(context.shifts, context.shifts + program.buffers.size());
  std::vector<int64_t> iterations;
  if (context.iterations)
    iterations = *context.iterations;
  // A started collective that reads its inputs at its start copies them
  // into its scratch here, on the device's thread: the steps after the
  // start may write them (readsInputsAtStart).
  bool packHere = step.ticket >= 0 && readsInputsAtStart(step.op());
  if (packHere) {
    RunContext pack = context;
    pack.part = CollectivePart::Pack;
    device.run(step, comm, pack);
  }
  auto work = [&device, &step, comm, context, packHere,
               shifts = std::move(shifts),
               iterations = std::move(iterations)]() mutable {
    RunContext own = context;
    own.shifts = own.shifts ? shifts.data() : nullptr;
    own.iterations = own.iterations ? &iterations : nullptr;
    own.part = packHere ? CollectivePart::Rest : CollectivePart::Whole;
    device.run(step, comm, own);
  };
  if (step.ticket >= 0)
    lane.submit(step.ticket, std::move(work));
  else
    lane.run(std::move(work));
}

double Session::runSteps(const std::vector<const Step *> &steps,
                         const RunContext &context) {
  std::mutex errorMutex;
  std::string firstError;
  bool tracing = tracer && tracer->beginRun(context);
  // `d` indexes the local devices; localIds[d] is the device id.
  auto runDevice = [&](size_t d) {
    const Step *current = nullptr;
    int64_t id = localIds[d];
    // Under device weights each device runs its own sizes of the steps.
    const Program &own = program.on(id);
    // Inside loops: where each buffer has moved, and each loop's iteration.
    std::vector<int64_t> shifts;
    std::vector<int64_t> iterations;
    RunContext inLoop = context;
    // Traced steps follow each other: a step starts when the one before
    // it ended, so one clock read per step suffices.
    TraceRecorder::Clock::time_point stepStart;
    if (tracing)
      stepStart = TraceRecorder::Clock::now();
    std::function<void(const Step &)> run = [&](const Step &step) {
      current = &step;
      if (step.op() == OpKind::Loop) {
        runLoop(step, own, shifts, iterations, inLoop, run);
        return;
      }
      std::optional<size_t> group = step.group();
      Communicator *comm = group ? communicators[*group][id].get() : nullptr;
      const RunContext &stepContext = iterations.empty() ? context : inLoop;
      if (!lanes.empty() && step.op() == OpKind::Wait) {
        for (int64_t ticket : step.as<WaitAttrs>().tickets)
          lanes[d]->wait(ticket);
      } else if (!lanes.empty() && communicates(step.op())) {
        runOnLane(*lanes[d], *devices[d], step, comm, stepContext);
      } else {
        devices[d]->run(step, comm, stepContext);
      }
      if (tracing) {
        auto end = TraceRecorder::Clock::now();
        tracer->record(d, step, stepStart, end,
                       iterations.empty() ? -1 : iterations.back());
        stepStart = end;
      }
    };
    // The run's first error, named by its step and device; the other
    // devices' collectives are aborted.
    auto fail = [&](const std::string &message) {
      {
        std::lock_guard<std::mutex> lock(errorMutex);
        if (firstError.empty()) {
          std::string where = program.stepLabel(current->index);
          if (!iterations.empty())
            where += " in iteration " + std::to_string(iterations.back());
          firstError = where + " (" + opName(current->op()) + ") on device " +
                       std::to_string(id) + ": " + message;
        }
      }
      backend->collectives().abort();
      // The lane's collectives end (aborted) before the run does.
      if (!lanes.empty())
        lanes[d]->drain();
    };
    try {
      for (const Step *shared : steps)
        run(&own == &program ? *shared : own.step(shared->index));
    } catch (const CollectiveAborted &) {
      // Another device failed first; its error is the one reported.
      if (!lanes.empty())
        lanes[d]->drain();
    } catch (const std::exception &error) {
      fail(error.what());
    } catch (...) {
      // Not ours (a library's own type): still this run's error, never an
      // escape that leaves the other devices waiting in a collective.
      fail("an exception that is not a std::exception");
    }
  };

  if (processes) {
    // One device in this process, run on this thread; the barriers make the
    // time that of the slowest rank. A failing rank cannot wake the others
    // (MPI collectives cannot be interrupted): its caller ends the job.
    processes->barrier();
    if (tracing)
      tracer->alignClock();
    auto start = std::chrono::steady_clock::now();
    runDevice(0);
    if (!firstError.empty())
      throw RuntimeError(failedRun = firstError);
    processes->barrier();
    std::chrono::duration<double> elapsed =
        std::chrono::steady_clock::now() - start;
    return elapsed.count();
  }

  auto start = std::chrono::steady_clock::now();
  deviceThreads->run(runDevice);
  std::chrono::duration<double> elapsed =
      std::chrono::steady_clock::now() - start;
  if (!firstError.empty())
    throw RuntimeError(failedRun = firstError);
  return elapsed.count();
}

int64_t Session::residentBytes(size_t local) const {
  return devices.at(local)->residentBytes();
}

void Session::readBlock(const Tensor &tensor, size_t local, void *dst) const {
  devices[local]->read(
      program.buffers[tensor.buffer].offset, dst,
      product(tensor.blockShape(program.mesh, localIds[local])) * 4);
}

void Session::writeBlock(const Tensor &tensor, size_t local, const void *src) {
  devices[local]->write(
      program.buffers[tensor.buffer].offset, src,
      product(tensor.blockShape(program.mesh, localIds[local])) * 4);
}

std::string Session::traceJson() const {
  return tracer ? tracer->json(localIds, processes) : std::string();
}

namespace {

/// `host`, gathered in `tensor`'s dims, in the dims the model declares (the
/// same bytes).
void declare(const Tensor &tensor, HostTensor &host) {
  host.shape = tensor.declaredShape();
  host.dims.clear();
  for (const layout::Dim &dim : tensor.declaredDims())
    host.dims.push_back(dim.name);
}

} // namespace

HostTensor Session::gather(const Tensor &tensor) const {
  HostTensor host;
  host.dtype = tensor.dtype;
  host.shape = tensor.globalShape();
  for (const layout::Dim &dim : tensor.dims)
    host.dims.push_back(dim.name);
  host.data.resize(product(host.shape) * 4);
  if (processes) {
    // Every rank sends a block of the largest size (its own block first), so
    // the gather moves equal counts.
    std::vector<char> block(product(tensor.maxBlockShape(program.mesh)) * 4);
    devices[0]->read(
        program.buffers[tensor.buffer].offset, block.data(),
        product(tensor.blockShape(program.mesh, processes->rank())) * 4);
    std::vector<char> all = processes->gatherToRoot(
        block.data(), static_cast<int64_t>(block.size()));
    if (processes->rank() == 0)
      for (int64_t d = 0; d < meshDevices; ++d)
        copyBlock(host.shape, tensor.blockOffset(program.mesh, d),
                  tensor.blockShape(program.mesh, d), host.data.data(),
                  all.data() + d * static_cast<int64_t>(block.size()), false);
    declare(tensor, host);
    return host;
  }
  for (size_t d = 0; d < localIds.size(); ++d) {
    std::vector<int64_t> blockShape =
        tensor.blockShape(program.mesh, localIds[d]);
    std::vector<char> block(product(blockShape) * 4);
    devices[d]->read(program.buffers[tensor.buffer].offset, block.data(),
                     static_cast<int64_t>(block.size()));
    copyBlock(host.shape, tensor.blockOffset(program.mesh, localIds[d]),
              blockShape, host.data.data(), block.data(), false);
  }
  declare(tensor, host);
  return host;
}

} // namespace meshc::runtime
