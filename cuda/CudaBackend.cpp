//===- CudaBackend.cpp - The "cuda" backend -------------------------------===//
//
// Device discovery, the environment variables and the registration with
// the runtime's backend registry.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaBackend.h"

#include "cuda/CudaCheck.h"
#include "cuda/CudaDevice.h"
#include "runtime/Error.h"

#include <cstdlib>

namespace meshc::runtime::cuda {

namespace {

/// The value of environment variable `name`, or "".
std::string environment(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

/// The number of usable GPUs, or the reason there is none.
int countGpus(std::string &reason) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status);
    return 0;
  }
  if (count == 0)
    reason = "cudaGetDeviceCount: 0 devices";
  return count;
}

/// Environment variable `name`: unset, "0" or "1".
bool booleanVariable(const char *name) {
  std::string value = environment(name);
  if (value != "" && value != "0" && value != "1")
    throw RuntimeError(std::string(name) + "='" + value + "' must be 0 or 1");
  return value == "1";
}

std::unique_ptr<Backend> makeCudaBackend() {
  return std::make_unique<CudaBackend>();
}

} // namespace

bool cudaSupports(OpKind) {
  // Every kind: CudaDevice::runKernels has a case for each kind of
  // StepKinds.def (a loop's body steps, which the session runs one by one,
  // with its buffers moved by RunContext::shifts).
  return true;
}

void registerCudaBackend() { registerBackend("cuda", &makeCudaBackend); }

std::string cudaUnavailableReason() {
  std::string reason;
  countGpus(reason);
  return reason;
}

/// The ranks of the mpirun this process runs under (1 when none).
static int64_t mpiRanks() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    std::string value = environment(name);
    if (!value.empty())
      return std::atoll(value.c_str());
  }
  return 1;
}

CudaBackend::CudaBackend() {
  // The MPI transport moves host memory; handing it device pointers would
  // crash, so refuse before anything runs.
  if (int64_t ranks = mpiRanks(); ranks > 1)
    throw RuntimeError("--backend cuda does not run under mpirun yet (" +
                       std::to_string(ranks) +
                       " ranks): run one meshrun process, whose mesh devices "
                       "share a GPU or use one GPU each through NCCL");
  std::string reason;
  gpus = countGpus(reason);
  if (gpus == 0)
    throw RuntimeError("--backend cuda: no CUDA device (" + reason + ")");
  tf32 = booleanVariable("MESHC_CUDA_TF32");
  // bf16 GEMMs on the tensor cores unless MESHC_CUDA_BF16_GEMM=0 (to compare
  // with the widened f32 path).
  bf16Gemms = environment("MESHC_CUDA_BF16_GEMM") != "0";
  booleanVariable("MESHC_CUDA_BF16_GEMM"); // refuses values other than 0, 1
  // Documented since the backend began, but read nowhere until it first ran
  // on a GPU (a trace under it timed only launches).
  syncEveryStep = booleanVariable("MESHC_CUDA_SYNC");
  attentionTiles = booleanVariable("MESHC_CUDA_ATTENTION_TILES");
  forcedMode = environment("MESHC_CUDA_COLLECTIVES");
  std::string device = environment("MESHC_CUDA_DEVICE");
  if (!device.empty()) {
    char *end = nullptr;
    long value = std::strtol(device.c_str(), &end, 10);
    if (*end != '\0' || value < 0 || value >= gpus)
      throw RuntimeError("MESHC_CUDA_DEVICE='" + device +
                         "' is not a GPU index in [0, " + std::to_string(gpus) +
                         ")");
    virtualGpu = static_cast<int>(value);
  }
}

std::unique_ptr<Device> CudaBackend::createDevice(const Program &program,
                                                  int64_t deviceId) {
  if (!mode) {
    mode = chooseCollectiveMode(forcedMode, program.mesh.numDevices(), gpus);
    cudaCollectives = std::make_unique<CudaCollectives>(*mode);
  }
  int gpu =
      *mode == CollectiveMode::Nccl ? static_cast<int>(deviceId) : virtualGpu;
  return std::make_unique<CudaDevice>(program, deviceId, gpu, tf32, bf16Gemms,
                                      syncEveryStep, attentionTiles,
                                      *cudaCollectives);
}

Collectives &CudaBackend::collectives() {
  if (!mode) {
    mode = CollectiveMode::Virtual;
    cudaCollectives = std::make_unique<CudaCollectives>(*mode);
  }
  return *cudaCollectives;
}

} // namespace meshc::runtime::cuda
