//===- Bf16Gemm.cpp - bf16 GEMMs on CPUs that have them (oneDNN) ----------===//

#include "runtime/cpu/Bf16Gemm.h"

#include "runtime/EinsumPlan.h"
#include "runtime/cpu/CpuKernels.h"

#include <array>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

#ifdef MESHC_HAVE_DNNL
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace meshc::runtime {

#ifdef MESHC_HAVE_DNNL

namespace {

bool turnedOff() {
  const char *setting = std::getenv("MESHC_CPU_BF16_GEMM");
  return setting && std::string(setting) == "0";
}

/// The CPU engine every device shares.
dnnl::engine &cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

/// Whether the CPU has bf16 dot products oneDNN uses.
bool cpuHasBf16(std::string &isa) {
  dnnl::cpu_isa effective = dnnl::get_effective_cpu_isa();
  switch (effective) {
  case dnnl::cpu_isa::avx512_core_bf16:
    isa = "avx512_core_bf16";
    return true;
  case dnnl::cpu_isa::avx512_core_amx:
    isa = "avx512_core_amx";
    return true;
  default:
    isa = "isa " + std::to_string(static_cast<int>(effective));
    return false;
  }
}

/// oneDNN runs its primitives on OpenMP: each calling thread (a device's
/// pool thread) keeps it to itself, since the pool already shares the GEMM.
/// Looked up at run time, so the runtime does not link OpenMP itself.
void oneThreadHere() {
  thread_local bool done = false;
  if (done)
    return;
  done = true;
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(
          dlsym(RTLD_DEFAULT, "omp_set_num_threads")))
    set(1);
}

/// One part's matmul: A [batch, rows, k], B [batch, k, cols] (either
/// transposed in memory), C [batch, rows, cols], with the whole GEMM's
/// strides.
struct Part {
  dnnl::memory::desc a, b, c, scratchpad;
  dnnl::matmul primitive;
  bool reference = false;
};
using PartKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                           bool, bool>;

/// Makes (or finds: devices share them) the part of `gemm` of `count`
/// batches, `rows` rows and `cols` columns.
std::shared_ptr<const Part> partOf(const GemmStage &gemm, int64_t count,
                                   int64_t rows, int64_t cols) {
  static std::mutex mutex;
  static std::map<PartKey, std::shared_ptr<const Part>> made;
  const int64_t m = gemm.m, n = gemm.n, k = gemm.k;
  PartKey key{count, rows, cols, m, n, k, gemm.transA, gemm.transB};
  std::lock_guard<std::mutex> lock(mutex);
  auto found = made.find(key);
  if (found != made.end())
    return found->second;
  // oneDNN fixes a primitive's threads (and sizes its scratchpad) when it
  // is made: one, as it will run.
  oneThreadHere();
  using dt = dnnl::memory::data_type;
  auto part = std::make_shared<Part>();
  part->a = dnnl::memory::desc({count, rows, k}, dt::bf16,
                               gemm.transA ? dnnl::memory::dims{m * k, 1, m}
                                           : dnnl::memory::dims{m * k, k, 1});
  part->b = dnnl::memory::desc({count, k, cols}, dt::bf16,
                               gemm.transB ? dnnl::memory::dims{k * n, 1, k}
                                           : dnnl::memory::dims{k * n, n, 1});
  part->c = dnnl::memory::desc({count, rows, cols}, dt::f32,
                               dnnl::memory::dims{m * n, n, 1});
  // The scratchpad is the caller's (each thread's own): a primitive's
  // library-owned one would be shared by the devices and threads running it
  // at once.
  dnnl::primitive_attr attributes;
  attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::matmul::primitive_desc described(
      dnnl::matmul::desc(part->a, part->b, part->c), attributes, cpuEngine());
  part->scratchpad = described.scratchpad_desc();
  part->reference =
      std::string(described.impl_info_str()).find("ref") != std::string::npos;
  part->primitive = dnnl::matmul(described);
  made[key] = part;
  return part;
}

} // namespace

struct Bf16Gemms::Impl {
  struct Step {
    /// The step planned (find() answers for it alone).
    const runtime::Step *step = nullptr;
    Planned planned;
    /// Per part: its matmul and the element offsets of its A, B and C.
    std::vector<std::shared_ptr<const Part>> parts;
    std::vector<std::array<int64_t, 3>> offsets;
  };
  std::map<size_t, Step> steps;
};

bool bf16GemmsAvailable() {
  static const bool available = [] {
    std::string isa;
    return !turnedOff() && cpuHasBf16(isa);
  }();
  return available;
}

std::string bf16GemmsDescription() {
  const dnnl_version_t *version = dnnl_version();
  std::string library = "oneDNN " + std::to_string(version->major) + "." +
                        std::to_string(version->minor) + "." +
                        std::to_string(version->patch);
  std::string isa;
  if (!cpuHasBf16(isa))
    return library + ": the CPU has no bf16 dot products (" + isa + ")";
  if (turnedOff())
    return library + " on " + isa + ", turned off by MESHC_CPU_BF16_GEMM=0";
  return library + " on " + isa;
}

