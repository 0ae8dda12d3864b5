//===- Loader.cpp - Reading and validating .mprog files -------------------===//
//
// The top level of the loader: JSON syntax, the header, the mesh, buffers and
// tensors. Steps are read by StepLoader.cpp.
//
//===----------------------------------------------------------------------===//

#include "runtime/Loader.h"

#include "runtime/Error.h"
#include "runtime/PerDeviceSizes.h"
#include "runtime/StartedCollectives.h"
#include "runtime/StepLoader.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>

namespace meshc::runtime {

using nlohmann::json;

namespace {

/// "3:14" for byte `offset` of `text` (1-based line and column).
std::string lineColumn(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

/// nlohmann's parse error without its "[json.exception...] parse error at
/// line L, column C: " prefix.
std::string syntaxReason(const json::parse_error &error) {
  std::string what = error.what();
  size_t column = what.find("column ");
  size_t colon = what.find(": ", column == std::string::npos ? 0 : column);
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

/// The most devices a .mprog's mesh may have. The loader sizes per-device
/// tables from the mesh before any device is made (one weight per device
/// and axis for every tensor), so the mesh is bounded first: a mesh axis of
/// 2^31 once made the loader allocate 13 GB before a clear error.
constexpr int64_t kMaxMeshDevices = int64_t(1) << 20;

layout::Mesh parseMesh(const JsonNode &node) {
  std::vector<layout::MeshAxis> axes;
  for (const JsonNode &axis : node.elements())
    axes.push_back(
        {axis.member("name").string(), axis.member("size").integer()});
  if (axes.empty())
    return layout::Mesh::single();
  layout::Result<layout::Mesh> mesh = layout::Mesh::fromAxes(axes);
  if (!mesh)
    node.fail(mesh.error().message);
  if (mesh->numDevices() > kMaxMeshDevices)
    node.fail("the mesh has " + std::to_string(mesh->numDevices()) +
              " devices (mesh " + mesh->str() +
              "); a .mprog's mesh has at most " +
              std::to_string(kMaxMeshDevices));
  return *mesh;
}

Buffer parseBuffer(const JsonNode &node, int64_t arenaBytes) {
  Buffer buffer;
  buffer.id = node.member("id").integerAtLeast(0);
  buffer.dtype = parseDType(node.member("dtype"));
  JsonNode shape = node.member("shape");
  for (const JsonNode &size : shape.elements())
    buffer.shape.push_back(size.integerAtLeast(0));
  buffer.elements = checkedProduct(shape, buffer.shape, 1);
  JsonNode offset = node.member("offset");
  buffer.offset = offset.integerAtLeast(0);
  buffer.bytes = node.member("bytes").integerAtLeast(0);
  std::string name = "buffer " + std::to_string(buffer.id);
  int64_t dataBytes =
      checkedProduct(shape, buffer.shape, dtypeBytes(buffer.dtype));
  if (dataBytes > buffer.bytes)
    node.fail(name + " has " + std::to_string(buffer.bytes) +
              " bytes but its shape needs " + std::to_string(dataBytes));
  if (buffer.offset % dtypeBytes(buffer.dtype) != 0)
    offset.fail(name + " offset " + std::to_string(buffer.offset) +
                " is not a multiple of " +
                std::to_string(dtypeBytes(buffer.dtype)) + " (the " +
                dtypeName(buffer.dtype) + " element size)");
  if (buffer.bytes > arenaBytes - buffer.offset)
    node.fail(name + " [" + std::to_string(buffer.offset) + ", " +
              std::to_string(buffer.offset + buffer.bytes) +
              ") ends outside the arena of " + std::to_string(arenaBytes) +
              " bytes");
  return buffer;
}

InitSpec parseInit(const JsonNode &node) {
  std::string kind = node.member("kind").string();
  std::vector<double> args;
  if (std::optional<JsonNode> list = node.optionalMember("args"))
    for (const JsonNode &arg : list->elements())
      args.push_back(arg.number());
  auto expectArgs = [&](size_t count, const char *meaning) {
    if (args.size() != count)
      node.fail("init \"" + kind + "\" takes " + std::to_string(count) +
                " args (" + meaning + "), got " + std::to_string(args.size()));
  };
  InitSpec spec;
  if (kind == "zeros" || kind == "ones") {
    expectArgs(0, "none");
    spec.kind = kind == "zeros" ? InitSpec::Kind::Zeros : InitSpec::Kind::Ones;
  } else if (kind == "constant") {
    expectArgs(1, "value");
    spec = {InitSpec::Kind::Constant, args[0], 0};
  } else if (kind == "normal") {
    expectArgs(2, "mean, std");
    if (args[1] < 0)
      node.fail("normal std " + std::to_string(args[1]) + " is negative");
    spec = {InitSpec::Kind::Normal, args[0], args[1]};
  } else if (kind == "uniform") {
    expectArgs(2, "lo, hi");
    if (args[0] > args[1])
      node.fail("uniform bounds are reversed: lo " + std::to_string(args[0]) +
                " > hi " + std::to_string(args[1]));
    spec = {InitSpec::Kind::Uniform, args[0], args[1]};
  } else {
    node.member("kind").fail("unknown init kind \"" + kind +
                             "\" (known: zeros, ones, constant, normal, "
                             "uniform)");
  }
  return spec;
}

/// A param's or output's "model_dims": its dims as the model declares them, the
/// first merging its leading dims (the rest the same); refused otherwise.
std::vector<layout::Dim> parseModelDims(const JsonNode &node,
                                        const Tensor &tensor) {
  std::vector<layout::Dim> model;
  for (const JsonNode &dim : node.elements())
    model.push_back(
        {dim.member("name").string(), dim.member("size").integer()});
  auto text = [](const std::vector<layout::Dim> &dims) {
    std::string out = "[";
    for (size_t d = 0; d < dims.size(); ++d)
      out +=
          (d ? ", " : "") + dims[d].name + "=" + std::to_string(dims[d].size);
    return out + "]";
  };
  bool valid = declaresDims(tensor.dims, model);
  if (!valid)
    node.fail("'" + tensor.name + "' of dims " + text(tensor.dims) +
              " cannot be declared as " + text(model) +
              ": model_dims merge the leading dims into the first and keep "
              "the others");
  return model;
}

Tensor parseTensor(const JsonNode &node, const Program &program,
                   const std::map<int64_t, size_t> &bufferIndex) {
  Tensor tensor;
  JsonNode role = node.member("role");
  std::string roleText = role.string();
  if (roleText == "input")
    tensor.role = Role::Input;
  else if (roleText == "param")
    tensor.role = Role::Param;
  else if (roleText == "output")
    tensor.role = Role::Output;
  else
    role.fail("unknown role \"" + roleText +
              "\" (known: input, param, output)");
  JsonNode name = node.member("name");
  tensor.name = name.string();
  if (tensor.name.empty())
    name.fail("tensor name is empty");
  if (program.findTensor(tensor.role, tensor.name))
    name.fail(roleText + " '" + tensor.name + "' is declared twice");
  JsonNode bufferNode = node.member("buffer");
  int64_t bufferId = bufferNode.integer();
  auto found = bufferIndex.find(bufferId);
  if (found == bufferIndex.end())
    bufferNode.fail("buffer " + std::to_string(bufferId) + " is not declared");
  tensor.buffer = found->second;
  const Buffer &buffer = program.buffers[tensor.buffer];
  JsonNode dtype = node.member("dtype");
  tensor.dtype = parseDType(dtype);
  if (isHalf(tensor.dtype))
    dtype.fail(roleText + " '" + tensor.name + "' is " +
               dtypeName(tensor.dtype) +
               "; inputs, outputs and params are f32 or i32 (bf16 and f16 "
               "are for the program's own buffers)");
  if (tensor.dtype != buffer.dtype)
    dtype.fail(roleText + " '" + tensor.name + "' is " +
               dtypeName(tensor.dtype) + " but buffer " +
               std::to_string(buffer.id) + " is " + dtypeName(buffer.dtype));

  JsonNode dimsNode = node.member("dims");
  tensor.layout = parseGlobalDims(dimsNode, tensor.name, program.mesh,
                                  tensor.dims, tensor.blocks);
  int64_t blockBytes = checkedProduct(
      dimsNode,
      programBlock(program, tensor.dims, tensor.layout, tensor.blocks),
      dtypeBytes(tensor.dtype));
  // The buffer's shape (this program's device's, under device weights) must
  // hold the tensor's block: steps and input feeds agree on its size.
  int64_t shapeBytes = buffer.elements * dtypeBytes(buffer.dtype);
  if (blockBytes > shapeBytes)
    bufferNode.fail(
        roleText + " '" + tensor.name + "' needs " +
        std::to_string(blockBytes) + " bytes per device but buffer " +
        std::to_string(buffer.id) + " holds " + std::to_string(shapeBytes));

  if (tensor.role == Role::Param) {
    if (tensor.dtype != DType::F32)
      dtype.fail("param '" + tensor.name + "' is " + dtypeName(tensor.dtype) +
                 "; params must be f32");
    tensor.init = parseInit(node.member("init"));
  }
  if (tensor.role != Role::Input)
    if (std::optional<JsonNode> model = node.optionalMember("model_dims"))
      tensor.modelDims = parseModelDims(*model, tensor);
  if (tensor.role == Role::Input)
    if (std::optional<JsonNode> range = node.optionalMember("range")) {
      std::vector<JsonNode> bounds = range->elements();
      if (bounds.size() != 2)
        range->fail("expected [lo, hi], got " + std::to_string(bounds.size()) +
                    " elements");
      int64_t lo = bounds[0].integer(), hi = bounds[1].integer();
      std::string text =
          "range [" + std::to_string(lo) + ", " + std::to_string(hi) + ")";
      if (lo >= hi)
        range->fail(text + " is empty");
      if (lo < INT32_MIN || hi - 1 > INT32_MAX)
        range->fail(text + " does not fit i32");
      tensor.range = {lo, hi};
    }
  return tensor;
}

/// "'a', 'b'" of the outputs of `program`.
std::string outputNames(const Program &program) {
  std::string names;
  for (const Tensor &tensor : program.tensors)
    if (tensor.role == Role::Output)
      names += (names.empty() ? "'" : ", '") + tensor.name + "'";
  return names.empty() ? "none" : names;
}

/// The mesh axes of "sync": known, distinct; returns the group size.
int64_t parseSyncAxes(const JsonNode &node, const layout::Mesh &mesh,
                      std::vector<std::string> &axes) {
  int64_t size = 1;
  for (const JsonNode &axis : node.elements()) {
    std::string name = axis.string();
    std::optional<size_t> index = mesh.axisIndex(name);
    if (!index) {
      std::string known;
      for (const std::string &meshAxis : mesh.axisNames())
        known += (known.empty() ? "'" : ", '") + meshAxis + "'";
      axis.fail("'" + name + "' is not a mesh axis (mesh axes: " +
                (known.empty() ? "none" : known) + ")");
    }
    if (std::find(axes.begin(), axes.end(), name) != axes.end())
      axis.fail("mesh axis '" + name + "' is listed twice");
    axes.push_back(name);
    size *= mesh.axisSize(*index);
  }
  return size;
}

/// The param whose buffer list entry `ref` names (a buffer id): declared,
/// not already in `listed`, holding a param; else an error at `ref`, `why`
/// saying what the list needs params for.
const Tensor *listedParam(const JsonNode &ref, const Program &program,
                          const std::map<int64_t, size_t> &bufferIndex,
                          const std::vector<size_t> &listed,
                          const std::string &why) {
  int64_t id = ref.integer();
  auto buffer = bufferIndex.find(id);
  std::string name = "buffer " + std::to_string(id);
  if (buffer == bufferIndex.end())
    ref.fail(name + " is not declared");
  if (std::find(listed.begin(), listed.end(), buffer->second) != listed.end())
    ref.fail(name + " is listed twice");
  for (const Tensor &tensor : program.tensors)
    if (tensor.role == Role::Param && tensor.buffer == buffer->second)
      return &tensor;
  ref.fail(name + " holds no param; " + why);
}

/// "sync": after every `every` training runs, average the listed param
/// buffers over the groups of `axes`. Each buffer must hold a param that is
/// replicated over those axes (averaging different blocks would mix them).
SyncSpec parseSync(const JsonNode &node, Program &program,
                   const std::map<int64_t, size_t> &bufferIndex) {
  SyncSpec sync;
  sync.every = node.member("every").integerAtLeast(1);
  int64_t groupSize =
      parseSyncAxes(node.member("axes"), program.mesh, sync.axes);
  auto found =
      std::find(program.groupAxes.begin(), program.groupAxes.end(), sync.axes);
  size_t group = found - program.groupAxes.begin();
  if (found == program.groupAxes.end())
    program.groupAxes.push_back(sync.axes);
  for (const JsonNode &ref : node.member("buffers").elements()) {
    const Tensor *param = listedParam(ref, program, bufferIndex, sync.buffers,
                                      "sync averages param buffers only");
    std::string name = "buffer " + std::to_string(ref.integer());
    for (size_t d = 0; d < param->dims.size(); ++d)
      for (size_t axis : param->layout.axesOf(d))
        if (std::find(sync.axes.begin(), sync.axes.end(),
                      program.mesh.axisName(axis)) != sync.axes.end())
          ref.fail("param '" + param->name + "' (" + name +
                   ") is split over mesh axis '" + program.mesh.axisName(axis) +
                   "' (dim '" + param->dims[d].name +
                   "'); sync averages replicas, so its params must be "
                   "replicated over the sync axes");
    sync.buffers.push_back(param->buffer);

    // all_reduce(sum) then scale by 1/G, as steps after the program's own.
    Step reduce;
    reduce.index = program.stepCount() + sync.steps.size();
    reduce.phase = Phase::Update;
    reduce.out.buffer = param->buffer;
    reduce.out.shape.sizes = {product(
        programBlock(program, param->dims, param->layout, param->blocks))};
    AllReduceAttrs sum;
    sum.group = group;
    sum.reduction = Reduction::Sum;
    reduce.attrs = sum;
    Step scale = reduce;
    scale.index = reduce.index + 1;
    scale.in = {reduce.out};
    scale.attrs =
        UnaryAttrs{UnaryFn::Scale, 1.0 / static_cast<double>(groupSize)};
    sync.steps.push_back(reduce);
    sync.steps.push_back(scale);
  }
  return sync;
}

/// "microbatches": the count (at least 2) and the accumulator buffers, each
/// a param's, listed once. The program must allow the phases to run apart:
/// no forward or backward step after the first update step, and only
/// scalar outputs (their microbatch values are averaged).
MicrobatchSpec parseMicrobatches(const JsonNode &node, const Program &program,
                                 const std::map<int64_t, size_t> &bufferIndex) {
  MicrobatchSpec spec;
  spec.count = node.member("count").integerAtLeast(2);
  for (const JsonNode &ref : node.member("accumulators").elements())
    spec.accumulators.push_back(
        listedParam(ref, program, bufferIndex, spec.accumulators,
                    "the accumulators are the slots the gradients are summed "
                    "in")
            ->buffer);
  const Step *update = nullptr;
  for (const Step &step : program.steps) {
    if (step.phase == Phase::Update && !update)
      update = &step;
    if (update && step.phase != Phase::Update)
      node.fail("step " + std::to_string(step.index) + " (" +
                phaseName(step.phase) + ") comes after update step " +
                std::to_string(update->index) +
                "; with microbatches the update steps run once after every "
                "microbatch's forward and backward steps, so they must come "
                "last");
  }
  for (const Tensor &tensor : program.tensors)
    if (tensor.role == Role::Output &&
        (!tensor.dims.empty() || tensor.dtype != DType::F32))
      node.fail("output '" + tensor.name +
                "' is not an f32 scalar; with microbatches a run reports the "
                "mean of each output over the microbatches, so outputs must "
                "be f32 scalars (means over the batch)");
  return spec;
}

TrainingSpec parseTraining(const JsonNode &node, Program &program,
                           const std::map<int64_t, size_t> &bufferIndex) {
  TrainingSpec training;
  if (!node.json().is_object())
    node.fail("expected an object, got " + describeJson(node.json()));
  if (std::optional<JsonNode> optimizer = node.optionalMember("optimizer"))
    training.optimizer = optimizer->string();
  if (std::optional<JsonNode> hyperparams = node.optionalMember("hyperparams"))
    for (const auto &[name, value] : hyperparams->members())
      training.hyperparams.emplace_back(name, value.number());
  if (std::optional<JsonNode> loss = node.optionalMember("loss")) {
    training.loss = loss->string();
    const Tensor *output = program.findTensor(Role::Output, training.loss);
    if (!output)
      loss->fail("'" + training.loss +
                 "' is not an output (outputs: " + outputNames(program) + ")");
    if (!output->dims.empty())
      loss->fail("output '" + training.loss + "' is not a scalar; the loss " +
                 "must have dims []");
  }
  if (std::optional<JsonNode> sync = node.optionalMember("sync"))
    training.sync = parseSync(*sync, program, bufferIndex);
  if (std::optional<JsonNode> micro = node.optionalMember("microbatches")) {
    if (training.sync)
      micro->fail("microbatches and sync (local SGD) do not run together");
    training.microbatches = parseMicrobatches(*micro, program, bufferIndex);
  }
  return training;
}

/// The program `document` describes, its per-device sizes resolved (for
/// device `device`, or the largest blocks when it is -1).
/// Under per-device sizes, each collective_permute pair's source must send
/// as many bytes as its target's out holds (each device's own program only
/// checks its own in against its own out).
void requireMatchingPermutes(const Program &program,
                             const std::string &fileName) {
  const layout::Mesh &mesh = program.mesh;
  auto bytesOf = [](const Program &own, const Operand &operand) {
    return operand.shape.elements() *
           dtypeBytes(own.buffers[operand.buffer].dtype);
  };
  for (size_t index = 0; index < program.stepCount(); ++index) {
    const Step &step = program.step(index);
    if (step.op() != OpKind::CollectivePermute)
      continue;
    const std::vector<std::string> &axes = program.groupAxes[*step.group()];
    std::vector<size_t> positions;
    for (const std::string &axis : axes)
      positions.push_back(*mesh.axisIndex(axis));
    for (int64_t source = 0; source < mesh.numDevices(); ++source) {
      std::vector<int64_t> coords = mesh.coordinates(source);
      int64_t rank = 0;
      for (size_t position : positions)
        rank = rank * mesh.axisSize(position) + coords[position];
      for (auto [from, to] : step.as<CollectivePermuteAttrs>().pairs) {
        if (from != rank)
          continue;
        // The target: this device with its coordinates over the group's
        // axes those of rank `to`.
        for (size_t a = positions.size(), left = size_t(to); a-- > 0;) {
          int64_t size = mesh.axisSize(positions[a]);
          coords[positions[a]] = int64_t(left % size_t(size));
          left /= size_t(size);
        }
        int64_t target = mesh.deviceId(coords);
        const Program &sender = program.on(source),
                      &receiver = program.on(target);
        int64_t sent = bytesOf(sender, sender.step(index).in[0]),
                held = bytesOf(receiver, receiver.step(index).out);
        if (sent != held)
          throw RuntimeError(fileName + ": " + program.stepLabel(index) +
                             " (collective_permute): pair [" +
                             std::to_string(from) + ", " + std::to_string(to) +
                             "] sends device " + std::to_string(source) +
                             "'s " + std::to_string(sent) +
                             " bytes to device " + std::to_string(target) +
                             ", whose out holds " + std::to_string(held));
      }
    }
  }
}

Program readProgram(const json &document, const std::string &fileName,
                    int64_t device) {
  JsonNode root(document, "", fileName);
  Program program;
  program.fileName = fileName;
  program.device = device;
  program.name = root.member("program").string();
  if (std::optional<JsonNode> source = root.optionalMember("source"))
    program.source = source->string();
  program.mesh = parseMesh(root.member("mesh"));
  program.seed = static_cast<uint64_t>(root.member("seed").integerAtLeast(0));
  program.arenaBytes = root.member("arena_bytes").integerAtLeast(0);

  std::map<int64_t, size_t> bufferIndex;
  for (const JsonNode &node : root.member("buffers").elements()) {
    Buffer buffer = parseBuffer(node, program.arenaBytes);
    if (!bufferIndex.emplace(buffer.id, program.buffers.size()).second)
      node.member("id").fail("buffer " + std::to_string(buffer.id) +
                             " is declared twice");
    program.buffers.push_back(std::move(buffer));
  }
  for (const JsonNode &node : root.member("tensors").elements())
    program.tensors.push_back(parseTensor(node, program, bufferIndex));
  JsonNode stepsNode = root.member("steps");
  std::vector<JsonNode> steps = stepsNode.elements();
  for (size_t i = 0; i < steps.size(); ++i) {
    program.steps.push_back(parseStep(steps[i], i, program, bufferIndex));
    program.scratchBytes =
        std::max(program.scratchBytes, program.steps.back().scratchBytes);
  }
  numberBodySteps(stepsNode, program);
  planStartedCollectives(stepsNode, program);
  if (std::optional<JsonNode> training = root.optionalMember("training"))
    program.training = parseTraining(*training, program, bufferIndex);
  return program;
}

} // namespace

Program parseProgram(std::string_view text, const std::string &fileName) {
  json document;
  try {
    document = json::parse(text.begin(), text.end());
  } catch (const json::parse_error &error) {
    size_t offset = error.byte == 0 ? 0 : error.byte - 1;
    throw RuntimeError(fileName + ":" + lineColumn(text, offset) +
                       ": not valid JSON: " + syntaxReason(error));
  } catch (const json::out_of_range &error) {
    // A number no double holds (1e400; found by fuzz-mprog). nlohmann
    // gives no position for it.
    std::string what = error.what();
    size_t prefix = what.find("] ");
    throw RuntimeError(
        fileName + ": not valid JSON: " +
        (prefix == std::string::npos ? what : what.substr(prefix + 2)));
  }
  JsonNode root(document, "", fileName);
  if (!document.is_object())
    root.fail("expected a JSON object at the top level, got " +
              describeJson(document));

  JsonNode format = root.member("format");
  if (format.string() != "meshc-mprog")
    format.fail("not a meshc program: format is \"" + format.string() +
                "\", expected \"meshc-mprog\"");
  JsonNode version = root.member("version");
  if (version.integer() != kMprogVersion)
    version.fail(
        "unsupported .mprog version " + std::to_string(version.integer()) +
        " (this runtime reads version " + std::to_string(kMprogVersion) + ")");

  PerDeviceSizes sizes(document, parseMesh(root.member("mesh")), fileName);
  if (!sizes.any())
    return readProgram(document, fileName, -1);
  // Unequal blocks: the largest for the whole mesh (the arena and every
  // device's scratch are that big), then each device's own program.
  Program program = readProgram(sizes.resolve(std::nullopt), fileName, -1);
  std::map<std::vector<int64_t>, std::shared_ptr<const Program>> byBlocks;
  for (int64_t d = 0; d < program.mesh.numDevices(); ++d) {
    std::shared_ptr<const Program> &own = byBlocks[sizes.key(d)];
    if (!own) {
      try {
        own = std::make_shared<const Program>(
            readProgram(sizes.resolve(d), fileName, d));
      } catch (const RuntimeError &error) {
        throw RuntimeError(std::string(error.what()) +
                           " (in the sizes of "
                           "device " +
                           std::to_string(d) + ")");
      }
      program.scratchBytes = std::max(program.scratchBytes, own->scratchBytes);
    }
    program.perDevice.push_back(own);
  }
  requireMatchingPermutes(program, fileName);
  return program;
}

std::optional<Program> tryParseProgram(std::string_view text,
                                       const std::string &fileName,
                                       std::string &error) {
  try {
    return parseProgram(text, fileName);
  } catch (const std::exception &e) {
    // RuntimeError, and anything a library throws past the loader's checks:
    // the caller may be built without exceptions.
    error = e.what();
    return std::nullopt;
  } catch (...) {
    error = "the loader failed with an unknown exception";
    return std::nullopt;
  }
}

Program loadProgram(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw RuntimeError("cannot open '" + path + "'");
  std::ostringstream text;
  text << file.rdbuf();
  return parseProgram(text.str(), path);
}

} // namespace meshc::runtime
