//===- CudaCollectives.cpp - Collectives between CUDA devices -------------===//
//
// The virtual-device transport. A collective is at most three barrier
// phases: (1) every member drains its stream, publishes its buffer and
// waits for the others; (2) each member works on its own buffer only -
// reducing its chunk over all members' buffers, or copying the other
// members' finished chunks - then drains its stream again and waits, so no
// member changes its buffer while another still reads it. In phase 2 of
// allReduce member r writes its chunks j != r and reads the others' chunk j,
// which no one writes then.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaCollectives.h"

#include "cuda/CudaCheck.h"
#include "cuda/CudaKernels.h"
#ifdef MESHC_HAVE_NCCL
#include "cuda/NcclCommunicator.h"
#endif
#include "runtime/Error.h"

namespace meshc::runtime::cuda {

const char *collectiveModeName(CollectiveMode mode) {
  return mode == CollectiveMode::Virtual ? "virtual" : "nccl";
}

bool haveNccl() {
#ifdef MESHC_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

CollectiveMode chooseCollectiveMode(const std::string &forced,
                                    int64_t meshDevices, int gpus) {
  if (forced == "virtual")
    return CollectiveMode::Virtual;
  if (forced == "nccl") {
    if (!haveNccl())
      throw RuntimeError("MESHC_CUDA_COLLECTIVES=nccl: this meshrun was built "
                         "without NCCL (use virtual)");
    if (meshDevices > gpus)
      throw RuntimeError(
          "MESHC_CUDA_COLLECTIVES=nccl: the mesh has " +
          std::to_string(meshDevices) + " devices but there are only " +
          std::to_string(gpus) +
          " GPUs (NCCL needs one GPU per mesh device; use virtual)");
    return CollectiveMode::Nccl;
  }
  if (!forced.empty())
    throw RuntimeError("MESHC_CUDA_COLLECTIVES='" + forced +
                       "' is neither 'virtual' nor 'nccl'");
  return haveNccl() && meshDevices > 1 && meshDevices <= gpus
             ? CollectiveMode::Nccl
             : CollectiveMode::Virtual;
}

namespace {

/// One member's view of a group of devices sharing a GPU.
class VirtualCommunicator : public Communicator {
public:
  VirtualCommunicator(std::shared_ptr<CpuGroup> group, int64_t rank,
                      DeviceContext context)
      : Communicator(rank, static_cast<int64_t>(group->slots.size())),
        group(std::move(group)), context(context) {}

  void allReduce(void *data, int64_t count, DType dtype,
                 Reduction reduction) override {
    int64_t n = size();
    if (n == 1 || count == 0)
      return;
    char *own = static_cast<char *>(data);
    int64_t bytes = dtypeBytes(dtype);
    auto begin = [&](int64_t chunk) { return chunk * count / n * bytes; };
    publish(data);
    int64_t from = begin(rank()), to = begin(rank() + 1);
    groupReduceKernel({context.stream}, dtype, reduction, members(from),
                      own + from, (to - from) / bytes);
    finishPhase();
    for (int64_t j = 0; j < n; ++j)
      if (j != rank())
        copy(own + begin(j), member(j) + begin(j), begin(j + 1) - begin(j));
    finishPhase();
  }

  void reduceScatter(void *data, int64_t chunkCount, DType dtype,
                     Reduction reduction) override {
    if (size() == 1 || chunkCount == 0)
      return;
    int64_t chunkBytes = chunkCount * dtypeBytes(dtype);
    publish(data);
    int64_t from = rank() * chunkBytes;
    groupReduceKernel({context.stream}, dtype, reduction, members(from),
                      static_cast<char *>(data) + from, chunkCount);
    finishPhase();
  }

  void allGather(void *data, int64_t chunkBytes) override {
    if (size() == 1 || chunkBytes == 0)
      return;
    publish(data);
    char *own = static_cast<char *>(data);
    for (int64_t j = 0; j < size(); ++j)
      if (j != rank())
        copy(own + j * chunkBytes, member(j) + j * chunkBytes, chunkBytes);
    finishPhase();
  }

  void allToAll(const void *in, void *out, int64_t chunkBytes) override {
    char *dst = static_cast<char *>(out);
    if (chunkBytes == 0)
      return;
    if (size() == 1) {
      copy(dst, static_cast<const char *>(in), chunkBytes);
      drain();
      return;
    }
    publish(in);
    for (int64_t j = 0; j < size(); ++j)
      copy(dst + j * chunkBytes, member(j) + rank() * chunkBytes, chunkBytes);
    finishPhase();
  }

  void allGatherV(void *data, const std::vector<int64_t> &chunkBytes) override {
    if (size() == 1)
      return;
    std::vector<int64_t> starts = blockStarts(chunkBytes);
    publish(data);
    char *own = static_cast<char *>(data);
    for (int64_t j = 0; j < size(); ++j)
      if (j != rank())
        copy(own + starts[j], member(j) + starts[j], chunkBytes[j]);
    finishPhase();
  }

  void reduceScatterV(void *data, const std::vector<int64_t> &chunkCounts,
                      DType dtype, Reduction reduction) override {
    if (size() == 1)
      return;
    int64_t bytes = dtypeBytes(dtype);
    int64_t from = blockStarts(chunkCounts)[rank()] * bytes;
    publish(data);
    if (chunkCounts[rank()] > 0)
      groupReduceKernel({context.stream}, dtype, reduction, members(from),
                        static_cast<char *>(data) + from, chunkCounts[rank()]);
    finishPhase();
  }

  void allToAllV(const void *in, const std::vector<int64_t> &sendBytes,
                 void *out, const std::vector<int64_t> &receiveBytes) override {
    char *dst = static_cast<char *>(out);
    if (size() == 1) {
      copy(dst, static_cast<const char *>(in), sendBytes[0]);
      drain();
      return;
    }
    std::vector<int64_t> receiveStarts = blockStarts(receiveBytes);
    group->starts[size_t(rank())] = blockStarts(sendBytes);
    publish(in);
    for (int64_t j = 0; j < size(); ++j)
      copy(dst + receiveStarts[j], member(j) + group->starts[size_t(j)][rank()],
           receiveBytes[j]);
    finishPhase();
  }

private:
  void drain() { MESHC_CUDA_CHECK(cudaStreamSynchronize(context.stream)); }
  /// Phase 1: this member's data is complete and visible to the others.
  void publish(const void *data) {
    drain();
    group->slots[rank()] = data;
    group->barrier.wait();
  }
  /// The end of a phase: this member's work is done.
  void finishPhase() {
    drain();
    group->barrier.wait();
  }
  const char *member(int64_t j) const {
    return static_cast<const char *>(group->slots[j]);
  }
  /// Every member's buffer advanced by `offset` bytes, in rank order.
  MemberBuffers members(int64_t offset) const {
    MemberBuffers buffers;
    buffers.count = static_cast<int>(size());
    for (int64_t j = 0; j < size(); ++j)
      buffers.data[j] = member(j) + offset;
    return buffers;
  }
  void copy(char *dst, const char *src, int64_t bytes) {
    if (bytes == 0)
      return;
    MESHC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                                     context.stream));
  }

  std::shared_ptr<CpuGroup> group;
  DeviceContext context;
};

} // namespace

