//===- NcclCommunicator.h - A Communicator over NCCL ------------*- C++ -*-===//
//
// One member of an NCCL communicator, enqueuing on its device's stream. The
// runtime's chunk conventions are NCCL's in-place ones, so every call maps
// to one NCCL collective.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_CUDA_NCCLCOMMUNICATOR_H
#define MESHC_CUDA_NCCLCOMMUNICATOR_H

#include "cuda/CudaCollectives.h"

#include <memory>

namespace meshc::runtime::cuda {

/// Member `rank` of `size` on `comm` (not owned: CudaCollectives destroys
/// it), working on `context`'s GPU and stream. Once `aborted` is set, every
/// call throws CollectiveAborted instead of touching `comm`.
std::unique_ptr<Communicator>
makeNcclCommunicator(ncclComm_t comm, int64_t rank, int64_t size,
                     DeviceContext context,
                     std::shared_ptr<std::atomic<bool>> aborted);

} // namespace meshc::runtime::cuda

#endif // MESHC_CUDA_NCCLCOMMUNICATOR_H
