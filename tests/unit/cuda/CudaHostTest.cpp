//===- CudaHostTest.cpp - CUDA backend checks that need no GPU ------------===//
//
// What can be checked without a GPU, and is checked everywhere:
// - "--backend cuda" without a device fails with cudaGetDeviceCount's reason;
// - the check macros name the call, file:line and the library's error;
// - the collective mode choice and its errors;
// - the generator transcription (KernelTypes.h) is bit-identical to
//   runtime/core/Random.h;
// - the kernels' element functions and iteration spaces, run on the host
//   (Exec::onHost), compute what the CPU backend's kernels compute;
// - the backend declares every step kind of StepKinds.def.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"
#include "ElementBounds.h"
#include "StepHarness.h"

#include "cuda/CudaAttentionGemm.h"
#include "cuda/CudaCheck.h"
#include "cuda/CudaCollectives.h"
#include "cuda/CudaFusedKernel.h"
#include "cuda/CudaKernels.h"
#include "cuda/KernelSpaces.h"
#include "runtime/Error.h"
#include "runtime/cpu/CpuKernels.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <optional>

using namespace meshc::runtime;
using namespace meshc::runtime::cuda;
using namespace meshc::runtime::testing;
namespace rt = meshc::runtime;

namespace {

const Exec kHost{nullptr, true};

NamedShape shape(std::vector<std::string> names, std::vector<int64_t> sizes) {
  return {std::move(names), std::move(sizes)};
}

std::string errorOf(void (*fn)()) {
  try {
    fn();
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "";
}

TEST(CudaHostTest, BackendWithoutGpuSaysWhy) {
  registerCudaBackend();
  std::string reason = cudaUnavailableReason();
  if (reason.empty()) {
    EXPECT_EQ(createBackend("cuda")->name(), "cuda");
    return;
  }
  EXPECT_EQ(reason.rfind("cudaGetDeviceCount: ", 0), 0u) << reason;
  EXPECT_EQ(errorOf([] { createBackend("cuda"); }),
            "--backend cuda: no CUDA device (" + reason + ")");
  EXPECT_EQ(errorOf([] { createBackend("tpu"); }),
            "unknown backend 'tpu' (available backends: cpu, cuda)");
}

TEST(CudaHostTest, CheckMacrosNameCallFileAndError) {
  int line = 0;
  try {
    line = __LINE__, MESHC_CUDA_CHECK(cudaErrorMemoryAllocation);
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError &error) {
    EXPECT_EQ(error.what(),
              std::string("cudaErrorMemoryAllocation failed at ") + __FILE__ +
                  ":" + std::to_string(line) +
                  ": out of memory (cudaErrorMemoryAllocation)");
  }
  try {
    line = __LINE__, MESHC_CUBLAS_CHECK(CUBLAS_STATUS_NOT_SUPPORTED);
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError &error) {
    EXPECT_EQ(error.what(),
              std::string("CUBLAS_STATUS_NOT_SUPPORTED failed at ") + __FILE__ +
                  ":" + std::to_string(line) +
                  ": CUBLAS_STATUS_NOT_SUPPORTED (" +
                  cublasGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED) + ")");
  }
#ifdef MESHC_HAVE_NCCL
  try {
    line = __LINE__, MESHC_NCCL_CHECK(ncclInvalidArgument);
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError &error) {
    std::string prefix = std::string("ncclInvalidArgument failed at ") +
                         __FILE__ + ":" + std::to_string(line) + ": " +
                         ncclGetErrorString(ncclInvalidArgument);
    EXPECT_EQ(std::string(error.what()).rfind(prefix, 0), 0u) << error.what();
  }
#endif
  // The cleanup variants report and go on.
  ::testing::internal::CaptureStderr();
  MESHC_CUDA_WARN(cudaErrorInvalidValue);
  MESHC_CUDA_WARN(cudaSuccess);
  std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(printed.find("meshrun: warning: cudaErrorInvalidValue failed at"),
            std::string::npos)
      << printed;
  EXPECT_EQ(printed.find("cudaSuccess"), std::string::npos) << printed;
}

TEST(CudaHostTest, CollectiveModeChoice) {
  EXPECT_EQ(chooseCollectiveMode("", 8, 1), CollectiveMode::Virtual);
  EXPECT_EQ(chooseCollectiveMode("", 1, 8), CollectiveMode::Virtual);
  EXPECT_EQ(chooseCollectiveMode("", 4, 8),
            haveNccl() ? CollectiveMode::Nccl : CollectiveMode::Virtual);
  EXPECT_EQ(chooseCollectiveMode("virtual", 4, 8), CollectiveMode::Virtual);
  try {
    chooseCollectiveMode("nccl", 8, 2);
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(),
                 haveNccl()
                     ? "MESHC_CUDA_COLLECTIVES=nccl: the mesh has 8 devices "
                       "but there are only 2 GPUs (NCCL needs one GPU per "
                       "mesh device; use virtual)"
                     : "MESHC_CUDA_COLLECTIVES=nccl: this meshrun was built "
                       "without NCCL (use virtual)");
  }
  try {
    chooseCollectiveMode("mpi", 8, 2);
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(),
                 "MESHC_CUDA_COLLECTIVES='mpi' is neither 'virtual' nor "
                 "'nccl'");
  }
}

