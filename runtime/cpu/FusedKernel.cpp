//===- FusedKernel.cpp - The CPU's fused steps ----------------------------===//

#include "runtime/cpu/FusedKernel.h"

#include "runtime/core/HalfFloat.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/VectorMath.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace meshc::runtime {
namespace {

using Kind = FusedInstr::Kind;

/// The state of one inner run: where each value's vector is, or its scalar.
class Run {
public:
  Run(const FusedAttrs &attrs, size_t inputs, float *scratch, int64_t stride)
      : attrs(attrs), plan(attrs.plan), inputs(inputs), scratch(scratch),
        stride(stride), vectors(inputs + attrs.body.size()),
        scalars(inputs + attrs.body.size()), unaries(attrs.body.size()),
        binaries(attrs.body.size()),
        destination(inputs + attrs.body.size(), nullptr) {
    // A computed vector value that an output stores contiguously is
    // computed right into it (outputs overlap no input, docs/mprog.md).
    for (size_t o = 0; o < attrs.outValues.size(); ++o) {
      size_t v = static_cast<size_t>(attrs.outValues[o]);
      if (v >= inputs && !plan.scalar[v] && plan.innerStride[inputs + o] == 1 &&
          attrs.types[inputs + o] == DType::F32 &&
          std::find(direct.begin(), direct.end(), v) == direct.end()) {
        direct.push_back(v);
        directOut.push_back(o);
      }
    }
    // Each instruction's array function, chosen once for all rows.
    for (size_t j = 0; j < attrs.body.size(); ++j) {
      if (attrs.body[j].kind == Kind::Unary)
        unaries[j] = vmath::unaryArray(attrs.body[j].unary);
      else if (attrs.body[j].kind == Kind::Binary)
        binaries[j] = vmath::binaryArrays(attrs.body[j].binary);
    }
  }

  /// Evaluates elements [begin, begin + length) of the row whose operands
  /// start at `base`.
  void evaluate(const std::vector<const char *> &in,
                const std::vector<char *> &out, const int64_t *base,
                int64_t begin, int64_t length) {
    for (size_t i = 0; i < inputs; ++i)
      read(i, in[i] + base[i] * bytes(i), begin, length);
    for (size_t d = 0; d < direct.size(); ++d)
      destination[direct[d]] = reinterpret_cast<float *>(out[directOut[d]]) +
                               base[inputs + directOut[d]] + begin;
    for (size_t j = 0; j < attrs.body.size(); ++j)
      compute(j, inputs + j, length);
    for (size_t o = 0; o < out.size(); ++o)
      write(attrs.outValues[o], inputs + o,
            out[o] + base[inputs + o] * bytes(inputs + o), begin, length);
  }

private:
  float *slotOf(size_t value) { return scratch + plan.slot[value] * stride; }
  /// Where computed value `value` goes: its output, or its scratch slot.
  float *targetOf(size_t value) {
    return destination[value] ? destination[value] : slotOf(value);
  }

  /// The offset of element k of the run of operand `o`.
  int64_t offset(size_t o, int64_t k) const {
    int64_t s = plan.innerStride[o];
    return s == FusedPlan::kTable ? plan.innerTable[o][k] : k * s;
  }

  /// The bytes of an element of operand `o`.
  int64_t bytes(size_t o) const { return dtypeBytes(attrs.types[o]); }

  /// Element `index` of 16-bit operand `o`'s `row`, widened.
  float widen(size_t o, const char *row, int64_t index) const {
    uint16_t bits = reinterpret_cast<const uint16_t *>(row)[index];
    return attrs.types[o] == DType::BF16 ? half::f32FromBf16(bits)
                                         : half::f32FromF16(bits);
  }
  /// `x` stored as element `index` of 16-bit operand `o`'s `row`.
  void narrow(size_t o, char *row, int64_t index, float x) const {
    reinterpret_cast<uint16_t *>(row)[index] = attrs.types[o] == DType::BF16
                                                   ? half::bf16FromF32(x)
                                                   : half::f16FromF32(x);
  }

  void read(size_t i, const char *bytesRow, int64_t begin, int64_t length) {
    if (isHalf(attrs.types[i])) {
      if (plan.scalar[i]) {
        scalars[i] = widen(i, bytesRow, 0);
        return;
      }
      float *slot = slotOf(i);
      if (plan.innerStride[i] == 1)
        widenKernel(attrs.types[i], bytesRow + begin * 2, slot, length);
      else
        for (int64_t k = 0; k < length; ++k)
          slot[k] = widen(i, bytesRow, offset(i, begin + k));
      vectors[i] = slot;
      return;
    }
    const auto *row = reinterpret_cast<const float *>(bytesRow);
    if (plan.scalar[i]) {
      scalars[i] = row[0];
    } else if (plan.innerStride[i] == 1) {
      vectors[i] = row + begin;
    } else {
      float *slot = slotOf(i);
      for (int64_t k = 0; k < length; ++k)
        slot[k] = row[offset(i, begin + k)];
      vectors[i] = slot;
    }
  }

