//===- CudaFusedKernel.cu - The CUDA backend's fused steps ----------------===//

#include "cuda/CudaFusedKernel.h"

#include "cuda/CudaCheck.h"
#include "cuda/ElementAccess.cuh"
#include "runtime/Error.h"

#include <cmath>
#include <string>

namespace meshc::runtime::cuda {
namespace {

/// One instruction, as the kernel reads it.
struct Instr {
  int8_t kind = 0; // FusedInstr::Kind
  int8_t fn = 0;   // UnaryFn or BinaryFn
  int8_t a = -1, b = -1;
  float value = 0;
  /// The DType the value is rounded to once computed (F32: none).
  int8_t round = static_cast<int8_t>(DType::F32);
};

/// Everything the kernel needs, passed by value.
struct Program {
  int inputs = 0, outputs = 0, body = 0;
  Instr instrs[kFusedValues] = {};
  int8_t outValues[kFusedOperands] = {};
  /// Iteration dims: the first `outerRank` outer, the rest inner.
  int rank = 0, outerRank = 0;
  int64_t sizes[kSpaceRank] = {};
  int64_t strides[kFusedOperands][kSpaceRank] = {};
  /// Per output: whether it lacks every inner dim (one write per row).
  bool rowOutput[kFusedOperands] = {};
  int64_t rows = 1, inner = 1;
  /// The operands (inputs, then outputs) and their element types.
  const void *in[kFusedOperands] = {};
  void *out[kFusedOperands] = {};
  int8_t types[kFusedOperands] = {};
};

MESHC_HOST_DEVICE float unaryOf(int fn, float x, float factor) {
  switch (static_cast<UnaryFn>(fn)) {
#define MESHC_UNARY_FN(Fn, Spelling)                                           \
  case UnaryFn::Fn:                                                            \
    return unaryValue<UnaryFn::Fn>(x, factor);
#include "runtime/core/ElementFunctions.def"
  }
  return x;
}

MESHC_HOST_DEVICE float binaryOf(int fn, float x, float y) {
  switch (static_cast<BinaryFn>(fn)) {
#define MESHC_BINARY_FN(Fn, Spelling)                                          \
  case BinaryFn::Fn:                                                           \
    return binaryValue<BinaryFn::Fn>(x, y);
#include "runtime/core/ElementFunctions.def"
  }
  return x;
}

constexpr int kReduceSum = static_cast<int>(FusedInstr::Kind::ReduceSum);
constexpr int kReduceMax = static_cast<int>(FusedInstr::Kind::ReduceMax);

/// The operand offsets of element `k` of row `row`, in `Index`
/// arithmetic: uint32_t where every index and offset of the step fits
/// (fitsIn32Bits), which the GPU divides several times faster than int64_t.
template <typename Index>
MESHC_HOST_DEVICE void offsetsOf(const Program &p, Index row, Index k,
                                 Index *offsets) {
  int operands = p.inputs + p.outputs;
  for (int o = 0; o < operands; ++o)
    offsets[o] = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    Index &linear = d >= p.outerRank ? k : row;
    Index size = static_cast<Index>(p.sizes[d]);
    Index index = linear;
    if (d != 0 && d != p.outerRank) { // the group's first dim takes the rest
      index = linear % size;
      linear /= size;
    }
    for (int o = 0; o < operands; ++o)
      offsets[o] += index * static_cast<Index>(p.strides[o][d]);
  }
}

/// Evaluates instructions [0, upto) at one element into `r`; reductions
/// take their row's value from `known`.
template <typename Index>
MESHC_HOST_DEVICE void evaluate(const Program &p, const Index *offsets,
                                int upto, const float *known, float *r) {
  for (int i = 0; i < p.inputs; ++i)
    r[i] = loadFloat(static_cast<DType>(p.types[i]), p.in[i], offsets[i]);
  for (int j = 0; j < upto; ++j) {
    const Instr &instr = p.instrs[j];
    int v = p.inputs + j;
    switch (static_cast<FusedInstr::Kind>(instr.kind)) {
    case FusedInstr::Kind::Const:
      r[v] = instr.value;
      break;
    case FusedInstr::Kind::Unary:
      r[v] = unaryOf(instr.fn, r[instr.a], instr.value);
      break;
    case FusedInstr::Kind::Binary:
      r[v] = binaryOf(instr.fn, r[instr.a], r[instr.b]);
      break;
    case FusedInstr::Kind::ReduceSum:
    case FusedInstr::Kind::ReduceMax:
      r[v] = known[v];
      break;
    }
    r[v] = roundFloat(static_cast<DType>(instr.round), r[v]);
  }
}

/// Value `v` (`x`) as its instruction rounds it (an operand as it is).
MESHC_HOST_DEVICE float rounded(const Program &p, int v, float x) {
  return v < p.inputs
             ? x
             : roundFloat(static_cast<DType>(p.instrs[v - p.inputs].round), x);
}

/// Stores `value` as element `offset` of output `o`.
MESHC_HOST_DEVICE void storeOutput(const Program &p, int o, int64_t offset,
                                   float value) {
  storeFloat(static_cast<DType>(p.types[p.inputs + o]), p.out[o], offset,
             value);
}

/// Writes the outputs at one element (row outputs only at element 0).
template <typename Index>
MESHC_HOST_DEVICE void writeOutputs(const Program &p, const Index *offsets,
                                    Index k, const float *r) {
  for (int o = 0; o < p.outputs; ++o)
    if (!p.rowOutput[o] || k == 0)
      storeOutput(p, o, static_cast<int64_t>(offsets[p.inputs + o]),
                  r[p.outValues[o]]);
}

/// One element of an elementwise body (every dim outer, p.inner 1).
template <typename Index>
MESHC_HOST_DEVICE void elementAt(const Program &p, Index i) {
  Index offsets[kFusedOperands];
  float r[kFusedValues];
  offsetsOf<Index>(p, i, 0, offsets);
  evaluate(p, offsets, p.body, nullptr, r);
  writeOutputs(p, offsets, Index(0), r);
}

/// Folds `x` into a reduction's running value.
MESHC_HOST_DEVICE float combine(int kind, float acc, float x) {
  return kind == kReduceSum ? acc + x : maxOf(acc, x);
}
MESHC_HOST_DEVICE float identity(int kind) {
  return kind == kReduceSum ? 0.0f : -INFINITY;
}

/// A row with reductions, on the host: element by element, in order.
void rowOnHost(const Program &p, int64_t row) {
  int64_t offsets[kFusedOperands];
  auto offsetsOf = [&p](int64_t row, int64_t k, int64_t *offsets) {
    meshc::runtime::cuda::offsetsOf<int64_t>(p, row, k, offsets);
  };
  float r[kFusedValues], known[kFusedValues];
  for (int j = 0; j < p.body; ++j) {
    int kind = p.instrs[j].kind;
    if (kind != kReduceSum && kind != kReduceMax)
      continue;
    float acc = identity(kind);
    for (int64_t k = 0; k < p.inner; ++k) {
      offsetsOf(row, k, offsets);
      evaluate(p, offsets, j, known, r);
      acc = combine(kind, acc, r[p.instrs[j].a]);
    }
    known[p.inputs + j] = acc;
  }
  for (int64_t k = 0; k < std::max<int64_t>(p.inner, 1); ++k) {
    offsetsOf(row, p.inner ? k : 0, offsets);
    if (p.inner == 0) {
      // An empty row still has its row outputs (empty sums and maxima).
      float rowValues[kFusedValues] = {};
      for (int j = 0; j < p.body; ++j)
        rowValues[p.inputs + j] = known[p.inputs + j];
      for (int o = 0; o < p.outputs; ++o)
        if (p.rowOutput[o])
          storeOutput(p, o, offsets[p.inputs + o],
                      rounded(p, p.outValues[o], rowValues[p.outValues[o]]));
      return;
    }
    evaluate(p, offsets, p.body, known, r);
    writeOutputs<int64_t>(p, offsets, k, r);
  }
}

#if defined(__CUDACC__)
constexpr int kRowThreads = 256;

template <typename Index>
__global__ void elementKernel(Program p, Index count) {
  Index stride = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride)
    elementAt<Index>(p, i);
}

