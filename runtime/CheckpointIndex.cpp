//===- CheckpointIndex.cpp - A checkpoint's index.json
//---------------------===//
//
// index.json in both directions. Reading checks everything restoring relies
// on (format, version, dims, every shard inside its tensor with the bytes
// its shape needs, plain file names inside the step folder), with errors
// naming the file and the JSON path (JsonNode).
//
//===----------------------------------------------------------------------===//

#include "runtime/Checkpoint.h"

#include "runtime/Error.h"
#include "runtime/JsonNode.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace meshc::runtime {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

std::string hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

CheckpointShard readShardEntry(const JsonNode &node,
                               const std::vector<layout::Dim> &dims) {
  CheckpointShard shard;
  shard.device = node.member("device").integerAtLeast(0);
  JsonNode file = node.member("file");
  shard.file = file.string();
  if (shard.file.empty() || shard.file.find('/') != std::string::npos ||
      shard.file == "." || shard.file == "..")
    file.fail("expected a file name inside the step folder, got \"" +
              shard.file + "\"");
  JsonNode offset = node.member("offset"), shape = node.member("shape");
  for (const JsonNode &value : offset.elements())
    shard.offset.push_back(value.integerAtLeast(0));
  for (const JsonNode &value : shape.elements())
    shard.shape.push_back(value.integerAtLeast(1));
  if (shard.offset.size() != dims.size() || shard.shape.size() != dims.size())
    node.fail("offset and shape need " + std::to_string(dims.size()) +
              " entries, one per dim");
  int64_t elements = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (shard.offset[d] + shard.shape[d] > dims[d].size)
      node.fail("the block [" + std::to_string(shard.offset[d]) + ", " +
                std::to_string(shard.offset[d] + shard.shape[d]) +
                ") of dim '" + dims[d].name + "' exceeds its size " +
                std::to_string(dims[d].size));
    elements *= shard.shape[d];
  }
  shard.byteOffset = node.member("byte_offset").integerAtLeast(0);
  JsonNode bytes = node.member("bytes");
  shard.bytes = bytes.integerAtLeast(0);
  if (shard.bytes != elements * 4)
    bytes.fail("expected " + std::to_string(elements * 4) +
               " (4 bytes per element of the block), got " +
               std::to_string(shard.bytes));
  JsonNode crc = node.member("crc32");
  std::string text = crc.string();
  char *end = nullptr;
  unsigned long value = std::strtoul(text.c_str(), &end, 16);
  if (text.rfind("0x", 0) != 0 || text.size() != 10 || *end != '\0')
    crc.fail("expected \"0x\" and 8 hex digits, got \"" + text + "\"");
  shard.crc32 = static_cast<uint32_t>(value);
  return shard;
}

CheckpointTensor readTensorEntry(const JsonNode &node) {
  CheckpointTensor tensor;
  tensor.name = node.member("name").string();
  JsonNode dtype = node.member("dtype");
  std::string name = dtype.string();
  if (name == "f32")
    tensor.dtype = DType::F32;
  else if (name == "i32")
    tensor.dtype = DType::I32;
  else
    dtype.fail("expected \"f32\" or \"i32\", got \"" + name + "\"");
  for (const JsonNode &dim : node.member("dims").elements())
    tensor.dims.push_back(
        {dim.member("name").string(), dim.member("size").integerAtLeast(1)});
  if (std::optional<JsonNode> model = node.optionalMember("model_dims")) {
    for (const JsonNode &dim : model->elements())
      tensor.modelDims.push_back(
          {dim.member("name").string(), dim.member("size").integerAtLeast(1)});
    bool valid = declaresDims(tensor.dims, tensor.modelDims);
    if (!valid)
      model->fail("model_dims of '" + tensor.name +
                  "' must merge its leading dims into the first and keep the "
                  "others");
  }
  for (const JsonNode &shard : node.member("shards").elements())
    tensor.shards.push_back(readShardEntry(shard, tensor.dims));
  return tensor;
}

} // namespace

