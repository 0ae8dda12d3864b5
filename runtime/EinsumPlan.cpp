//===- EinsumPlan.cpp - Lowering einsums to GEMMs at load time ------------===//
//
// The pairwise contraction planner. Orders are chosen so the common cases
// need no copies: batch, m and n dims follow the output's order and k dims
// the lhs order, and the operands are swapped when the output is stored
// [batch, n, m].
//
//===----------------------------------------------------------------------===//

#include "runtime/EinsumPlan.h"

#include <set>

#include <algorithm>

namespace meshc::runtime {

namespace {

using Names = std::vector<std::string>;

bool contains(const Names &names, const std::string &name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

Names concat(const Names &a, const Names &b, const Names &c) {
  Names all = a;
  all.insert(all.end(), b.begin(), b.end());
  all.insert(all.end(), c.begin(), c.end());
  return all;
}

/// Builds an einsum plan: scratch tensors and the stages between them.
class Planner {
public:
  /// The dims of size 1 (the local block of a split dim, often): where they
  /// stand does not change a tensor's bytes, so orders are compared without
  /// them and no transpose moves them.
  std::set<std::string> unit;

  /// Whether `a` and `b` are the same order of dims but for those of size 1.
  bool same(const Names &a, const Names &b) const {
    auto squeezed = [&](const Names &names) {
      Names kept;
      for (const std::string &name : names)
        if (!unit.count(name))
          kept.push_back(name);
      return kept;
    };
    return squeezed(a) == squeezed(b);
  }

  /// A scratch tensor with dims `names`, sized from `from`.
  PlannedTensor scratchTensor(const Names &names,
                              const std::vector<const PlannedTensor *> &from) {
    PlannedTensor tensor;
    tensor.inScratch = true;
    tensor.offset = plan.scratchBytes;
    tensor.shape.names = names;
    for (const std::string &name : names)
      for (const PlannedTensor *source : from)
        if (int pos = source->shape.position(name); pos >= 0) {
          tensor.shape.sizes.push_back(source->shape.sizes[pos]);
          break;
        }
    int64_t bytes = tensor.shape.elements() * 4;
    plan.scratchBytes += (bytes + 63) / 64 * 64;
    return tensor;
  }

  /// Adds the stage dst = sum of src over the dims dst lacks.
  void addReduce(const PlannedTensor &src, const PlannedTensor &dst) {
    EinsumStage stage;
    stage.reduce = {src, dst};
    plan.stages.push_back(std::move(stage));
  }

  /// `src` reduced and transposed to dims `names` (itself when it already
  /// has exactly those dims in that order).
  PlannedTensor reshapeTo(const PlannedTensor &src, const Names &names) {
    if (same(src.shape.names, names) && src.shape.names.size() == names.size())
      return src;
    PlannedTensor dst = scratchTensor(names, {&src});
    addReduce(src, dst);
    return dst;
  }

  /// Plans target = einsum(lhs, rhs); every dim of `target` is in lhs or
  /// rhs.
  void contractPair(PlannedTensor lhs, PlannedTensor rhs,
                    const PlannedTensor &target) {
    const Names &outNames = target.shape.names;
    auto keepFor = [&](const PlannedTensor &self, const PlannedTensor &other) {
      Names keep;
      for (const std::string &name : self.shape.names)
        if (other.shape.has(name) || contains(outNames, name))
          keep.push_back(name);
      return keep;
    };
    PlannedTensor a = reshapeTo(lhs, keepFor(lhs, rhs));
    PlannedTensor b = reshapeTo(rhs, keepFor(rhs, lhs));

    Names batch, m, n;
    for (const std::string &name : outNames) {
      bool inA = a.shape.has(name), inB = b.shape.has(name);
      (inA && inB ? batch : inA ? m : n).push_back(name);
    }
    if (same(outNames, concat(batch, n, m)) &&
        !same(outNames, concat(batch, m, n))) {
      std::swap(a, b);
      std::swap(m, n);
    }
    Names k;
    for (const std::string &name : a.shape.names)
      if (b.shape.has(name) && !contains(outNames, name))
        k.push_back(name);

    GemmStage gemm;
    if (same(a.shape.names, concat(batch, k, m)) &&
        !same(a.shape.names, concat(batch, m, k)))
      gemm.transA = true;
    else
      a = reshapeTo(a, concat(batch, m, k));
    if (same(b.shape.names, concat(batch, n, k)) &&
        !same(b.shape.names, concat(batch, k, n)))
      gemm.transB = true;
    else
      b = reshapeTo(b, concat(batch, k, n));
    Names cNames = concat(batch, m, n);
    PlannedTensor c =
        same(outNames, cNames) ? target : scratchTensor(cNames, {&target});

    auto product = [&](const Names &names, const PlannedTensor &source) {
      int64_t count = 1;
      for (const std::string &name : names)
        count *= source.shape.sizes[source.shape.position(name)];
      return count;
    };
    gemm.batch = product(batch, target);
    gemm.m = product(m, target);
    gemm.n = product(n, target);
    gemm.k = product(k, a);
    gemm.a = a;
    gemm.b = b;
    gemm.c = c;
    EinsumStage stage;
    stage.isGemm = true;
    stage.gemm = std::move(gemm);
    plan.stages.push_back(std::move(stage));
    if (!same(outNames, cNames))
      addReduce(c, target);
  }

  EinsumPlan plan;
};

} // namespace

EinsumPlan planEinsum(const std::vector<PlannedTensor> &inputs,
                      const PlannedTensor &out) {
  Planner planner;
  for (const PlannedTensor *tensor : {&out})
    for (size_t d = 0; d < tensor->shape.names.size(); ++d)
      if (tensor->shape.sizes[d] == 1)
        planner.unit.insert(tensor->shape.names[d]);
  for (const PlannedTensor &tensor : inputs)
    for (size_t d = 0; d < tensor.shape.names.size(); ++d)
      if (tensor.shape.sizes[d] == 1)
        planner.unit.insert(tensor.shape.names[d]);
  if (inputs.size() == 1) {
    planner.addReduce(inputs[0], out);
    return planner.plan;
  }
  PlannedTensor current = inputs[0];
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (i + 1 == inputs.size()) {
      planner.contractPair(current, inputs[i], out);
      break;
    }
    // Keep the dims that the output or a later operand still needs.
    Names keep;
    for (const PlannedTensor *source :
         std::initializer_list<const PlannedTensor *>{&current, &inputs[i]})
      for (const std::string &name : source->shape.names) {
        bool later = out.shape.has(name);
        for (size_t j = i + 1; j < inputs.size() && !later; ++j)
          later = inputs[j].shape.has(name);
        if (later && !contains(keep, name))
          keep.push_back(name);
      }
    PlannedTensor next = planner.scratchTensor(keep, {&current, &inputs[i]});
    planner.contractPair(current, inputs[i], next);
    current = next;
  }
  return planner.plan;
}

bool directBf16Gemm(const Program &program, const Step &step, size_t &aInput,
                    size_t &bInput) {
  if (step.op() != OpKind::Einsum)
    return false;
  const EinsumPlan &plan = step.as<EinsumAttrs>().plan;
  if (plan.stages.size() != 1 || !plan.stages[0].isGemm)
    return false;
  const GemmStage &gemm = plan.stages[0].gemm;
  if (gemm.k == 0 || gemm.batch * gemm.m * gemm.n == 0 ||
      (gemm.m == 1 && gemm.n == 1))
    return false;
  auto copyOf = [&](const PlannedTensor &tensor, size_t &input) {
    for (size_t i = 0; i < step.in.size(); ++i)
      if (tensor.inScratch && step.in[i].staging == tensor.offset &&
          program.buffers[step.in[i].buffer].dtype == DType::BF16) {
        input = i;
        return true;
      }
    return false;
  };
  return copyOf(gemm.a, aInput) && copyOf(gemm.b, bInput) && aInput != bInput;
}

} // namespace meshc::runtime
