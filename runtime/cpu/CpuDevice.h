//===- CpuDevice.h - The CPU backend ----------------------------*- C++ -*-===//
//
// A CPU device is work on host memory: one 64-byte aligned arena and one
// scratch area, with kernels from CpuKernels.h and collectives from
// CpuCollectives.h. A device runs on its own thread; when it is the only
// device of its process it also has the process's other cores, as helpers
// of a WorkerPool that share its fused steps and GEMMs. OpenBLAS itself
// always runs on one thread: the device decides how a GEMM is shared.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CPU_CPUDEVICE_H
#define MESHC_RUNTIME_CPU_CPUDEVICE_H

#include "runtime/Device.h"
#include "runtime/cpu/Bf16Gemm.h"
#include "runtime/cpu/CpuCollectives.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/WorkerPool.h"

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

namespace meshc::runtime {

/// One mesh device on the host.
class CpuDevice : public Device {
public:
  /// Device `deviceId` of `program`, which must outlive it, running on
  /// `threads` threads.
  CpuDevice(const Program &program, int64_t deviceId, int threads = 1);

  void allocate(int64_t arenaBytes, int64_t scratchBytes) override;
  void write(int64_t offset, const void *src, int64_t bytes) override;
  void read(int64_t offset, void *dst, int64_t bytes) const override;
  using Device::run;
  void run(const Step &step, Communicator *comm,
           const RunContext &context) override;
  int64_t residentBytes() const override;
  /// How many of the program's einsums run as oneDNN bf16 GEMMs here.
  size_t bf16GemmSteps() const { return bf16Gemms.count(); }

private:
  /// Zeroed host memory aligned to 64 bytes. It comes from calloc, so the
  /// pages of a large arena are only touched when a step uses them.
  class HostMemory {
  public:
    HostMemory() = default;
    HostMemory(const HostMemory &) = delete;
    HostMemory &operator=(const HostMemory &) = delete;
    ~HostMemory() { std::free(raw); }

    /// Allocates `bytes`; throws RuntimeError when the memory is not there.
    void allocate(int64_t bytes);
    /// The start of the memory.
    char *data() const { return aligned; }
    /// How many of its bytes lie in pages the process has in memory.
    int64_t residentBytes() const;

  private:
    void *raw = nullptr;
    char *aligned = nullptr;
    int64_t size = 0;
  };

  /// Where the kernel finds `operand`: its buffer, or its f32 staging copy
  /// in the scratch (Operand::staging).
  char *at(const Operand &operand) const;
  /// Where `operand`'s buffer starts.
  char *bufferAt(const Operand &operand) const;
  /// The element type the kernel sees for `operand` (f32 when staged).
  DType kernelType(const Operand &operand) const;
  /// Where a planned einsum tensor starts.
  char *at(const PlannedTensor &tensor) const;
  /// The element size of `operand`'s buffer.
  int64_t elementBytes(const Operand &operand) const;
  /// Runs `step`'s kernel on the operands as at() finds them.
  void runKernel(const Step &step, Communicator *comm,
                 const RunContext &context);
  /// Runs a step for which usesGroup() holds, its buffers moved by
  /// `stepShifts` (RunContext::shifts), in its own part of the scratch
  /// (Step::scratchOffset). Touches no member state, so that a started
  /// collective may run on another thread beside the next steps. `part`:
  /// all of it, or the copy of its inputs / the rest (CollectivePart).
  void runCollective(const Step &step, Communicator &comm,
                     const int64_t *stepShifts,
                     CollectivePart part = CollectivePart::Whole) const;

  /// Fills a dropout step's output with its mask for this device's block.
  void runDropout(const Step &step, const RunContext &context);
  /// Runs a fused step, its runs shared over the pool's threads.
  void runFused(const Step &step);
  /// Runs an attention or attention_grad step, its units shared over the
  /// pool's threads (AttentionKernel.h).
  void runAttention(const Step &step);
  /// The working memory of pool thread `worker` for the steps that give
  /// each thread its own (fused, attention): the step's scratch for the
  /// device's thread, a slice of helperScratch for a helper.
  float *workerScratch(int worker) const;
  /// Runs an einsum's GEMM stage, shared over the pool's threads.
  void runGemmStage(const GemmStage &stage);
  /// Widens bf16/f16 `operand` into its f32 copy (or narrows the copy back),
  /// shared over the pool's threads.
  void convertShared(const Operand &operand, bool widen);
  /// Runs an einsum planned on oneDNN's bf16 GEMMs, its parts shared over
  /// the pool's threads.
  void runBf16Gemm(const Step &step, const Bf16Gemms::Planned &planned);
  /// Runs kernel(Share{p, parts}) for p < parts on the pool's threads.
  void shareOver(int64_t parts, const std::function<void(Share)> &kernel);
  /// Into how many parts a row-wise kernel over `elements` is shared.
  int64_t rowParts(int64_t elements) const;

  const Program &program;
  /// Program::blockOffsets of this device, computed once.
  std::vector<std::vector<int64_t>> blockOffsets;
  HostMemory arena;
  HostMemory scratch;
  /// The helpers' working memory (workerScratch): for each helper, the
  /// most any fused step (FusedPlan::scratchFloats) or attention step
  /// (attentionWorkFloats) of the program needs.
  HostMemory helperScratch;
  int64_t helperScratchFloats = 0;
  /// RunContext::shifts of the step being run.
  const int64_t *shifts = nullptr;
  WorkerPool pool;
  /// The einsums that run as bf16 GEMMs (Bf16Gemm.h).
  Bf16Gemms bf16Gemms;
};

/// The CPU backend: CpuDevices connected by CpuCollectives.
class CpuBackend : public Backend {
public:
  /// Limits OpenBLAS to one thread: devices share GEMMs themselves.
  CpuBackend();
  /// A process that runs one device gives it every core it may run on (its
  /// CPU affinity, divided among the MPI ranks on this machine;
  /// MESHC_CPU_THREADS overrides); several devices run on one thread each.
  void setLocalDevices(int64_t count) override;
  /// The threads each device of this process runs on.
  int threadsPerDevice() const override { return threads; }
  std::string name() const override { return "cpu"; }
  std::unique_ptr<Device> createDevice(const Program &program,
                                       int64_t deviceId) override;
  Collectives &collectives() override { return cpuCollectives; }
  /// Every kind: CpuDevice::run has a case for each kind of StepKinds.def.
  bool supports(OpKind) const override { return true; }
  /// CpuDevice::runCollective touches no member state.
  bool overlapsCollectives() const override { return true; }
  /// The in-process collectives and MPI's shared-memory and TCP transports
  /// are work of the CPU's cores: a lane pays where each local device has a
  /// core for its steps and one for its lane (cores of this process, shared
  /// among the ranks of an mpirun on one machine, >= 2 x local devices).
  bool overlapPays() const override;
  /// A lane per device doubles the threads: the collectives spin only
  /// while every one of them still has a core.
  void setCollectiveLanes() override;

private:
  CpuCollectives cpuCollectives;
  int threads = 1;
  int64_t localDevices = 1;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_CPU_CPUDEVICE_H
