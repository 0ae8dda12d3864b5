//===- KernelSpaces.cpp - Iteration spaces of the CUDA kernels ------------===//
//
// Transcribes the walks of runtime/cpu/CpuKernels.cpp into IterationSpaces.
//
//===----------------------------------------------------------------------===//

#include "cuda/KernelSpaces.h"

#include "runtime/Error.h"

namespace meshc::runtime::cuda {

static_assert(kSpaceRank == static_cast<int>(kMaxRank),
              "iteration spaces must hold every step operand's dims");

namespace {

/// The row-major strides of `shape`.
std::vector<int64_t> contiguousStrides(const NamedShape &shape) {
  std::vector<int64_t> strides(shape.sizes.size());
  int64_t stride = 1;
  for (size_t d = shape.sizes.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape.sizes[d];
  }
  return strides;
}

/// The stride of dim `name` in `shape`, 0 when it lacks it.
int64_t strideOf(const NamedShape &shape, const std::vector<int64_t> &strides,
                 const std::string &name) {
  int pos = shape.position(name);
  return pos < 0 ? 0 : strides[pos];
}

void checkRank(const NamedShape &shape) {
  if (shape.sizes.size() > kMaxRank)
    throw RuntimeError("operand " + shape.str() + " has more than " +
                       std::to_string(kMaxRank) + " dims");
}

} // namespace

IterationSpace<3> binarySpace(const NamedShape &lhs, const NamedShape &rhs,
                              const NamedShape &out) {
  IterationSpace<3> space;
  if (lhs.names == out.names && rhs.names == out.names) {
    space.addDim(out.elements(), {1, 1, 1});
    space.simplify();
    return space;
  }
  checkRank(out);
  std::vector<int64_t> l = contiguousStrides(lhs), r = contiguousStrides(rhs),
                       o = contiguousStrides(out);
  for (size_t d = 0; d < out.names.size(); ++d)
    space.addDim(out.sizes[d], {strideOf(lhs, l, out.names[d]),
                                strideOf(rhs, r, out.names[d]), o[d]});
  space.simplify();
  return space;
}

ReduceSpaces reduceSpaces(const NamedShape &src, const NamedShape &dst) {
  checkRank(src);
  std::vector<int64_t> s = contiguousStrides(src), t = contiguousStrides(dst);
  ReduceSpaces spaces;
  for (size_t d = 0; d < dst.names.size(); ++d)
    spaces.outer.addDim(dst.sizes[d], {strideOf(src, s, dst.names[d]), t[d]});
  for (size_t d = 0; d < src.names.size(); ++d)
    if (!dst.has(src.names[d]))
      spaces.inner.addDim(src.sizes[d], {s[d]});
  spaces.outer.simplify();
  spaces.inner.simplify();
  return spaces;
}

RowWalk inOutRows(const NamedShape &in, const NamedShape &out,
                  const std::string &dim) {
  checkRank(in);
  std::vector<int64_t> i = contiguousStrides(in), o = contiguousStrides(out);
  RowWalk walk;
  for (size_t d = 0; d < in.names.size(); ++d)
    if (in.names[d] != dim)
      walk.rows.addDim(in.sizes[d], {i[d], strideOf(out, o, in.names[d]), 0});
  walk.length = in.sizes[in.position(dim)];
  walk.step[0] = strideOf(in, i, dim);
  walk.step[1] = strideOf(out, o, dim);
  walk.rows.simplify();
  return walk;
}

RowWalk windowRows(const NamedShape &in, const NamedShape &out,
                   const std::string &from, const std::string &to) {
  checkRank(out);
  std::vector<int64_t> i = contiguousStrides(in), o = contiguousStrides(out);
  RowWalk walk;
  for (size_t d = 0; d < out.names.size(); ++d)
    if (out.names[d] != to)
      walk.rows.addDim(out.sizes[d], {strideOf(in, i, out.names[d]), o[d], 0});
  walk.length = out.sizes[out.position(to)];
  walk.step[0] = strideOf(in, i, from);
  walk.step[1] = strideOf(out, o, to);
  walk.rows.simplify();
  return walk;
}

RowWalk crossEntropyWalk(const NamedShape &logits, const NamedShape &labels,
                         const NamedShape &out, const std::string &dim) {
  checkRank(logits);
  std::vector<int64_t> g = contiguousStrides(logits),
                       l = contiguousStrides(labels),
                       o = contiguousStrides(out);
  RowWalk walk;
  for (size_t d = 0; d < out.names.size(); ++d)
    walk.rows.addDim(out.sizes[d], {strideOf(logits, g, out.names[d]),
                                    strideOf(labels, l, out.names[d]), o[d]});
  walk.length = logits.sizes[logits.position(dim)];
  walk.step[0] = strideOf(logits, g, dim);
  walk.rows.simplify();
  return walk;
}

/// Rows of `shape` along `dim` with the offsets into `shape` and `other`.
static RowWalk rowsAlong(const NamedShape &shape, const NamedShape &other,
                         const std::string &dim) {
  checkRank(shape);
  std::vector<int64_t> s = contiguousStrides(shape),
                       o = contiguousStrides(other);
  RowWalk walk;
  for (size_t d = 0; d < shape.names.size(); ++d)
    if (shape.names[d] != dim)
      walk.rows.addDim(shape.sizes[d],
                       {s[d], strideOf(other, o, shape.names[d]), 0});
  walk.length = shape.sizes[shape.position(dim)];
  walk.step[0] = strideOf(shape, s, dim);
  walk.rows.simplify();
  return walk;
}

RowWalk oneHotWalk(const NamedShape &in, const NamedShape &out,
                   const std::string &dim) {
  return rowsAlong(out, in, dim);
}

RowWalk argmaxWalk(const NamedShape &in, const NamedShape &out,
                   const std::string &dim) {
  return rowsAlong(in, out, dim);
}

DropoutSpace dropoutSpace(const std::vector<layout::Dim> &globalDims,
                          const std::vector<int64_t> &blockOffset,
                          const NamedShape &out) {
  checkRank(out);
  size_t rank = globalDims.size();
  std::vector<int64_t> global(rank), o = contiguousStrides(out);
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    global[d] = stride;
    stride *= globalDims[d].size;
  }
  DropoutSpace result;
  for (size_t d = 0; d < rank; ++d) {
    result.first += blockOffset[d] * global[d];
    result.space.addDim(out.sizes[d], {global[d], o[d]});
  }
  result.space.simplify();
  return result;
}

int64_t rowOffset(const RowWalk &walk, int operand, int64_t row) {
  int64_t offsets[3];
  walk.rows.offsets(row, offsets);
  return offsets[operand];
}

} // namespace meshc::runtime::cuda