TEST(CudaHostTest, GeneratorIsBitIdenticalToRandomH) {
  uint64_t key = runKey(7, "drop0", 3);
  TensorRandom random = TensorRandom::withKey(key);
  for (uint64_t i : {0ULL, 1ULL, 2ULL, 1000ULL, 123456789ULL, ~0ULL >> 2}) {
    EXPECT_EQ(cuda::splitmix64(i), rt::splitmix64(i));
    for (unsigned j : {0u, 1u})
      EXPECT_EQ(uniformAt(key, i, j), random.uniform(i, j)) << i;
  }
  DropoutParams mask{key, 0.3, 1.0 / 0.7};
  for (uint64_t i = 0; i < 5000; ++i)
    ASSERT_EQ(dropoutValue(mask, i),
              static_cast<float>(dropoutScale(7, "drop0", 3, i, 0.3)))
        << i;
}

TEST(CudaHostTest, ElementwiseKernelsMatchTheCpu) {
  std::vector<float> x = testData("x", 257);
  x[3] = NAN;
  // The host path runs ElementFunctions.h's scalar formulas, the CPU its
  // vectors (VectorMath.h): the same bits where the formula is IEEE
  // arithmetic, within the stated bounds where it calls exp, log or tanh;
  // NaNs of log, sqrt and rsqrt included.
  for (size_t i = 0; i < kUnaryFnCount; ++i) {
    UnaryFn fn = static_cast<UnaryFn>(i);
    std::vector<float> got(x.size()), want(x.size());
    cuda::unaryKernel(kHost, fn, 2.5f, x.data(), got.data(), 257);
    rt::unaryKernel(fn, 2.5, x.data(), want.data(), 257);
    std::string why;
    for (size_t k = 0; k < x.size(); ++k)
      EXPECT_TRUE(withinBound(fn, x[k], got[k], want[k], why)) << why;
  }
  std::vector<float> f = {1.9f, -1.9f, 3e9f, -3e9f, NAN, 0.0f};
  std::vector<int32_t> got(6), want(6);
  cuda::castKernel(kHost, DType::F32, DType::I32, f.data(), got.data(), 6);
  rt::castKernel(DType::F32, DType::I32, f.data(), want.data(), 6);
  EXPECT_EQ(got, want);
  // To and from bf16 and f16: the same bits as the CPU's conversions (ties
  // to even, overflow to infinity, f16 subnormals); a NaN stays a NaN (CUDA
  // writes another NaN payload).
  std::vector<float> wide = {
      1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -2.5f, NAN, 3.4e38f, 1e-6f, 0.1f};
  for (DType half : {DType::BF16, DType::F16}) {
    std::vector<uint16_t> gotBits(wide.size()), wantBits(wide.size());
    cuda::castKernel(kHost, DType::F32, half, wide.data(), gotBits.data(),
                     wide.size());
    rt::castKernel(DType::F32, half, wide.data(), wantBits.data(), wide.size());
    std::vector<float> back(wide.size()), backWant(wide.size());
    cuda::castKernel(kHost, half, DType::F32, gotBits.data(), back.data(),
                     wide.size());
    rt::castKernel(half, DType::F32, wantBits.data(), backWant.data(),
                   wide.size());
    for (size_t k = 0; k < wide.size(); ++k)
      if (std::isnan(wide[k]))
        EXPECT_TRUE(std::isnan(back[k]) && std::isnan(backWant[k]));
      else
        EXPECT_EQ(gotBits[k], wantBits[k])
            << dtypeName(half) << " element " << k;
  }
  std::vector<int32_t> filled(5);
  fillKernel(kHost, DType::I32, -4, filled.data(), 5);
  EXPECT_EQ(filled, std::vector<int32_t>(5, -4));
}

