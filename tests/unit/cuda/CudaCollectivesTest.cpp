//===- CudaCollectivesTest.cpp - Collective steps on CUDA devices ---------===//
//
// The collectives of the CUDA backend through the Device interface, on a
// 2x4 mesh: all_reduce steps (sum/max, f32/i32, sizes 1 to 1<<20, over m, b
// and both axes) on eight devices run by eight threads, against the
// reduction computed on the host and bit-identical across the members; and
// every resharding step (all_gather of an inner and an outer dim, slice,
// all_to_all, reduce_scatter) in a Session, against the cpu backend. Each
// runs in the virtual-device mode (all devices on one GPU) and, where the
// machine has a GPU per device, in NCCL mode. Needs a GPU; skips without.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"
#include "StepHarness.h"

#include "runtime/Loader.h"
#include "runtime/Session.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;
using nlohmann::json;

namespace {

/// The GPUs of this machine (0 when the count fails).
int gpuCount() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

/// Sets MESHC_CUDA_COLLECTIVES for its lifetime.
class ScopedMode {
public:
  explicit ScopedMode(const char *mode) {
    setenv("MESHC_CUDA_COLLECTIVES", mode, 1);
  }
  ~ScopedMode() { unsetenv("MESHC_CUDA_COLLECTIVES"); }
};

/// The modes to test on this machine: virtual, and nccl with 8 GPUs.
std::vector<const char *> modes() {
  std::vector<const char *> result = {"virtual"};
  if (cuda::haveNccl() && gpuCount() >= 8)
    result.push_back("nccl");
  return result;
}

json mesh2x4() {
  return {{{"name", "b"}, {"size", 2}}, {{"name", "m"}, {"size", 4}}};
}

/// A program whose only step all-reduces buffer 0 of `count` elements.
Program allReduceProgram(const char *dtype, int64_t count,
                         const std::vector<std::string> &axes,
                         const char *reduction) {
  json text = {{"format", "meshc-mprog"},
               {"version", 1},
               {"program", "allreduce"},
               {"mesh", mesh2x4()},
               {"seed", 1},
               {"arena_bytes", count * 4},
               {"buffers",
                {{{"id", 0},
                  {"dtype", dtype},
                  {"shape", {count}},
                  {"offset", 0},
                  {"bytes", count * 4}}}},
               {"tensors", json::array()},
               {"steps",
                {{{"op", "all_reduce"},
                  {"buf", 0},
                  {"axes", axes},
                  {"reduction", reduction}}}}};
  return parseProgram(text.dump(), "allreduce.mprog");
}

class CudaCollectives : public ::testing::Test {
protected:
  void SetUp() override { MESHC_REQUIRE_GPU(); }
};

TEST_F(CudaCollectives, AllReduceStepsMatchTheHostAndAgree) {
  for (const char *mode : modes())
    for (const char *dtype : {"f32", "i32"})
      for (const char *reduction : {"sum", "max"})
        for (int64_t count :
             {int64_t(1), int64_t(7), int64_t(1001), int64_t(1) << 20})
          for (std::vector<std::string> axes :
               {std::vector<std::string>{"m"}, {"b"}, {"b", "m"}}) {
            SCOPED_TRACE(std::string(mode) + " " + dtype + " " + reduction +
                         " " + std::to_string(count) + " over " +
                         std::to_string(axes.size()) + " axes " + axes[0]);
            ScopedMode scoped(mode);
            Program program = allReduceProgram(dtype, count, axes, reduction);
            std::unique_ptr<Backend> backend = createBackend("cuda");
            std::vector<std::unique_ptr<Device>> devices;
            std::vector<std::vector<float>> data;
            for (int64_t d = 0; d < 8; ++d) {
              devices.push_back(backend->createDevice(program, d));
              devices.back()->allocate(program.arenaBytes,
                                       program.scratchBytes);
              data.push_back(testData("d" + std::to_string(d), count));
              if (std::string(dtype) == "i32")
                for (float &v : data.back())
                  v = static_cast<float>(static_cast<int>(v * 1000));
              std::vector<char> bytes(count * 4);
              for (int64_t i = 0; i < count; ++i) {
                if (std::string(dtype) == "f32")
                  std::memcpy(&bytes[i * 4], &data.back()[i], 4);
                else {
                  int32_t v = static_cast<int32_t>(data.back()[i]);
                  std::memcpy(&bytes[i * 4], &v, 4);
                }
              }
              devices.back()->write(0, bytes.data(), count * 4);
            }
            GroupPartition partition = partitionMesh(program.mesh, axes);
            auto comms = backend->collectives().split(partition);
            std::vector<std::thread> threads;
            std::vector<std::string> errors(8);
            for (int64_t d = 0; d < 8; ++d)
              threads.emplace_back([&, d] {
                try {
                  devices[d]->run(program.steps[0], comms[d].get());
                } catch (const std::exception &error) {
                  errors[d] = error.what();
                  backend->collectives().abort();
                }
              });
            for (std::thread &thread : threads)
              thread.join();
            for (int64_t d = 0; d < 8; ++d)
              ASSERT_EQ(errors[d], "") << "device " << d;
            bool sum = std::string(reduction) == "sum";
            for (int64_t d = 0; d < 8; ++d) {
              std::vector<char> got(count * 4);
              devices[d]->read(0, got.data(), count * 4);
              const std::vector<int64_t> &group =
                  partition.groups[partition.groupOf[d]];
              std::vector<char> first(count * 4);
              devices[group[0]]->read(0, first.data(), count * 4);
              ASSERT_EQ(got, first)
                  << "device " << d << " differs from " << group[0];
              for (int64_t i = 0; i < count; i += 1 + count / 97) {
                double want = sum ? 0.0 : -1e30;
                for (int64_t member : group)
                  want = sum ? want + data[member][i]
                             : std::max(want, double(data[member][i]));
                double value;
                if (std::string(dtype) == "f32") {
                  float v;
                  std::memcpy(&v, &got[i * 4], 4);
                  value = v;
                } else {
                  int32_t v;
                  std::memcpy(&v, &got[i * 4], 4);
                  value = v;
                }
                ASSERT_NEAR(value, want, 1e-5 * std::max(1.0, std::abs(want)))
                    << "device " << d << " element " << i;
              }
            }
          }
}

json dim(const std::string &name, int64_t size,
         std::vector<std::string> axes = {}) {
  return {{"name", name}, {"size", size}, {"axes", axes}};
}

/// Mesh b:2;m:4; input x (buffer 0, `xElements` per device) goes through
/// `step` into output y (buffer 1, `yElements`).
Program reshardProgram(const json &xDims, int64_t xElements, const json &yDims,
                       int64_t yElements, const json &step) {
  int64_t xBytes = xElements * 4, yBytes = yElements * 4;
  json text = {{"format", "meshc-mprog"},
               {"version", 1},
               {"program", "reshard"},
               {"mesh", mesh2x4()},
               {"seed", 11},
               {"arena_bytes", xBytes + yBytes},
               {"buffers",
                {{{"id", 0},
                  {"dtype", "f32"},
                  {"shape", {xElements}},
                  {"offset", 0},
                  {"bytes", xBytes}},
                 {{"id", 1},
                  {"dtype", "f32"},
                  {"shape", {yElements}},
                  {"offset", xBytes},
                  {"bytes", yBytes}}}},
               {"tensors",
                {{{"role", "input"},
                  {"name", "x"},
                  {"buffer", 0},
                  {"dtype", "f32"},
                  {"dims", xDims}},
                 {{"role", "output"},
                  {"name", "y"},
                  {"buffer", 1},
                  {"dtype", "f32"},
                  {"dims", yDims}}}},
               {"steps", {step}}};
  return parseProgram(text.dump(), "reshard.mprog");
}

/// Runs `program` on cpu and cuda and compares the global y.
void expectSameOutput(const Program &program, double tolerance) {
  for (const char *mode : modes()) {
    SCOPED_TRACE(mode);
    ScopedMode scoped(mode);
    SessionOptions cpu, gpu;
    gpu.backend = "cuda";
    Session onCpu(program, cpu), onGpu(program, gpu);
    onCpu.runStep();
    onGpu.runStep();
    const Tensor &y = *program.findTensor(Role::Output, "y");
    HostTensor want = onCpu.gather(y), got = onGpu.gather(y);
    ASSERT_EQ(got.shape, want.shape);
    for (int64_t i = 0; i < want.elements(); ++i)
      ASSERT_NEAR(got.at(i), want.at(i),
                  tolerance * std::max(1.0, std::abs(want.at(i))))
          << "element " << i;
  }
}

TEST_F(CudaCollectives, ReshardingStepsMatchTheCpu) {
  expectSameOutput(reshardProgram({dim("a", 3), dim("c", 8, {"m"})}, 6,
                                  {dim("a", 3), dim("c", 8)}, 24,
                                  {{"op", "all_gather"},
                                   {"in", operand(0, {"a", "c"})},
                                   {"out", operand(1, {"a", "c"})},
                                   {"dim", "c"},
                                   {"axes", {"m"}},
                                   {"sizes", {{"a", 3}, {"c", 8}}}}),
                   0);
  expectSameOutput(reshardProgram({dim("c", 16, {"b", "m"}), dim("a", 3)}, 6,
                                  {dim("c", 16), dim("a", 3)}, 48,
                                  {{"op", "all_gather"},
                                   {"in", operand(0, {"c", "a"})},
                                   {"out", operand(1, {"c", "a"})},
                                   {"dim", "c"},
                                   {"axes", {"b", "m"}},
                                   {"sizes", {{"a", 3}, {"c", 16}}}}),
                   0);
  expectSameOutput(reshardProgram({dim("a", 3), dim("c", 8)}, 24,
                                  {dim("a", 3), dim("c", 8, {"m"})}, 6,
                                  {{"op", "slice"},
                                   {"in", operand(0, {"a", "c"})},
                                   {"out", operand(1, {"a", "c"})},
                                   {"dim", "c"},
                                   {"axes", {"m"}},
                                   {"sizes", {{"a", 3}, {"c", 8}}}}),
                   0);
  expectSameOutput(reshardProgram({dim("a", 4), dim("c", 8, {"m"})}, 8,
                                  {dim("a", 4, {"m"}), dim("c", 8)}, 8,
                                  {{"op", "all_to_all"},
                                   {"in", operand(0, {"a", "c"})},
                                   {"out", operand(1, {"a", "c"})},
                                   {"split_dim", "a"},
                                   {"concat_dim", "c"},
                                   {"axes", {"m"}},
                                   {"sizes", {{"a", 4}, {"c", 2}}}}),
                   0);
  expectSameOutput(reshardProgram({dim("c", 8, {"m"}), dim("a", 4)}, 8,
                                  {dim("c", 8), dim("a", 4, {"m"})}, 8,
                                  {{"op", "all_to_all"},
                                   {"in", operand(0, {"c", "a"})},
                                   {"out", operand(1, {"c", "a"})},
                                   {"split_dim", "a"},
                                   {"concat_dim", "c"},
                                   {"axes", {"m"}},
                                   {"sizes", {{"a", 4}, {"c", 2}}}}),
                   0);
  expectSameOutput(reshardProgram({dim("a", 3), dim("c", 8)}, 24,
                                  {dim("a", 3), dim("c", 8, {"m"})}, 6,
                                  {{"op", "reduce_scatter"},
                                   {"in", operand(0, {"a", "c"})},
                                   {"out", operand(1, {"a", "c"})},
                                   {"dim", "c"},
                                   {"axes", {"m"}},
                                   {"reduction", "sum"},
                                   {"sizes", {{"a", 3}, {"c", 8}}}}),
                   1e-6);
}

} // namespace
