//===- CpuDevice.cpp - The CPU backend ------------------------------------===//
//
// Step dispatch for CPU devices. Collectives that move a dim's blocks first
// pack them into contiguous chunks in the scratch (unless the dim is already
// outermost), so the communicator always sees NCCL-style chunked buffers.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/CpuDevice.h"

#include "runtime/Error.h"
#include "runtime/cpu/AttentionKernel.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/FusedKernel.h"

#include <cblas.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

namespace meshc::runtime {

CpuDevice::CpuDevice(const Program &program, int64_t deviceId, int threads)
    : program(program), blockOffsets(program.blockOffsets(deviceId)),
      pool(threads), bf16Gemms(program, threads) {}

void CpuDevice::HostMemory::allocate(int64_t bytes) {
  std::free(raw);
  raw = std::calloc(static_cast<size_t>(bytes) + 64, 1);
  if (!raw)
    throw RuntimeError("cannot allocate " + std::to_string(bytes) +
                       " bytes of device memory");
  uintptr_t address = reinterpret_cast<uintptr_t>(raw);
  aligned = static_cast<char *>(raw) + (64 - address % 64) % 64;
  size = bytes;
}

int64_t CpuDevice::HostMemory::residentBytes() const {
  if (size == 0)
    return 0;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t begin = reinterpret_cast<uintptr_t>(aligned),
            end = begin + static_cast<uintptr_t>(size);
  uintptr_t first = begin / page * page;
  std::vector<unsigned char> resident((end - first + page - 1) / page);
  if (mincore(reinterpret_cast<void *>(first), end - first, resident.data()))
    throw RuntimeError(std::string("mincore: ") + std::strerror(errno));
  int64_t bytes = 0;
  for (size_t i = 0; i < resident.size(); ++i) {
    if (!(resident[i] & 1))
      continue;
    uintptr_t from = std::max(begin, first + i * page),
              to = std::min(end, first + (i + 1) * page);
    bytes += static_cast<int64_t>(to - from);
  }
  return bytes;
}

int64_t CpuDevice::residentBytes() const {
  // The plan's memory; the helpers' vectors are outside it, like their
  // stacks (docs/runtime.md).
  return arena.residentBytes() + scratch.residentBytes();
}

void CpuDevice::allocate(int64_t arenaBytes, int64_t scratchBytes) {
  arena.allocate(arenaBytes);
  scratch.allocate(scratchBytes);
  helperScratchFloats = 0;
  // The loop bodies' steps too (a helper runs them as any other).
  if (pool.threads() > 1)
    for (size_t index = 0; index < program.stepCount(); ++index) {
      const Step &step = program.step(index);
      if (const auto *fused = std::get_if<FusedAttrs>(&step.attrs))
        helperScratchFloats =
            std::max(helperScratchFloats, fused->plan.scratchFloats());
      if (const auto *attention = std::get_if<AttentionAttrs>(&step.attrs))
        helperScratchFloats = std::max(helperScratchFloats,
                                       attentionWorkFloats(attention->geometry,
                                                           /*grad=*/false));
      if (const auto *grad = std::get_if<AttentionGradAttrs>(&step.attrs))
        helperScratchFloats =
            std::max(helperScratchFloats,
                     attentionWorkFloats(grad->geometry, /*grad=*/true));
    }
  // Each helper's vectors start on their own cache line.
  helperScratchFloats = (helperScratchFloats + 15) / 16 * 16;
  helperScratch.allocate((pool.threads() - 1) * helperScratchFloats *
                         int64_t(sizeof(float)));
}

void CpuDevice::write(int64_t offset, const void *src, int64_t bytes) {
  if (bytes > 0)
    std::memcpy(arena.data() + offset, src, bytes);
}

void CpuDevice::read(int64_t offset, void *dst, int64_t bytes) const {
  if (bytes > 0)
    std::memcpy(dst, arena.data() + offset, bytes);
}

char *CpuDevice::bufferAt(const Operand &operand) const {
  return arena.data() + program.buffers[operand.buffer].offset +
         (shifts ? shifts[operand.buffer] : 0);
}

char *CpuDevice::at(const Operand &operand) const {
  return operand.staging >= 0 ? scratch.data() + operand.staging
                              : bufferAt(operand);
}

DType CpuDevice::kernelType(const Operand &operand) const {
  return operand.staging >= 0 ? DType::F32
                              : program.buffers[operand.buffer].dtype;
}

char *CpuDevice::at(const PlannedTensor &tensor) const {
  if (tensor.inScratch)
    return scratch.data() + tensor.offset;
  return arena.data() + tensor.offset +
         (shifts && tensor.buffer >= 0 ? shifts[tensor.buffer] : 0);
}

int64_t CpuDevice::elementBytes(const Operand &operand) const {
  return dtypeBytes(program.buffers[operand.buffer].dtype);
}

static float *f32(char *bytes) { return reinterpret_cast<float *>(bytes); }
static int32_t *i32(char *bytes) { return reinterpret_cast<int32_t *>(bytes); }

void CpuDevice::runDropout(const Step &step, const RunContext &context) {
  float *out = f32(at(step.out));
  if (context.eval) {
    std::fill_n(out, step.out.shape.elements(), 1.0f);
    return;
  }
  const DropoutAttrs &dropout = step.as<DropoutAttrs>();
  DropoutMask mask(context.seed, context.streamName(dropout.name), context.run,
                   dropout.rate);
  dropoutKernel(mask, dropout.dims, blockOffsets[step.index], out,
                step.out.shape);
}

void CpuDevice::run(const Step &step, Communicator *comm,
                    const RunContext &context) {
  // A collective may run on the session's communication lane beside the
  // steps after it (a started collective): it touches no member state.
  if (stepGroup(step.op()) == StepGroup::Collective) {
    runCollective(step, *comm, context.shifts, context.part);
    return;
  }
  if (step.op() == OpKind::Wait)
    return; // the session waits for started collectives
  shifts = context.shifts;
  // An einsum on oneDNN's bf16 GEMMs reads its two bf16 operands as they
  // are; everything else reads f32 copies of its bf16 and f16 operands.
  const Bf16Gemms::Planned *direct = bf16Gemms.find(step);
  for (size_t i = 0; i < step.in.size(); ++i) {
    const Operand &in = step.in[i];
    if (in.staging >= 0 &&
        !(direct && (i == direct->aInput || i == direct->bInput)))
      convertShared(in, /*widen=*/true);
  }
  if (direct)
    runBf16Gemm(step, *direct);
  else
    runKernel(step, comm, context);
  for (const Operand *out : step.outputs())
    if (out->staging >= 0)
      convertShared(*out, /*widen=*/false);
}

void CpuDevice::convertShared(const Operand &operand, bool widen) {
  DType dtype = program.buffers[operand.buffer].dtype;
  char *half = bufferAt(operand);
  float *wide = f32(at(operand));
  int64_t elements = operand.shape.elements();
  shareOver(rowParts(elements), [&](Share share) {
    int64_t first, last;
    share.range(elements, first, last);
    if (widen)
      widenKernel(dtype, half + 2 * first, wide + first, last - first);
    else
      narrowKernel(wide + first, dtype, half + 2 * first, last - first);
  });
}

void CpuDevice::runKernel(const Step &step, Communicator *comm,
                          const RunContext &context) {
  const Operand &out = step.out;
  switch (step.op()) {
  case OpKind::Fill: {
    int64_t count = out.shape.elements();
    float value = static_cast<float>(step.as<FillAttrs>().value);
    DType dtype = program.buffers[out.buffer].dtype;
    if (dtype == DType::I32)
      std::fill_n(i32(at(out)), count,
                  static_cast<int32_t>(step.as<FillAttrs>().value));
    else if (dtype == DType::F32)
      std::fill_n(f32(at(out)), count, value);
    else {
      uint16_t bits;
      narrowKernel(&value, dtype, &bits, 1);
      std::fill_n(reinterpret_cast<uint16_t *>(at(out)), count, bits);
    }
    return;
  }
  case OpKind::Copy:
    std::memmove(at(out), at(step.in[0]),
                 step.in[0].shape.elements() * elementBytes(step.in[0]));
    return;
  case OpKind::Einsum:
    for (const EinsumStage &stage : step.as<EinsumAttrs>().plan.stages) {
      if (stage.isGemm)
        runGemmStage(stage.gemm);
      else
        shareOver(
            rowParts(stage.reduce.src.shape.elements()), [&](Share share) {
              reducePermute(Reduction::Sum, f32(at(stage.reduce.src)),
                            stage.reduce.src.shape, f32(at(stage.reduce.dst)),
                            stage.reduce.dst.shape, share);
            });
    }
    return;
  case OpKind::Unary: {
    const UnaryAttrs &unary = step.as<UnaryAttrs>();
    unaryKernel(unary.fn, unary.value, f32(at(step.in[0])), f32(at(out)),
                out.shape.elements());
    return;
  }
  case OpKind::Cast:
    castKernel(program.buffers[step.in[0].buffer].dtype,
               program.buffers[out.buffer].dtype, at(step.in[0]), at(out),
               out.shape.elements());
    return;
  case OpKind::Binary:
    if (program.buffers[step.in[0].buffer].dtype == DType::I32)
      compareKernel(step.as<BinaryAttrs>().fn, i32(at(step.in[0])),
                    step.in[0].shape, i32(at(step.in[1])), step.in[1].shape,
                    f32(at(out)), out.shape);
    else
      binaryKernel(step.as<BinaryAttrs>().fn, f32(at(step.in[0])),
                   step.in[0].shape, f32(at(step.in[1])), step.in[1].shape,
                   f32(at(out)), out.shape);
    return;
  case OpKind::Fused:
    runFused(step);
    return;
  case OpKind::Reduce:
    shareOver(rowParts(step.in[0].shape.elements()), [&](Share share) {
      reducePermute(step.as<ReduceAttrs>().fn, f32(at(step.in[0])),
                    step.in[0].shape, f32(at(out)), out.shape, share);
    });
    return;
  case OpKind::Softmax:
    shareOver(rowParts(out.shape.elements()), [&](Share share) {
      softmaxKernel(f32(at(step.in[0])), step.in[0].shape, f32(at(out)),
                    out.shape, step.as<SoftmaxAttrs>().dim, share);
    });
    return;
  case OpKind::LogSumExp:
    shareOver(rowParts(step.in[0].shape.elements()), [&](Share share) {
      logSumExpKernel(f32(at(step.in[0])), step.in[0].shape, f32(at(out)),
                      out.shape, step.as<LogSumExpAttrs>().dim, share);
    });
    return;
  case OpKind::SoftmaxCrossEntropy:
    shareOver(rowParts(step.in[0].shape.elements()), [&](Share share) {
      crossEntropyKernel(f32(at(step.in[0])), step.in[0].shape,
                         i32(at(step.in[1])), step.in[1].shape, f32(at(out)),
                         out.shape, step.as<SoftmaxCrossEntropyAttrs>().dim,
                         share);
    });
    return;
  case OpKind::OneHot: {
    const OneHotAttrs &hot = step.as<OneHotAttrs>();
    oneHotKernel(i32(at(step.in[0])), step.in[0].shape, f32(at(out)), out.shape,
                 hot.dim, blockOffsets[step.index].front(), hot.classes);
    return;
  }
  case OpKind::Argmax:
    argmaxKernel(f32(at(step.in[0])), step.in[0].shape, i32(at(out)), out.shape,
                 step.as<ArgmaxAttrs>().dim);
    return;
  case OpKind::Dropout:
    runDropout(step, context);
    return;
  case OpKind::Range:
    rangeKernel(kernelType(out), at(out), out.shape.elements());
    return;
  case OpKind::TopK: {
    const TopKAttrs &topK = step.as<TopKAttrs>();
    topKKernel(f32(at(step.in[0])), step.in[0].shape, f32(at(out)), out.shape,
               topK.dim, topK.k);
    return;
  }
  case OpKind::Window: {
    const WindowAttrs &window = step.as<WindowAttrs>();
    if (kernelType(out) == DType::F32)
      windowKernel(f32(at(step.in[0])), step.in[0].shape, f32(at(out)),
                   out.shape, window.dim, window.toDim, window.offset);
    else // one 16-bit type on both sides (the loader stages any other pair)
      windowKernel(reinterpret_cast<const uint16_t *>(at(step.in[0])),
                   step.in[0].shape, reinterpret_cast<uint16_t *>(at(out)),
                   out.shape, window.dim, window.toDim, window.offset);
    return;
  }
  case OpKind::Cumsum: {
    const CumsumAttrs &cumsum = step.as<CumsumAttrs>();
    cumsumKernel(f32(at(step.in[0])), step.in[0].shape, f32(at(out)), out.shape,
                 cumsum.dim, cumsum.reverse);
    return;
  }
  case OpKind::AllReduce:
  case OpKind::AllGather:
  case OpKind::ReduceScatter:
  case OpKind::AllToAll:
  case OpKind::Slice:
  case OpKind::CollectivePermute:
    runCollective(step, *comm, shifts);
    return;
  case OpKind::Wait:
    return;
  case OpKind::Attention:
  case OpKind::AttentionGrad:
    runAttention(step);
    return;
  case OpKind::Loop:
    throw RuntimeError("a loop step is run by the session, not a device");
  }
}

float *CpuDevice::workerScratch(int worker) const {
  return worker == 0
             ? f32(scratch.data())
             : f32(helperScratch.data()) + (worker - 1) * helperScratchFloats;
}

void CpuDevice::runAttention(const Step &step) {
  bool grad = step.op() == OpKind::AttentionGrad;
  const AttentionSpec &spec =
      grad ? static_cast<const AttentionSpec &>(step.as<AttentionGradAttrs>())
           : static_cast<const AttentionSpec &>(step.as<AttentionAttrs>());
  AttentionPointers data;
  const std::vector<AttentionOperand> reads =
      grad ? std::vector<AttentionOperand>{kQ, kK, kV, kO, kLse, kDOut, kBias}
           : std::vector<AttentionOperand>{kQ, kK, kV, kBias};
  for (size_t i = 0; i < step.in.size(); ++i)
    data.data[reads[i]] = f32(at(step.in[i]));
  const std::vector<const Operand *> outputs = step.outputs();
  const AttentionOperand writes[] = {grad ? kDQ : kO, grad ? kDK : kLse, kDV};
  for (size_t i = 0; i < outputs.size(); ++i)
    data.data[writes[i]] = f32(at(*outputs[i]));
  // The step's scratch: the offset tables, made here, then the working
  // memory of the device's thread; each helper works in its own.
  int64_t *tables = reinterpret_cast<int64_t *>(scratch.data());
  spec.geometry.fillTables(tables);
  data.tables = tables;
  float *ownWork = f32(scratch.data() + attentionTableBytes(spec.geometry));
  auto share = [&](int64_t units, void (*kernel)(const AttentionSpec &,
                                                 const AttentionPointers &,
                                                 int64_t, float *)) {
    pool.parallelFor(units, 1, [&](int64_t begin, int64_t end, int worker) {
      float *work = worker == 0 ? ownWork : workerScratch(worker);
      for (int64_t unit = begin; unit < end; ++unit)
        kernel(spec, data, unit, work);
    });
  };
  if (!grad) {
    share(attentionForwardUnits(spec.geometry), attentionForward);
    return;
  }
  // A unit per group when there are enough of them to keep every thread
  // busy, else dk and dv per block of keys, then dq per block of queries.
  int64_t groups = spec.geometry.size[kGroupRole];
  if (pool.threads() == 1 || groups >= 2 * pool.threads()) {
    share(groups, attentionGradGroup);
    return;
  }
  share(attentionKeyUnits(spec.geometry), attentionGradKeys);
  share(attentionQueryUnits(spec.geometry), attentionGradQueries);
}

void CpuDevice::runFused(const Step &step) {
  // Below this many elements a share is not worth a helper's wake-up.
  constexpr int64_t kMinShare = 8192;
  const FusedAttrs &fused = step.as<FusedAttrs>();
  std::vector<const char *> in;
  std::vector<char *> outs;
  for (const Operand &operand : step.in)
    in.push_back(at(operand));
  for (const Operand &operand : fused.outs)
    outs.push_back(at(operand));
  const FusedPlan &plan = fused.plan;
  int64_t minUnits =
      std::max<int64_t>(1, kMinShare / std::max<int64_t>(1, plan.runLength()));
  // An output that lacks a dim the runs are cut along (its stride is 0) is
  // written by several runs: those stay on one thread.
  bool shareable = true;
  for (size_t o = step.in.size(); o < step.in.size() + outs.size(); ++o) {
    for (size_t d = 0; d < plan.outerSizes.size(); ++d)
      shareable &= plan.outerStrides[o][d] != 0 || plan.outerSizes[d] == 1;
    shareable &=
        !plan.blocked || plan.innerStride[o] != 0 || plan.runsPerRow() <= 1;
  }
  if (!shareable)
    minUnits = plan.units() + 1;
  pool.parallelFor(
      plan.units(), minUnits, [&](int64_t begin, int64_t end, int part) {
        fusedKernel(fused, in, outs, workerScratch(part), begin, end);
      });
}

void CpuDevice::runGemmStage(const GemmStage &stage) {
  const float *a = f32(at(stage.a)), *b = f32(at(stage.b));
  float *c = f32(at(stage.c));
  // Two chunks per thread: each GEMM call packs its own panels.
  int threads = pool.threads();
  shareOver(gemmParts(stage, threads == 1 ? 1 : 2 * threads),
            [&](Share share) { runGemm(stage, a, b, c, share); });
}

void CpuDevice::runBf16Gemm(const Step &step,
                            const Bf16Gemms::Planned &planned) {
  auto *a =
      reinterpret_cast<const uint16_t *>(bufferAt(step.in[planned.aInput]));
  auto *b =
      reinterpret_cast<const uint16_t *>(bufferAt(step.in[planned.bInput]));
  float *c = f32(at(step.as<EinsumAttrs>().plan.stages[0].gemm.c));
  shareOver(planned.parts,
            [&](Share share) { bf16Gemms.run(step, a, b, c, share); });
}

void CpuDevice::shareOver(int64_t parts,
                          const std::function<void(Share)> &kernel) {
  pool.parallelFor(parts, 1, [&](int64_t begin, int64_t end, int) {
    for (int64_t part = begin; part < end; ++part)
      kernel(Share{part, parts});
  });
}

int64_t CpuDevice::rowParts(int64_t elements) const {
  // Below this many elements a share is not worth a helper's wake-up.
  constexpr int64_t kMinShare = 16384;
  if (pool.threads() == 1)
    return 1;
  return std::max<int64_t>(
      1, std::min<int64_t>(WorkerPool::kChunksPerThread * pool.threads(),
                           elements / kMinShare));
}

void CpuDevice::runCollective(const Step &step, Communicator &comm,
                              const int64_t *stepShifts,
                              CollectivePart part) const {
  const Operand &out = step.out;
  DType dtype = program.buffers[out.buffer].dtype;
  auto copy = [](const std::vector<StridedCopy> &copies, const char *src,
                 char *dst) {
    for (const StridedCopy &copy : copies)
      for (int64_t row = 0; row < copy.rows; ++row)
        std::memcpy(dst + copy.dstOffset + row * copy.dstPitch,
                    src + copy.srcOffset + row * copy.srcPitch,
                    size_t(copy.width));
  };
  // Collectives read and write their buffers themselves (never staged).
  auto at = [&](const Operand &operand) {
    return arena.data() + program.buffers[operand.buffer].offset +
           (stepShifts ? stepShifts[operand.buffer] : 0);
  };
  char *ownScratch = scratch.data() + step.scratchOffset;
  if (step.op() == OpKind::AllReduce) {
    runAllReduceStep(step, comm, dtype, at(out), at, ownScratch, copy);
    return;
  }
  runMoveStep(step, comm, dtype, at(step.in[0]), at(out), ownScratch, copy, at,
              part);
}

CpuBackend::CpuBackend() { openblas_set_num_threads(1); }

/// The cores this process may run on.
static int allowedCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return 1;
  return std::max(1, CPU_COUNT(&set));
}

