//===- CheckpointTest.cpp - Sharded checkpoints ---------------------------===//
//
// Checkpoints written by sessions of a small program (a 2-D param, an
// optimizer-slot-like vector and a step counter, updated every run) on one
// mesh and layout and restored on others: the same layout, a different mesh
// and layout, one device. Restored params are compared with the writer's,
// bit for bit, on sessions that started from other values (another seed).
// Then the refusals (corrupt byte, truncated shard, missing index, another
// program, bad index) leave the session untouched, and an interrupted write
// leaves the previous checkpoint in use.
//
//===----------------------------------------------------------------------===//

#include "runtime/Checkpoint.h"
#include "runtime/Error.h"
#include "runtime/Loader.h"
#include "runtime/Session.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace meshc::runtime;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// A mesh axis and how w's dims r and c, and v's dim c, are split.
struct Placement {
  std::vector<std::pair<std::string, int64_t>> mesh;
  std::vector<std::string> rAxes, cAxes;
  int64_t cSize = 8;
};

int64_t axesProduct(const Placement &placement,
                    const std::vector<std::string> &axes) {
  int64_t count = 1;
  for (const std::string &axis : axes)
    for (const auto &[name, size] : placement.mesh)
      if (name == axis)
        count *= size;
  return count;
}

/// Params w [r=8, c], "v/adam_m" [c], "opt/step" []; output o. Every run:
/// o = step summed over all devices, then step += 1 (update phase).
json checkpointProgram(const Placement &placement) {
  int64_t rows = 8 / axesProduct(placement, placement.rAxes);
  int64_t cols = placement.cSize / axesProduct(placement, placement.cAxes);
  json mesh = json::array(), allAxes = json::array();
  for (const auto &[name, size] : placement.mesh) {
    mesh.push_back({{"name", name}, {"size", size}});
    allAxes.push_back(name);
  }
  auto buffer = [](int64_t id, std::vector<int64_t> shape, int64_t offset) {
    int64_t elements = 1;
    for (int64_t size : shape)
      elements *= size;
    return json{{"id", id},
                {"dtype", "f32"},
                {"shape", shape},
                {"offset", offset},
                {"bytes", elements * 4}};
  };
  json r = {{"name", "r"}, {"size", 8}, {"axes", placement.rAxes}};
  json c = {
      {"name", "c"}, {"size", placement.cSize}, {"axes", placement.cAxes}};
  json normal = {{"kind", "normal"}, {"args", {0.0, 1.0}}};
  json steps = {{{"op", "copy"}, {"in", 2}, {"out", 3}}};
  if (!allAxes.empty())
    steps.push_back({{"op", "all_reduce"},
                     {"buf", 3},
                     {"axes", allAxes},
                     {"reduction", "sum"}});
  steps.push_back(
      {{"op", "fill"}, {"phase", "update"}, {"out", 4}, {"value", 1}});
  steps.push_back({{"op", "binary"},
                   {"phase", "update"},
                   {"fn", "add"},
                   {"lhs", {{"buf", 2}, {"dims", json::array()}}},
                   {"rhs", {{"buf", 4}, {"dims", json::array()}}},
                   {"out", {{"buf", 2}, {"dims", json::array()}}},
                   {"sizes", json::object()}});
  return {{"format", "meshc-mprog"},
          {"version", 1},
          {"program", "ckpt"},
          {"mesh", mesh},
          {"seed", 5},
          {"arena_bytes", 1024},
          {"buffers",
           {buffer(0, {rows, cols}, 0), buffer(1, {cols}, 512),
            buffer(2, {1}, 768), buffer(3, {1}, 784), buffer(4, {1}, 800)}},
          {"tensors",
           {{{"role", "param"},
             {"name", "w"},
             {"buffer", 0},
             {"dtype", "f32"},
             {"dims", {r, c}},
             {"init", normal}},
            {{"role", "param"},
             {"name", "v/adam_m"},
             {"buffer", 1},
             {"dtype", "f32"},
             {"dims", {c}},
             {"init", normal}},
            {{"role", "param"},
             {"name", "opt/step"},
             {"buffer", 2},
             {"dtype", "f32"},
             {"dims", json::array()},
             {"init", {{"kind", "zeros"}}}},
            {{"role", "output"},
             {"name", "o"},
             {"buffer", 3},
             {"dtype", "f32"},
             {"dims", json::array()}}}},
          {"steps", steps}};
}

const Placement kMesh2x4 = {{{"a", 2}, {"b", 4}}, {"a"}, {"b"}};
const Placement kMesh4 = {{{"a", 4}}, {}, {"a"}};
const Placement kOneDevice = {{}, {}, {}};

/// A fresh folder under the test temp dir.
std::string freshDir(const std::string &name) {
  std::string dir = ::testing::TempDir() + "meshc-ckpt-" + name;
  fs::remove_all(dir);
  return dir;
}

