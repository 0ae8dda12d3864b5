//===- Bf16Gemm.h - bf16 GEMMs on CPUs that have them (oneDNN) --*- C++ -*-===//
//
// Without this, a bf16 einsum widens both operands into f32 copies and runs
// OpenBLAS's sgemm on them. On a CPU with bf16 dot products (AVX512-BF16,
// AMX) an einsum whose plan is one GEMM over two bf16 operands runs instead
// as oneDNN matmuls reading the bf16 buffers themselves, accumulating and
// writing f32 (then rounded to bf16 like every staged result): 1.8-4.5x
// faster than widening + sgemm on this VM's AVX512-BF16 (docs/performance.md).
// f32 GEMMs stay on OpenBLAS.
//
// oneDNN is chosen because it is the maintained library with bf16 GEMM
// kernels for these CPUs in Debian (libdnnl-dev); it picks the kernel for the
// CPU at run time (brgemm avx512_core_bf16, AMX), and CpuDevice asks it
// whether the CPU has one. The device's threads share a GEMM as they share
// sgemm (runGemm's parts); each part is a single-threaded oneDNN primitive
// made when the device is created, so a step creates nothing.
// MESHC_CPU_BF16_GEMM=0 turns the path off (to compare); a build without
// oneDNN never takes it.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CPU_BF16GEMM_H
#define MESHC_RUNTIME_CPU_BF16GEMM_H

#include "runtime/Program.h"
#include "runtime/cpu/Share.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace meshc::runtime {

/// True when einsums with bf16 operands take the oneDNN path here: the
/// runtime was built with oneDNN, the CPU has bf16 dot products and
/// MESHC_CPU_BF16_GEMM is not "0".
bool bf16GemmsAvailable();
/// What bf16GemmsAvailable() found: "oneDNN 2.6.3 on avx512_core_bf16", or
/// why not ("built without oneDNN", "the CPU has no bf16 dot products (...)",
/// "MESHC_CPU_BF16_GEMM=0").
std::string bf16GemmsDescription();

/// The direct bf16 GEMMs of one device's program.
class Bf16Gemms {
public:
  /// Plans a oneDNN matmul per part for every einsum of `program` (loop
  /// bodies included) whose plan is one GEMM stage over the f32 copies of
  /// two bf16 operands, for a device of `threads` threads; none when
  /// bf16GemmsAvailable() is false.
  Bf16Gemms(const Program &program, int threads);
  ~Bf16Gemms();
  Bf16Gemms(const Bf16Gemms &) = delete;
  Bf16Gemms &operator=(const Bf16Gemms &) = delete;

  /// One planned einsum.
  struct Planned {
    /// The einsum's inputs that are the stage's A and B.
    size_t aInput = 0, bInput = 1;
    /// Into how many parts the device's threads share it.
    int64_t parts = 1;
  };
  /// The plan of the einsum `step`, or null when it takes the f32 path.
  const Planned *find(const Step &step) const;
  /// Runs part `share` of `step`'s GEMM: `a` and `b` its bf16 operands (the
  /// buffers, not their f32 copies), `c` the stage's f32 result.
  void run(const Step &step, const uint16_t *a, const uint16_t *b, float *c,
           Share share) const;
  /// How many einsums take this path.
  size_t count() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_CPU_BF16GEMM_H