TEST(CudaHostTest, BroadcastingBinaryMatchesTheCpu) {
  // out[b, h] = fn(lhs[h, b], rhs[h]), and the flat case.
  NamedShape lhs = shape({"h", "b"}, {5, 3}), rhs = shape({"h"}, {5}),
             out = shape({"b", "h"}, {3, 5});
  std::vector<float> l = testData("l", 15), r = testData("r", 5);
  for (size_t i = 0; i < kBinaryFnCount; ++i) {
    BinaryFn fn = static_cast<BinaryFn>(i);
    std::vector<float> got(15), want(15);
    cuda::binaryKernel(kHost, fn, l.data(), r.data(), got.data(),
                       binarySpace(lhs, rhs, out));
    rt::binaryKernel(fn, l.data(), lhs, r.data(), rhs, want.data(), out);
    EXPECT_EQ(got, want) << binaryFnName(fn);
  }
  std::vector<int32_t> a = {7, -1, 3}, b = {3, 7};
  NamedShape as = shape({"b"}, {3}), bs = shape({"a"}, {2}),
             os = shape({"a", "b"}, {2, 3});
  for (BinaryFn fn : {BinaryFn::Eq, BinaryFn::Lt}) {
    std::vector<float> got(6), want(6);
    cuda::compareKernel(kHost, fn, a.data(), b.data(), got.data(),
                        binarySpace(as, bs, os));
    rt::compareKernel(fn, a.data(), as, b.data(), bs, want.data(), os);
    EXPECT_EQ(got, want) << binaryFnName(fn);
  }
  EXPECT_EQ(binarySpace(out, out, out).rank, 1);
}

// simplify() merges dims walked as one and drops dims of size 1, keeping
// every index's offsets; the 32-bit path agrees with the 64-bit one.
TEST(CudaHostTest, SimplifiedSpacesKeepEveryOffset) {
  IterationSpace<2> space;
  // [a=2, b=1, c=3, d=4, e=5]: operand 0 contiguous in a, c, d, e (b has
  // size 1); operand 1 broadcast along a and transposed in d, e.
  space.addDim(2, {60, 0});
  space.addDim(1, {60, 7});
  space.addDim(3, {20, 20});
  space.addDim(4, {5, 1});
  space.addDim(5, {1, 4});
  IterationSpace<2> simple = space;
  simple.simplify();
  EXPECT_EQ(simple.rank, 4); // a | c | d | e: c, d and d, e differ in op 1
  EXPECT_TRUE(simple.narrow);
  IterationSpace<2> wide = simple;
  wide.narrow = false;
  for (int64_t i = 0; i < space.count(); ++i) {
    int64_t want[2], got[2], got64[2];
    space.offsets(i, want);
    simple.offsets(i, got);
    wide.offsets(i, got64);
    ASSERT_EQ(got[0], want[0]) << i;
    ASSERT_EQ(got[1], want[1]) << i;
    ASSERT_EQ(got64[0], want[0]) << i;
    ASSERT_EQ(got64[1], want[1]) << i;
  }
  IterationSpace<1> flat;
  flat.addDim(6, {20});
  flat.addDim(4, {5});
  flat.addDim(5, {1});
  flat.simplify();
  EXPECT_EQ(flat.rank, 1);
  EXPECT_EQ(flat.sizes[0], 120);
  IterationSpace<1> huge;
  huge.addDim(int64_t(1) << 20, {int64_t(1) << 12});
  huge.addDim(4096, {1});
  huge.simplify();
  EXPECT_EQ(huge.rank, 1);
  EXPECT_FALSE(huge.narrow); // 2^32 indices
}

