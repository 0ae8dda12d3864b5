//===- Random.cpp - Layout-independent random tensors ---------------------===//
//
// The counter-based generator of Random.h and the walk over a device block
// that maps each block element to its global index.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Random.h"

#include <algorithm>
#include <cmath>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace meshc::runtime {

static constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + kGolden;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

TensorRandom::TensorRandom(uint64_t seed, std::string_view tensorName)
    : streamKey(splitmix64(seed ^ fnv1a64(tensorName))) {}

TensorRandom TensorRandom::withKey(uint64_t key) {
  TensorRandom random;
  random.streamKey = key;
  return random;
}

uint64_t TensorRandom::bits(uint64_t index, unsigned j) const {
  return splitmix64(streamKey + (2 * index + j) * kGolden);
}

double TensorRandom::uniform(uint64_t index, unsigned j) const {
  return static_cast<double>(bits(index, j) >> 11) * 0x1.0p-53;
}

double TensorRandom::normal(uint64_t index) const {
  const double twoPi = 6.283185307179586;
  double radius = std::sqrt(-2.0 * std::log(1.0 - uniform(index, 0)));
  return radius * std::cos(twoPi * uniform(index, 1));
}

int64_t TensorRandom::uniformInt(uint64_t index, int64_t lo, int64_t hi) const {
  double span = static_cast<double>(hi) - static_cast<double>(lo);
  int64_t value =
      lo + static_cast<int64_t>(std::floor(uniform(index, 0) * span));
  return std::min(value, hi - 1);
}

float TensorRandom::value(const InitSpec &spec, uint64_t index) const {
  switch (spec.kind) {
  case InitSpec::Kind::Zeros:
    return 0.0f;
  case InitSpec::Kind::Ones:
    return 1.0f;
  case InitSpec::Kind::Constant:
    return static_cast<float>(spec.a);
  case InitSpec::Kind::Normal:
    return static_cast<float>(spec.a + spec.b * normal(index));
  case InitSpec::Kind::Uniform:
    return static_cast<float>(spec.a + (spec.b - spec.a) * uniform(index, 0));
  }
  return 0.0f;
}

uint64_t runKey(uint64_t seed, std::string_view name, uint64_t run) {
  return splitmix64(TensorRandom(seed, name).key() + run);
}

DropoutMask::DropoutMask(uint64_t seed, std::string_view name, uint64_t run,
                         double rate)
    : random(TensorRandom::withKey(runKey(seed, name, run))), rate(rate),
      keptScale(1.0 / (1.0 - rate)) {}

double dropoutScale(uint64_t seed, std::string_view name, uint64_t run,
                    uint64_t index, double rate) {
  return DropoutMask(seed, name, run, rate).scale(index);
}

std::vector<int64_t> epochPermutation(uint64_t seed, uint64_t epoch,
                                      int64_t n) {
  std::vector<int64_t> order(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i)
    order[i] = i;
  TensorRandom random = TensorRandom::withKey(runKey(seed, "shuffle", epoch));
  for (int64_t i = n - 1; i > 0; --i) {
    int64_t j = std::min(
        static_cast<int64_t>(std::floor(random.uniform(i, 0) * (i + 1))), i);
    std::swap(order[i], order[j]);
  }
  return order;
}

/// Calls `visit(blockIndex, globalIndex)` for every element of the block in
/// row-major block order.
/// Calls visit(i, global) for elements [begin, end) of a block: `i` the
/// element's row-major position in the block, `global` its index in the
/// global tensor.
template <typename Visit>
static void walkBlockRange(const std::vector<int64_t> &globalShape,
                           const std::vector<int64_t> &blockOffset,
                           const std::vector<int64_t> &blockShape,
                           int64_t begin, int64_t end, Visit &visit) {
  size_t rank = blockShape.size();
  std::vector<int64_t> globalStride(rank, 1);
  for (size_t d = rank; d-- > 1;)
    globalStride[d - 1] = globalStride[d] * globalShape[d];
  std::vector<int64_t> index(rank, 0);
  int64_t rest = begin;
  for (size_t d = rank; d-- > 0;) {
    index[d] = rest % blockShape[d];
    rest /= blockShape[d];
  }
  for (int64_t i = begin; i < end; ++i) {
    int64_t global = 0;
    for (size_t d = 0; d < rank; ++d)
      global += (blockOffset[d] + index[d]) * globalStride[d];
    visit(i, static_cast<uint64_t>(global));
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < blockShape[d])
        break;
      index[d] = 0;
    }
  }
}

/// walkBlockRange over the whole block, cut into parts on the machine's
/// threads where it is large: every element is its own counter-based draw,
/// so no value depends on the cut. (A 4096 x 16384 normal() parameter took
/// 9 s on one thread; meshrun spent 35 s initialising a d_model-4096 block
/// on an H100 machine before its first step.)
template <typename Visit>
static void walkBlock(const std::vector<int64_t> &globalShape,
                      const std::vector<int64_t> &blockOffset,
                      const std::vector<int64_t> &blockShape, Visit visit) {
  int64_t count = 1;
  for (int64_t size : blockShape)
    count *= size;
  if (count == 0)
    return;
  constexpr int64_t kPerPart = int64_t(1) << 20;
  int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  int64_t parts = std::min(cores, (count + kPerPart - 1) / kPerPart);
  auto part = [&](int64_t p) {
    walkBlockRange(globalShape, blockOffset, blockShape, count * p / parts,
                   count * (p + 1) / parts, visit);
  };
  std::vector<std::thread> threads;
  for (int64_t p = 1; p < parts; ++p) {
    try {
      threads.emplace_back(part, p);
    } catch (const std::system_error &) {
      part(p); // no thread to be had: this one does it
    }
  }
  if (parts > 0)
    part(0);
  for (std::thread &thread : threads)
    thread.join();
}

void fillBlock(const InitSpec &spec, uint64_t seed, std::string_view name,
               const std::vector<int64_t> &globalShape,
               const std::vector<int64_t> &blockOffset,
               const std::vector<int64_t> &blockShape, float *out) {
  TensorRandom random(seed, name);
  walkBlock(
      globalShape, blockOffset, blockShape,
      [&](int64_t i, uint64_t global) { out[i] = random.value(spec, global); });
}

void fillBlockInt(int64_t lo, int64_t hi, uint64_t seed, std::string_view name,
                  const std::vector<int64_t> &globalShape,
                  const std::vector<int64_t> &blockOffset,
                  const std::vector<int64_t> &blockShape, int32_t *out) {
  TensorRandom random(seed, name);
  walkBlock(globalShape, blockOffset, blockShape,
            [&](int64_t i, uint64_t global) {
              out[i] = static_cast<int32_t>(random.uniformInt(global, lo, hi));
            });
}

} // namespace meshc::runtime
