//===- CheckpointRestore.cpp - Restoring sharded checkpoints --------------===//
//
// Every block of this session's layout is assembled from the stored blocks
// that overlap it (one copy per distinct block; on the writer's own mesh a
// device's own copy, since local-SGD replicas differ), each checked against
// its CRC32, in host memory; the devices are written only once every block
// of every param is complete.
//
//===----------------------------------------------------------------------===//

#include "runtime/Checkpoint.h"

#include "runtime/Error.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

namespace meshc::runtime {

namespace fs = std::filesystem;

namespace {

/// Copies the `region`-shaped box at `srcStart` of the row-major block `src`
/// (shape `srcShape`) to `dstStart` of `dst` (shape `dstShape`); 4-byte
/// elements.
void copyRegion(const char *src, const std::vector<int64_t> &srcShape,
                const std::vector<int64_t> &srcStart, char *dst,
                const std::vector<int64_t> &dstShape,
                const std::vector<int64_t> &dstStart,
                const std::vector<int64_t> &region) {
  size_t rank = region.size();
  if (rank == 0) {
    std::memcpy(dst, src, 4);
    return;
  }
  std::vector<int64_t> index(rank, 0);
  int64_t run = region[rank - 1] * 4;
  while (true) {
    int64_t srcOffset = 0, dstOffset = 0;
    for (size_t d = 0; d < rank; ++d) {
      srcOffset = srcOffset * srcShape[d] + srcStart[d] + index[d];
      dstOffset = dstOffset * dstShape[d] + dstStart[d] + index[d];
    }
    std::memcpy(dst + dstOffset * 4, src + srcOffset * 4, run);
    size_t d = rank - 1;
    while (d > 0) {
      if (++index[d - 1] < region[d - 1])
        break;
      index[d - 1] = 0;
      --d;
    }
    if (d == 0)
      return;
  }
}

std::string hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

/// The bytes of `shard` of `tensor`, checked against the index.
std::vector<char> readShard(const std::string &folder,
                            const CheckpointTensor &tensor,
                            const CheckpointShard &shard) {
  std::string path = (fs::path(folder) / shard.file).string();
  std::error_code error;
  uintmax_t size = fs::file_size(path, error);
  if (error)
    throw RuntimeError("cannot read '" + path + "' (shard of '" + tensor.name +
                       "'): " + error.message());
  int64_t end = shard.byteOffset + shard.bytes;
  if (static_cast<uintmax_t>(end) > size)
    throw RuntimeError(path + " is truncated: '" + tensor.name +
                       "' needs bytes [" + std::to_string(shard.byteOffset) +
                       ", " + std::to_string(end) + ") but the file has " +
                       std::to_string(size) +
                       " bytes; the checkpoint is corrupt");
  std::vector<char> bytes(shard.bytes);
  std::FILE *file = std::fopen(path.c_str(), "rb");
  bool ok = file && std::fseek(file, shard.byteOffset, SEEK_SET) == 0 &&
            std::fread(bytes.data(), 1, bytes.size(), file) == bytes.size();
  if (file)
    std::fclose(file);
  if (!ok)
    throw RuntimeError("cannot read '" + path + "' (shard of '" + tensor.name +
                       "')");
  uint32_t crc = checkpointCrc32(bytes.data(), shard.bytes);
  if (crc != shard.crc32)
    throw RuntimeError(path + ": checksum of '" + tensor.name + "' is " +
                       hex(crc) + " but the index says " + hex(shard.crc32) +
                       "; the checkpoint is corrupt");
  return bytes;
}

std::string shapeText(const std::vector<layout::Dim> &dims) {
  std::string text = "[";
  for (size_t d = 0; d < dims.size(); ++d)
    text += (d ? ", " : "") + dims[d].name + "=" + std::to_string(dims[d].size);
  return text + "]";
}

/// Fails unless the params of `program` and the tensors of `index` are the
/// same names with the same dims and dtypes.
void checkParams(const Program &program, const CheckpointIndex &index) {
  std::string file = (fs::path(index.dir) / "index.json").string();
  std::map<std::string, const CheckpointTensor *> stored;
  for (const CheckpointTensor &tensor : index.tensors)
    stored[tensor.name] = &tensor;
  for (const Tensor *param : paramsOf(program)) {
    auto found = stored.find(param->name);
    if (found == stored.end())
      throw RuntimeError(file + " has no param '" + param->name + "' of " +
                         program.fileName + " (checkpoint of program '" +
                         index.program + "'); it is of another program");
    const CheckpointTensor &tensor = *found->second;
    // By the dims the model declares: an interleaved pipeline's params
    // restore unpipelined and back.
    const std::vector<layout::Dim> &storedDims =
        tensor.modelDims.empty() ? tensor.dims : tensor.modelDims;
    const std::vector<layout::Dim> &dims = param->declaredDims();
    bool sameDims = storedDims.size() == dims.size();
    for (size_t d = 0; sameDims && d < storedDims.size(); ++d)
      sameDims = storedDims[d].name == dims[d].name &&
                 storedDims[d].size == dims[d].size;
    if (!sameDims || tensor.dtype != param->dtype)
      throw RuntimeError("param '" + param->name + "' is " +
                         dtypeName(param->dtype) + shapeText(dims) + " in " +
                         program.fileName + " but " + dtypeName(tensor.dtype) +
                         shapeText(storedDims) + " in " + file);
    stored.erase(found);
  }
  if (!stored.empty())
    throw RuntimeError(file + " holds param '" + stored.begin()->first +
                       "', which " + program.fileName +
                       " lacks; the checkpoint is of another program");
}

/// The shards of `stored` to read from: the first copy of each distinct
/// block (the others are replicas).
std::vector<size_t> distinctShards(const CheckpointTensor &stored) {
  std::map<std::vector<int64_t>, size_t> first;
  for (size_t s = 0; s < stored.shards.size(); ++s)
    first.emplace(stored.shards[s].offset, s);
  std::vector<size_t> shards;
  for (const auto &[offset, s] : first)
    shards.push_back(s);
  return shards;
}

/// This session's block of `tensor` on device `device`, from the `shards`
/// of `stored`; `cache` keeps the shards read so far.
std::vector<char> assembleBlock(const Program &program, const Tensor &tensor,
                                int64_t device, const CheckpointIndex &index,
                                const CheckpointTensor &stored,
                                const std::vector<size_t> &shards,
                                std::map<size_t, std::vector<char>> &cache) {
  std::vector<int64_t> shape = tensor.blockShape(program.mesh, device);
  std::vector<int64_t> offset = tensor.blockOffset(program.mesh, device);
  std::vector<char> block(product(shape) * 4);
  int64_t covered = 0;
  // Box by box in the dims the model declares (one box each where the
  // program's dims are the model's): the block's, and each shard's.
  const std::vector<layout::Dim> &declared = tensor.declaredDims();
  for (const DeclaredBox &to :
       declaredBoxes(tensor.dims, tensor.modelDims, offset, shape)) {
    for (size_t s : shards) {
      const CheckpointShard &shard = stored.shards[s];
      for (const DeclaredBox &from : declaredBoxes(
               stored.dims, stored.modelDims, shard.offset, shard.shape)) {
        std::vector<int64_t> region(declared.size()), srcStart(declared.size()),
            dstStart(declared.size());
        bool overlaps = true;
        for (size_t d = 0; d < declared.size() && overlaps; ++d) {
          int64_t begin = std::max(to.offset[d], from.offset[d]);
          int64_t end = std::min(to.offset[d] + to.shape[d],
                                 from.offset[d] + from.shape[d]);
          overlaps = begin < end;
          region[d] = end - begin;
          srcStart[d] = begin - from.offset[d];
          dstStart[d] = begin - to.offset[d];
        }
        if (!overlaps)
          continue;
        auto bytes = cache.find(s);
        if (bytes == cache.end())
          bytes = cache.emplace(s, readShard(index.dir, stored, shard)).first;
        copyRegion(bytes->second.data() + from.start * 4, from.shape, srcStart,
                   block.data() + to.start * 4, to.shape, dstStart, region);
        covered += product(region);
      }
    }
  }
  if (covered != product(shape))
    throw RuntimeError((fs::path(index.dir) / "index.json").string() +
                       ": the shards of '" + tensor.name +
                       "' do not cover the block of device " +
                       std::to_string(device) + " (" + std::to_string(covered) +
                       " of " + std::to_string(product(shape)) +
                       " elements); the checkpoint is corrupt");
  return block;
}

} // namespace

void restoreCheckpoint(Session &session, const Program &program,
                       const CheckpointIndex &index) {
  checkParams(program, index);
  std::map<std::string, const CheckpointTensor *> stored;
  for (const CheckpointTensor &tensor : index.tensors)
    stored[tensor.name] = &tensor;
  std::vector<const Tensor *> params = paramsOf(program);
  // blocks[p][i]: param p on local device i.
  std::vector<std::vector<std::vector<char>>> blocks(params.size());
  for (size_t p = 0; p < params.size(); ++p) {
    const Tensor &param = *params[p];
    const CheckpointTensor &tensor = *stored[param.name];
    std::vector<size_t> shards = distinctShards(tensor);
    // On the writer's mesh and layout a device takes its own copy when there
    // is one (local-SGD replicas differ).
    std::map<int64_t, size_t> own;
    if (index.mesh == program.mesh.str()) {
      for (size_t s = 0; s < tensor.shards.size(); ++s) {
        const CheckpointShard &shard = tensor.shards[s];
        if (shard.shape == param.blockShape(program.mesh, shard.device) &&
            shard.offset == param.blockOffset(program.mesh, shard.device))
          own[shard.device] = s;
      }
    }
    std::map<size_t, std::vector<char>> cache;
    for (int64_t device : session.localDevices()) {
      auto mine = own.find(device);
      blocks[p].push_back(assembleBlock(
          program, param, device, index, tensor,
          mine == own.end() ? shards : std::vector<size_t>{mine->second},
          cache));
    }
  }
  for (size_t p = 0; p < params.size(); ++p)
    for (size_t i = 0; i < blocks[p].size(); ++i)
      session.writeBlock(*params[p], i, blocks[p][i].data());
  session.setTrainingRuns(index.step);
}

} // namespace meshc::runtime
