//===- CudaCollectives.h - Collectives between CUDA devices -----*- C++ -*-===//
//
// Two transports behind runtime/Collectives.h, chosen once per backend:
//
// - virtual: several mesh devices share one GPU (the default when the mesh
//   has more devices than there are GPUs). Each device has its own stream
//   and host thread; the members of a group rendezvous on a host Barrier
//   (as CpuCollectives does), publish their device pointers and move data
//   with device-to-device copies and one reduction kernel that reads every
//   member's buffer. Each reduced element is computed once, by the owner of
//   its chunk, in rank order, so all members end bit-identical.
// - nccl: one mesh device per GPU, one NCCL communicator per group
//   (ncclCommInitAll over the group's GPUs in rank order), NCCL's in-place
//   conventions being the interface's.
//
// MESHC_CUDA_COLLECTIVES=virtual|nccl forces one (nccl needs a GPU per mesh
// device: NCCL 2.28 refuses two ranks of a communicator on one GPU).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_CUDA_CUDACOLLECTIVES_H
#define MESHC_CUDA_CUDACOLLECTIVES_H

#include "runtime/Collectives.h"
#include "runtime/cpu/CpuCollectives.h"

#include <cuda_runtime_api.h>
#ifdef MESHC_HAVE_NCCL
#include <nccl.h>
#endif

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace meshc::runtime::cuda {

/// How the devices of a CUDA backend talk.
enum class CollectiveMode { Virtual, Nccl };
/// "virtual", "nccl".
const char *collectiveModeName(CollectiveMode mode);

/// True when this build has NCCL (MESHC_HAVE_NCCL).
bool haveNccl();

/// The mode for a mesh of `meshDevices` on `gpus` GPUs: `forced` ("virtual",
/// "nccl", or empty for automatic: nccl when the build has NCCL, every mesh
/// device can have its own GPU and there is more than one). Throws
/// RuntimeError for an unknown value, or nccl without NCCL or with too few
/// GPUs.
CollectiveMode chooseCollectiveMode(const std::string &forced,
                                    int64_t meshDevices, int gpus);

/// Where a device's work runs.
struct DeviceContext {
  int gpu = 0;
  cudaStream_t stream = nullptr;
};

/// The collectives of the CUDA backend.
class CudaCollectives : public Collectives {
public:
  explicit CudaCollectives(CollectiveMode mode) : mode(mode) {}
  ~CudaCollectives() override;

  /// Records device `deviceId`'s GPU and stream; every device of a split
  /// must be attached first (CudaDevice::allocate does it).
  void attach(int64_t deviceId, DeviceContext context);

  std::vector<std::unique_ptr<Communicator>>
  split(const GroupPartition &partition) override;
  void abort() override;

private:
  std::vector<std::unique_ptr<Communicator>>
  splitVirtual(const GroupPartition &partition);
  std::vector<std::unique_ptr<Communicator>>
  splitNccl(const GroupPartition &partition);
  DeviceContext contextOf(int64_t deviceId);

  CollectiveMode mode;
  std::mutex mutex;
  std::map<int64_t, DeviceContext> contexts;
  /// Virtual mode: the groups (for abort()).
  std::vector<std::shared_ptr<CpuGroup>> groups;
#ifdef MESHC_HAVE_NCCL
  /// NCCL mode: every communicator made (destroyed or aborted here).
  std::vector<ncclComm_t> ncclComms;
#endif
  /// Set by abort(); NCCL members check it before touching their comm.
  std::shared_ptr<std::atomic<bool>> aborted =
      std::make_shared<std::atomic<bool>>(false);
};

} // namespace meshc::runtime::cuda

#endif // MESHC_CUDA_CUDACOLLECTIVES_H