/// Every param of `session`, gathered.
std::vector<std::vector<char>> paramValues(const Session &session,
                                           const Program &program) {
  std::vector<std::vector<char>> values;
  for (const Tensor &tensor : program.tensors)
    if (tensor.role == Role::Param)
      values.push_back(session.gather(tensor).data);
  return values;
}

/// A program of `placement` and a session of it with `seed`.
struct ParamSession {
  ParamSession(const Placement &placement, uint64_t seed)
      : program(
            parseProgram(checkpointProgram(placement).dump(), "ckpt.mprog")),
        session(program, options(seed)) {}
  static SessionOptions options(uint64_t seed) {
    SessionOptions options;
    options.seed = seed;
    return options;
  }
  Program program;
  Session session;
};

/// Writes a checkpoint after 3 runs on 2x4 into `dir`; returns the params.
std::vector<std::vector<char>> writeAfterThreeRuns(const std::string &dir) {
  ParamSession writer(kMesh2x4, 5);
  for (int i = 0; i < 3; ++i)
    writer.session.runStep();
  CheckpointWritten written =
      writeCheckpoint(writer.session, writer.program, dir, 2);
  EXPECT_EQ(written.dir, (fs::path(dir) / "step-3").string());
  // w: 8x8 in 8 blocks, v: 8 in 4 blocks (replicated over a), step: 1.
  EXPECT_EQ(written.bytes, (64 + 8 + 1) * 4);
  return paramValues(writer.session, writer.program);
}