/// Folds `value` over the block by the reduction `kind`.
__device__ float blockCombine(int kind, float value) {
  return blockReduce(value,
                     [kind](float a, float b) { return combine(kind, a, b); });
}

template <typename Index> __global__ void rowKernel(Program p) {
  __shared__ float known[kFusedValues];
  Index offsets[kFusedOperands];
  float r[kFusedValues];
  Index rows = static_cast<Index>(p.rows), inner = static_cast<Index>(p.inner);
  for (Index row = blockIdx.x; row < rows; row += gridDim.x) {
    for (int j = 0; j < p.body; ++j) {
      int kind = p.instrs[j].kind;
      if (kind != kReduceSum && kind != kReduceMax)
        continue;
      float acc = identity(kind);
      for (Index k = threadIdx.x; k < inner; k += blockDim.x) {
        offsetsOf<Index>(p, row, k, offsets);
        evaluate(p, offsets, j, known, r);
        acc = combine(kind, acc, r[p.instrs[j].a]);
      }
      acc = blockCombine(kind, acc);
      if (threadIdx.x == 0)
        known[p.inputs + j] = acc;
      __syncthreads();
    }
    for (Index k = threadIdx.x; k < inner; k += blockDim.x) {
      offsetsOf<Index>(p, row, k, offsets);
      evaluate(p, offsets, p.body, known, r);
      writeOutputs(p, offsets, k, r);
    }
    if (inner == 0 && threadIdx.x == 0) {
      offsetsOf<Index>(p, row, Index(0), offsets);
      for (int o = 0; o < p.outputs; ++o)
        if (p.rowOutput[o])
          storeOutput(p, o, static_cast<int64_t>(offsets[p.inputs + o]),
                      rounded(p, p.outValues[o], known[p.outValues[o]]));
    }
    __syncthreads();
  }
}

