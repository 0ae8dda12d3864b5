//===- FusedStep.h - The expression program of a fused step -----*- C++ -*-===//
//
// A "fused" step (docs/mprog.md) evaluates a small expression program over
// an iteration space in one pass: its operands are values 0..n-1, each
// instruction of its body makes the next value, and its outputs write some
// of the values. The loader checks the program and plans its walk once
// (FusedPlan): outer rows, each an inner run of elements that the body
// works on as whole vectors, and which values stay scalars in a row. The
// CPU and CUDA backends run the same plan.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_FUSEDSTEP_H
#define MESHC_RUNTIME_FUSEDSTEP_H

#include "runtime/DType.h"
#include "runtime/ElementFunctions.h"

#include <cstdint>
#include <string>
#include <vector>

namespace meshc::runtime {

struct NamedShape;

/// One instruction of a fused body.
struct FusedInstr {
  enum class Kind { Unary, Binary, Const, ReduceSum, ReduceMax };
  Kind kind = Kind::Const;
  UnaryFn unary = UnaryFn::Relu;
  BinaryFn binary = BinaryFn::Add;
  /// The values read (-1: none).
  int32_t args[2] = {-1, -1};
  /// The constant, or Scale's factor.
  float value = 0;
  /// F32, or the 16-bit type (BF16, F16) the value is rounded to once
  /// computed: what the unfused step would have stored ("round").
  DType round = DType::F32;
};

/// The walk of a fused step over its operands (inputs, then outputs).
struct FusedPlan {
  /// The outer dims, outermost first, and each operand's element stride
  /// along them ([operand][dim]).
  std::vector<int64_t> outerSizes;
  std::vector<std::vector<int64_t>> outerStrides;
  /// The inner run's length and each operand's offsets along it: a stride,
  /// or (when the stride is kTable) innerTable[operand].
  int64_t inner = 1;
  std::vector<int64_t> innerStride;
  std::vector<std::vector<int64_t>> innerTable;
  /// Whether the inner run may be cut into blocks (no reduction).
  bool blocked = false;
  /// Per value: whether it is the same all along an inner run.
  std::vector<bool> scalar;
  /// Per value: the scratch vector it is computed into (-1: none, a scalar
  /// or an input read in place); `vectors` of them per running thread.
  std::vector<int32_t> slot;
  int32_t vectors = 0;

  static constexpr int64_t kTable = INT64_MIN;
  /// The elements of an inner block the CPU works on at a time when the
  /// inner run may be cut.
  static constexpr int64_t kBlock = 512;
  /// The number of outer rows.
  int64_t rows() const;
  /// The elements a thread works on at a time: a block of the inner run
  /// when it may be cut, else the whole run.
  int64_t runLength() const;
  /// The runs of one row (1 when the run is not cut; 0 for an empty cut
  /// run), and of the whole step: the units threads share.
  int64_t runsPerRow() const;
  int64_t units() const { return rows() * runsPerRow(); }
  /// The scratch one running thread needs, in floats.
  int64_t scratchFloats() const { return vectors * runLength(); }
};

/// Plans the walk of `body` (whose outputs write values `outValues`) over
/// iteration dims `dims` (sizes `sizes`, the last `reduced` of them
/// reduced) and operands of shapes `operands` (inputs, then outputs; their
/// dims are iteration dims), of which the first `inputs` are inputs, of
/// element types `types` (an input of a 16-bit type is widened into a
/// vector of its own).
FusedPlan planFused(const std::vector<FusedInstr> &body,
                    const std::vector<int32_t> &outValues,
                    const std::vector<std::string> &dims,
                    const std::vector<int64_t> &sizes, size_t reduced,
                    const std::vector<NamedShape> &operands, size_t inputs,
                    const std::vector<DType> &types);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_FUSEDSTEP_H