// Maxima and transposes bit for bit; sums to rounding (the CPU adds a
// contiguous row in vector lanes, the host path element by element).
TEST(CudaHostTest, ReductionsAndTransposesMatchTheCpu) {
  NamedShape src = shape({"a", "b", "c", "d"}, {3, 4, 5, 2});
  std::vector<float> x = testData("x", 120);
  for (NamedShape dst :
       {shape({"c", "a"}, {5, 3}), shape({}, {}),
        shape({"d", "c", "b", "a"}, {2, 5, 4, 3}), shape({"b", "d"}, {4, 2})}) {
    for (Reduction fn : {Reduction::Sum, Reduction::Max}) {
      std::vector<float> got(dst.elements()), want(dst.elements());
      ReduceSpaces spaces = reduceSpaces(src, dst);
      cuda::reduceKernel(kHost, fn, x.data(), got.data(), spaces.outer,
                         spaces.inner);
      reducePermute(fn, x.data(), src, want.data(), dst);
      if (fn == Reduction::Sum && dst.elements() < src.elements())
        expectClose(got, want, 1e-6);
      else
        EXPECT_EQ(got, want) << dst.str();
    }
  }
}

TEST(CudaHostTest, RowKernelsMatchTheCpu) {
  NamedShape in = shape({"a", "c", "b"}, {2, 6, 3}),
             out = shape({"b", "a", "c"}, {3, 2, 6});
  std::vector<float> x = testData("x", 36);
  x[0] = 80.0f;
  std::vector<float> got(36), want(36);
  cuda::softmaxKernel(kHost, x.data(), got.data(), inOutRows(in, out, "c"));
  rt::softmaxKernel(x.data(), in, want.data(), out, "c");
  expectClose(got, want, 1e-6);

  NamedShape logits = shape({"classes", "batch"}, {5, 4}),
             labels = shape({"batch"}, {4}), loss = shape({"batch"}, {4});
  std::vector<float> z = testData("z", 20), l1(4), l2(4);
  std::vector<int32_t> y = {0, 4, 2, 1};
  KernelStatus status{kNoFailure};
  RowWalk ce = crossEntropyWalk(logits, labels, loss, "classes");
  cuda::crossEntropyKernel(kHost, z.data(), y.data(), l1.data(), ce, &status);
  rt::crossEntropyKernel(z.data(), logits, y.data(), labels, l2.data(), loss,
                         "classes");
  EXPECT_EQ(status.firstBadRow, kNoFailure);
  expectClose(l1, l2, 1e-6);
  y = {1, 9, -2, 0};
  cuda::crossEntropyKernel(kHost, z.data(), y.data(), l1.data(), ce, &status);
  EXPECT_EQ(status.firstBadRow, 1u);
  EXPECT_EQ(rowOffset(ce, 1, 1), 1);

  NamedShape idx = shape({"batch"}, {3}),
             hot = shape({"classes", "batch"}, {4, 3});
  std::vector<int32_t> ids = {2, 0, 3};
  std::vector<float> h1(12), h2(12);
  status.firstBadRow = kNoFailure;
  cuda::oneHotKernel(kHost, ids.data(), h1.data(),
                     oneHotWalk(idx, hot, "classes"), 0, 4, &status);
  rt::oneHotKernel(ids.data(), idx, h2.data(), hot, "classes", 0, 4);
  EXPECT_EQ(h1, h2);
  EXPECT_EQ(status.firstBadRow, kNoFailure);

  NamedShape scores = shape({"classes", "batch"}, {3, 4}),
             best = shape({"batch"}, {4});
  std::vector<float> s = {1, NAN, NAN, 5, 3, 2, NAN, 5, 3, 7, NAN, 1};
  std::vector<int32_t> a1(4), a2(4);
  cuda::argmaxKernel(kHost, s.data(), a1.data(),
                     argmaxWalk(scores, best, "classes"));
  rt::argmaxKernel(s.data(), scores, a2.data(), best, "classes");
  EXPECT_EQ(a1, a2);

  std::vector<float> lse1(4), lse2(4);
  std::vector<float> r = testData("r", 12);
  cuda::logSumExpKernel(kHost, r.data(), lse1.data(),
                        argmaxWalk(scores, best, "classes"));
  rt::logSumExpKernel(r.data(), scores, lse2.data(), best, "classes");
  EXPECT_EQ(lse1, lse2);
}