// Few long rows: each row cut into `chunks` parts, a block each (block b
// is chunk b % chunks of row b / chunks). `knownRows` holds each row's
// reduction values (kFusedValues per row), `part` one partial per block.

/// Loads row `row`'s reduction values into `known`.
__device__ void loadKnown(const float *knownRows, int64_t row, float *known) {
  for (int v = threadIdx.x; v < kFusedValues; v += blockDim.x)
    known[v] = knownRows[row * kFusedValues + v];
  __syncthreads();
}

/// Reduction `j` over each block's chunk, into part[block].
template <typename Index>
__global__ void chunkPartialKernel(Program p, int j, int64_t chunks,
                                   const float *knownRows, float *part) {
  __shared__ float known[kFusedValues];
  int64_t row = blockIdx.x / chunks, begin, end;
  chunkRange(p.inner, chunks, blockIdx.x % chunks, begin, end);
  loadKnown(knownRows, row, known);
  int kind = p.instrs[j].kind;
  Index offsets[kFusedOperands];
  float r[kFusedValues];
  float acc = identity(kind);
  for (Index k = static_cast<Index>(begin) + threadIdx.x; k < Index(end);
       k += blockDim.x) {
    offsetsOf<Index>(p, Index(row), k, offsets);
    evaluate(p, offsets, j, known, r);
    acc = combine(kind, acc, r[p.instrs[j].a]);
  }
  acc = blockCombine(kind, acc);
  if (threadIdx.x == 0)
    part[blockIdx.x] = acc;
}

/// Each row's partials, in chunk order, into its value `value`.
__global__ void chunkCombineKernel(int64_t rows, int64_t chunks, int kind,
                                   int value, const float *part,
                                   float *knownRows) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows)
    return;
  float acc = identity(kind);
  for (int64_t c = 0; c < chunks; ++c)
    acc = combine(kind, acc, part[row * chunks + c]);
  knownRows[row * kFusedValues + value] = acc;
}

/// The whole body over each block's chunk, writing the outputs.
template <typename Index>
__global__ void chunkWriteKernel(Program p, int64_t chunks,
                                 const float *knownRows) {
  __shared__ float known[kFusedValues];
  int64_t row = blockIdx.x / chunks, begin, end;
  chunkRange(p.inner, chunks, blockIdx.x % chunks, begin, end);
  loadKnown(knownRows, row, known);
  Index offsets[kFusedOperands];
  float r[kFusedValues];
  for (Index k = static_cast<Index>(begin) + threadIdx.x; k < Index(end);
       k += blockDim.x) {
    offsetsOf<Index>(p, Index(row), k, offsets);
    evaluate(p, offsets, p.body, known, r);
    writeOutputs(p, offsets, k, r);
  }
}

