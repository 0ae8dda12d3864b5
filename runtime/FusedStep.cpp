//===- FusedStep.cpp - The expression program of a fused step -------------===//

#include "runtime/FusedStep.h"

#include "runtime/Program.h"

#include <algorithm>
#include <cstdint>

namespace meshc::runtime {

int64_t FusedPlan::rows() const {
  int64_t rows = 1;
  for (int64_t size : outerSizes)
    rows *= size;
  return rows;
}

int64_t FusedPlan::runLength() const {
  return blocked ? std::min(inner, kBlock) : inner;
}

int64_t FusedPlan::runsPerRow() const {
  if (!blocked)
    return 1;
  int64_t run = runLength();
  return run == 0 ? 0 : (inner + run - 1) / run;
}

namespace {

/// strides[operand][dim]: each operand's element stride along each
/// iteration dim (0 where it lacks the dim).
std::vector<std::vector<int64_t>>
operandStrides(const std::vector<std::string> &dims,
               const std::vector<NamedShape> &operands) {
  std::vector<std::vector<int64_t>> strides;
  for (const NamedShape &shape : operands) {
    std::vector<int64_t> own(shape.names.size());
    int64_t stride = 1;
    for (size_t d = shape.names.size(); d-- > 0;) {
      own[d] = stride;
      stride *= shape.sizes[d];
    }
    std::vector<int64_t> along;
    for (const std::string &name : dims) {
      int pos = shape.position(name);
      along.push_back(pos < 0 ? 0 : own[pos]);
    }
    strides.push_back(std::move(along));
  }
  return strides;
}

} // namespace

FusedPlan planFused(const std::vector<FusedInstr> &body,
                    const std::vector<int32_t> &outValues,
                    const std::vector<std::string> &dims,
                    const std::vector<int64_t> &sizes, size_t reduced,
                    const std::vector<NamedShape> &operands, size_t inputs,
                    const std::vector<DType> &types) {
  FusedPlan plan;
  std::vector<std::vector<int64_t>> strides = operandStrides(dims, operands);
  size_t count = operands.size();
  // The inner run: the reduced dims, or (with no reduction) the innermost
  // dims that every operand walks with one stride.
  size_t innerBegin = dims.size() - reduced;
  plan.innerStride.assign(count, 0);
  plan.innerTable.assign(count, {});
  if (reduced == 0 && !dims.empty()) {
    innerBegin = dims.size() - 1;
    for (size_t o = 0; o < count; ++o)
      plan.innerStride[o] = strides[o][innerBegin];
    plan.inner = sizes[innerBegin];
    while (innerBegin > 0) {
      size_t d = innerBegin - 1;
      bool joins = sizes[d] == 1 ||
                   std::all_of(strides.begin(), strides.end(), [&](auto &s) {
                     size_t o = &s - strides.data();
                     return s[d] == plan.innerStride[o] * plan.inner;
                   });
      if (!joins)
        break;
      plan.inner *= sizes[d];
      innerBegin = d;
    }
    plan.blocked = true;
  } else {
    plan.inner = 1;
    for (size_t d = innerBegin; d < dims.size(); ++d)
      plan.inner *= sizes[d];
    for (size_t o = 0; o < count; ++o) {
      // One stride when the reduced dims nest in the operand as in the
      // iteration; else a table of offsets.
      int64_t stride = reduced ? strides[o][dims.size() - 1] : 0, run = 1;
      bool uniform = true;
      for (size_t d = dims.size(); d-- > innerBegin;) {
        uniform &= sizes[d] == 1 || strides[o][d] == stride * run;
        run *= sizes[d];
      }
      if (uniform) {
        plan.innerStride[o] = stride;
        continue;
      }
      plan.innerStride[o] = FusedPlan::kTable;
      std::vector<int64_t> &table = plan.innerTable[o];
      table.assign(1, 0);
      for (size_t d = innerBegin; d < dims.size(); ++d) {
        std::vector<int64_t> next;
        for (int64_t base : table)
          for (int64_t i = 0; i < sizes[d]; ++i)
            next.push_back(base + i * strides[o][d]);
        table = std::move(next);
      }
    }
  }
  plan.outerStrides.assign(count, {});
  for (size_t d = 0; d < innerBegin; ++d) {
    if (sizes[d] == 1)
      continue;
    plan.outerSizes.push_back(sizes[d]);
    for (size_t o = 0; o < count; ++o)
      plan.outerStrides[o].push_back(strides[o][d]);
  }

  // Which values are the same along a run, and the scratch vectors of the
  // others (reused once a value is read for the last time).
  size_t values = inputs + body.size();
  plan.scalar.assign(values, false);
  plan.slot.assign(values, -1);
  for (size_t i = 0; i < inputs; ++i)
    plan.scalar[i] = plan.innerStride[i] == 0;
  // A value lives to its last reader; an output's value to the end.
  std::vector<size_t> lastUse(values, 0);
  for (size_t i = 0; i < body.size(); ++i)
    for (int32_t arg : body[i].args)
      if (arg >= 0)
        lastUse[arg] = std::max(lastUse[arg], inputs + i);
  for (int32_t value : outValues)
    lastUse[value] = SIZE_MAX;
  std::vector<int32_t> freeSlots;
  auto take = [&]() -> int32_t {
    if (freeSlots.empty())
      return plan.vectors++;
    int32_t slot = freeSlots.back();
    freeSlots.pop_back();
    return slot;
  };
  for (size_t i = 0; i < inputs; ++i)
    if (!plan.scalar[i] && (plan.innerStride[i] != 1 || isHalf(types[i])))
      plan.slot[i] = take();
  for (size_t i = 0; i < body.size(); ++i) {
    const FusedInstr &instr = body[i];
    size_t v = inputs + i;
    bool reduces = instr.kind == FusedInstr::Kind::ReduceSum ||
                   instr.kind == FusedInstr::Kind::ReduceMax;
    bool scalar = true;
    for (int32_t arg : instr.args)
      if (arg >= 0)
        scalar &= plan.scalar[arg];
    plan.scalar[v] = scalar || reduces;
    // Arguments read for the last time give back their vectors first: an
    // elementwise instruction may write over its own argument.
    for (int32_t arg : instr.args)
      if (arg >= 0 && lastUse[arg] == v && plan.slot[arg] >= 0) {
        freeSlots.push_back(plan.slot[arg]);
        lastUse[arg] = SIZE_MAX - 1; // given back once
      }
    if (!plan.scalar[v])
      plan.slot[v] = take();
  }
  return plan;
}

} // namespace meshc::runtime