Bf16Gemms::Bf16Gemms(const Program &program, int threads)
    : impl(std::make_unique<Impl>()) {
  if (!bf16GemmsAvailable())
    return;
  for (size_t index = 0; index < program.stepCount(); ++index) {
    const runtime::Step &step = program.step(index);
    Impl::Step planned;
    planned.step = &step;
    if (!directBf16Gemm(program, step, planned.planned.aInput,
                        planned.planned.bInput))
      continue;
    const GemmStage &gemm = step.as<EinsumAttrs>().plan.stages[0].gemm;
    const int64_t m = gemm.m, n = gemm.n, k = gemm.k;
    // The parts runGemm cuts the GEMM into: batches, or each batch's rows
    // (m >= n) or columns, one part after another.
    int64_t parts = gemmParts(gemm, threads == 1 ? 1 : 2 * threads);
    planned.planned.parts = parts;
    bool reference = false;
    try {
      for (int64_t p = 0; p < parts; ++p) {
        int64_t first, last;
        Share share{p, parts};
        std::shared_ptr<const Part> part;
        std::array<int64_t, 3> offset{};
        if (parts == 1 || gemm.batch >= parts) {
          share.range(gemm.batch, first, last);
          part = partOf(gemm, last - first, m, n);
          offset = {first * m * k, first * k * n, first * m * n};
        } else if (m >= n) {
          share.range(m, first, last);
          part = partOf(gemm, 1, last - first, n);
          offset = {gemm.transA ? first : first * k, 0, first * n};
        } else {
          share.range(n, first, last);
          part = partOf(gemm, 1, m, last - first);
          offset = {0, gemm.transB ? first * k : first, first};
        }
        reference |= part->reference;
        planned.parts.push_back(part);
        planned.offsets.push_back(offset);
      }
    } catch (const dnnl::error &) {
      // A matmul oneDNN cannot make leaves the einsum on sgemm.
      continue;
    }
    // A layout oneDNN has only its reference kernel for stays on sgemm.
    if (!reference)
      impl->steps.emplace(step.index, std::move(planned));
  }
}

Bf16Gemms::~Bf16Gemms() = default;

const Bf16Gemms::Planned *Bf16Gemms::find(const runtime::Step &step) const {
  auto found = impl->steps.find(step.index);
  return found == impl->steps.end() || found->second.step != &step
             ? nullptr
             : &found->second.planned;
}

size_t Bf16Gemms::count() const { return impl->steps.size(); }

void Bf16Gemms::run(const runtime::Step &step, const uint16_t *a,
                    const uint16_t *b, float *c, Share share) const {
  const Impl::Step &planned = impl->steps.at(step.index);
  const GemmStage &gemm = step.as<EinsumAttrs>().plan.stages[0].gemm;
  const Part &part = *planned.parts[size_t(share.part)];
  const std::array<int64_t, 3> &offset = planned.offsets[size_t(share.part)];
  oneThreadHere();
  thread_local dnnl::stream stream(cpuEngine());
  thread_local std::vector<char> scratchpad;
  if (scratchpad.size() < part.scratchpad.get_size())
    scratchpad.resize(part.scratchpad.get_size());
  dnnl::memory scratchpadMemory(part.scratchpad, cpuEngine(),
                                scratchpad.data());
  // With the batch shared the part's own offsets say it all; with rows or
  // columns shared, the part runs once per batch.
  bool perBatch =
      !(planned.planned.parts == 1 || gemm.batch >= planned.planned.parts);
  int64_t batches = perBatch ? gemm.batch : 1;
  for (int64_t p = 0; p < batches; ++p) {
    const int64_t m = gemm.m, n = gemm.n, k = gemm.k;
    int64_t at = perBatch ? p : 0;
    dnnl::memory aMemory(part.a, cpuEngine(),
                         const_cast<uint16_t *>(a + at * m * k + offset[0]));
    dnnl::memory bMemory(part.b, cpuEngine(),
                         const_cast<uint16_t *>(b + at * k * n + offset[1]));
    dnnl::memory cMemory(part.c, cpuEngine(), c + at * m * n + offset[2]);
    part.primitive.execute(stream, {{DNNL_ARG_SRC, aMemory},
                                    {DNNL_ARG_WEIGHTS, bMemory},
                                    {DNNL_ARG_DST, cMemory},
                                    {DNNL_ARG_SCRATCHPAD, scratchpadMemory}});
  }
  stream.wait();
}

#else // without oneDNN

struct Bf16Gemms::Impl {};

bool bf16GemmsAvailable() { return false; }

std::string bf16GemmsDescription() { return "built without oneDNN"; }

Bf16Gemms::Bf16Gemms(const Program &, int) {}

Bf16Gemms::~Bf16Gemms() = default;

const Bf16Gemms::Planned *Bf16Gemms::find(const Step &) const {
  return nullptr;
}

size_t Bf16Gemms::count() const { return 0; }

void Bf16Gemms::run(const Step &, const uint16_t *, const uint16_t *, float *,
                    Share) const {}

#endif

} // namespace meshc::runtime