/// The split form of rowKernel; false where the workspace is too small.
template <typename Index> bool runChunked(const Exec &exec, const Program &p) {
  int64_t chunks = splitChunks(p.rows, p.inner, kRowThreads);
  if (chunks < 2 || exec.partials == nullptr ||
      p.rows * (kFusedValues + chunks) > kPartialFloats)
    return false;
  float *knownRows = exec.partials;
  float *part = exec.partials + p.rows * kFusedValues;
  auto blocks = static_cast<unsigned>(p.rows * chunks);
  auto combineBlocks = static_cast<unsigned>((p.rows + 255) / 256);
  for (int j = 0; j < p.body; ++j) {
    int kind = p.instrs[j].kind;
    if (kind != kReduceSum && kind != kReduceMax)
      continue;
    chunkPartialKernel<Index><<<blocks, kRowThreads, 0, exec.stream>>>(
        p, j, chunks, knownRows, part);
    chunkCombineKernel<<<combineBlocks, 256, 0, exec.stream>>>(
        p.rows, chunks, kind, p.inputs + j, part, knownRows);
  }
  chunkWriteKernel<Index>
      <<<blocks, kRowThreads, 0, exec.stream>>>(p, chunks, knownRows);
  MESHC_CUDA_CHECK(cudaGetLastError());
  return true;
}
#endif

std::vector<int64_t> stridesAlong(const NamedShape &shape,
                                  const std::vector<std::string> &dims) {
  std::vector<int64_t> own(shape.names.size()), along;
  int64_t stride = 1;
  for (size_t d = shape.names.size(); d-- > 0;) {
    own[d] = stride;
    stride *= shape.sizes[d];
  }
  for (const std::string &name : dims) {
    int pos = shape.position(name);
    along.push_back(pos < 0 ? 0 : own[pos]);
  }
  return along;
}

/// Drops the dims of size 1 and merges each pair of adjacent dims of the
/// same group (outer or inner) that every operand walks as one (the outer
/// dim's stride is the inner's times its size, zero for a broadcast): the
/// offsets then take fewer divisions, a contiguous elementwise step none.
void mergeDims(Program &p) {
  int operands = p.inputs + p.outputs;
  int rank = 0, outerRank = 0;
  for (int d = 0; d < p.rank; ++d) {
    bool outer = d < p.outerRank;
    if (p.sizes[d] == 1)
      continue;
    int last = rank - 1;
    bool sameGroup = rank > 0 && (outer ? true : last >= outerRank);
    bool walksAsOne = sameGroup;
    for (int o = 0; o < operands && walksAsOne; ++o)
      walksAsOne = p.strides[o][last] == p.strides[o][d] * p.sizes[d];
    if (walksAsOne) {
      p.sizes[last] *= p.sizes[d];
      for (int o = 0; o < operands; ++o)
        p.strides[o][last] = p.strides[o][d];
      continue;
    }
    p.sizes[rank] = p.sizes[d];
    for (int o = 0; o < operands; ++o)
      p.strides[o][rank] = p.strides[o][d];
    outerRank += outer ? 1 : 0;
    ++rank;
  }
  p.rank = rank;
  p.outerRank = outerRank;
}

/// Whether every index (rows times inner) and every operand offset of `p`
/// fits in 31 bits.
bool fitsIn32Bits(const Program &p) {
  constexpr int64_t limit = int64_t(1) << 31;
  if (p.rows * p.inner >= limit)
    return false;
  for (int o = 0; o < p.inputs + p.outputs; ++o) {
    int64_t last = 0;
    for (int d = 0; d < p.rank; ++d)
      last += (p.sizes[d] - 1) * p.strides[o][d];
    if (last >= limit)
      return false;
  }
  return true;
}

} // namespace

