//===- StepLoader.h - Reading and validating .mprog steps -------*- C++ -*-===//
//
// The half of the loader that reads the "steps" array: one parser per op
// kind, each checking its operands against the buffers and the step's
// "sizes", and planning the step's scratch. Internal to the loader.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_STEPLOADER_H
#define MESHC_RUNTIME_STEPLOADER_H

#include "runtime/JsonNode.h"
#include "runtime/Program.h"

#include <cstdint>
#include <map>
#include <vector>

namespace meshc::runtime {

/// Parses a dtype name at `node`: fails for unknown names and for types the
/// runtime does not execute.
DType parseDType(const JsonNode &node);

/// The product of `factors` and `scale`; fails at `node` when it overflows
/// 64 bits.
int64_t checkedProduct(const JsonNode &node,
                       const std::vector<int64_t> &factors, int64_t scale);

/// Parses a "dims" array of {"name", "size", "axes"} at `node` (global sizes
/// and the mesh axes each dim is split over) into `dims`, and each dim's
/// optional "blocks" (its unequal blocks by shard index, summing to its
/// size) into `blocks`; returns the layout over `mesh`, failing at `node`
/// with layout::TensorLayout's message for an invalid split. A dim without
/// "blocks" must divide evenly. `name` names the tensor in those messages.
layout::TensorLayout parseGlobalDims(const JsonNode &node,
                                     const std::string &name,
                                     const layout::Mesh &mesh,
                                     std::vector<layout::Dim> &dims,
                                     layout::TensorLayout::BlockLists &blocks);

/// The "blocks" list at `node` of dim `dim` of tensor `name`, split into
/// `shards`: that many sizes of at least 0 summing to the dim's size.
std::vector<int64_t> parseBlockList(const JsonNode &node,
                                    const layout::Dim &dim, int64_t shards,
                                    const std::string &name);

/// The block of `dims` (split by `layout`, unequal blocks in `blocks`) that
/// the steps of `program` hold: device program.device's, or the largest.
std::vector<int64_t>
programBlock(const Program &program, const std::vector<layout::Dim> &dims,
             const layout::TensorLayout &layout,
             const layout::TensorLayout::BlockLists &blocks);

/// Per buffer, the most bytes the loops around a step move it by (empty
/// outside loops): where a step inside a loop may find it.
using LoopReach = std::vector<int64_t>;

/// Parses step `index` of `program`, whose mesh, buffers and tensors are
/// loaded; `bufferIndex` maps buffer ids to positions in program.buffers,
/// `reach` says how far the enclosing loops move them. Adds the step's axes
/// to program.groupAxes when they are new, and a loop's body (parsed
/// recursively, its steps numbered later by numberBodySteps) to
/// program.loopBodies.
Step parseStep(const JsonNode &node, size_t index, Program &program,
               const std::map<int64_t, size_t> &bufferIndex,
               const LoopReach &reach = {});

/// Numbers the loop bodies' steps after program.steps (Program::bodySteps)
/// and checks that no step uses a buffer a loop moves from outside that
/// loop, failing at the step (`steps` is the "steps" array).
void numberBodySteps(const JsonNode &steps, Program &program);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_STEPLOADER_H