TEST(CudaHostTest, RangeAndCumsumMatchTheCpu) {
  for (DType dtype : {DType::F32, DType::I32}) {
    std::vector<int32_t> got(9), want(9);
    rangeKernel(kHost, dtype, got.data(), 9);
    rt::rangeKernel(dtype, want.data(), 9);
    EXPECT_EQ(got, want);
  }
  NamedShape in = shape({"a", "c", "b"}, {2, 6, 3}),
             out = shape({"b", "a", "c"}, {3, 2, 6});
  std::vector<float> x = testData("x", 36);
  for (bool reverse : {false, true}) {
    std::vector<float> got(36), want(36);
    cuda::cumsumKernel(kHost, x.data(), got.data(), inOutRows(in, out, "c"),
                       reverse);
    rt::cumsumKernel(x.data(), in, want.data(), out, "c", reverse);
    EXPECT_EQ(got, want) << reverse;
  }
}

TEST(CudaHostTest, SupportsEveryStepKind) {
  for (size_t kind = 0; kind < kStepKindCount; ++kind)
    EXPECT_TRUE(cudaSupports(static_cast<OpKind>(kind)))
        << opName(static_cast<OpKind>(kind));
}

TEST(CudaHostTest, TopKMatchesTheCpu) {
  NamedShape in = shape({"a", "e", "b"}, {2, 7, 3}),
             out = shape({"b", "a", "e"}, {3, 2, 7});
  std::vector<float> x = testData("x", 42);
  // Ties and NaNs: row (a=0, b=0) has three equal maxima and a NaN.
  x[0 * 21 + 1 * 3] = x[0 * 21 + 4 * 3] = x[0 * 21 + 6 * 3] = 5.0f;
  x[0 * 21 + 2 * 3] = std::nanf("");
  x[1 * 21 + 0 * 3 + 2] = std::nanf("");
  for (int64_t k : {1, 2, 3, 7}) {
    std::vector<float> got(42, 9.0f), want(42, 9.0f);
    cuda::topKKernel(kHost, x.data(), got.data(), inOutRows(in, out, "e"), k);
    rt::topKKernel(x.data(), in, want.data(), out, "e", k);
    EXPECT_EQ(got, want) << k;
  }
}

TEST(CudaHostTest, WindowMatchesTheCpu) {
  // out[b, t, a] = in[a, s = t + offset, b], s of size 6, t of size 4.
  NamedShape in = shape({"a", "s", "b"}, {2, 6, 3}),
             out = shape({"b", "t", "a"}, {3, 4, 2});
  std::vector<float> x = testData("x", 36);
  for (int64_t offset : {-3, 0, 2, 7}) {
    std::vector<float> got(24, 9.0f), want(24, 9.0f);
    cuda::windowKernel(kHost, x.data(), got.data(),
                       windowRows(in, out, "s", "t"), 6, offset);
    rt::windowKernel(x.data(), in, want.data(), out, "s", "t", offset);
    EXPECT_EQ(got, want) << offset;
    // The 16-bit kernel moves bits as they are (any pattern, NaN's too)
    // and pads with +0.
    std::vector<uint16_t> bits(36), got16(24, 9), want16(24, 9);
    for (size_t i = 0; i < bits.size(); ++i)
      bits[i] = static_cast<uint16_t>(0x7fc1 + 977 * i);
    cuda::windowKernel(kHost, bits.data(), got16.data(),
                       windowRows(in, out, "s", "t"), 6, offset);
    rt::windowKernel(bits.data(), in, want16.data(), out, "s", "t", offset);
    EXPECT_EQ(got16, want16) << offset;
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(want16[i] == 0, want[i] == 0.0f) << offset << " " << i;
  }
}

TEST(CudaHostTest, DropoutBlockMatchesTheCpu) {
  // Block [1:3, 4:12] of a [4, 16] mask, stored as [c, a].
  std::vector<meshc::layout::Dim> global = {{"a", 4}, {"c", 16}};
  std::vector<int64_t> offset = {1, 4};
  NamedShape block = shape({"a", "c"}, {2, 8});
  DropoutMask mask(5, "drop", 2, 0.4);
  DropoutParams params{runKey(5, "drop", 2), 0.4, 1.0 / 0.6};
  std::vector<float> got(16), want(16);
  DropoutSpace space = dropoutSpace(global, offset, block);
  cuda::dropoutKernel(kHost, params, space.first, got.data(), space.space);
  rt::dropoutKernel(mask, global, offset, want.data(), block);
  EXPECT_EQ(got, want);
}