std::string checkpointIndexJson(const CheckpointIndex &index,
                                const Program &program) {
  ordered_json tensors = ordered_json::array();
  for (const CheckpointTensor &tensor : index.tensors) {
    const Tensor *param = program.findTensor(Role::Param, tensor.name);
    ordered_json dims = ordered_json::array();
    for (size_t d = 0; d < tensor.dims.size(); ++d) {
      ordered_json axes = ordered_json::array();
      if (param)
        for (size_t axis : param->layout.axesOf(d))
          axes.push_back(program.mesh.axisName(axis));
      dims.push_back({{"name", tensor.dims[d].name},
                      {"size", tensor.dims[d].size},
                      {"axes", axes}});
    }
    ordered_json shards = ordered_json::array();
    for (const CheckpointShard &shard : tensor.shards)
      shards.push_back({{"device", shard.device},
                        {"file", shard.file},
                        {"offset", shard.offset},
                        {"shape", shard.shape},
                        {"byte_offset", shard.byteOffset},
                        {"bytes", shard.bytes},
                        {"crc32", hex(shard.crc32)}});
    ordered_json entry = {{"name", tensor.name},
                          {"dtype", dtypeName(tensor.dtype)},
                          {"dims", dims}};
    if (!tensor.modelDims.empty()) {
      ordered_json model = ordered_json::array();
      for (const layout::Dim &dim : tensor.modelDims)
        model.push_back({{"name", dim.name}, {"size", dim.size}});
      entry["model_dims"] = model;
    }
    entry["shards"] = shards;
    tensors.push_back(std::move(entry));
  }
  ordered_json mesh = ordered_json::array();
  for (const layout::MeshAxis &axis : program.mesh.axes())
    mesh.push_back({{"name", axis.name}, {"size", axis.size}});
  ordered_json root = {{"format", "meshc-checkpoint"},
                       {"version", kCheckpointVersion},
                       {"program", index.program},
                       {"mesh", mesh},
                       {"step", index.step},
                       {"seed", index.seed},
                       {"tensors", tensors}};
  return root.dump(1) + "\n";
}

CheckpointIndex readCheckpointIndex(const std::string &stepDir) {
  std::string file = (std::filesystem::path(stepDir) / "index.json").string();
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw RuntimeError(file + " does not exist: '" + stepDir +
                       "' is not a complete checkpoint");
  std::stringstream text;
  text << in.rdbuf();
  return parseCheckpointIndex(text.str(), file, stepDir);
}

CheckpointIndex parseCheckpointIndex(std::string_view text,
                                     const std::string &file,
                                     const std::string &stepDir) {
  json document = json::parse(text, nullptr, false);
  if (document.is_discarded())
    throw RuntimeError(file + ": not valid JSON; the checkpoint is corrupt");
  JsonNode root(document, "", file);
  JsonNode format = root.member("format");
  if (format.string() != "meshc-checkpoint")
    format.fail("expected \"meshc-checkpoint\", got \"" + format.string() +
                "\"");
  JsonNode version = root.member("version");
  if (version.integer() != kCheckpointVersion)
    version.fail("checkpoint version " + std::to_string(version.integer()) +
                 " is not supported; this meshrun reads version " +
                 std::to_string(kCheckpointVersion));
  CheckpointIndex index;
  index.dir = stepDir;
  index.program = root.member("program").string();
  for (const JsonNode &axis : root.member("mesh").elements())
    index.mesh += (index.mesh.empty() ? "" : ";") +
                  axis.member("name").string() + ":" +
                  std::to_string(axis.member("size").integerAtLeast(1));
  index.step = static_cast<uint64_t>(root.member("step").integerAtLeast(0));
  JsonNode seed = root.member("seed");
  if (!seed.json().is_number_unsigned())
    seed.fail("expected an unsigned integer");
  index.seed = seed.json().get<uint64_t>();
  for (const JsonNode &tensor : root.member("tensors").elements()) {
    index.tensors.push_back(readTensorEntry(tensor));
    for (size_t t = 0; t + 1 < index.tensors.size(); ++t)
      if (index.tensors[t].name == index.tensors.back().name)
        tensor.member("name").fail("tensor '" + index.tensors[t].name +
                                   "' appears twice");
  }
  return index;
}

} // namespace meshc::runtime
