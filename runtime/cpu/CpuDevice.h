//===- CpuDevice.h - The CPU backend ----------------------------*- C++ -*-===//
//
// A CPU device is a thread's worth of work on host memory: one 64-byte
// aligned arena and one scratch area, with kernels from CpuKernels.h and
// collectives from CpuCollectives.h. The backend limits OpenBLAS to one
// thread, since every virtual device already runs on its own thread.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CPU_CPUDEVICE_H
#define MESHC_RUNTIME_CPU_CPUDEVICE_H

#include "runtime/Device.h"
#include "runtime/cpu/CpuCollectives.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

namespace meshc::runtime {

/// One mesh device on the host.
class CpuDevice : public Device {
public:
  /// Device `deviceId` of `program`, which must outlive it.
  CpuDevice(const Program &program, int64_t deviceId);

  void allocate(int64_t arenaBytes, int64_t scratchBytes) override;
  void write(int64_t offset, const void *src, int64_t bytes) override;
  void read(int64_t offset, void *dst, int64_t bytes) const override;
  using Device::run;
  void run(const Step &step, Communicator *comm,
           const RunContext &context) override;
  int64_t residentBytes() const override;

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
  /// Runs a step for which usesGroup() holds.
  void runCollective(const Step &step, Communicator &comm);

  /// Fills a dropout step's output with its mask for this device's block.
  void runDropout(const Step &step, const RunContext &context);

  const Program &program;
  /// Program::blockOffsets of this device, computed once.
  std::vector<std::vector<int64_t>> blockOffsets;
  HostMemory arena;
  HostMemory scratch;
};

/// The CPU backend: CpuDevices connected by CpuCollectives.
class CpuBackend : public Backend {
public:
  /// Limits OpenBLAS to one thread: every device is a thread already.
  CpuBackend();
  /// A process that runs one device lets OpenBLAS use every core it may
  /// run on (its CPU affinity; MESHC_CPU_THREADS overrides); several devices
  /// keep one thread each.
  void setLocalDevices(int64_t count) override;
  std::string name() const override { return "cpu"; }
  std::unique_ptr<Device> createDevice(const Program &program,
                                       int64_t deviceId) override;
  Collectives &collectives() override { return cpuCollectives; }
  /// Every kind: CpuDevice::run has a case for each kind of StepKinds.def.
  bool supports(OpKind) const override { return true; }

private:
  CpuCollectives cpuCollectives;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_CPU_CPUDEVICE_H