TEST(CudaHostTest, GroupReduceCombinesMembersInRankOrder) {
  std::vector<std::vector<float>> members = {
      {1, 2, NAN}, {4, -5, 6}, {7, 8, 9}};
  MemberBuffers buffers;
  buffers.count = 3;
  for (int m = 0; m < 3; ++m)
    buffers.data[m] = members[m].data();
  std::vector<float> out(3);
  groupReduceKernel(kHost, DType::F32, Reduction::Sum, buffers, out.data(), 3);
  EXPECT_EQ(out[0], 12.0f);
  EXPECT_EQ(out[1], 5.0f);
  EXPECT_TRUE(std::isnan(out[2]));
  groupReduceKernel(kHost, DType::F32, Reduction::Max, buffers, out.data(), 2);
  EXPECT_EQ(out[0], 7.0f);
  EXPECT_EQ(out[1], 8.0f);
  std::vector<std::vector<int32_t>> ints = {{1, -3}, {2, 5}};
  MemberBuffers intBuffers;
  intBuffers.count = 2;
  intBuffers.data[0] = ints[0].data();
  intBuffers.data[1] = ints[1].data();
  // In place into member 0, as allReduce does.
  groupReduceKernel(kHost, DType::I32, Reduction::Sum, intBuffers,
                    ints[0].data(), 2);
  EXPECT_EQ(ints[0], (std::vector<int32_t>{3, 2}));
}

/// Runs fused step `step` with buffers `data` (ids in order) on the CPU
/// device and through the CUDA kernel's host path, and compares outputs
/// `outs`.
void expectFusedMatchesTheCpu(const nlohmann::json &step,
                              std::vector<std::vector<float>> data,
                              const std::vector<size_t> &ins,
                              const std::vector<size_t> &outs) {
  StepHarness harness;
  for (const std::vector<float> &buffer : data)
    harness.f32(buffer);
  Program program = harness.load(step);
  harness.run(step);
  std::vector<const void *> in;
  std::vector<void *> out;
  for (size_t id : ins)
    in.push_back(data[id].data());
  for (size_t id : outs)
    out.push_back(data[id].data());
  cuda::fusedKernel(kHost, program.steps[0], in, out);
  for (size_t id : outs) {
    std::vector<float> cpu = harness.readF32(id);
    for (size_t i = 0; i < cpu.size(); ++i)
      ASSERT_NEAR(data[id][i], cpu[i], 1e-5 * std::max(1.0f, std::abs(cpu[i])))
          << "buffer " << id << " element " << i;
  }
}

nlohmann::json fusedOperand(int64_t buf, std::vector<std::string> dims,
                            int value = -1) {
  nlohmann::json operand = {{"buf", buf}, {"dims", dims}};
  if (value >= 0)
    operand["value"] = value;
  return operand;
}

TEST(CudaHostTest, FusedMatchesTheCpu) {
  // Rows: softmax-like exp(x - max) / sum over d of a transposed operand,
  // the row maximum as a second output.
  nlohmann::json rows = {
      {"op", "fused"},
      {"dims", {"b", "d"}},
      {"reduced", 1},
      {"sizes", {{"b", 6}, {"d", 33}}},
      {"in", {fusedOperand(0, {"d", "b"}), fusedOperand(1, {"d"})}},
      {"out", {fusedOperand(2, {"b", "d"}, 7), fusedOperand(3, {"b"}, 2)}},
      {"body",
       {{{"fn", "reduce_max"}, {"args", {0}}},
        {{"fn", "sub"}, {"args", {0, 2}}},
        {{"fn", "exp"}, {"args", {3}}},
        {{"fn", "reduce_sum"}, {"args", {4}}},
        {{"fn", "div"}, {"args", {4, 5}}},
        {{"fn", "mul"}, {"args", {6, 1}}}}}};
  expectFusedMatchesTheCpu(rows,
                           {testData("x", 6 * 33), testData("w", 33),
                            std::vector<float>(6 * 33), std::vector<float>(6)},
                           {0, 1}, {2, 3});
  // Elements: gelu(x) * w + c over [a, b] with w broadcast along a.
  nlohmann::json elements = {
      {"op", "fused"},
      {"dims", {"a", "b"}},
      {"reduced", 0},
      {"sizes", {{"a", 4}, {"b", 700}}},
      {"in", {fusedOperand(0, {"a", "b"}), fusedOperand(1, {"b"})}},
      {"out", {fusedOperand(2, {"b", "a"}, 5)}},
      {"body",
       {{{"fn", "gelu"}, {"args", {0}}},
        {{"fn", "mul"}, {"args", {2, 1}}},
        {{"fn", "const"}, {"value", 0.5}},
        {{"fn", "add"}, {"args", {3, 4}}}}}};
  expectFusedMatchesTheCpu(
      elements,
      {testData("x", 4 * 700), testData("w", 700), std::vector<float>(4 * 700)},
      {0, 1}, {2});
}