CudaCollectives::~CudaCollectives() {
#ifdef MESHC_HAVE_NCCL
  for (ncclComm_t comm : ncclComms)
    MESHC_NCCL_WARN(ncclCommDestroy(comm));
#endif
}

void CudaCollectives::attach(int64_t deviceId, DeviceContext context) {
  std::lock_guard<std::mutex> lock(mutex);
  contexts[deviceId] = context;
}

DeviceContext CudaCollectives::contextOf(int64_t deviceId) {
  auto it = contexts.find(deviceId);
  if (it == contexts.end())
    throw RuntimeError("cuda collectives: device " + std::to_string(deviceId) +
                       " was not allocated before the communicators were "
                       "made");
  return it->second;
}

std::vector<std::unique_ptr<Communicator>>
CudaCollectives::split(const GroupPartition &partition) {
  std::lock_guard<std::mutex> lock(mutex);
  return mode == CollectiveMode::Virtual ? splitVirtual(partition)
                                         : splitNccl(partition);
}

std::vector<std::unique_ptr<Communicator>>
CudaCollectives::splitVirtual(const GroupPartition &partition) {
  std::vector<std::shared_ptr<CpuGroup>> made;
  for (const std::vector<int64_t> &members : partition.groups) {
    if (members.size() > static_cast<size_t>(kMaxGroup))
      throw RuntimeError(
          "cuda collectives: a group of " + std::to_string(members.size()) +
          " virtual devices exceeds the limit of " + std::to_string(kMaxGroup));
    made.push_back(
        std::make_shared<CpuGroup>(static_cast<int64_t>(members.size())));
  }
  std::vector<std::unique_ptr<Communicator>> communicators;
  for (size_t device = 0; device < partition.groupOf.size(); ++device)
    communicators.push_back(std::make_unique<VirtualCommunicator>(
        made[partition.groupOf[device]], partition.rankOf[device],
        contextOf(static_cast<int64_t>(device))));
  groups.insert(groups.end(), made.begin(), made.end());
  return communicators;
}

std::vector<std::unique_ptr<Communicator>>
CudaCollectives::splitNccl(const GroupPartition &partition) {
#ifndef MESHC_HAVE_NCCL
  (void)partition;
  throw RuntimeError("cuda collectives: this build has no NCCL");
#else
  std::vector<std::unique_ptr<Communicator>> communicators(
      partition.groupOf.size());
  for (const std::vector<int64_t> &members : partition.groups) {
    std::vector<int> gpus;
    std::vector<DeviceContext> memberContexts;
    for (int64_t device : members) {
      memberContexts.push_back(contextOf(device));
      gpus.push_back(memberContexts.back().gpu);
    }
    std::vector<ncclComm_t> comms(members.size(), nullptr);
    MESHC_NCCL_CHECK(ncclCommInitAll(
        comms.data(), static_cast<int>(members.size()), gpus.data()));
    ncclComms.insert(ncclComms.end(), comms.begin(), comms.end());
    for (size_t rank = 0; rank < members.size(); ++rank)
      communicators[members[rank]] = makeNcclCommunicator(
          comms[rank], static_cast<int64_t>(rank),
          static_cast<int64_t>(members.size()), memberContexts[rank], aborted);
  }
  return communicators;
#endif
}

void CudaCollectives::abort() {
  std::lock_guard<std::mutex> lock(mutex);
  for (const std::shared_ptr<CpuGroup> &group : groups)
    group->barrier.abort();
  // ncclCommAbort makes NCCL kernels still waiting for a failed peer return,
  // so members blocked in cudaStreamSynchronize wake up with an error.
  aborted->store(true);
#ifdef MESHC_HAVE_NCCL
  for (ncclComm_t comm : ncclComms)
    MESHC_NCCL_WARN(ncclCommAbort(comm));
  ncclComms.clear();
#endif
}

} // namespace meshc::runtime::cuda
