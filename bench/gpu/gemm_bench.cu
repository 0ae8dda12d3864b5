//===- gemm_bench.cu - cuBLAS's best at the benchmark block's GEMMs -------===//
//
// Times every GEMM of one training step of bench/gpu/block_large.mtf (the
// forward projections and MLP, their two backward GEMMs each, and the
// attention's batched matmuls) with cuBLAS on one GPU, three ways:
//   fp32       cublasGemmStridedBatchedEx, CUBLAS_COMPUTE_32F (what meshc
//              runs by default)
//   tf32       the same with CUBLAS_COMPUTE_32F_FAST_TF32 (MESHC_CUDA_TF32=1)
//   tf32-best  cublasLt: the fastest of up to 16 heuristic algorithms
// and prints per-GEMM times and the sum per mode: the GEMM floor of a
// training step, to set meshc's step time (and gemm_large.mtf's) against.
//
// usage: gemm_bench [REPEATS]      (built by cuda/ builds: bin/gemm_bench)
//
//===----------------------------------------------------------------------===//

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#define CHECK_CUDA(call)                                                       \
  do {                                                                         \
    cudaError_t status = (call);                                               \
    if (status != cudaSuccess) {                                               \
      std::fprintf(stderr, "gemm_bench: %s failed at %s:%d: %s\n", #call,      \
                   __FILE__, __LINE__, cudaGetErrorString(status));            \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)
#define CHECK_CUBLAS(call)                                                     \
  do {                                                                         \
    cublasStatus_t status = (call);                                            \
    if (status != CUBLAS_STATUS_SUCCESS) {                                     \
      std::fprintf(stderr, "gemm_bench: %s failed at %s:%d: %s\n", #call,      \
                   __FILE__, __LINE__, cublasGetStatusString(status));         \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

namespace {

/// Row-major C[batch][m x n] = op(A) (m x k) * op(B) (k x n).
struct Gemm {
  const char *name;
  long long batch, m, n, k;
  bool transA, transB;
};

constexpr long long T = 8192, D = 4096, F = 16384, S = 1024, BH = 8 * 32,
                    DK = 128;

const Gemm kGemms[] = {
    // Forward: q, k, v, o projections (4x), MLP in and out.
    {"proj fwd x4", 1, T, D, D, false, false},
    {"mlp_in fwd", 1, T, F, D, false, false},
    {"mlp_out fwd", 1, T, D, F, false, false},
    // Backward: dX = dY W^T and dW = X^T dY of each.
    {"proj dX x4", 1, T, D, D, false, true},
    {"proj dW x4", 1, D, D, T, true, false},
    {"mlp_in dX", 1, T, D, F, false, true},
    {"mlp_in dW", 1, D, F, T, true, false},
    {"mlp_out dX", 1, T, F, D, false, true},
    {"mlp_out dW", 1, F, D, T, true, false},
    // Attention: scores = q k^T, context = w v, and their backward (2 each).
    {"scores fwd", BH, S, S, DK, false, true},
    {"context fwd", BH, S, DK, S, false, false},
    {"scores dq", BH, S, DK, S, false, false},
    {"scores dk", BH, S, DK, S, true, false},
    {"context dw", BH, S, S, DK, false, true},
    {"context dv", BH, S, DK, S, true, false},
};

/// How many times a GEMM occurs in a step.
int multiplicity(const Gemm &g) {
  return std::string_view(g.name).find("x4") != std::string_view::npos ? 4 : 1;
}

template <typename Fn> float timeMs(Fn fn, int repeats) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i)
    fn();
  CHECK_CUDA(cudaEventRecord(start));
  for (int i = 0; i < repeats; ++i)
    fn();
  CHECK_CUDA(cudaEventRecord(stop));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  return ms / repeats;
}

/// As meshc's CudaDevice::runGemm issues it: column-major C^T = B^T A^T.
float timeCublas(cublasHandle_t handle, const Gemm &g, const float *a,
                 const float *b, float *c, bool tf32, int repeats) {
  const float one = 1, zero = 0;
  return timeMs(
      [&] {
        CHECK_CUBLAS(cublasGemmStridedBatchedEx_64(
            handle, g.transB ? CUBLAS_OP_T : CUBLAS_OP_N,
            g.transA ? CUBLAS_OP_T : CUBLAS_OP_N, g.n, g.m, g.k, &one, b,
            CUDA_R_32F, g.transB ? g.k : g.n, g.k * g.n, a, CUDA_R_32F,
            g.transA ? g.m : g.k, g.m * g.k, &zero, c, CUDA_R_32F, g.n,
            g.m * g.n, g.batch,
            tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
            CUBLAS_GEMM_DEFAULT));
      },
      repeats);
}

/// The fastest cublasLt heuristic algorithm (TF32) for `g`.
float timeLtBest(cublasLtHandle_t lt, const Gemm &g, const float *a,
                 const float *b, float *c, void *workspace,
                 size_t workspaceBytes, int repeats) {
  cublasLtMatmulDesc_t desc;
  CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F_FAST_TF32,
                                        CUDA_R_32F));
  cublasOperation_t opB = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                    opA = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                              &opB, sizeof(opB)));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                              &opA, sizeof(opA)));
  // Column-major views: first operand B^T, second A^T, result C^T (n x m).
  auto layout = [&](long long rows, long long cols, long long stride) {
    cublasLtMatrixLayout_t l;
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, rows, cols, rows));
    int batch = static_cast<int>(g.batch);
    CHECK_CUBLAS(cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
    CHECK_CUBLAS(cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
        sizeof(stride)));
    return l;
  };
  cublasLtMatrixLayout_t lb =
      g.transB ? layout(g.k, g.n, g.k * g.n) : layout(g.n, g.k, g.k * g.n);
  cublasLtMatrixLayout_t la =
      g.transA ? layout(g.m, g.k, g.m * g.k) : layout(g.k, g.m, g.m * g.k);
  cublasLtMatrixLayout_t lc = layout(g.n, g.m, g.m * g.n);
  cublasLtMatmulPreference_t preference;
  CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&preference));
  CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes,
      sizeof(workspaceBytes)));
  cublasLtMatmulHeuristicResult_t results[16];
  int found = 0;
  CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(lt, desc, lb, la, lc, lc,
                                              preference, 16, results, &found));
  const float one = 1, zero = 0;
  float best = -1;
  for (int i = 0; i < found; ++i) {
    float ms = timeMs(
        [&] {
          CHECK_CUBLAS(cublasLtMatmul(lt, desc, &one, b, lb, a, la, &zero, c,
                                      lc, c, lc, &results[i].algo, workspace,
                                      workspaceBytes, nullptr));
        },
        repeats);
    if (best < 0 || ms < best)
      best = ms;
  }
  cublasLtMatmulPreferenceDestroy(preference);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(desc);
  return best;
}

} // namespace

