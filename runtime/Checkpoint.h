//===- Checkpoint.h - Sharded checkpoints of a session ----------*- C++ -*-===//
//
// A checkpoint is the state a training run continues from: every param
// (optimizer slots such as "w1/adam_m" and "opt/step" are params too) and
// the training-run counter that dataset order, dropout masks and schedules
// depend on. It is a folder DIR/step-<N>/ with one shard file per device
// (shard-<d>.bin: the raw bytes of the blocks that device is the first
// holder of; of every replica for local-SGD params) and index.json
// (program, mesh, seed, counter, and per tensor its dims, dtype, layout and
// shards: device, offset, shape, bytes, CRC32). DIR/latest names the newest
// complete step. Writes go to temporary names that are renamed into place,
// the index last, so a crash mid-write leaves the previous checkpoint
// intact. Restoring reads the blocks of this session's layout from
// whichever stored shards overlap them, so a checkpoint restores onto
// another mesh or layout. Checkpoint.cpp writes, CheckpointRestore.cpp
// restores, CheckpointIndex.cpp reads and writes the index;
// docs/checkpoints.md describes the format.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CHECKPOINT_H
#define MESHC_RUNTIME_CHECKPOINT_H

#include "runtime/Program.h"
#include "runtime/Session.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace meshc::runtime {

/// The version of index.json this runtime writes and reads.
constexpr int64_t kCheckpointVersion = 1;

/// One stored block of a tensor.
struct CheckpointShard {
  /// The device that wrote it, and its file in the step folder.
  int64_t device = 0;
  std::string file;
  /// The block's element offset in the global tensor, and its shape.
  std::vector<int64_t> offset, shape;
  /// Where its bytes are in `file`.
  int64_t byteOffset = 0, bytes = 0;
  /// The CRC32 of those bytes.
  uint32_t crc32 = 0;
};

/// One tensor of a checkpoint.
struct CheckpointTensor {
  std::string name;
  DType dtype = DType::F32;
  /// Global dims (names and sizes), in order.
  std::vector<layout::Dim> dims;
  /// The dims the model declares where the writer's program cut its first
  /// (Tensor::modelDims: the interleaved schedule's params), else empty.
  /// A restore matches params by these and moves the elements between the
  /// two shapes (the same row-major order).
  std::vector<layout::Dim> modelDims;
  std::vector<CheckpointShard> shards;
};

/// What a checkpoint's index.json says.
struct CheckpointIndex {
  /// The step folder it was read from.
  std::string dir;
  std::string program;
  /// The mesh it was written on ("b:2;m:4", "" for one device).
  std::string mesh;
  /// The training runs before it was written.
  uint64_t step = 0;
  uint64_t seed = 0;
  std::vector<CheckpointTensor> tensors;
};

/// What writeCheckpoint did.
struct CheckpointWritten {
  /// The step folder.
  std::string dir;
  /// The bytes of every shard file (on every process).
  int64_t bytes = 0;
  double seconds = 0;
};

/// The CRC32 (IEEE, as zlib computes it) of `bytes` bytes at `data`.
uint32_t checkpointCrc32(const void *data, int64_t bytes);

/// The index.json text of `index`, whose tensors are params of `program`
/// (their layouts are written too).
std::string checkpointIndexJson(const CheckpointIndex &index,
                                const Program &program);

/// Writes the params and run counter of `session` as DIR/step-<runs>/ and
/// points DIR/latest at it, then keeps only the newest `keep` complete step
/// folders. Under a ProcessGroup every process must call it: each writes its
/// device's shards, rank 0 the index. Throws RuntimeError naming the file.
CheckpointWritten writeCheckpoint(const Session &session,
                                  const Program &program,
                                  const std::string &dir, int64_t keep);

/// The step folder `path` names: `path` itself when it holds an index.json,
/// else the step DIR/latest names (or, when that one is missing or
/// incomplete, the newest complete step-<N>). Throws RuntimeError when there
/// is none.
std::string findCheckpoint(const std::string &path);

/// Reads and checks `stepDir`/index.json. Throws RuntimeError naming the
/// file and the offending values.
CheckpointIndex readCheckpointIndex(const std::string &stepDir);

/// Checks the text of an index.json, named `file` in errors, of the step
/// folder `stepDir` (readCheckpointIndex's parser; a fuzz target's entry).
CheckpointIndex parseCheckpointIndex(std::string_view text,
                                     const std::string &file,
                                     const std::string &stepDir);

/// Fills every param block of this process's devices from `index` (any
/// mesh or layout) and sets the session's run counter. Every param of
/// `program` must be in the checkpoint with the same dims and dtype, and
/// vice versa; every shard read must match its checksum. Nothing is written
/// to a device before every block was read and checked.
void restoreCheckpoint(Session &session, const Program &program,
                       const CheckpointIndex &index);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_CHECKPOINT_H
