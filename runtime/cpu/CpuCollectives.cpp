//===- CpuCollectives.cpp - In-process collectives between threads --------===//
//
// The ring all-reduce over n members: in reduce-scatter phase s (0 <= s <
// n - 1) member r adds chunk (r - s - 1) mod n of its left neighbour into its
// own, after which member r holds the reduced chunk r + 1; in all-gather
// phase s it copies chunk (r - s) mod n from its left neighbour. In every
// phase the chunk a member writes differs from the chunk its right neighbour
// reads from it, so one barrier per phase is all the synchronisation needed.
// Each reduced chunk is computed once and then copied, so all members end
// with bit-identical values.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/CpuCollectives.h"

#include "runtime/core/HalfFloat.h"

#include "runtime/Error.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace meshc::runtime {

void Barrier::wait() {
  if (aborted.load(std::memory_order_acquire))
    throw CollectiveAborted();
  // The phase cannot advance before this thread arrives.
  uint64_t myPhase = phase.load(std::memory_order_acquire);
  if (arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == count) {
    arrived.store(0, std::memory_order_relaxed);
    // Notified under the lock: a released member may leave (and the group
    // end) only after this thread is done with the barrier.
    std::lock_guard<std::mutex> lock(mutex);
    phase.store(myPhase + 1, std::memory_order_release);
    released.notify_all();
    return;
  }
  if (spin) {
    constexpr std::chrono::microseconds kSpin{100};
    auto since = std::chrono::steady_clock::now();
    for (int spins = 1;; ++spins) {
      if (phase.load(std::memory_order_acquire) != myPhase)
        return;
      if (aborted.load(std::memory_order_acquire))
        throw CollectiveAborted();
      if (spins % 64 == 0 && std::chrono::steady_clock::now() - since > kSpin)
        break;
#if defined(__x86_64__) || defined(__i386__)
      _mm_pause();
#endif
    }
  }
  std::unique_lock<std::mutex> lock(mutex);
  released.wait(lock, [&] {
    return phase.load(std::memory_order_acquire) != myPhase ||
           aborted.load(std::memory_order_acquire);
  });
  if (phase.load(std::memory_order_acquire) == myPhase)
    throw CollectiveAborted();
}

void Barrier::abort() {
  std::lock_guard<std::mutex> lock(mutex);
  aborted.store(true, std::memory_order_release);
  released.notify_all();
}

CpuCommunicator::CpuCommunicator(std::shared_ptr<CpuGroup> group, int64_t rank)
    : Communicator(rank, static_cast<int64_t>(group->slots.size())),
      group(std::move(group)) {}

const char *CpuCommunicator::publish(const void *data) {
  group->slots[rank()] = data;
  group->barrier.wait();
  return static_cast<const char *>(
      group->slots[(rank() + size() - 1) % size()]);
}

/// `x` modulo `n` in [0, n).
static int64_t wrap(int64_t x, int64_t n) { return ((x % n) + n) % n; }

template <typename T>
static void combine(char *dst, const char *src, int64_t begin, int64_t end,
                    Reduction reduction) {
  T *d = reinterpret_cast<T *>(dst);
  const T *s = reinterpret_cast<const T *>(src);
  if (reduction == Reduction::Sum)
    for (int64_t i = begin; i < end; ++i)
      d[i] += s[i];
  else
    for (int64_t i = begin; i < end; ++i)
      d[i] = std::max(d[i], s[i]);
}

/// combine for a 16-bit float type (half::combine).
template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
static void combineHalf(char *dst, const char *src, int64_t begin, int64_t end,
                        Reduction reduction) {
  half::combine<Load, Store>(reinterpret_cast<uint16_t *>(dst) + begin,
                             reinterpret_cast<const uint16_t *>(src) + begin,
                             end - begin, reduction == Reduction::Max);
}

static void combineRange(DType dtype, char *dst, const char *src, int64_t begin,
                         int64_t end, Reduction reduction) {
  switch (dtype) {
  case DType::F32:
    return combine<float>(dst, src, begin, end, reduction);
  case DType::I32:
    return combine<int32_t>(dst, src, begin, end, reduction);
  case DType::BF16:
    return combineHalf<half::f32FromBf16, half::bf16FromF32>(dst, src, begin,
                                                             end, reduction);
  case DType::F16:
    return combineHalf<half::f32FromF16, half::f16FromF32>(dst, src, begin, end,
                                                           reduction);
  }
}

void CpuCommunicator::allReduce(void *data, int64_t count, DType dtype,
                                Reduction reduction) {
  int64_t n = size();
  if (n == 1 || count == 0)
    return;
  char *own = static_cast<char *>(data);
  const char *left = publish(data);
  int64_t elementBytes = dtypeBytes(dtype);
  auto begin = [&](int64_t chunk) { return chunk * count / n; };
  for (int64_t s = 0; s + 1 < n; ++s) {
    int64_t chunk = wrap(rank() - s - 1, n);
    combineRange(dtype, own, left, begin(chunk), begin(chunk + 1), reduction);
    group->barrier.wait();
  }
  // Member r now holds the reduced chunk r + 1; pass the chunks around.
  for (int64_t s = 0; s + 1 < n; ++s) {
    int64_t chunk = wrap(rank() - s, n);
    int64_t from = begin(chunk) * elementBytes;
    std::memcpy(own + from, left + from,
                (begin(chunk + 1) - begin(chunk)) * elementBytes);
    group->barrier.wait();
  }
}

