//===- MeshrunTest.cpp - The meshrun command line
//--------------------------===//
//
// Flag parsing and its errors, and meshrunMain's report and exit codes on a
// small program (the lit tests in tests/runtime run the real binary).
//
//===----------------------------------------------------------------------===//

#include "runtime/Meshrun.h"
#include "runtime/Error.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

using namespace meshc::runtime;

namespace {

std::string argsError(const std::vector<std::string> &args) {
  try {
    parseMeshrunArgs(args);
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "";
}

TEST(MeshrunTest, ParsesFlags) {
  MeshrunOptions options =
      parseMeshrunArgs({"m.mprog", "--backend=cpu", "--devices", "8", "--steps",
                        "3", "--input", "x=x.npy", "--input=y=y.npy", "--seed",
                        "5", "--dump-outputs", "o.json", "--quiet"});
  EXPECT_EQ(options.programPath, "m.mprog");
  EXPECT_EQ(options.session.backend, "cpu");
  EXPECT_EQ(options.session.devices, 8);
  EXPECT_EQ(options.steps, 3);
  EXPECT_EQ(options.session.inputFiles, (std::map<std::string, std::string>{
                                            {"x", "x.npy"}, {"y", "y.npy"}}));
  EXPECT_EQ(options.session.seed, 5u);
  EXPECT_EQ(options.dumpOutputs, "o.json");
  EXPECT_TRUE(options.quiet);
}

TEST(MeshrunTest, ParsesTrainingFlags) {
  MeshrunOptions options = parseMeshrunArgs(
      {"m.mprog", "--steps", "0", "--eval-input", "x=ex.npy", "--eval-every",
       "5", "--no-shuffle", "--csv", "log.csv", "--plot=loss.svg",
       "--dump-params", "out", "--init-params", "in", "--verbose"});
  EXPECT_EQ(options.steps, 0);
  EXPECT_EQ(options.session.evalInputFiles,
            (std::map<std::string, std::string>{{"x", "ex.npy"}}));
  EXPECT_EQ(options.evalEvery, 5);
  EXPECT_FALSE(options.session.shuffle);
  EXPECT_EQ(options.csvPath, "log.csv");
  EXPECT_EQ(options.plotPath, "loss.svg");
  EXPECT_EQ(options.dumpParamsDir, "out");
  EXPECT_EQ(options.session.initParamsDir, "in");
  EXPECT_TRUE(options.verbose);
}

TEST(MeshrunTest, TrainingFlagErrors) {
  EXPECT_EQ(argsError({"a.mprog", "--plot", "loss.png"}),
            "--plot: 'loss.png' does not end in .svg; meshrun draws SVG only");
  EXPECT_EQ(argsError({"a.mprog", "--eval-every", "3"}),
            "--eval-every needs an eval set (--eval-input NAME=FILE.npy)");
  EXPECT_EQ(
      argsError({"a.mprog", "--eval-input", "x=a.npy", "--eval-every", "0"}),
      "--eval-every: expected an integer >= 1, got '0'");
  EXPECT_EQ(argsError({"a.mprog", "--eval-input", "x"}),
            "--eval-input: expected NAME=FILE.npy, got 'x'");
  EXPECT_EQ(argsError({"a.mprog", "--eval-input", "x=a.npy", "--eval-input",
                       "x=b.npy"}),
            "--eval-input: input 'x' is given twice");
  EXPECT_EQ(argsError({"a.mprog", "--csv"}), "--csv needs a value");
}

TEST(MeshrunTest, FlagErrors) {
  EXPECT_EQ(argsError({}), "no .mprog file given");
  EXPECT_EQ(argsError({"a.mprog", "b.mprog"}),
            "more than one .mprog file: 'a.mprog' and 'b.mprog'");
  EXPECT_EQ(argsError({"a.mprog", "--fast"}), "unknown option '--fast'");
  EXPECT_EQ(argsError({"a.mprog", "--steps"}), "--steps needs a value");
  EXPECT_EQ(argsError({"a.mprog", "--steps", "-1"}),
            "--steps: expected an integer >= 0, got '-1'");
  EXPECT_EQ(argsError({"a.mprog", "--devices", "two"}),
            "--devices: expected an integer >= 1, got 'two'");
  EXPECT_EQ(argsError({"a.mprog", "--devices", "99999999999999999999"}),
            "--devices: 99999999999999999999 is too large");
  EXPECT_EQ(argsError({"a.mprog", "--input", "x"}),
            "--input: expected NAME=FILE.npy, got 'x'");
  EXPECT_EQ(argsError({"a.mprog", "--input", "x=a.npy", "--input", "x=b.npy"}),
            "--input: input 'x' is given twice");
}

TEST(MeshrunTest, ParsesCheckpointAndTraceFlags) {
  std::string dir = ::testing::TempDir();
  MeshrunOptions options =
      parseMeshrunArgs({"m.mprog", "--checkpoint", "ck", "--checkpoint-every",
                        "5", "--keep-checkpoints=3", "--restore", dir,
                        "--trace", "t.json", "--trace-runs", "7"});
  EXPECT_EQ(options.checkpointDir, "ck");
  EXPECT_EQ(options.checkpointEvery, 5);
  EXPECT_EQ(options.keepCheckpoints, 3);
  EXPECT_EQ(options.restorePath, dir);
  EXPECT_EQ(options.tracePath, "t.json");
  EXPECT_TRUE(options.session.trace);
  EXPECT_EQ(options.session.traceRuns, 7);
  MeshrunOptions defaults = parseMeshrunArgs({"m.mprog", "--trace", "t.json"});
  EXPECT_EQ(defaults.checkpointEvery, 0);
  EXPECT_EQ(defaults.keepCheckpoints, 2);
  EXPECT_EQ(defaults.session.traceRuns, 100);
  EXPECT_FALSE(parseMeshrunArgs({"m.mprog"}).session.trace);
}

TEST(MeshrunTest, CheckpointAndTraceFlagErrors) {
  EXPECT_EQ(argsError({"a.mprog", "--checkpoint-every", "4"}),
            "--checkpoint-every needs --checkpoint DIR");
  EXPECT_EQ(argsError({"a.mprog", "--keep-checkpoints", "4"}),
            "--keep-checkpoints needs --checkpoint DIR");
  EXPECT_EQ(
      argsError({"a.mprog", "--checkpoint", "d", "--checkpoint-every", "-2"}),
      "--checkpoint-every: expected an integer >= 1, got '-2'");
  EXPECT_EQ(
      argsError({"a.mprog", "--checkpoint", "d", "--checkpoint-every", "x"}),
      "--checkpoint-every: expected an integer >= 1, got 'x'");
  EXPECT_EQ(
      argsError({"a.mprog", "--checkpoint", "d", "--keep-checkpoints", "0"}),
      "--keep-checkpoints: expected an integer >= 1, got '0'");
  EXPECT_EQ(argsError({"a.mprog", "--checkpoint"}),
            "--checkpoint needs a value");
  EXPECT_EQ(argsError({"a.mprog", "--restore", "/nonexistent/ck"}),
            "--restore: no checkpoint directory '/nonexistent/ck'");
  EXPECT_EQ(argsError({"a.mprog", "--restore", ::testing::TempDir(),
                       "--init-params", "p"}),
            "--restore and --init-params both give the params; use one of "
            "them");
  EXPECT_EQ(argsError({"a.mprog", "--collective-timeout", "abc"}),
            "--collective-timeout: expected a number of seconds >= 0 (0: no "
            "timeout), got 'abc'");
  EXPECT_EQ(argsError({"a.mprog", "--collective-timeout", "-1"}),
            "--collective-timeout: expected a number of seconds >= 0 (0: no "
            "timeout), got '-1'");
  EXPECT_EQ(*parseMeshrunArgs({"m.mprog", "--collective-timeout", "2.5"})
                 .collectiveTimeout,
            2.5);
  EXPECT_EQ(argsError({"a.mprog", "--trace-runs", "3"}),
            "--trace-runs needs --trace FILE.json");
  EXPECT_EQ(argsError({"a.mprog", "--trace", "t.json", "--trace-runs", "-1"}),
            "--trace-runs: expected an integer >= 0, got '-1'");
}

int runMeshrun(const std::vector<std::string> &args, std::string &out,
               std::string &err) {
  std::vector<const char *> argv = {"meshrun"};
  for (const std::string &arg : args)
    argv.push_back(arg.c_str());
  std::ostringstream outStream, errStream;
  int code = meshrunMain(static_cast<int>(argv.size()), argv.data(), outStream,
                         errStream);
  out = outStream.str();
  err = errStream.str();
  return code;
}

TEST(MeshrunTest, ErrorsExitWithOne) {
  std::string out, err;
  EXPECT_EQ(runMeshrun({"/nonexistent/m.mprog"}, out, err), 1);
  EXPECT_EQ(err, "meshrun: error: cannot open '/nonexistent/m.mprog'\n");
  EXPECT_EQ(runMeshrun({"--help"}, out, err), 0);
  EXPECT_EQ(out.rfind("usage: meshrun MODEL.mprog", 0), 0u);
}

TEST(MeshrunTest, ReportsOutputsPerStep) {
  std::string path = ::testing::TempDir() + "fill.mprog";
  std::ofstream(path) << R"({
    "format": "meshc-mprog", "version": 1, "program": "fill", "mesh": [],
    "seed": 0, "arena_bytes": 16,
    "buffers": [
      {"id": 0, "dtype": "f32", "shape": [3], "offset": 0, "bytes": 12},
      {"id": 1, "dtype": "f32", "shape": [], "offset": 12, "bytes": 4}],
    "tensors": [
      {"role": "output", "name": "v", "buffer": 0, "dtype": "f32",
       "dims": [{"name": "n", "size": 3}]},
      {"role": "output", "name": "s", "buffer": 1, "dtype": "f32", "dims": []}],
    "steps": [
      {"op": "fill", "out": 0, "value": 0.5},
      {"op": "reduce", "fn": "sum", "in": {"buf": 0, "dims": ["n"]},
       "out": {"buf": 1, "dims": []}, "sizes": {"n": 3}}]
  })";
  std::string out, err;
  ASSERT_EQ(runMeshrun({path, "--steps", "2"}, out, err), 0) << err;
  // The device has every core this process may use ("(N threads)").
  EXPECT_TRUE(std::regex_search(
      out, std::regex("meshrun: fill on 1 cpu device( \\([0-9]+ threads\\))?, "
                      "seed 0\n")))
      << out;
  EXPECT_NE(out.find("  v: f32[3] first [0.5, 0.5, 0.5] sum 1.5\n"
                     "  s = 1.5\n"
                     "step 2: "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("summary: 2 steps, mean "), std::string::npos) << out;
  EXPECT_EQ(err, "");
}

} // namespace
