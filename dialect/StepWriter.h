//===- StepWriter.h - What an op needs to write its .mprog steps -*- C++
//-*-===//
//
// StepOpInterface::writeSteps writes an op's steps through a StepWriter: it
// names the op's values as the program does (buffers, dim names, per-device
// sizes, global extents) and takes the steps in order. The .mprog emitter
// (lowering/EmitMprog.cpp) implements it; the ops' own step lowering is in
// MtfSteps.cpp, the shard collectives' in lowering/CollectiveSteps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_DIALECT_STEPWRITER_H
#define MESHC_DIALECT_STEPWRITER_H

#include "runtime/ElementFunctions.h"
#include "runtime/core/StepKinds.h"

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace mlir {
namespace mtf {

class StepWriter {
public:
  virtual ~StepWriter();

  /// Appends a step of kind `kind` (its "op") with `fields`.
  virtual void push(meshc::runtime::OpKind kind, llvm::json::Object fields) = 0;

  /// The id of the buffer that holds `value`.
  virtual int64_t buffer(Value value) = 0;
  /// `value` as a step operand: {"buf": id, "dims": [names]}.
  virtual llvm::json::Object operand(Value value) = 0;
  /// The size of every dim of `values` by name, on each device (a number,
  /// or the per-device blocks of a dim cut unequally).
  virtual llvm::json::Object sizes(ArrayRef<Value> values) = 0;
  /// The size of dim `dim` of `value`, whose largest local size is `size`,
  /// as sizes() writes it.
  virtual llvm::json::Value extent(Value value, StringRef dim,
                                   int64_t size) = 0;
  /// The name of the dim at `position` of `value` (named or ranked).
  virtual std::string dimName(Value value, int64_t position) = 0;
  /// The global dims of `value`: [{name, size, axes[, blocks]}].
  virtual llvm::json::Array globalDims(Value value) = 0;
  /// The .mprog dtype of `value` ("f32", "bf16", "f16", "i32").
  virtual std::string dtype(Value value) = 0;
  /// The names of mesh axes `axes`.
  virtual llvm::json::Array axisNames(ArrayRef<int16_t> axes) = 0;
  /// The "blocks" of collective `op` over mesh axes `group` that cuts or
  /// joins dim `dim`, which `cut` holds cut into blocks: each member's
  /// block in rank order; null when every block is equal
  /// (docs/mprog.md#per-device-sizes).
  virtual FailureOr<llvm::json::Value>
  memberBlocks(Operation *op, Value cut, StringRef dim,
               ArrayRef<int16_t> group) = 0;

  /// The steps of the ops of `block` (a loop's body, its terminator
  /// included), in a list of their own.
  virtual FailureOr<llvm::json::Array> stepsOf(Block &block) = 0;
  /// The bytes of the buffer that holds `value`.
  virtual int64_t bufferBytes(Value value) = 0;
  /// The buffer of the moving slice of a loop's stacked result `result`:
  /// where each iteration's yielded value goes.
  virtual int64_t stackedSlice(Value result) = 0;

  /// The ticket of started collective `start` (its "start"), once its
  /// steps are written; none for a collective that was not started.
  virtual std::optional<int64_t> ticket(Operation *start) = 0;

  /// The buffer of parameter (or slot) `name`.
  virtual int64_t paramBuffer(StringRef name) = 0;
  /// The buffer an output of a parameter the step assigns is copied to
  /// before the update (so it shows the value the step read); none for
  /// other outputs.
  virtual std::optional<int64_t> snapshotBuffer(Operation *output) = 0;
};

/// The step of an elementwise unary op (UnaryElementwise: its mnemonic is
/// the step's "fn").
LogicalResult writeUnaryStep(Operation *op, StepWriter &writer);
/// The binary step of `op` computing `fn`; i32 operands only for the
/// comparisons.
LogicalResult writeBinaryStep(Operation *op, meshc::runtime::BinaryFn fn,
                              StepWriter &writer);
/// The reduce step of a ReductionOpInterface op (a mean: a sum, then a
/// scale).
LogicalResult writeReduceSteps(Operation *op, StepWriter &writer);

} // namespace mtf
} // namespace mlir

#endif // MESHC_DIALECT_STEPWRITER_H