int main(int argc, char **argv) {
  int repeats = argc > 1 ? std::atoi(argv[1]) : 10;
  int devices = 0;
  cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    std::fprintf(
        stderr, "gemm_bench: no CUDA device (cudaGetDeviceCount: %s)\n",
        status != cudaSuccess ? cudaGetErrorString(status) : "0 devices");
    return 1;
  }
  size_t largest = 0;
  for (const Gemm &g : kGemms)
    largest =
        std::max({largest, size_t(g.batch * g.m * g.k),
                  size_t(g.batch * g.k * g.n), size_t(g.batch * g.m * g.n)});
  float *a, *b, *c;
  void *workspace;
  const size_t workspaceBytes = size_t(32) << 20;
  CHECK_CUDA(cudaMalloc(&a, largest * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&b, largest * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&c, largest * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&workspace, workspaceBytes));
  CHECK_CUDA(cudaMemset(a, 0, largest * sizeof(float)));
  CHECK_CUDA(cudaMemset(b, 0, largest * sizeof(float)));
  cublasHandle_t handle;
  cublasLtHandle_t lt;
  CHECK_CUBLAS(cublasCreate(&handle));
  CHECK_CUBLAS(cublasLtCreate(&lt));
  CHECK_CUBLAS(cublasSetWorkspace(handle, workspace, workspaceBytes));
  cudaDeviceProp properties;
  CHECK_CUDA(cudaGetDeviceProperties(&properties, 0));
  std::printf("gemm_bench on %s, %d repeats; ms per GEMM (TFLOP/s)\n",
              properties.name, repeats);
  std::printf("%-14s %6s %6s %6s %5s %18s %18s %18s\n", "gemm", "m", "n", "k",
              "batch", "fp32", "tf32", "tf32-best");
  double total[3] = {0, 0, 0};
  for (const Gemm &g : kGemms) {
    double flop = 2.0 * g.batch * g.m * g.n * g.k;
    float ms[3] = {
        timeCublas(handle, g, a, b, c, false, repeats),
        timeCublas(handle, g, a, b, c, true, repeats),
        timeLtBest(lt, g, a, b, c, workspace, workspaceBytes, repeats)};
    std::printf("%-14s %6lld %6lld %6lld %5lld", g.name, g.m, g.n, g.k,
                g.batch);
    for (int i = 0; i < 3; ++i) {
      std::printf("  %7.3f (%6.1f)", ms[i], flop / (ms[i] * 1e9));
      total[i] += ms[i] * multiplicity(g);
    }
    std::printf("\n");
  }
  std::printf("step GEMM total: fp32 %.2f ms, tf32 %.2f ms, tf32-best %.2f "
              "ms\n",
              total[0], total[1], total[2]);
  cublasLtDestroy(lt);
  cublasDestroy(handle);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaFree(workspace);
  return 0;
}
