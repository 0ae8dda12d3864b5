//===- NcclCommunicator.cpp - A Communicator over NCCL --------------------===//
//
// In place as NCCL defines it: reduceScatter's output is chunk rank() of its
// input, allGather's input is chunk rank() of its output. Each call waits
// for its stream, so a collective has finished (or failed) when it returns,
// as the interface promises.
//
//===----------------------------------------------------------------------===//

#include "cuda/NcclCommunicator.h"

#include "cuda/CudaCheck.h"
#include "runtime/Error.h"

namespace meshc::runtime::cuda {

namespace {

ncclDataType_t ncclType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return ncclFloat32;
  case DType::I32:
    return ncclInt32;
  case DType::BF16:
    return ncclBfloat16;
  case DType::F16:
    return ncclFloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t ncclOp(Reduction reduction) {
  return reduction == Reduction::Sum ? ncclSum : ncclMax;
}

class NcclCommunicator : public Communicator {
public:
  NcclCommunicator(ncclComm_t comm, int64_t rank, int64_t size,
                   DeviceContext context,
                   std::shared_ptr<std::atomic<bool>> aborted)
      : Communicator(rank, size), comm(comm), context(context),
        aborted(std::move(aborted)) {}

  void allReduce(void *data, int64_t count, DType dtype,
                 Reduction reduction) override {
    if (count == 0)
      return;
    start();
    MESHC_NCCL_CHECK(ncclAllReduce(data, data, static_cast<size_t>(count),
                                   ncclType(dtype), ncclOp(reduction), comm,
                                   context.stream));
    finish();
  }

  void reduceScatter(void *data, int64_t chunkCount, DType dtype,
                     Reduction reduction) override {
    if (chunkCount == 0)
      return;
    start();
    char *own =
        static_cast<char *>(data) + rank() * chunkCount * dtypeBytes(dtype);
    MESHC_NCCL_CHECK(ncclReduceScatter(
        data, own, static_cast<size_t>(chunkCount), ncclType(dtype),
        ncclOp(reduction), comm, context.stream));
    finish();
  }

  void allGather(void *data, int64_t chunkBytes) override {
    if (chunkBytes == 0)
      return;
    start();
    const char *own = static_cast<char *>(data) + rank() * chunkBytes;
    MESHC_NCCL_CHECK(ncclAllGather(own, data, static_cast<size_t>(chunkBytes),
                                   ncclChar, comm, context.stream));
    finish();
  }

  void allToAll(const void *in, void *out, int64_t chunkBytes) override {
    if (chunkBytes == 0)
      return;
    start();
    MESHC_NCCL_CHECK(ncclAlltoAll(in, out, static_cast<size_t>(chunkBytes),
                                  ncclChar, comm, context.stream));
    finish();
  }

private:
  void start() {
    if (aborted->load())
      throw CollectiveAborted();
    MESHC_CUDA_CHECK(cudaSetDevice(context.gpu));
  }
  void finish() {
    cudaError_t status = cudaStreamSynchronize(context.stream);
    if (status != cudaSuccess && aborted->load())
      throw CollectiveAborted();
    MESHC_CUDA_CHECK(status);
  }

  ncclComm_t comm;
  DeviceContext context;
  std::shared_ptr<std::atomic<bool>> aborted;
};

} // namespace

std::unique_ptr<Communicator>
makeNcclCommunicator(ncclComm_t comm, int64_t rank, int64_t size,
                     DeviceContext context,
                     std::shared_ptr<std::atomic<bool>> aborted) {
  return std::make_unique<NcclCommunicator>(comm, rank, size, context,
                                            std::move(aborted));
}

} // namespace meshc::runtime::cuda
