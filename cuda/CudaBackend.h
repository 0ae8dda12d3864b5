//===- CudaBackend.h - The "cuda" backend -----------------------*- C++ -*-===//
//
// The backend that makes CudaDevices, and how it joins the runtime's
// registry of backends (runtime/Device.cpp). MeshcRuntime does not link the
// CUDA library; a program that wants "cuda" links MeshcCuda and either
// calls registerCudaBackend() or links the MeshcCudaRegistration object
// library, whose static initialiser calls it (meshrun does the latter: an
// object library's objects are always linked, so the registration cannot be
// dropped as an unreferenced archive member).
//
// Environment: MESHC_CUDA_TF32=1 (TF32 GEMMs), MESHC_CUDA_COLLECTIVES=
// virtual|nccl (CudaCollectives.h), MESHC_CUDA_DEVICE=N (the GPU of a
// virtual mesh, default 0), MESHC_CUDA_SYNC=1 (wait after every step,
// CudaDevice.h).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_CUDA_CUDABACKEND_H
#define MESHC_CUDA_CUDABACKEND_H

#include "cuda/CudaCollectives.h"
#include "runtime/Device.h"

#include <memory>
#include <optional>
#include <string>

namespace meshc::runtime {

namespace cuda {

/// Adds "cuda" to createBackend(). Idempotent.
void registerCudaBackend();

/// Empty when a CUDA device is usable, else why not:
/// "cudaGetDeviceCount: CUDA driver version is insufficient ...".
std::string cudaUnavailableReason();

/// The step kinds CudaDevice runs (CudaBackend::supports), without a GPU.
bool cudaSupports(OpKind op);

/// The CUDA backend.
class CudaBackend : public Backend {
public:
  /// Throws RuntimeError("--backend cuda: no CUDA device (...)") when there
  /// is no usable GPU; reads the environment variables above.
  CudaBackend();

  std::string name() const override { return "cuda"; }
  /// The first call fixes the collective mode from the program's mesh size
  /// and the GPU count; device d runs on GPU d in NCCL mode, on
  /// MESHC_CUDA_DEVICE otherwise.
  std::unique_ptr<Device> createDevice(const Program &program,
                                       int64_t deviceId) override;
  /// Valid once a device was created (before that: virtual mode).
  Collectives &collectives() override;
  bool supports(OpKind op) const override { return cudaSupports(op); }
  /// The mode chosen by the first createDevice.
  std::optional<CollectiveMode> collectiveMode() const { return mode; }

private:
  int gpus = 0;
  int virtualGpu = 0;
  bool tf32 = false;
  bool bf16Gemms = true;
  bool syncEveryStep = false;
  bool attentionTiles = false;
  std::string forcedMode;
  std::optional<CollectiveMode> mode;
  std::unique_ptr<CudaCollectives> cudaCollectives;
};

} // namespace cuda
} // namespace meshc::runtime

#endif // MESHC_CUDA_CUDABACKEND_H
