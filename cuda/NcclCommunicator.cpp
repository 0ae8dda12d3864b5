//===- NcclCommunicator.cpp - A Communicator over NCCL --------------------===//
//
// In place as NCCL defines it: reduceScatter's output is chunk rank() of its
// input, allGather's input is chunk rank() of its output. Each call waits
// for its stream, so a collective has finished (or failed) when it returns,
// as the interface promises. The variable-count forms (unequal blocks under
// device weights) group rooted or point-to-point calls, one per chunk.
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

  // The variable-count forms are grouped point-to-point and rooted calls:
  // chunk i is member i's broadcast (allGatherV) or the reduction rooted at
  // member i (reduceScatterV), each in place.
  void allGatherV(void *data, const std::vector<int64_t> &chunkBytes) override {
    std::vector<int64_t> starts = blockStarts(chunkBytes);
    start();
    MESHC_NCCL_CHECK(ncclGroupStart());
    for (size_t i = 0; i < chunkBytes.size(); ++i) {
      char *chunk = static_cast<char *>(data) + starts[i];
      if (chunkBytes[i] > 0)
        MESHC_NCCL_CHECK(ncclBroadcast(chunk, chunk, size_t(chunkBytes[i]),
                                       ncclChar, int(i), comm, context.stream));
    }
    MESHC_NCCL_CHECK(ncclGroupEnd());
    finish();
  }

  void reduceScatterV(void *data, const std::vector<int64_t> &chunkCounts,
                      DType dtype, Reduction reduction) override {
    std::vector<int64_t> starts = blockStarts(chunkCounts);
    int64_t elementBytes = dtypeBytes(dtype);
    start();
    MESHC_NCCL_CHECK(ncclGroupStart());
    for (size_t i = 0; i < chunkCounts.size(); ++i) {
      char *chunk = static_cast<char *>(data) + starts[i] * elementBytes;
      if (chunkCounts[i] > 0)
        MESHC_NCCL_CHECK(ncclReduce(chunk, chunk, size_t(chunkCounts[i]),
                                    ncclType(dtype), ncclOp(reduction), int(i),
                                    comm, context.stream));
    }
    MESHC_NCCL_CHECK(ncclGroupEnd());
    finish();
  }

  void allToAllV(const void *in, const std::vector<int64_t> &sendBytes,
                 void *out, const std::vector<int64_t> &receiveBytes) override {
    std::vector<int64_t> sendStarts = blockStarts(sendBytes);
    std::vector<int64_t> receiveStarts = blockStarts(receiveBytes);
    start();
    MESHC_NCCL_CHECK(ncclGroupStart());
    for (size_t peer = 0; peer < sendBytes.size(); ++peer) {
      if (sendBytes[peer] > 0)
        MESHC_NCCL_CHECK(
            ncclSend(static_cast<const char *>(in) + sendStarts[peer],
                     size_t(sendBytes[peer]), ncclChar, int(peer), comm,
                     context.stream));
      if (receiveBytes[peer] > 0)
        MESHC_NCCL_CHECK(
            ncclRecv(static_cast<char *>(out) + receiveStarts[peer],
                     size_t(receiveBytes[peer]), ncclChar, int(peer), comm,
                     context.stream));
    }
    MESHC_NCCL_CHECK(ncclGroupEnd());
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
