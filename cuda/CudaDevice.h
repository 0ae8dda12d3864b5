//===- CudaDevice.h - The CUDA backend --------------------------*- C++ -*-===//
//
// A CUDA device is one mesh device on a GPU: one stream, one cuBLAS handle
// and one cudaMalloc holding its arena, its scratch, cuBLAS's workspace and
// a status word, made once in allocate() (no step allocates: cuBLAS gets its
// workspace from us). Einsum GEMM stages are cublasGemmStridedBatchedEx
// calls (f32, or TF32 tensor cores with MESHC_CUDA_TF32=1); every other step
// kind is a kernel of CudaKernels.h. Steps are enqueued without waiting;
// run() waits for the stream where the host needs the results: at the last
// step of a training run, an eval run or a local-SGD sync (so Session's step
// time covers the GPU work), in collectives and in the label checks of
// softmax_cross_entropy and one_hot (whose errors are the step's). With
// MESHC_CUDA_SYNC=1 it waits after every step, so that an asynchronous CUDA
// fault is reported by the step that caused it.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_CUDA_CUDADEVICE_H
#define MESHC_CUDA_CUDADEVICE_H

#include "cuda/CudaCollectives.h"
#include "cuda/CudaKernels.h"
#include "runtime/Device.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace meshc::runtime::cuda {

/// One mesh device on a GPU.
class CudaDevice : public Device {
public:
  /// Device `deviceId` of `program` (which must outlive it) on GPU `gpu`;
  /// `collectives` learns its stream in allocate(). `tf32` lets cuBLAS round
  /// GEMM inputs to TF32; `bf16Gemms` runs einsums that are one GEMM over
  /// two bf16 operands on the bf16 buffers; `syncEveryStep` waits after
  /// every step;
  /// `attentionTiles` runs every attention step with the tile kernels
  /// (CudaAttention.h), not through cuBLAS where it can (CudaAttentionGemm.h).
  CudaDevice(const Program &program, int64_t deviceId, int gpu, bool tf32,
             bool bf16Gemms, bool syncEveryStep, bool attentionTiles,
             CudaCollectives &collectives);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice &) = delete;
  CudaDevice &operator=(const CudaDevice &) = delete;

  void allocate(int64_t arenaBytes, int64_t scratchBytes) override;
  /// The one cudaMalloc: arena, scratch, cuBLAS workspace, status, the
  /// reduction partials, the attention steps' offset tables and scores.
  int64_t residentBytes() const override { return allocatedBytes; }
  void write(int64_t offset, const void *src, int64_t bytes) override;
  void read(int64_t offset, void *dst, int64_t bytes) const override;
  using Device::run;
  void run(const Step &step, Communicator *comm,
           const RunContext &context) override;

private:
  /// Where the kernels find `operand`: its buffer, or its f32 staging copy
  /// in the scratch (Operand::staging).
  char *at(const Operand &operand) const;
  /// Where `operand`'s buffer starts.
  char *bufferAt(const Operand &operand) const;
  char *at(const PlannedTensor &tensor) const;
  /// The dtype of `operand`'s buffer.
  DType dtypeOf(const Operand &operand) const;
  /// The dtype the kernels see for `operand` (f32 when staged).
  DType kernelType(const Operand &operand) const;
  Exec exec() const { return {stream, false, partials}; }

  /// Runs `step` with its kernels; `comm` is its group's communicator when
  /// usesGroup(step.op()). Every kind of StepKinds.def has a case here.
  void runKernels(const Step &step, Communicator *comm,
                  const RunContext &context);
  void runGemm(const GemmStage &stage);
  /// `stage` (an einsum's only one, directBf16Gemm) with A and B read from
  /// the bf16 buffers `a`, `b` rather than their f32 copies.
  void runBf16Gemm(const GemmStage &stage, const char *a, const char *b);
  /// The stage's GEMM on inputs `a`, `b` of type `inputs` into its f32
  /// result, computed as `compute` (runGemm's and runBf16Gemm's one call).
  void stridedGemm(const GemmStage &stage, const void *a, const void *b,
                   cudaDataType inputs, cublasComputeType_t compute);
  /// Runs an attention or attention_grad step (CudaAttention.h).
  void runAttention(const Step &step);
  void runCollective(const Step &step, Communicator &comm);
  /// Throws the CPU backend's message when a one_hot or cross-entropy
  /// kernel recorded a bad row (an index outside [0, limit)).
  void checkRows(const Step &step, const RowWalk &walk, int64_t limit);
  /// Copies `rows` runs of `width` bytes between pitched layouts.
  void copy2D(char *dst, int64_t dstPitch, const char *src, int64_t srcPitch,
              int64_t width, int64_t rows);

  const Program &program;
  int64_t deviceId;
  int gpu;
  bool tf32;
  bool bf16Gemms;
  bool syncEveryStep;
  bool attentionTiles;
  CudaCollectives &collectives;
  /// The step indexes that end a run: the last step, the last forward step
  /// and the last local-SGD sync step.
  std::vector<size_t> runEnds;
  /// RunContext::shifts of the step being run.
  const int64_t *shifts = nullptr;
  /// Program::blockOffsets of this device, computed once.
  std::vector<std::vector<int64_t>> blockOffsets;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  /// The one allocation and the regions in it.
  char *base = nullptr;
  int64_t allocatedBytes = 0;
  char *arena = nullptr;
  char *scratch = nullptr;
  KernelStatus *status = nullptr;
  /// Exec::partials: kPartialFloats floats after the status.
  float *partials = nullptr;
  /// Per step index, the device copy of an attention step's offset tables
  /// (AttentionGeometry::tables), after the partials; null for the other
  /// steps.
  std::vector<const int64_t *> attentionTables;
  /// The scores of the attention steps that run through cuBLAS
  /// (attentionWorkspaceWanted: the most any step wants), after the tables.
  float *attentionWorkspace = nullptr;
  int64_t attentionWorkspaceFloats = 0;
};

} // namespace meshc::runtime::cuda

#endif // MESHC_CUDA_CUDADEVICE_H