void fusedKernel(const Exec &exec, const Step &step,
                 const std::vector<const void *> &in,
                 const std::vector<void *> &out) {
  const FusedAttrs &attrs = step.as<FusedAttrs>();
  Program p;
  p.inputs = static_cast<int>(in.size());
  p.outputs = static_cast<int>(out.size());
  p.body = static_cast<int>(attrs.body.size());
  if (p.inputs + p.outputs > kFusedOperands ||
      p.inputs + p.body > kFusedValues ||
      static_cast<int>(attrs.dims.size()) > kSpaceRank)
    throw RuntimeError(
        "step " + std::to_string(step.index) +
        " (fused): " + std::to_string(p.inputs) + " inputs, " +
        std::to_string(p.outputs) + " outputs and " + std::to_string(p.body) +
        " instructions exceed the CUDA fused kernel's " +
        std::to_string(kFusedOperands) + " operands and " +
        std::to_string(kFusedValues) + " values (compile with --no-fuse)");
  for (int j = 0; j < p.body; ++j) {
    const FusedInstr &instr = attrs.body[j];
    Instr &to = p.instrs[j];
    to.kind = static_cast<int8_t>(instr.kind);
    to.fn = static_cast<int8_t>(instr.kind == FusedInstr::Kind::Binary
                                    ? static_cast<int>(instr.binary)
                                    : static_cast<int>(instr.unary));
    to.a = static_cast<int8_t>(instr.args[0]);
    to.b = static_cast<int8_t>(instr.args[1]);
    to.value = instr.value;
    to.round = static_cast<int8_t>(instr.round);
  }
  p.rank = static_cast<int>(attrs.dims.size());
  p.outerRank = p.rank - static_cast<int>(attrs.reduced);
  for (int d = 0; d < p.rank; ++d) {
    p.sizes[d] = attrs.sizes[d];
    (d < p.outerRank ? p.rows : p.inner) *= attrs.sizes[d];
  }
  std::vector<NamedShape> shapes;
  for (const Operand &operand : step.in)
    shapes.push_back(operand.shape);
  for (const Operand &operand : attrs.outs)
    shapes.push_back(operand.shape);
  for (size_t o = 0; o < shapes.size(); ++o) {
    std::vector<int64_t> along = stridesAlong(shapes[o], attrs.dims);
    for (int d = 0; d < p.rank; ++d)
      p.strides[o][d] = along[d];
  }
  for (int o = 0; o < p.outputs; ++o) {
    p.outValues[o] = static_cast<int8_t>(attrs.outValues[o]);
    p.out[o] = out[o];
    bool lacksInner = true;
    for (int d = p.outerRank; d < p.rank; ++d)
      lacksInner &= p.strides[p.inputs + o][d] == 0;
    p.rowOutput[o] = attrs.reduced > 0 && lacksInner;
  }
  for (int i = 0; i < p.inputs; ++i)
    p.in[i] = in[i];
  for (int o = 0; o < p.inputs + p.outputs; ++o)
    p.types[o] = static_cast<int8_t>(attrs.types[size_t(o)]);
  if (p.rows <= 0)
    return; // no rows (with reductions, an empty inner still writes rows)
  mergeDims(p);
  bool narrow = fitsIn32Bits(p);

  if (attrs.reduced == 0) {
    // No reduction: every element alone (all dims outer, p.inner 1).
    int64_t count = p.rows;
    if (exec.onHost) {
      for (int64_t i = 0; i < count; ++i)
        elementAt<int64_t>(p, i);
      return;
    }
#if defined(__CUDACC__)
    const int threads = 256;
    auto blocks = static_cast<unsigned>(
        std::min<int64_t>((count + threads - 1) / threads, 1 << 20));
    if (narrow)
      elementKernel<uint32_t><<<blocks, threads, 0, exec.stream>>>(
          p, static_cast<uint32_t>(count));
    else
      elementKernel<int64_t><<<blocks, threads, 0, exec.stream>>>(p, count);
    MESHC_CUDA_CHECK(cudaGetLastError());
#endif
    return;
  }
  if (exec.onHost) {
    for (int64_t row = 0; row < p.rows; ++row)
      rowOnHost(p, row);
    return;
  }
#if defined(__CUDACC__)
  if (narrow ? runChunked<uint32_t>(exec, p) : runChunked<int64_t>(exec, p))
    return;
  auto blocks = static_cast<unsigned>(std::min<int64_t>(p.rows, 1 << 20));
  if (narrow)
    rowKernel<uint32_t><<<blocks, kRowThreads, 0, exec.stream>>>(p);
  else
    rowKernel<int64_t><<<blocks, kRowThreads, 0, exec.stream>>>(p);
  MESHC_CUDA_CHECK(cudaGetLastError());
#endif
}

} // namespace meshc::runtime::cuda