  void compute(size_t j, size_t v, int64_t length) {
    const FusedInstr &instr = attrs.body[j];
    int32_t a = instr.args[0], b = instr.args[1];
    bool scalar = plan.scalar[v];
    switch (instr.kind) {
    case Kind::Const:
      scalars[v] = instr.value;
      roundScalar(j, v);
      return;
    case Kind::Unary:
      if (scalar) {
        scalars[v] = vmath::unaryOne(instr.unary, scalars[a], instr.value);
        roundScalar(j, v);
        return;
      }
      unaries[j](instr.value, vectors[a], targetOf(v), length);
      break;
    case Kind::Binary:
      if (scalar) {
        scalars[v] = vmath::binaryOne(instr.binary, scalars[a], scalars[b]);
        roundScalar(j, v);
        return;
      }
      if (plan.scalar[a])
        binaries[j].scalarLhs(scalars[a], vectors[b], targetOf(v), length);
      else if (plan.scalar[b])
        binaries[j].scalarRhs(vectors[a], scalars[b], targetOf(v), length);
      else
        binaries[j].both(vectors[a], vectors[b], targetOf(v), length);
      break;
    case Kind::ReduceSum:
      if (plan.scalar[a]) {
        float sum = 0.0f;
        for (int64_t k = 0; k < length; ++k)
          sum += scalars[a];
        scalars[v] = sum;
      } else {
        scalars[v] = vmath::sum(vectors[a], length);
      }
      roundScalar(j, v);
      return;
    case Kind::ReduceMax:
      if (plan.scalar[a])
        scalars[v] = length > 0 ? maxOf(-std::numeric_limits<float>::infinity(),
                                        scalars[a])
                                : -std::numeric_limits<float>::infinity();
      else
        scalars[v] = vmath::max(vectors[a], length);
      roundScalar(j, v);
      return;
    }
    if (!scalar) {
      vectors[v] = targetOf(v);
      float *values = targetOf(v);
      if (instr.round == DType::BF16)
        vmath::roundToBf16(values, length);
      else if (instr.round == DType::F16)
        for (int64_t k = 0; k < length; ++k)
          values[k] = half::roundToF16(values[k]);
    }
  }

  static float roundTo(DType type, float x) {
    return type == DType::BF16 ? half::roundToBf16(x) : half::roundToF16(x);
  }
  /// Rounds scalar value `v` of instruction `j` as its type says.
  void roundScalar(size_t j, size_t v) {
    if (attrs.body[j].round != DType::F32)
      scalars[v] = roundTo(attrs.body[j].round, scalars[v]);
  }

  void write(int32_t value, size_t o, char *bytesRow, int64_t begin,
             int64_t length) {
    if (isHalf(attrs.types[o])) {
      if (plan.scalar[value]) {
        if (plan.innerStride[o] == 0)
          narrow(o, bytesRow, 0, scalars[value]);
        else
          for (int64_t k = 0; k < length; ++k)
            narrow(o, bytesRow, offset(o, begin + k), scalars[value]);
        return;
      }
      const float *from = vectors[value];
      if (plan.innerStride[o] == 1)
        narrowKernel(from, attrs.types[o], bytesRow + begin * 2, length);
      else
        for (int64_t k = 0; k < length; ++k)
          narrow(o, bytesRow, offset(o, begin + k), from[k]);
      return;
    }
    auto *row = reinterpret_cast<float *>(bytesRow);
    if (plan.scalar[value]) {
      if (plan.innerStride[o] == 0) {
        row[0] = scalars[value];
        return;
      }
      for (int64_t k = 0; k < length; ++k)
        row[offset(o, begin + k)] = scalars[value];
      return;
    }
    const float *from = vectors[value];
    if (plan.innerStride[o] == 1) {
      if (from != row + begin)
        std::memcpy(row + begin, from, length * sizeof(float));
      return;
    }
    for (int64_t k = 0; k < length; ++k)
      row[offset(o, begin + k)] = from[k];
  }

  const FusedAttrs &attrs;
  const FusedPlan &plan;
  size_t inputs;
  float *scratch;
  int64_t stride;
  std::vector<const float *> vectors;
  std::vector<float> scalars;
  std::vector<vmath::UnaryArray> unaries;
  std::vector<vmath::BinaryArrays> binaries;
  /// The values computed into an output (direct[d] into directOut[d]), and
  /// per value its place in the current run (null: its slot).
  std::vector<size_t> direct, directOut;
  std::vector<float *> destination;
};

} // namespace

void fusedKernel(const FusedAttrs &attrs, const std::vector<const char *> &in,
                 const std::vector<char *> &out, float *scratch, int64_t begin,
                 int64_t end) {
  const FusedPlan &plan = attrs.plan;
  int64_t run = plan.runLength(), perRow = plan.runsPerRow();
  if (begin >= end)
    return;
  Run state(attrs, in.size(), scratch, run);
  size_t operands = in.size() + out.size();
  // The odometer over the outer dims starts at the row of unit `begin`.
  std::vector<int64_t> base(operands, 0);
  std::vector<int64_t> coords(plan.outerSizes.size(), 0);
  int64_t row = begin / perRow, block = begin % perRow;
  for (size_t d = plan.outerSizes.size(), left = size_t(row); d-- > 0;) {
    coords[d] = int64_t(left % size_t(plan.outerSizes[d]));
    left /= size_t(plan.outerSizes[d]);
    for (size_t o = 0; o < operands; ++o)
      base[o] += coords[d] * plan.outerStrides[o][d];
  }
  for (int64_t unit = begin; unit < end;) {
    for (; block < perRow && unit < end; ++block, ++unit) {
      int64_t first = block * run;
      state.evaluate(in, out, base.data(), first,
                     std::min(run, plan.inner - first));
    }
    block = 0;
    // The next row.
    for (size_t d = plan.outerSizes.size(); d-- > 0;) {
      for (size_t o = 0; o < operands; ++o)
        base[o] += plan.outerStrides[o][d];
      if (++coords[d] < plan.outerSizes[d])
        break;
      for (size_t o = 0; o < operands; ++o)
        base[o] -= plan.outerStrides[o][d] * plan.outerSizes[d];
      coords[d] = 0;
    }
  }
}

} // namespace meshc::runtime