void CpuCommunicator::reduceScatter(void *data, int64_t chunkCount, DType dtype,
                                    Reduction reduction) {
  reduceScatterV(data, std::vector<int64_t>(size_t(size()), chunkCount), dtype,
                 reduction);
}

void CpuCommunicator::allGather(void *data, int64_t chunkBytes) {
  allGatherV(data, std::vector<int64_t>(size_t(size()), chunkBytes));
}

void CpuCommunicator::allToAll(const void *in, void *out, int64_t chunkBytes) {
  std::vector<int64_t> chunks(size_t(size()), chunkBytes);
  allToAllV(in, chunks, out, chunks);
}

/// Whether every count is 0: then no member takes part in any phase.
static bool allZero(const std::vector<int64_t> &counts) {
  return std::all_of(counts.begin(), counts.end(),
                     [](int64_t count) { return count == 0; });
}

void CpuCommunicator::reduceScatterV(void *data,
                                     const std::vector<int64_t> &chunkCounts,
                                     DType dtype, Reduction reduction) {
  int64_t n = size();
  if (n == 1 || allZero(chunkCounts))
    return;
  std::vector<int64_t> starts = blockStarts(chunkCounts);
  char *own = static_cast<char *>(data);
  const char *left = publish(data);
  // Shifted by one against allReduce so that member r ends with chunk r.
  for (int64_t s = 0; s + 1 < n; ++s) {
    size_t chunk = size_t(wrap(rank() - s - 2, n));
    combineRange(dtype, own, left, starts[chunk],
                 starts[chunk] + chunkCounts[chunk], reduction);
    group->barrier.wait();
  }
}

void CpuCommunicator::allGatherV(void *data,
                                 const std::vector<int64_t> &chunkBytes) {
  int64_t n = size();
  if (n == 1 || allZero(chunkBytes))
    return;
  std::vector<int64_t> starts = blockStarts(chunkBytes);
  char *own = static_cast<char *>(data);
  const char *left = publish(data);
  for (int64_t s = 0; s + 1 < n; ++s) {
    size_t chunk = size_t(wrap(rank() - s - 1, n));
    std::memcpy(own + starts[chunk], left + starts[chunk], chunkBytes[chunk]);
    group->barrier.wait();
  }
}

void CpuCommunicator::allToAllV(const void *in,
                                const std::vector<int64_t> &sendBytes,
                                void *out,
                                const std::vector<int64_t> &receiveBytes) {
  int64_t n = size();
  char *dst = static_cast<char *>(out);
  // (Zero-byte blocks may come with null buffers: memcpy is not called
  // for them, as passing it a null pointer is undefined even for 0 bytes.)
  if (n == 1) {
    if (sendBytes[0] > 0)
      std::memcpy(dst, in, size_t(sendBytes[0]));
    return;
  }
  // Zero on one member means zero on all only for the equal form; a
  // variable exchange always meets.
  group->starts[size_t(rank())] = blockStarts(sendBytes);
  publish(in);
  int64_t at = 0;
  for (int64_t peer = 0; peer < n; ++peer) {
    const std::vector<int64_t> &theirs = group->starts[size_t(peer)];
    if (receiveBytes[peer] > 0)
      std::memcpy(dst + at,
                  static_cast<const char *>(group->slots[peer]) +
                      theirs[size_t(rank())],
                  size_t(receiveBytes[peer]));
    at += receiveBytes[peer];
  }
  // Nobody may overwrite its `in` (or its starts) before every peer has
  // read from it.
  group->barrier.wait();
}

std::vector<std::unique_ptr<Communicator>>
CpuCollectives::split(const GroupPartition &partition) {
  std::vector<std::shared_ptr<CpuGroup>> made;
  for (const std::vector<int64_t> &members : partition.groups)
    made.push_back(std::make_shared<CpuGroup>(
        static_cast<int64_t>(members.size()), spinning));
  std::vector<std::unique_ptr<Communicator>> communicators;
  for (size_t device = 0; device < partition.groupOf.size(); ++device)
    communicators.push_back(std::make_unique<CpuCommunicator>(
        made[partition.groupOf[device]], partition.rankOf[device]));
  std::lock_guard<std::mutex> lock(mutex);
  groups.insert(groups.end(), made.begin(), made.end());
  return communicators;
}

void CpuCollectives::abort() {
  std::lock_guard<std::mutex> lock(mutex);
  for (const std::shared_ptr<CpuGroup> &group : groups)
    group->barrier.abort();
}

} // namespace meshc::runtime
