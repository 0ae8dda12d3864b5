//===- CudaSessionTest.cpp - Whole programs on cpu and cuda ---------------===//
//
// The checked-in programs of tests/runtime/Inputs (a 2x2 MLP with
// all_gather/all_reduce/softmax/cross entropy, a single-device program,
// linear regressions trained with momentum, data parallel and local SGD)
// run for several training runs in a Session on --backend cuda and on cpu,
// with synthetic inputs; every output and every param must agree to 1e-4
// relative. A bad label on one device must fail with the CPU's message
// while its peer waits in the next collective (the abort path). Needs a
// GPU; skips without.
//
// The programs are hand-written (tests/runtime/Inputs, see docs/cuda.md for
// compiled ones): meshc is not needed here, so these tests also run in a
// runtime-only build on a GPU machine.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include "runtime/Error.h"
#include "runtime/Loader.h"
#include "runtime/Npy.h"
#include "runtime/Session.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;

namespace {

class CudaSession : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override { MESHC_REQUIRE_GPU(); }
};

/// Compares the global values of `tensor` on both sessions.
void expectSameTensor(const Session &cpu, const Session &gpu,
                      const Tensor &tensor) {
  SCOPED_TRACE(tensor.name);
  HostTensor want = cpu.gather(tensor), got = gpu.gather(tensor);
  ASSERT_EQ(got.shape, want.shape);
  for (int64_t i = 0; i < want.elements(); ++i)
    ASSERT_NEAR(got.at(i), want.at(i),
                1e-4 * std::max(1.0, std::abs(want.at(i))))
        << "element " << i;
}

TEST_P(CudaSession, MatchesTheCpuOverTrainingRuns) {
  Program program = loadProgram(std::string(MESHC_RUNTIME_INPUTS) + "/" +
                                GetParam() + ".mprog");
  SessionOptions cpuOptions, gpuOptions;
  gpuOptions.backend = "cuda";
  Session cpu(program, cpuOptions), gpu(program, gpuOptions);
  EXPECT_EQ(gpu.backendName(), "cuda");
  for (int run = 0; run < 5; ++run) {
    cpu.runStep();
    gpu.runStep();
  }
  for (const Tensor &tensor : program.tensors)
    if (tensor.role != Role::Input)
      expectSameTensor(cpu, gpu, tensor);
}

INSTANTIATE_TEST_SUITE_P(
    Programs, CudaSession,
    ::testing::Values("mlp-2x2", "single-device", "linreg", "linreg-dp",
                      "linreg-local-sgd"),
    [](const ::testing::TestParamInfo<const char *> &info) {
      std::string name = info.param;
      for (char &c : name)
        if (c == '-')
          c = '_';
      return name;
    });

/// Two devices; device 1 gets label 7 and fails while device 0 waits in the
/// all_reduce that follows.
const char *kBadLabelProgram = R"({
  "format": "meshc-mprog", "version": 1, "program": "ce",
  "mesh": [{"name": "d", "size": 2}], "seed": 1, "arena_bytes": 64,
  "buffers": [
    {"id": 0, "dtype": "f32", "shape": [2, 3], "offset": 0, "bytes": 24},
    {"id": 1, "dtype": "i32", "shape": [2], "offset": 24, "bytes": 8},
    {"id": 2, "dtype": "f32", "shape": [2], "offset": 32, "bytes": 8}],
  "tensors": [
    {"role": "input", "name": "logits", "buffer": 0, "dtype": "f32",
     "dims": [{"name": "batch", "size": 4, "axes": ["d"]},
              {"name": "classes", "size": 3}]},
    {"role": "input", "name": "labels", "buffer": 1, "dtype": "i32",
     "dims": [{"name": "batch", "size": 4, "axes": ["d"]}]}],
  "steps": [
    {"op": "softmax_cross_entropy",
     "logits": {"buf": 0, "dims": ["batch", "classes"]},
     "labels": {"buf": 1, "dims": ["batch"]},
     "out": {"buf": 2, "dims": ["batch"]}, "dim": "classes",
     "sizes": {"batch": 2, "classes": 3}},
    {"op": "all_reduce", "buf": 2, "axes": ["d"], "reduction": "sum"}]
})";

TEST(CudaSessionErrors, BadLabelStopsThePeerWithTheCpuMessage) {
  MESHC_REQUIRE_GPU();
  // labels.npy: int32 [0, 1, 2, 7], written by the runtime's own writer (a
  // hand-made header here was cut short and never tested the label check).
  std::string path = ::testing::TempDir() + "cuda_labels.npy";
  NpyArray labels{DType::I32, {4}, std::vector<char>(4 * sizeof(int32_t))};
  const int32_t values[4] = {0, 1, 2, 7};
  std::memcpy(labels.data.data(), values, sizeof(values));
  writeNpy(path, labels);
  Program program = parseProgram(kBadLabelProgram, "ce.mprog");
  std::string error;
  SessionOptions options;
  options.backend = "cuda";
  options.inputFiles["labels"] = path;
  try {
    Session session(program, options);
    session.runStep();
  } catch (const RuntimeError &e) {
    error = e.what();
  }
  EXPECT_EQ(error, "step 0 (softmax_cross_entropy) on device 1: label 7 "
                   "(labels element 1) is outside [0, 3)");
  std::remove(path.c_str());
}

} // namespace