TEST(CudaHostTest, FusedReadsAndWritesHalfOperandsAsTheCpu) {
  // A row sum and softmax-like body over bf16 and f16 operands, values
  // rounded per instruction: the kernel's host path equals the CPU device
  // bit for bit (both widen exactly and round to nearest, ties to even).
  for (std::string dtype : {"bf16", "f16"}) {
    SCOPED_TRACE(dtype);
    nlohmann::json step = {
        {"op", "fused"},
        {"dims", {"b", "d"}},
        {"reduced", 1},
        {"sizes", {{"b", 5}, {"d", 40}}},
        {"in", {fusedOperand(0, {"b", "d"}), fusedOperand(1, {"d"})}},
        {"out", {fusedOperand(2, {"b", "d"}, 5), fusedOperand(3, {"b"}, 4)}},
        {"body",
         {{{"fn", "mul"}, {"args", {0, 1}}, {"round", dtype}},
          {{"fn", "exp"}, {"args", {2}}, {"round", dtype}},
          {{"fn", "reduce_sum"}, {"args", {3}}, {"round", dtype}},
          {{"fn", "div"}, {"args", {3, 4}}, {"round", dtype}}}}};
    std::vector<std::vector<float>> data = {
        roundedTo(dtype, testData("x", 5 * 40)),
        roundedTo(dtype, testData("w", 40)), std::vector<float>(5 * 40),
        std::vector<float>(5)};
    StepHarness harness;
    for (const std::vector<float> &buffer : data)
      harness.half(dtype, buffer);
    Program program = harness.load(step);
    harness.run(step);
    auto bits = [&](float v) {
      return dtype == "bf16" ? meshc::half::bf16FromF32(v)
                             : meshc::half::f16FromF32(v);
    };
    std::vector<std::vector<uint16_t>> halves;
    for (const std::vector<float> &buffer : data) {
      halves.emplace_back();
      for (float v : buffer)
        halves.back().push_back(bits(v));
    }
    cuda::fusedKernel(kHost, program.steps[0],
                      {halves[0].data(), halves[1].data()},
                      {halves[2].data(), halves[3].data()});
    for (size_t id : {size_t(2), size_t(3)}) {
      std::vector<float> cpu = harness.readHalf(int64_t(id));
      for (size_t i = 0; i < cpu.size(); ++i)
        ASSERT_EQ(halves[id][i], bits(cpu[i]))
            << "buffer " << id << " element " << i;
    }
  }
}

TEST(CudaHostTest, FusedMergesDimsWalkedAsOne) {
  // The kernel merges adjacent dims that every operand walks as one (a, b
  // and c, d here; e has size 1), but not across the outer/inner boundary
  // (b, c) nor where an operand is transposed (y's c, d).
  nlohmann::json rows = {
      {"op", "fused"},
      {"dims", {"a", "b", "e", "c", "d"}},
      {"reduced", 2},
      {"sizes", {{"a", 3}, {"b", 5}, {"e", 1}, {"c", 4}, {"d", 7}}},
      {"in",
       {fusedOperand(0, {"a", "b", "e", "c", "d"}), fusedOperand(1, {"c", "d"}),
        fusedOperand(4, {"d", "c"})}},
      {"out",
       {fusedOperand(2, {"a", "b", "e", "c", "d"}, 7),
        fusedOperand(3, {"a", "b", "e"}, 4)}},
      {"body",
       {{{"fn", "mul"}, {"args", {0, 1}}},
        {{"fn", "reduce_sum"}, {"args", {3}}},
        {{"fn", "sub"}, {"args", {0, 4}}},
        {{"fn", "reduce_max"}, {"args", {5}}},
        {{"fn", "add"}, {"args", {6, 2}}}}}};
  expectFusedMatchesTheCpu(rows,
                           {testData("x", 3 * 5 * 4 * 7), testData("w", 4 * 7),
                            std::vector<float>(3 * 5 * 4 * 7),
                            std::vector<float>(3 * 5), testData("y", 7 * 4)},
                           {0, 1, 4}, {2, 3});
  // Elements: a, b merge for z and the output but not for the transposed x.
  nlohmann::json elements = {
      {"op", "fused"},
      {"dims", {"a", "b", "c"}},
      {"reduced", 0},
      {"sizes", {{"a", 6}, {"b", 3}, {"c", 5}}},
      {"in",
       {fusedOperand(0, {"b", "a", "c"}), fusedOperand(1, {"a", "b", "c"})}},
      {"out", {fusedOperand(2, {"a", "b", "c"}, 2)}},
      {"body", {{{"fn", "sub"}, {"args", {0, 1}}}}}};
  expectFusedMatchesTheCpu(
      elements, {testData("x", 90), testData("z", 90), std::vector<float>(90)},
      {0, 1}, {2});
}

} // namespace

