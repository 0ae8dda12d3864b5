//===- FusedKernel.cpp - The CPU's fused steps ----------------------------===//

#include "runtime/cpu/FusedKernel.h"

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
        scalars(inputs + attrs.body.size()) {}

  /// Evaluates elements [begin, begin + length) of the row whose operands
  /// start at `base`.
  void evaluate(const std::vector<const float *> &in,
                const std::vector<float *> &out, const int64_t *base,
                int64_t begin, int64_t length) {
    for (size_t i = 0; i < inputs; ++i)
      read(i, in[i] + base[i], begin, length);
    for (size_t j = 0; j < attrs.body.size(); ++j)
      compute(attrs.body[j], inputs + j, length);
    for (size_t o = 0; o < out.size(); ++o)
      write(attrs.outValues[o], inputs + o, out[o] + base[inputs + o], begin,
            length);
  }

private:
  float *slotOf(size_t value) { return scratch + plan.slot[value] * stride; }

  /// The offset of element k of the run of operand `o`.
  int64_t offset(size_t o, int64_t k) const {
    int64_t s = plan.innerStride[o];
    return s == FusedPlan::kTable ? plan.innerTable[o][k] : k * s;
  }

  void read(size_t i, const float *row, int64_t begin, int64_t length) {
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

  void compute(const FusedInstr &instr, size_t v, int64_t length) {
    int32_t a = instr.args[0], b = instr.args[1];
    bool scalar = plan.scalar[v];
    switch (instr.kind) {
    case Kind::Const:
      scalars[v] = instr.value;
      return;
    case Kind::Unary:
      if (scalar)
        vmath::unary(instr.unary, instr.value, &scalars[a], &scalars[v], 1);
      else
        vmath::unary(instr.unary, instr.value, vectors[a], slotOf(v), length);
      break;
    case Kind::Binary:
      if (scalar)
        vmath::binary(instr.binary, &scalars[a], &scalars[b], &scalars[v], 1);
      else if (plan.scalar[a])
        vmath::binaryScalarLhs(instr.binary, scalars[a], vectors[b], slotOf(v),
                               length);
      else if (plan.scalar[b])
        vmath::binaryScalarRhs(instr.binary, vectors[a], scalars[b], slotOf(v),
                               length);
      else
        vmath::binary(instr.binary, vectors[a], vectors[b], slotOf(v), length);
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
      return;
    case Kind::ReduceMax:
      if (plan.scalar[a])
        scalars[v] = length > 0 ? maxOf(-std::numeric_limits<float>::infinity(),
                                        scalars[a])
                                : -std::numeric_limits<float>::infinity();
      else
        scalars[v] = vmath::max(vectors[a], length);
      return;
    }
    if (!scalar)
      vectors[v] = slotOf(v);
  }

  void write(int32_t value, size_t o, float *row, int64_t begin,
             int64_t length) {
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
};

} // namespace

void fusedKernel(const FusedAttrs &attrs, const std::vector<const float *> &in,
                 const std::vector<float *> &out, float *scratch) {
  const FusedPlan &plan = attrs.plan;
  int64_t run = plan.blocked ? std::min(plan.inner, kFusedBlock) : plan.inner;
  Run state(attrs, in.size(), scratch, run);
  size_t operands = in.size() + out.size();
  std::vector<int64_t> base(operands, 0);
  std::vector<int64_t> coords(plan.outerSizes.size(), 0);
  int64_t rows = plan.rows();
  for (int64_t r = 0; r < rows; ++r) {
    if (!plan.blocked)
      state.evaluate(in, out, base.data(), 0, plan.inner);
    else
      for (int64_t begin = 0; begin < plan.inner; begin += run)
        state.evaluate(in, out, base.data(), begin,
                       std::min(run, plan.inner - begin));
    // The next row: an odometer over the outer dims.
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