/// The cores this process may use: ranks of one mpirun on one machine
/// share its cores.
static int processCores() {
  int cores = allowedCores();
  if (const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
    cores = std::max(1, cores / std::max(1, std::atoi(local)));
  return cores;
}

void CpuBackend::setLocalDevices(int64_t count) {
  int forced = 0;
  if (const char *text = std::getenv("MESHC_CPU_THREADS")) {
    char *end = nullptr;
    errno = 0;
    long value = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || value < 1 || value > 1024)
      throw RuntimeError(std::string("MESHC_CPU_THREADS='") + text +
                         "': expected a number of threads from 1 to 1024");
    forced = static_cast<int>(value);
  }
  localDevices = count;
  cpuCollectives.setSpinning(count <= allowedCores());
  threads = 1;
  if (count != 1)
    return;
  threads = processCores();
  if (forced > 0)
    threads = forced;
}

bool CpuBackend::overlapPays() const {
  return processCores() >= 2 * localDevices;
}

void CpuBackend::setCollectiveLanes() {
  // Spinning lanes would take the cores of the devices' own threads.
  cpuCollectives.setSpinning(2 * localDevices <= allowedCores());
}

std::unique_ptr<Device> CpuBackend::createDevice(const Program &program,
                                                 int64_t deviceId) {
  return std::make_unique<CpuDevice>(program, deviceId, threads);
}

} // namespace meshc::runtime