namespace {

/// The geometry of attention over q [batch, seq, heads, d_k] and k, v
/// [batch, mem, heads, d_k|d_v] (q's dims in `qOrder`), forward or backward.
AttentionGeometry attentionGeometry(bool grad,
                                    std::vector<std::string> qOrder = {
                                        "batch", "seq", "heads", "d_k"}) {
  const std::map<std::string, int64_t> sizes = {{"batch", 2}, {"seq", 8},
                                                {"mem", 8},   {"heads", 3},
                                                {"d_k", 4},   {"d_v", 5}};
  auto shape = [&](std::vector<std::string> names) {
    NamedShape s;
    for (const std::string &name : names)
      s.sizes.push_back(sizes.at(name));
    s.names = std::move(names);
    return s;
  };
  NamedShape q = shape(qOrder), k = shape({"batch", "mem", "heads", "d_k"}),
             v = shape({"batch", "mem", "heads", "d_v"}),
             o = shape({"batch", "seq", "heads", "d_v"}),
             lse = shape({"batch", "seq", "heads"});
  std::array<const NamedShape *, kAttentionOperands> shapes{};
  shapes[kQ] = &q;
  shapes[kK] = &k;
  shapes[kV] = &v;
  if (grad) {
    shapes[kO] = shapes[kDOut] = &o;
    shapes[kLse] = &lse;
    shapes[kDQ] = &q;
    shapes[kDK] = &k;
    shapes[kDV] = &v;
  } else {
    shapes[kO] = &o;
    shapes[kLse] = &lse;
  }
  AttentionGeometry geometry;
  std::optional<AttentionIssue> issue =
      planAttention(shapes, "mem", {"d_k"}, geometry);
  EXPECT_FALSE(issue) << issue->message;
  return geometry;
}

} // namespace

// Which attention steps run through cuBLAS: strided matrices per group, a
// group's scores within the workspace; the last group dim (heads, in k's
// order batch, heads) batched, in chunks the workspace holds.
TEST(CudaHostTest, AttentionTakesTheGemmPathWhereCublasReadsItsOperands) {
  for (bool grad : {false, true}) {
    SCOPED_TRACE(grad ? "attention_grad" : "attention");
    AttentionGeometry geometry = attentionGeometry(grad);
    const int64_t perGroup = (grad ? 2 : 1) * 8 * 8;
    std::optional<AttentionGemmPlan> plan =
        planAttentionGemm(geometry, grad, 1000000);
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->inner, 3);
    EXPECT_EQ(plan->chunk, 3);
    EXPECT_EQ(plan->workspaceFloats, 3 * perGroup);
    EXPECT_EQ(attentionWorkspaceWanted(geometry, grad), 3 * perGroup);
    // Two groups' scores in the workspace: chunks of 2 (then 1).
    plan = planAttentionGemm(geometry, grad, 2 * perGroup + 1);
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->chunk, 2);
    EXPECT_FALSE(planAttentionGemm(geometry, grad, perGroup - 1));
    // q with its head dim outermost: neither of its roles is contiguous.
    AttentionGeometry scattered =
        attentionGeometry(grad, {"d_k", "batch", "seq", "heads"});
    EXPECT_FALSE(planAttentionGemm(scattered, grad, 1000000));
    EXPECT_EQ(attentionWorkspaceWanted(scattered, grad), 0);
    // q with seq innermost: column-major, still readable.
    AttentionGeometry columns =
        attentionGeometry(grad, {"batch", "heads", "d_k", "seq"});
    EXPECT_TRUE(planAttentionGemm(columns, grad, 1000000));
  }
}