std::string restoreError(const std::string &path, ParamSession &run) {
  try {
    restoreCheckpoint(run.session, run.program,
                      readCheckpointIndex(findCheckpoint(path)));
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "";
}

TEST(CheckpointTest, RoundTripsOnTheSameLayout) {
  std::string dir = freshDir("same");
  std::vector<std::vector<char>> written = writeAfterThreeRuns(dir);
  ParamSession reader(kMesh2x4, 99);
  ASSERT_NE(paramValues(reader.session, reader.program), written);
  CheckpointIndex index = readCheckpointIndex(findCheckpoint(dir));
  EXPECT_EQ(index.step, 3u);
  EXPECT_EQ(index.seed, 5u);
  EXPECT_EQ(index.mesh, "a:2;b:4");
  restoreCheckpoint(reader.session, reader.program, index);
  EXPECT_EQ(paramValues(reader.session, reader.program), written);
  EXPECT_EQ(reader.session.trainingRuns(), 3u);
  // The next run continues the counter: o is step 3 summed over 8 devices.
  reader.session.runStep();
  EXPECT_EQ(reader.session.gather(*reader.program.findTensor(Role::Output, "o"))
                .at(0),
            24.0);
}

TEST(CheckpointTest, ReshardsOntoAnotherMeshAndLayout) {
  std::string dir = freshDir("reshard");
  std::vector<std::vector<char>> written = writeAfterThreeRuns(dir);
  // w's c dim over a:4, r whole; v over a:4; then everything on one device.
  for (const Placement &placement : {kMesh4, kOneDevice}) {
    ParamSession reader(placement, 99);
    ASSERT_NE(paramValues(reader.session, reader.program), written);
    restoreCheckpoint(reader.session, reader.program,
                      readCheckpointIndex(findCheckpoint(dir)));
    EXPECT_EQ(paramValues(reader.session, reader.program), written);
    EXPECT_EQ(reader.session.trainingRuns(), 3u);
  }
  // And back: from one device onto 2x4 with r over b and c over a.
  std::string single = freshDir("reshard-single");
  ParamSession one(kOneDevice, 7);
  writeCheckpoint(one.session, one.program, single, 2);
  ParamSession reader({{{"a", 2}, {"b", 4}}, {"b"}, {"a"}}, 99);
  restoreCheckpoint(reader.session, reader.program,
                    readCheckpointIndex(findCheckpoint(single)));
  EXPECT_EQ(paramValues(reader.session, reader.program),
            paramValues(one.session, one.program));
}

TEST(CheckpointTest, RefusesACorruptShardAndChangesNothing) {
  std::string dir = freshDir("corrupt");
  writeAfterThreeRuns(dir);
  std::string shard = dir + "/step-3/shard-5.bin";
  {
    std::fstream file(shard, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(4);
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x10);
    file.seekp(4);
    file.write(&byte, 1);
  }
  ParamSession reader(kMesh2x4, 99);
  std::vector<std::vector<char>> before =
      paramValues(reader.session, reader.program);
  std::string error = restoreError(dir, reader);
  EXPECT_EQ(error.rfind(shard + ": checksum of 'w' is 0x", 0), 0u) << error;
  EXPECT_NE(error.find(" but the index says 0x"), std::string::npos) << error;
  EXPECT_NE(error.find("; the checkpoint is corrupt"), std::string::npos);
  EXPECT_EQ(paramValues(reader.session, reader.program), before);
  EXPECT_EQ(reader.session.trainingRuns(), 0u);
}

TEST(CheckpointTest, RefusesATruncatedShard) {
  std::string dir = freshDir("truncated");
  writeAfterThreeRuns(dir);
  std::string shard = dir + "/step-3/shard-0.bin";
  fs::resize_file(shard, 36);
  ParamSession reader(kOneDevice, 99);
  EXPECT_EQ(restoreError(dir, reader),
            shard + " is truncated: 'v/adam_m' needs bytes [32, 40) but the "
                    "file has 36 bytes; the checkpoint is corrupt");
}

TEST(CheckpointTest, RefusesAMissingIndex) {
  std::string dir = freshDir("noindex");
  writeAfterThreeRuns(dir);
  fs::remove(dir + "/step-3/index.json");
  ParamSession reader(kMesh2x4, 99);
  EXPECT_EQ(restoreError(dir, reader),
            "'" + dir +
                "' holds no complete checkpoint (no index.json, and "
                "no step-<N>/index.json in it)");
  EXPECT_EQ(restoreError(dir + "/step-3", reader),
            "'" + dir +
                "/step-3' has no index.json: the checkpoint is "
                "incomplete (interrupted while being written)");
  EXPECT_EQ(restoreError(dir + "/missing", reader),
            "no checkpoint directory '" + dir + "/missing'");
}

TEST(CheckpointTest, RefusesAnotherProgram) {
  std::string dir = freshDir("other");
  writeAfterThreeRuns(dir);
  Placement wider = kOneDevice;
  wider.cSize = 16;
  ParamSession reader(wider, 99);
  EXPECT_EQ(restoreError(dir, reader),
            "param 'w' is f32[r=8, c=16] in ckpt.mprog but f32[r=8, c=8] in " +
                dir + "/step-3/index.json");
}

TEST(CheckpointTest, RefusesABadIndex) {
  std::string dir = freshDir("badindex");
  writeAfterThreeRuns(dir);
  std::string index = dir + "/step-3/index.json";
  json document = json::parse(std::ifstream(index));
  ParamSession reader(kMesh2x4, 99);
  document["version"] = 2;
  std::ofstream(index) << document.dump();
  EXPECT_EQ(restoreError(dir, reader),
            index + ": version: checkpoint version 2 is not supported; this "
                    "meshrun reads version 1");
  document["version"] = 1;
  document["tensors"][0]["shards"][0]["bytes"] = 12;
  std::ofstream(index) << document.dump();
  EXPECT_EQ(restoreError(dir, reader),
            index + ": tensors[0].shards[0].bytes: expected 32 (4 bytes per "
                    "element of the block), got 12");
  document["tensors"][0]["shards"][0]["bytes"] = 32;
  document["tensors"].push_back(document["tensors"][0]);
  std::ofstream(index) << document.dump();
  EXPECT_EQ(restoreError(dir, reader),
            index + ": tensors[3].name: tensor 'w' appears twice");
  document["tensors"].erase(3);
  document["tensors"].erase(1);
  std::ofstream(index) << document.dump();
  EXPECT_EQ(restoreError(dir, reader),
            index + " has no param 'v/adam_m' of ckpt.mprog (checkpoint of "
                    "program 'ckpt'); it is of another program");
  std::ofstream(index) << "{\"format\": ";
  EXPECT_EQ(restoreError(dir, reader),
            index + ": not valid JSON; the checkpoint is corrupt");
}

TEST(CheckpointTest, AnInterruptedWriteLeavesThePreviousCheckpoint) {
  std::string dir = freshDir("crash");
  std::vector<std::vector<char>> written = writeAfterThreeRuns(dir);
  // A later write that died: a half-written partial folder, and an
  // index-less step folder (as left by an older writer).
  fs::create_directories(dir + "/step-4.partial");
  std::ofstream(dir + "/step-4.partial/shard-0.bin.tmp") << "half";
  fs::create_directories(dir + "/step-5");
  std::ofstream(dir + "/step-5/shard-0.bin") << "half";
  EXPECT_EQ(findCheckpoint(dir), (fs::path(dir) / "step-3").string());
  // Even when `latest` names the incomplete one, the newest complete step
  // is used.
  std::ofstream(dir + "/latest") << "step-5\n";
  EXPECT_EQ(findCheckpoint(dir), (fs::path(dir) / "step-3").string());
  ParamSession reader(kMesh4, 99);
  EXPECT_EQ(restoreError(dir, reader), "");
  EXPECT_EQ(paramValues(reader.session, reader.program), written);
}

TEST(CheckpointTest, KeepsTheNewestCheckpoints) {
  std::string dir = freshDir("keep");
  ParamSession writer(kMesh4, 5);
  for (int run = 1; run <= 4; ++run) {
    writer.session.runStep();
    writeCheckpoint(writer.session, writer.program, dir, 2);
  }
  std::vector<std::string> names;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"latest", "step-3", "step-4"}));
  std::ifstream latest(dir + "/latest");
  std::string name;
  latest >> name;
  EXPECT_EQ(name, "step-4");
}

TEST(CheckpointTest, Crc32IsZlibs) {
  // The standard check value of CRC-32/ISO-HDLC.
  EXPECT_EQ(checkpointCrc32("123456789", 9), 0xcbf43926u);
}

} // namespace
