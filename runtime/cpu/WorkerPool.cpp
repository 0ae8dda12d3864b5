//===- WorkerPool.cpp - The cores of one CPU device -----------------------===//

#include "runtime/cpu/WorkerPool.h"

#include "runtime/Error.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <system_error>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace meshc::runtime {
namespace {

/// How long a helper (or the caller, for the helpers) spins before it
/// sleeps (or yields): the next step of a device usually comes within it.
constexpr std::chrono::microseconds kSpin{200};

/// One iteration of a spin loop.
void relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

} // namespace

WorkerPool::WorkerPool(int threads) {
  try {
    for (int part = 1; part < threads; ++part)
      helpers.emplace_back([this, part] { helperLoop(part); });
  } catch (const std::system_error &error) {
    stop();
    throw RuntimeError("cannot start helper thread " +
                       std::to_string(helpers.size() + 1) + " of " +
                       std::to_string(threads) + ": " + error.what() +
                       " (MESHC_CPU_THREADS sets fewer)");
  }
}

WorkerPool::~WorkerPool() { stop(); }

void WorkerPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping.store(true, std::memory_order_relaxed);
    generation.fetch_add(1, std::memory_order_release);
    wake.notify_all();
  }
  for (std::thread &helper : helpers)
    helper.join();
  helpers.clear();
}

void WorkerPool::drain(int worker) {
  for (;;) {
    int64_t chunk = next.fetch_add(1, std::memory_order_relaxed);
    if (chunk >= chunks)
      return;
    int64_t begin, end;
    Share{chunk, chunks}.range(units, begin, end);
    try {
      (*body)(begin, end, worker);
    } catch (...) {
      if (!errors[size_t(worker)])
        errors[size_t(worker)] = std::current_exception();
      // The other chunks are not worth running.
      next.store(chunks, std::memory_order_relaxed);
    }
  }
}

void WorkerPool::helperLoop(int worker) {
  uint64_t seen = 0;
  for (;;) {
    auto since = std::chrono::steady_clock::now();
    for (int spins = 0; generation.load(std::memory_order_acquire) == seen;
         ++spins) {
      relax();
      if (spins % 64 != 63 || std::chrono::steady_clock::now() - since < kSpin)
        continue;
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] {
        return generation.load(std::memory_order_acquire) != seen;
      });
    }
    seen = generation.load(std::memory_order_acquire);
    if (stopping.load(std::memory_order_relaxed))
      return;
    drain(worker);
    pending.fetch_sub(1, std::memory_order_release);
  }
}

void WorkerPool::parallelFor(
    int64_t count, int64_t minUnits,
    const std::function<void(int64_t, int64_t, int)> &task) {
  int64_t most = minUnits > 0 ? count / minUnits : count;
  int64_t used = std::max<int64_t>(
      1, std::min<int64_t>(int64_t(threads()) * kChunksPerThread, most));
  if (used == 1 || helpers.empty()) {
    task(0, count, 0);
    return;
  }
  body = &task;
  units = count;
  chunks = used;
  next.store(0, std::memory_order_relaxed);
  errors.assign(size_t(threads()), nullptr);
  pending.store(static_cast<int>(helpers.size()), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex);
    generation.fetch_add(1, std::memory_order_release);
    wake.notify_all();
  }
  drain(0);
  auto since = std::chrono::steady_clock::now();
  for (int spins = 0; pending.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins % 64 == 63 && std::chrono::steady_clock::now() - since > kSpin)
      std::this_thread::yield();
    else
      relax();
  }
  for (const std::exception_ptr &error : errors)
    if (error)
      std::rethrow_exception(error);
}

} // namespace meshc::runtime
