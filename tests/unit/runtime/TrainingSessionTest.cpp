//===- TrainingSessionTest.cpp - Training runs end to end -----------------===//
//
// Sessions of small training programs: datasets read in the documented
// epoch order on every layout, eval runs that change nothing, eval sets
// read batch by batch, dropout masks independent of the layout, local-SGD
// parameter averaging, params read from .npy files, and the errors of all
// of it.
//
//===----------------------------------------------------------------------===//

#include "NpyWriter.h"

#include "runtime/Error.h"
#include "runtime/Loader.h"
#include "runtime/Session.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;
using nlohmann::json;

namespace {

constexpr uint64_t kSeed = 11;

json operand(int64_t buf, std::vector<std::string> dims) {
  return {{"buf", buf}, {"dims", dims}};
}

json buffer(int64_t id, const char *dtype, int64_t elements, int64_t offset) {
  return {{"id", id},
          {"dtype", dtype},
          {"shape", {elements}},
          {"offset", offset},
          {"bytes", elements * 4}};
}

/// y = copy(x); m = dropout over [batch, f]; update: c += 1. The batch (4)
/// is split over d:2 when `split`, else the program runs on one device.
/// Input lab (i32 [batch]) is read by no step.
json datasetProgram(bool split) {
  int64_t rows = split ? 2 : 4;
  json batch = {{"name", "batch"},
                {"size", 4},
                {"axes", split ? json({"d"}) : json::array()}};
  json f = {{"name", "f"}, {"size", 2}};
  json sizes = {{"batch", rows}, {"f", 2}};
  return {
      {"format", "meshc-mprog"},
      {"version", 1},
      {"program", "dataset"},
      {"mesh", split ? json({{{"name", "d"}, {"size", 2}}}) : json::array()},
      {"seed", kSeed},
      {"arena_bytes", 256},
      {"buffers",
       {buffer(0, "f32", rows * 2, 0), buffer(1, "f32", rows * 2, 32),
        buffer(2, "f32", rows * 2, 64), buffer(3, "f32", 1, 96),
        buffer(4, "f32", 1, 112), buffer(5, "i32", rows, 128)}},
      {"tensors",
       {{{"role", "input"},
         {"name", "x"},
         {"buffer", 0},
         {"dtype", "f32"},
         {"dims", {batch, f}}},
        {{"role", "input"},
         {"name", "lab"},
         {"buffer", 5},
         {"dtype", "i32"},
         {"dims", {batch}},
         {"range", {0, 3}}},
        {{"role", "output"},
         {"name", "y"},
         {"buffer", 1},
         {"dtype", "f32"},
         {"dims", {batch, f}}},
        {{"role", "output"},
         {"name", "m"},
         {"buffer", 2},
         {"dtype", "f32"},
         {"dims", {batch, f}}},
        {{"role", "param"},
         {"name", "c"},
         {"buffer", 3},
         {"dtype", "f32"},
         {"dims", json::array()},
         {"init", {{"kind", "zeros"}}}}}},
      {"steps",
       {{{"op", "copy"}, {"in", 0}, {"out", 1}},
        {{"op", "dropout"},
         {"out", operand(2, {"batch", "f"})},
         {"sizes", sizes},
         {"name", "drop0"},
         {"rate", 0.5},
         {"dims", {batch, f}}},
        {{"op", "fill"}, {"phase", "update"}, {"out", 4}, {"value", 1}},
        {{"op", "binary"},
         {"phase", "update"},
         {"fn", "add"},
         {"lhs", operand(3, {})},
         {"rhs", operand(4, {})},
         {"out", operand(3, {})},
         {"sizes", json::object()}}}}};
}

/// A temporary .npy file, removed at the end of the test.
class TempNpy {
public:
  template <typename T>
  TempNpy(const std::string &name, const char *descr,
          const std::vector<int64_t> &shape, const std::vector<T> &values)
      : path(::testing::TempDir() + name) {
    std::string shapeText;
    for (int64_t size : shape)
      shapeText += std::to_string(size) + ", ";
    writeFile(path, npyBytes<T>(std::string("{'descr': '") + descr +
                                    "', 'fortran_order': False, 'shape': (" +
                                    shapeText + "), }",
                                values));
  }
  ~TempNpy() { std::remove(path.c_str()); }
  std::string path;
};

/// x of `rows` examples: row r is [10 r, 10 r + 1].
TempNpy examples(const std::string &name, int64_t rows) {
  std::vector<float> values;
  for (int64_t r = 0; r < rows; ++r) {
    values.push_back(10.0f * r);
    values.push_back(10.0f * r + 1);
  }
  return TempNpy(name, "<f4", {rows, 2}, values);
}

/// The rows of y, as x's file rows (value / 10).
std::vector<int64_t> rowsOf(const HostTensor &y) {
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < y.elements(); i += 2)
    rows.push_back(static_cast<int64_t>(y.at(i)) / 10);
  return rows;
}

