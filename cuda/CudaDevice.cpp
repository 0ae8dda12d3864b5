//===- CudaDevice.cpp - The CUDA backend ----------------------------------===//
//
// Step dispatch for CUDA devices, mirroring runtime/cpu/CpuDevice.cpp: the
// same chunk packing around collectives (here with cudaMemcpy2DAsync), the
// same einsum plans (GEMM stages through cuBLAS, reduce/transpose stages
// through reduceKernel).
//
// cuBLAS is column-major and our GEMMs row-major: a row-major C (m x n) is a
// column-major C^T (n x m), and C^T = op(B)^T op(A)^T, so each stage is one
// cublasGemmStridedBatchedEx with the operands swapped and m, n exchanged.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaDevice.h"

#include "cuda/CudaAttention.h"
#include "cuda/CudaAttentionGemm.h"
#include "cuda/CudaCheck.h"
#include "cuda/CudaFusedKernel.h"
#include "cuda/KernelSpaces.h"
#include "runtime/EinsumPlan.h"
#include "runtime/Error.h"
#include "runtime/cpu/CpuKernels.h"

#include <algorithm>

namespace meshc::runtime::cuda {

namespace {

/// cuBLAS's workspace: 32 MiB, NVIDIA's recommendation for Hopper.
constexpr int64_t kCublasWorkspaceBytes = int64_t(32) << 20;
constexpr int64_t kStatusBytes = 256;

int64_t roundUp(int64_t bytes) { return (bytes + 255) / 256 * 256; }

float *f32(char *bytes) { return reinterpret_cast<float *>(bytes); }
int32_t *i32(char *bytes) { return reinterpret_cast<int32_t *>(bytes); }

} // namespace

CudaDevice::CudaDevice(const Program &program, int64_t deviceId, int gpu,
                       bool tf32, bool bf16Gemms, bool syncEveryStep,
                       bool attentionTiles, CudaCollectives &collectives)
    : program(program), deviceId(deviceId), gpu(gpu), tf32(tf32),
      bf16Gemms(bf16Gemms), syncEveryStep(syncEveryStep),
      attentionTiles(attentionTiles), collectives(collectives),
      blockOffsets(program.blockOffsets(deviceId)) {
  const Step *lastForward = nullptr;
  for (const Step &step : program.steps) {
    if (step.phase == Phase::Forward)
      lastForward = &step;
  }
  if (lastForward)
    runEnds.push_back(program.lastRun(*lastForward).index);
  // With microbatches a run of the forward and backward steps ends at the
  // last of them.
  if (program.training && program.training->microbatches) {
    const Step *lastBackward = nullptr;
    for (const Step &step : program.steps)
      if (step.phase != Phase::Update)
        lastBackward = &step;
    if (lastBackward)
      runEnds.push_back(program.lastRun(*lastBackward).index);
  }
  if (!program.steps.empty())
    runEnds.push_back(program.lastRun(program.steps.back()).index);
  if (program.training && program.training->sync &&
      !program.training->sync->steps.empty())
    runEnds.push_back(program.training->sync->steps.back().index);
}

CudaDevice::~CudaDevice() {
  if (!stream && !cublas && !base)
    return;
  MESHC_CUDA_WARN(cudaSetDevice(gpu));
  if (stream)
    MESHC_CUDA_WARN(cudaStreamSynchronize(stream));
  if (cublas)
    MESHC_CUBLAS_WARN(cublasDestroy(cublas));
  if (base)
    MESHC_CUDA_WARN(cudaFree(base));
  if (stream)
    MESHC_CUDA_WARN(cudaStreamDestroy(stream));
}

void CudaDevice::allocate(int64_t arenaBytes, int64_t scratchBytes) {
  if (base)
    throw RuntimeError("cuda device " + std::to_string(deviceId) +
                       ": allocate() called twice");
  MESHC_CUDA_CHECK(cudaSetDevice(gpu));
  MESHC_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  MESHC_CUBLAS_CHECK(cublasCreate(&cublas));
  MESHC_CUBLAS_CHECK(cublasSetStream(cublas, stream));
  MESHC_CUBLAS_CHECK(cublasSetMathMode(cublas, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                    : CUBLAS_DEFAULT_MATH));
  int64_t scratchAt = roundUp(arenaBytes);
  int64_t workspaceAt = scratchAt + roundUp(scratchBytes);
  int64_t statusAt = workspaceAt + kCublasWorkspaceBytes;
  int64_t partialsAt = roundUp(statusAt + kStatusBytes);
  // The offset tables of the attention steps (loop bodies' included), each
  // at its own offset after the partials, made and copied once, below.
  int64_t tablesAt = roundUp(
      partialsAt + kPartialFloats * static_cast<int64_t>(sizeof(float)));
  struct Tables {
    size_t step;
    const AttentionGeometry *geometry;
    int64_t at;
  };
  std::vector<Tables> tables;
  attentionTables.assign(program.stepCount(), nullptr);
  int64_t total = tablesAt;
  for (size_t index = 0; index < program.stepCount(); ++index) {
    const Step &step = program.step(index);
    const AttentionGeometry *geometry =
        step.op() == OpKind::Attention ? &step.as<AttentionAttrs>().geometry
        : step.op() == OpKind::AttentionGrad
            ? &step.as<AttentionGradAttrs>().geometry
            : nullptr;
    if (!geometry)
      continue;
    tables.push_back({index, geometry, total});
    total = roundUp(total + geometry->tableEntries *
                                static_cast<int64_t>(sizeof(int64_t)));
    if (!attentionTiles)
      attentionWorkspaceFloats =
          std::max(attentionWorkspaceFloats,
                   attentionWorkspaceWanted(
                       *geometry, step.op() == OpKind::AttentionGrad));
  }
  // The scores of the attention steps that run through cuBLAS.
  const int64_t attentionWorkspaceAt = total;
  total = roundUp(total + attentionWorkspaceFloats *
                              static_cast<int64_t>(sizeof(float)));
  void *memory = nullptr;
  cudaError_t result = cudaMalloc(&memory, static_cast<size_t>(total));
  if (result != cudaSuccess)
    throw RuntimeError("cuda device " + std::to_string(deviceId) + " (GPU " +
                       std::to_string(gpu) + "): cannot allocate " +
                       std::to_string(total) + " bytes (arena " +
                       std::to_string(arenaBytes) + ", scratch " +
                       std::to_string(scratchBytes) +
                       ", cuBLAS workspace, status, reduction partials, "
                       "attention tables and scores): " +
                       cudaGetErrorString(result));
  base = static_cast<char *>(memory);
  allocatedBytes = total;
  arena = base;
  scratch = base + scratchAt;
  status = reinterpret_cast<KernelStatus *>(base + statusAt);
  partials = reinterpret_cast<float *>(base + partialsAt);
  attentionWorkspace = reinterpret_cast<float *>(base + attentionWorkspaceAt);
  MESHC_CUBLAS_CHECK(
      cublasSetWorkspace(cublas, base + workspaceAt, kCublasWorkspaceBytes));
  // Arenas start zeroed, as the CPU backend's calloc'ed ones do.
  MESHC_CUDA_CHECK(
      cudaMemsetAsync(base, 0, static_cast<size_t>(total), stream));
  MESHC_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (const Tables &table : tables) {
    attentionTables[table.step] =
        reinterpret_cast<const int64_t *>(base + table.at);
    std::vector<int64_t> entries(size_t(table.geometry->tableEntries));
    table.geometry->fillTables(entries.data());
    if (entries.empty())
      continue;
    MESHC_CUDA_CHECK(cudaMemcpyAsync(base + table.at, entries.data(),
                                     entries.size() * sizeof(int64_t),
                                     cudaMemcpyHostToDevice, stream));
    MESHC_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  collectives.attach(deviceId, {gpu, stream});
}

void CudaDevice::write(int64_t offset, const void *src, int64_t bytes) {
  if (bytes <= 0)
    return;
  MESHC_CUDA_CHECK(cudaSetDevice(gpu));
  MESHC_CUDA_CHECK(cudaMemcpyAsync(arena + offset, src, bytes,
                                   cudaMemcpyHostToDevice, stream));
  MESHC_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void CudaDevice::read(int64_t offset, void *dst, int64_t bytes) const {
  if (bytes <= 0)
    return;
  MESHC_CUDA_CHECK(cudaSetDevice(gpu));
  MESHC_CUDA_CHECK(cudaMemcpyAsync(dst, arena + offset, bytes,
                                   cudaMemcpyDeviceToHost, stream));
  MESHC_CUDA_CHECK(cudaStreamSynchronize(stream));
}

char *CudaDevice::bufferAt(const Operand &operand) const {
  return arena + program.buffers[operand.buffer].offset +
         (shifts ? shifts[operand.buffer] : 0);
}

char *CudaDevice::at(const Operand &operand) const {
  return operand.staging >= 0 ? scratch + operand.staging : bufferAt(operand);
}

char *CudaDevice::at(const PlannedTensor &tensor) const {
  if (tensor.inScratch)
    return scratch + tensor.offset;
  return arena + tensor.offset +
         (shifts && tensor.buffer >= 0 ? shifts[tensor.buffer] : 0);
}

DType CudaDevice::dtypeOf(const Operand &operand) const {
  return program.buffers[operand.buffer].dtype;
}

DType CudaDevice::kernelType(const Operand &operand) const {
  return operand.staging >= 0 ? DType::F32 : dtypeOf(operand);
}

void CudaDevice::run(const Step &step, Communicator *comm,
                     const RunContext &context) {
  if (!base)
    throw RuntimeError("cuda device " + std::to_string(deviceId) +
                       ": run() before allocate()");
  MESHC_CUDA_CHECK(cudaSetDevice(gpu));
  shifts = context.shifts;
  if (usesGroup(step.op()) && !comm)
    throw RuntimeError(std::string(opName(step.op())) +
                       " needs its group's communicator");
  // bf16/f16 operands: widened into their staging before, narrowed after;
  // an einsum that is one GEMM over two bf16 operands reads those as they
  // are (bf16 tensor cores), accumulating and writing f32.
  size_t aInput = 0, bInput = 0;
  const bool direct =
      bf16Gemms && directBf16Gemm(program, step, aInput, bInput);
  for (size_t i = 0; i < step.in.size(); ++i) {
    const Operand &in = step.in[i];
    if (in.staging >= 0 && !(direct && (i == aInput || i == bInput)))
      castKernel(exec(), dtypeOf(in), DType::F32, bufferAt(in), at(in),
                 in.shape.elements());
  }
  if (direct)
    runBf16Gemm(step.as<EinsumAttrs>().plan.stages[0].gemm,
                bufferAt(step.in[aInput]), bufferAt(step.in[bInput]));
  else
    runKernels(step, comm, context);
  for (const Operand *out : step.outputs())
    if (out->staging >= 0)
      castKernel(exec(), DType::F32, dtypeOf(*out), at(*out), bufferAt(*out),
                 out->shape.elements());
  if (syncEveryStep ||
      std::find(runEnds.begin(), runEnds.end(), step.index) != runEnds.end())
    MESHC_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void CudaDevice::runKernels(const Step &step, Communicator *comm,
                            const RunContext &context) {
  const Operand &out = step.out;
  switch (step.op()) {
  case OpKind::Fill:
    fillKernel(exec(), dtypeOf(out), step.as<FillAttrs>().value, at(out),
               out.shape.elements());
    return;
  case OpKind::Copy:
    if (at(out) != at(step.in[0]))
      MESHC_CUDA_CHECK(cudaMemcpyAsync(at(out), at(step.in[0]),
                                       step.in[0].shape.elements() *
                                           dtypeBytes(dtypeOf(step.in[0])),
                                       cudaMemcpyDeviceToDevice, stream));
    return;
  case OpKind::Einsum:
    for (const EinsumStage &stage : step.as<EinsumAttrs>().plan.stages) {
      if (stage.isGemm) {
        runGemm(stage.gemm);
        continue;
      }
      ReduceSpaces spaces =
          reduceSpaces(stage.reduce.src.shape, stage.reduce.dst.shape);
      reduceKernel(exec(), Reduction::Sum, f32(at(stage.reduce.src)),
                   f32(at(stage.reduce.dst)), spaces.outer, spaces.inner);
    }
    return;
  case OpKind::Fused: {
    std::vector<const void *> in;
    std::vector<void *> outs;
    for (const Operand &operand : step.in)
      in.push_back(at(operand));
    for (const Operand &operand : step.as<FusedAttrs>().outs)
      outs.push_back(at(operand));
    fusedKernel(exec(), step, in, outs);
    return;
  }
  case OpKind::Unary: {
    const UnaryAttrs &unary = step.as<UnaryAttrs>();
    unaryKernel(exec(), unary.fn, static_cast<float>(unary.value),
                f32(at(step.in[0])), f32(at(out)), out.shape.elements());
    return;
  }
  case OpKind::Cast:
    if (dtypeOf(step.in[0]) == dtypeOf(out)) {
      if (at(out) != at(step.in[0]))
        MESHC_CUDA_CHECK(
            cudaMemcpyAsync(at(out), at(step.in[0]),
                            out.shape.elements() * dtypeBytes(dtypeOf(out)),
                            cudaMemcpyDeviceToDevice, stream));
      return;
    }
    castKernel(exec(), dtypeOf(step.in[0]), dtypeOf(out), at(step.in[0]),
               at(out), out.shape.elements());
    return;
  case OpKind::Binary: {
    IterationSpace<3> space =
        binarySpace(step.in[0].shape, step.in[1].shape, out.shape);
    if (dtypeOf(step.in[0]) == DType::I32)
      compareKernel(exec(), step.as<BinaryAttrs>().fn, i32(at(step.in[0])),
                    i32(at(step.in[1])), f32(at(out)), space);
    else
      binaryKernel(exec(), step.as<BinaryAttrs>().fn, f32(at(step.in[0])),
                   f32(at(step.in[1])), f32(at(out)), space);
    return;
  }
  case OpKind::Reduce: {
    ReduceSpaces spaces = reduceSpaces(step.in[0].shape, out.shape);
    reduceKernel(exec(), step.as<ReduceAttrs>().fn, f32(at(step.in[0])),
                 f32(at(out)), spaces.outer, spaces.inner);
    return;
  }
  case OpKind::Softmax:
    softmaxKernel(
        exec(), f32(at(step.in[0])), f32(at(out)),
        inOutRows(step.in[0].shape, out.shape, step.as<SoftmaxAttrs>().dim));
    return;
  case OpKind::SoftmaxCrossEntropy: {
    RowWalk walk =
        crossEntropyWalk(step.in[0].shape, step.in[1].shape, out.shape,
                         step.as<SoftmaxCrossEntropyAttrs>().dim);
    MESHC_CUDA_CHECK(
        cudaMemsetAsync(status, 0xff, sizeof(KernelStatus), stream));
    crossEntropyKernel(exec(), f32(at(step.in[0])), i32(at(step.in[1])),
                       f32(at(out)), walk, status);
    checkRows(step, walk, walk.length);
    return;
  }
  case OpKind::OneHot: {
    const OneHotAttrs &hot = step.as<OneHotAttrs>();
    RowWalk walk = oneHotWalk(step.in[0].shape, out.shape, hot.dim);
    MESHC_CUDA_CHECK(
        cudaMemsetAsync(status, 0xff, sizeof(KernelStatus), stream));
    oneHotKernel(exec(), i32(at(step.in[0])), f32(at(out)), walk,
                 blockOffsets[step.index].front(), hot.classes, status);
    checkRows(step, walk, hot.classes);
    return;
  }
  case OpKind::LogSumExp:
    logSumExpKernel(
        exec(), f32(at(step.in[0])), f32(at(out)),
        argmaxWalk(step.in[0].shape, out.shape, step.as<LogSumExpAttrs>().dim));
    return;
  case OpKind::Argmax:
    argmaxKernel(
        exec(), f32(at(step.in[0])), i32(at(out)),
        argmaxWalk(step.in[0].shape, out.shape, step.as<ArgmaxAttrs>().dim));
    return;
  case OpKind::Dropout: {
    if (context.eval) {
      fillKernel(exec(), DType::F32, 1.0, at(out), out.shape.elements());
      return;
    }
    const DropoutAttrs &dropout = step.as<DropoutAttrs>();
    DropoutParams mask;
    mask.key =
        runKey(context.seed, context.streamName(dropout.name), context.run);
    mask.rate = dropout.rate;
    mask.keptScale = 1.0 / (1.0 - dropout.rate);
    DropoutSpace block =
        dropoutSpace(dropout.dims, blockOffsets[step.index], out.shape);
    dropoutKernel(exec(), mask, block.first, f32(at(out)), block.space);
    return;
  }
  case OpKind::Range:
    rangeKernel(exec(), kernelType(out), at(out), out.shape.elements());
    return;
  case OpKind::Window: {
    const NamedShape &in = step.in[0].shape;
    const WindowAttrs &window = step.as<WindowAttrs>();
    RowWalk rows = windowRows(in, out.shape, window.dim, window.toDim);
    int64_t length = in.sizes[in.position(window.dim)];
    if (kernelType(out) == DType::F32)
      windowKernel(exec(), f32(at(step.in[0])), f32(at(out)), rows, length,
                   window.offset);
    else // one 16-bit type on both sides (the loader stages any other pair)
      windowKernel(exec(), reinterpret_cast<const uint16_t *>(at(step.in[0])),
                   reinterpret_cast<uint16_t *>(at(out)), rows, length,
                   window.offset);
    return;
  }
  case OpKind::Cumsum: {
    const CumsumAttrs &cumsum = step.as<CumsumAttrs>();
    cumsumKernel(exec(), f32(at(step.in[0])), f32(at(out)),
                 inOutRows(step.in[0].shape, out.shape, cumsum.dim),
                 cumsum.reverse);
    return;
  }
  case OpKind::TopK: {
    const TopKAttrs &topK = step.as<TopKAttrs>();
    topKKernel(exec(), f32(at(step.in[0])), f32(at(out)),
               inOutRows(step.in[0].shape, out.shape, topK.dim), topK.k);
    return;
  }
  case OpKind::AllReduce:
  case OpKind::AllGather:
  case OpKind::ReduceScatter:
  case OpKind::AllToAll:
  case OpKind::Slice:
  case OpKind::CollectivePermute:
    runCollective(step, *comm);
    return;
  case OpKind::Attention:
  case OpKind::AttentionGrad:
    runAttention(step);
    return;
  case OpKind::Wait:
    // Started collectives run to completion in stream order here (the
    // session does not overlap them on CUDA yet): nothing is left to wait.
    return;
  case OpKind::Loop:
    throw RuntimeError("a loop step is run by the session, not a device");
  }
}

void CudaDevice::runAttention(const Step &step) {
  bool grad = step.op() == OpKind::AttentionGrad;
  const AttentionSpec &spec =
      grad ? static_cast<const AttentionSpec &>(step.as<AttentionGradAttrs>())
           : static_cast<const AttentionSpec &>(step.as<AttentionAttrs>());
  AttentionData data{};
  const std::vector<AttentionOperand> reads =
      grad ? std::vector<AttentionOperand>{kQ, kK, kV, kO, kLse, kDOut, kBias}
           : std::vector<AttentionOperand>{kQ, kK, kV, kBias};
  for (size_t i = 0; i < step.in.size(); ++i)
    data[reads[i]] = f32(at(step.in[i]));
  const std::vector<const Operand *> outputs = step.outputs();
  const AttentionOperand writes[] = {grad ? kDQ : kO, grad ? kDK : kLse, kDV};
  for (size_t i = 0; i < outputs.size(); ++i)
    data[writes[i]] = f32(at(*outputs[i]));
  const int64_t *tables = attentionTables.at(step.index);
  const AttentionGemmContext context{cublas, tf32, attentionWorkspace,
                                     attentionWorkspaceFloats};
  if (!attentionTiles &&
      attentionGemm(exec(), context, spec, grad, data, tables))
    return;
  if (grad)
    attentionGradKernel(exec(), spec, data, tables);
  else
    attentionKernel(exec(), spec, data, tables);
}

void CudaDevice::checkRows(const Step &step, const RowWalk &walk,
                           int64_t limit) {
  KernelStatus result;
  MESHC_CUDA_CHECK(cudaMemcpyAsync(&result, status, sizeof(result),
                                   cudaMemcpyDeviceToHost, stream));
  MESHC_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (result.firstBadRow == kNoFailure)
    return;
  // The label/index operand is operand 1 of both walks.
  int64_t element =
      rowOffset(walk, 1, static_cast<int64_t>(result.firstBadRow));
  int32_t value = 0;
  MESHC_CUDA_CHECK(cudaMemcpy(&value, i32(at(step.in.back())) + element,
                              sizeof(value), cudaMemcpyDeviceToHost));
  bool labels = step.op() == OpKind::SoftmaxCrossEntropy;
  throw RuntimeError(std::string(labels ? "label " : "index ") +
                     std::to_string(value) +
                     (labels ? " (labels element " : " (in element ") +
                     std::to_string(element) + ") is outside [0, " +
                     std::to_string(limit) + ")");
}

void CudaDevice::runGemm(const GemmStage &stage) {
  stridedGemm(stage, f32(at(stage.a)), f32(at(stage.b)), CUDA_R_32F,
              tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
}

void CudaDevice::runBf16Gemm(const GemmStage &stage, const char *a,
                             const char *b) {
  // A and B are the bf16 buffers the stage's f32 copies would hold: cuBLAS
  // multiplies them on the tensor cores and accumulates in f32.
  stridedGemm(stage, a, b, CUDA_R_16BF, CUBLAS_COMPUTE_32F);
}

void CudaDevice::stridedGemm(const GemmStage &stage, const void *a,
                             const void *b, cudaDataType inputs,
                             cublasComputeType_t compute) {
  float *c = f32(at(stage.c));
  if (stage.batch == 0 || stage.m == 0 || stage.n == 0)
    return;
  if (stage.k == 0) {
    MESHC_CUDA_CHECK(cudaMemsetAsync(
        c, 0, stage.batch * stage.m * stage.n * sizeof(float), stream));
    return;
  }
  const int64_t m = stage.m, n = stage.n, k = stage.k;
  const float one = 1.0f, zero = 0.0f;
  MESHC_CUBLAS_CHECK(cublasGemmStridedBatchedEx_64(
      cublas, stage.transB ? CUBLAS_OP_T : CUBLAS_OP_N,
      stage.transA ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, b, inputs,
      stage.transB ? k : n, k * n, a, inputs, stage.transA ? m : k, m * k,
      &zero, c, CUDA_R_32F, n, m * n, stage.batch, compute,
      CUBLAS_GEMM_DEFAULT));
}

void CudaDevice::copy2D(char *dst, int64_t dstPitch, const char *src,
                        int64_t srcPitch, int64_t width, int64_t rows) {
  if (width == 0 || rows == 0)
    return;
  MESHC_CUDA_CHECK(cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, width, rows,
                                     cudaMemcpyDeviceToDevice, stream));
}

void CudaDevice::runCollective(const Step &step, Communicator &comm) {
  const Operand &out = step.out;
  DType dtype = dtypeOf(out);
  auto copy = [&](const std::vector<StridedCopy> &copies, const char *src,
                  char *dst) {
    for (const StridedCopy &copy : copies)
      copy2D(dst + copy.dstOffset, copy.dstPitch, src + copy.srcOffset,
             copy.srcPitch, copy.width, copy.rows);
  };
  if (step.op() == OpKind::AllReduce) {
    runAllReduceStep(
        step, comm, dtype, at(out),
        [this](const Operand &operand) { return at(operand); },
        scratch + step.scratchOffset, copy);
    return;
  }
  runMoveStep(step, comm, dtype, at(step.in[0]), at(out),
              scratch + step.scratchOffset, copy,
              [this](const Operand &operand) { return at(operand); });
}

} // namespace meshc::runtime::cuda
