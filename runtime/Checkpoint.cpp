//===- Checkpoint.cpp - Writing sharded checkpoints -----------------------===//
//
// The folder is built as DIR/step-<N>.partial (every file written to
// NAME.tmp, synced and renamed), the index last; the folder is then renamed
// to step-<N> and DIR/latest rewritten. A block is stored once, by the
// first device holding it (coordinate 0 on every axis it is replicated
// over), except local-SGD params, whose replicas differ. Under a
// ProcessGroup the processes agree on errors after each phase and rank 0
// gathers the shard records for the index. Finding a checkpoint is here
// too; restoring is CheckpointRestore.cpp, the index CheckpointIndex.cpp.
//
//===----------------------------------------------------------------------===//

#include "runtime/Checkpoint.h"

#include "runtime/Error.h"
#include "runtime/FileWrite.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>

#include <unistd.h>

namespace meshc::runtime {

namespace fs = std::filesystem;

namespace {

/// What one device stored of one param.
struct ShardRecord {
  uint32_t crc32 = 0;
  uint32_t stored = 0;
  int64_t byteOffset = 0;
  int64_t bytes = 0;
};

/// Runs `body`; returns the message of what it threw, or "".
std::string attempt(const std::function<void()> &body) {
  try {
    body();
  } catch (const std::exception &error) {
    return error.what();
  }
  return "";
}

/// Throws the first process's error (every process throws the same one).
void agree(ProcessGroup *processes, const std::string &error) {
  std::string agreed = processes ? processes->agreeOnError(error) : error;
  if (!agreed.empty())
    throw RuntimeError(agreed);
}

/// True when `device` stores its block of `tensor`: it is the first holder
/// of the block, or the param is averaged by local SGD, whose replicas
/// differ between syncs (each is stored).
bool storesBlock(const Program &program, const Tensor &tensor, int64_t device) {
  const layout::Mesh &mesh = program.mesh;
  if (program.training && program.training->sync) {
    const std::vector<size_t> &synced = program.training->sync->buffers;
    if (std::find(synced.begin(), synced.end(), tensor.buffer) != synced.end())
      return true;
  }
  std::vector<int64_t> coords = mesh.coordinates(device);
  for (size_t axis : tensor.layout.replicatedAxes(mesh))
    if (coords[axis] != 0)
      return false;
  return true;
}

std::string shardName(int64_t device) {
  return "shard-" + std::to_string(device) + ".bin";
}

/// Writes the blocks local device `local` stores to its shard file in
/// `folder`; fills its records (one per param).
void writeShard(const Session &session, const Program &program,
                const std::vector<const Tensor *> &params, size_t local,
                const fs::path &folder, ShardRecord *records) {
  int64_t device = session.localDevices()[local];
  std::vector<char> block;
  std::string data;
  for (size_t p = 0; p < params.size(); ++p) {
    const Tensor &tensor = *params[p];
    // An empty block (more devices than elements under --uneven or device
    // weights) holds nothing to store.
    int64_t elements = product(tensor.blockShape(program.mesh, device));
    if (!storesBlock(program, tensor, device) || elements == 0)
      continue;
    block.resize(elements * 4);
    session.readBlock(tensor, local, block.data());
    ShardRecord &record = records[p];
    record.stored = 1;
    record.byteOffset = static_cast<int64_t>(data.size());
    record.bytes = static_cast<int64_t>(block.size());
    record.crc32 = checkpointCrc32(block.data(), record.bytes);
    data.append(block.data(), block.size());
  }
  if (!data.empty())
    writeFileAtomically((folder / shardName(device)).string(),
                        std::string_view(data.data(), data.size()),
                        /*durable=*/true);
}

/// The index of the checkpoint in `folder` from every device's records.
CheckpointIndex makeIndex(const Session &session, const Program &program,
                          const std::vector<const Tensor *> &params,
                          const std::vector<ShardRecord> &records,
                          const std::string &folder) {
  CheckpointIndex index;
  index.dir = folder;
  index.program = program.name;
  index.mesh = program.mesh.str();
  index.step = session.trainingRuns();
  index.seed = session.seed();
  for (size_t p = 0; p < params.size(); ++p) {
    const Tensor &tensor = *params[p];
    CheckpointTensor entry{
        tensor.name, tensor.dtype, tensor.dims, tensor.modelDims, {}};
    for (int64_t d = 0; d < session.numDevices(); ++d) {
      const ShardRecord &record = records[d * params.size() + p];
      if (record.stored)
        entry.shards.push_back({d, shardName(d),
                                tensor.blockOffset(program.mesh, d),
                                tensor.blockShape(program.mesh, d),
                                record.byteOffset, record.bytes, record.crc32});
    }
    index.tensors.push_back(std::move(entry));
  }
  return index;
}

/// The N of a folder called "step-N", or -1.
int64_t stepNumber(const std::string &name) {
  if (name.rfind("step-", 0) != 0 || name.size() == 5 || name.size() > 24)
    return -1;
  for (size_t i = 5; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9')
      return -1;
  return std::stoll(name.substr(5));
}

/// The complete step folders of `dir` (those with an index), newest first.
std::vector<std::pair<int64_t, fs::path>> completeSteps(const fs::path &dir) {
  std::vector<std::pair<int64_t, fs::path>> steps;
  std::error_code error;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir, error)) {
    int64_t step = stepNumber(entry.path().filename().string());
    if (step >= 0 && fs::exists(entry.path() / "index.json", error))
      steps.emplace_back(step, entry.path());
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

/// Renames the finished `partial` folder to `stepDir`, points DIR/latest at
/// it and removes all but the newest `keep` complete steps.
void publish(const fs::path &dir, const fs::path &partial,
             const fs::path &stepDir, int64_t keep) {
  std::error_code error;
  fs::remove_all(stepDir, error);
  fs::rename(partial, stepDir, error);
  if (error)
    throw RuntimeError("cannot rename '" + partial.string() + "' to '" +
                       stepDir.string() + "': " + error.message());
  std::string latest = stepDir.filename().string() + "\n";
  writeFileAtomically((dir / "latest").string(), latest, /*durable=*/true);
  std::vector<std::pair<int64_t, fs::path>> steps = completeSteps(dir);
  for (size_t i = static_cast<size_t>(keep); i < steps.size(); ++i)
    if (steps[i].second != stepDir)
      fs::remove_all(steps[i].second, error);
}

/// Writes every local shard into `partial`, then (rank 0) the index, and
/// publishes the folder as `stepDir`.
void writeAndPublish(const Session &session, const Program &program,
                     const std::string &dir, int64_t keep,
                     const fs::path &partial, const fs::path &stepDir,
                     const std::vector<const Tensor *> &params,
                     std::vector<ShardRecord> &records) {
  ProcessGroup *processes = session.processGroup();
  bool root = !processes || processes->rank() == 0;
  agree(processes, attempt([&] {
          for (size_t i = 0; i < session.localDevices().size(); ++i)
            writeShard(session, program, params, i, partial,
                       records.data() + i * params.size());
        }));
  if (processes) {
    std::vector<char> all = processes->gatherToRoot(
        records.data(),
        static_cast<int64_t>(records.size() * sizeof(ShardRecord)));
    // Ranks other than the root receive nothing (memcpy of a null source
    // is undefined even for 0 bytes: UBSan, tests/runtime/checkpoint-mpi).
    records.resize(all.size() / sizeof(ShardRecord));
    if (!all.empty())
      std::memcpy(records.data(), all.data(), all.size());
  }
  agree(processes, !root ? "" : attempt([&] {
          CheckpointIndex index =
              makeIndex(session, program, params, records, stepDir.string());
          std::string text = checkpointIndexJson(index, program);
          writeFileAtomically((partial / "index.json").string(), text,
                              /*durable=*/true);
          publish(dir, partial, stepDir, keep);
        }));
}

} // namespace

uint32_t checkpointCrc32(const void *data, int64_t bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const Bytef *at = static_cast<const Bytef *>(data);
  while (bytes > 0) {
    uInt chunk = static_cast<uInt>(std::min<int64_t>(bytes, 1 << 30));
    crc = crc32(crc, at, chunk);
    at += chunk;
    bytes -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

CheckpointWritten writeCheckpoint(const Session &session,
                                  const Program &program,
                                  const std::string &dir, int64_t keep) {
  auto start = std::chrono::steady_clock::now();
  ProcessGroup *processes = session.processGroup();
  bool root = !processes || processes->rank() == 0;
  fs::path stepDir =
      fs::path(dir) / ("step-" + std::to_string(session.trainingRuns()));
  fs::path partial = stepDir.string() + ".partial";
  agree(processes, !root ? "" : attempt([&] {
          std::error_code error;
          fs::create_directories(dir, error);
          fs::remove_all(partial, error);
          if (!fs::create_directories(partial, error))
            throw RuntimeError("cannot create checkpoint directory '" +
                               partial.string() + "': " + error.message());
        }));

  std::vector<const Tensor *> params = paramsOf(program);
  std::vector<ShardRecord> records(session.localDevices().size() *
                                   params.size());
  // A save that fails (a full disk, say) leaves no partial folder: the
  // previous step stays the latest. Every process has stopped writing once
  // agree() throws.
  try {
    writeAndPublish(session, program, dir, keep, partial, stepDir, params,
                    records);
  } catch (...) {
    if (root) {
      std::error_code error;
      fs::remove_all(partial, error);
    }
    throw;
  }
  CheckpointWritten written;
  written.dir = stepDir.string();
  for (const ShardRecord &record : records)
    written.bytes += record.bytes;
  std::chrono::duration<double> elapsed =
      std::chrono::steady_clock::now() - start;
  written.seconds = elapsed.count();
  return written;
}

std::string findCheckpoint(const std::string &path) {
  std::error_code error;
  fs::path dir(path);
  if (!fs::is_directory(dir, error))
    throw RuntimeError("no checkpoint directory '" + path + "'");
  if (fs::exists(dir / "index.json", error))
    return dir.string();
  if (stepNumber(dir.filename().string()) >= 0)
    throw RuntimeError("'" + path + "' has no index.json: the checkpoint is " +
                       "incomplete (interrupted while being written)");
  if (std::FILE *file = std::fopen((dir / "latest").c_str(), "r")) {
    char name[64] = {};
    size_t read = std::fread(name, 1, sizeof(name) - 1, file);
    std::fclose(file);
    std::string step(name, read);
    step.erase(step.find_last_not_of(" \n\r\t") + 1);
    if (stepNumber(step) >= 0 && fs::exists(dir / step / "index.json", error))
      return (dir / step).string();
  }
  std::vector<std::pair<int64_t, fs::path>> steps = completeSteps(dir);
  if (steps.empty())
    throw RuntimeError("'" + path + "' holds no complete checkpoint (no " +
                       "index.json, and no step-<N>/index.json in it)");
  return steps.front().second.string();
}

} // namespace meshc::runtime