std::string sessionError(const json &text, const SessionOptions &options) {
  try {
    Program program = parseProgram(text.dump(), "t.mprog");
    Session session(program, options);
    session.runStep();
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "";
}

TEST(TrainingSessionTest, DatasetsFollowTheEpochOrderOnEveryLayout) {
  TempNpy x = examples("x6.npy", 6);
  for (bool shuffle : {true, false})
    for (bool split : {false, true}) {
      SCOPED_TRACE(std::string(shuffle ? "shuffled" : "in order") +
                   (split ? ", split" : ", one device"));
      Program program = parseProgram(datasetProgram(split).dump(), "t.mprog");
      SessionOptions options;
      options.inputFiles["x"] = x.path;
      options.shuffle = shuffle;
      Session session(program, options);
      EXPECT_EQ(session.datasetExamples(), 6);
      EXPECT_EQ(session.batchSize(), 4);
      for (uint64_t run = 0; run < 4; ++run) {
        session.runStep();
        std::vector<int64_t> expected;
        for (uint64_t k = run * 4; k < run * 4 + 4; ++k) {
          std::vector<int64_t> order = epochPermutation(kSeed, k / 6, 6);
          expected.push_back(shuffle ? order[k % 6] : k % 6);
        }
        EXPECT_EQ(
            rowsOf(session.gather(*program.findTensor(Role::Output, "y"))),
            expected)
            << "run " << run;
      }
      EXPECT_EQ(session.trainingRuns(), 4u);
    }
}

TEST(TrainingSessionTest, DropoutIsLayoutIndependentAndOffInEvalRuns) {
  for (bool split : {false, true}) {
    SCOPED_TRACE(split ? "split" : "one device");
    Program program = parseProgram(datasetProgram(split).dump(), "t.mprog");
    Session session(program, {});
    const Tensor &m = *program.findTensor(Role::Output, "m");
    const Tensor &c = *program.findTensor(Role::Param, "c");
    for (uint64_t run = 0; run < 3; ++run) {
      // An eval run first: all ones, and nothing counted or updated.
      session.runStep(RunMode::Eval);
      HostTensor ones = session.gather(m);
      for (int64_t i = 0; i < ones.elements(); ++i)
        ASSERT_EQ(ones.at(i), 1.0);
      EXPECT_EQ(session.trainingRuns(), run);
      EXPECT_EQ(session.gather(c).at(0), static_cast<double>(run));
      session.runStep();
      HostTensor mask = session.gather(m);
      for (int64_t i = 0; i < mask.elements(); ++i)
        ASSERT_EQ(mask.at(i),
                  static_cast<float>(dropoutScale(kSeed, "drop0", run, i, 0.5)))
            << "run " << run << " element " << i;
      EXPECT_EQ(session.gather(c).at(0), static_cast<double>(run + 1));
    }
  }
}

TEST(TrainingSessionTest, EvalSetsAreReadBatchByBatchInOrder) {
  TempNpy x = examples("x6e.npy", 6), eval = examples("x9.npy", 9);
  Program program = parseProgram(datasetProgram(true).dump(), "t.mprog");
  SessionOptions options;
  options.inputFiles["x"] = x.path;
  options.evalInputFiles["x"] = eval.path;
  Session session(program, options);
  EXPECT_EQ(session.evalExamples(), 9);
  EXPECT_EQ(session.evalBatches(), 2);
  const Tensor &y = *program.findTensor(Role::Output, "y");
  session.runEvalBatch(1);
  EXPECT_EQ(rowsOf(session.gather(y)), (std::vector<int64_t>{4, 5, 6, 7}));
  session.runEvalBatch(0);
  EXPECT_EQ(rowsOf(session.gather(y)), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(session.trainingRuns(), 0u);
  EXPECT_EQ(session.gather(*program.findTensor(Role::Param, "c")).at(0), 0.0);
  try {
    session.runEvalBatch(2);
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(), "eval batch 2 is outside [0, 2)");
  }
}

TEST(TrainingSessionTest, DatasetAndEvalSetErrors) {
  TempNpy x6 = examples("x6r.npy", 6), x3 = examples("x3.npy", 3);
  TempNpy lab5("lab5.npy", "<i4", {5}, std::vector<int32_t>{0, 1, 2, 0, 1});
  TempNpy wide("wide.npy", "<f4", {6, 3}, std::vector<float>(18));
  json program = datasetProgram(true);
  SessionOptions mismatch;
  mismatch.inputFiles = {{"x", x6.path}, {"lab", lab5.path}};
  EXPECT_EQ(sessionError(program, mismatch),
            "--input lab=" + lab5.path +
                " has 5 examples but --input x=" + x6.path +
                " has 6; dataset inputs need the same number of examples");
  SessionOptions missing;
  missing.inputFiles = {{"x", x6.path}};
  missing.evalInputFiles = {{"lab", lab5.path}};
  EXPECT_EQ(sessionError(program, missing),
            "--eval-input: input 'x' is read from " + x6.path +
                " in training but has no eval file; give --eval-input "
                "x=FILE.npy");
  SessionOptions small;
  small.evalInputFiles = {{"x", x3.path}};
  EXPECT_EQ(sessionError(program, small),
            "--eval-input x=" + x3.path +
                " has 3 examples, fewer than one batch of 4");
  SessionOptions shape;
  shape.inputFiles = {{"x", wide.path}};
  EXPECT_EQ(sessionError(program, shape),
            wide.path + ": .npy shape (6, 3) does not match input 'x' shape "
                        "(4, 2)");
  SessionOptions unknown;
  unknown.evalInputFiles = {{"z", x3.path}};
  EXPECT_EQ(sessionError(program, unknown),
            "--eval-input z=" + x3.path +
                ": t.mprog has no input 'z' (inputs: 'x', 'lab')");
}

TEST(TrainingSessionTest, ParamsComeFromInitParamsFiles) {
  std::string dir = ::testing::TempDir() + "init-params";
  std::filesystem::create_directories(dir);
  json program = datasetProgram(true);
  SessionOptions options;
  options.initParamsDir = dir;
  EXPECT_EQ(sessionError(program, options),
            "--init-params: no file '" + dir + "/c.npy' for param 'c'");
  TempNpy wrong("init-params/c.npy", "<f4", {1}, std::vector<float>{2.5f});
  EXPECT_EQ(sessionError(program, options),
            dir + "/c.npy: .npy shape (1,) does not match param 'c' shape ()");
  TempNpy right("init-params/c.npy", "<f4", {}, std::vector<float>{2.5f});
  Program loaded = parseProgram(program.dump(), "t.mprog");
  Session session(loaded, options);
  const Tensor &c = *loaded.findTensor(Role::Param, "c");
  EXPECT_EQ(session.gather(c).at(0), 2.5);
  session.runStep();
  EXPECT_EQ(session.gather(c).at(0), 3.5);
  EXPECT_EQ(paramFileName("w1/adam_m"), "w1__adam_m.npy");
}

/// mesh b:2; w (replicated) += x's block (x is split over b); then
/// o = w per replica. Every 2 training runs w is averaged over b.
json localSgdProgram() {
  json rep = {{"name", "rep"}, {"size", 2}, {"axes", {"b"}}};
  json n = {{"name", "n"}, {"size", 3}};
  return {{"format", "meshc-mprog"},
          {"version", 1},
          {"program", "local_sgd"},
          {"mesh", {{{"name", "b"}, {"size", 2}}}},
          {"seed", kSeed},
          {"arena_bytes", 48},
          {"buffers",
           {buffer(0, "f32", 3, 0), buffer(1, "f32", 3, 16),
            buffer(2, "f32", 3, 32)}},
          {"tensors",
           {{{"role", "input"},
             {"name", "x"},
             {"buffer", 0},
             {"dtype", "f32"},
             {"dims", {rep, n}}},
            {{"role", "param"},
             {"name", "w"},
             {"buffer", 1},
             {"dtype", "f32"},
             {"dims", {n}},
             {"init", {{"kind", "zeros"}}}},
            {{"role", "output"},
             {"name", "o"},
             {"buffer", 2},
             {"dtype", "f32"},
             {"dims", {rep, n}}}}},
          {"steps",
           {{{"op", "binary"},
             {"phase", "update"},
             {"fn", "add"},
             {"lhs", operand(1, {"n"})},
             {"rhs", operand(0, {"n"})},
             {"out", operand(1, {"n"})},
             {"sizes", {{"n", 3}}}},
            {{"op", "copy"}, {"phase", "update"}, {"in", 1}, {"out", 2}}}},
          {"training",
           {{"sync", {{"every", 2}, {"axes", {"b"}}, {"buffers", {1}}}}}}};
}

TEST(TrainingSessionTest, LocalSgdAveragesReplicasEverySyncRuns) {
  Program program = parseProgram(localSgdProgram().dump(), "t.mprog");
  Session session(program, {});
  std::vector<float> x(6);
  fillBlock({InitSpec::Kind::Normal, 0.0, 1.0}, kSeed, "x", {2, 3}, {0, 0},
            {2, 3}, x.data());
  const Tensor &o = *program.findTensor(Role::Output, "o");
  auto expectRows = [&](auto expected) {
    HostTensor got = session.gather(o);
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t j = 0; j < 3; ++j)
        ASSERT_FLOAT_EQ(got.at(r * 3 + j), expected(r, j))
            << "replica " << r << " element " << j;
  };
  session.runStep();
  expectRows([&](int64_t r, int64_t j) { return x[r * 3 + j]; });
  session.runStep(); // o is copied before the sync at the end of the run
  expectRows([&](int64_t r, int64_t j) { return 2 * x[r * 3 + j]; });
  session.runStep();
  expectRows(
      [&](int64_t r, int64_t j) { return x[j] + x[3 + j] + x[r * 3 + j]; });
}

} // namespace
