//===- Pipeliner.h - one repeat made a pipeline -----------------*- C++ -*-===//
//
// The rewrite mtf-pipeline-stages makes of one pipelined repeat
// (docs/pipeline.md): its sizes and new dims (Stages) and the Pipeliner,
// whose parts live in PipelineStages.cpp (the checks, the tick loop, GPipe's
// placing of microbatches), PipelineHead.cpp (1F1B: the loss's head in the
// ticks) and PipelineInterleaved.cpp (the interleaved schedule's blocks and
// rounds).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_PASSES_PIPELINER_H
#define MESHC_COMPILER_PASSES_PIPELINER_H

#include "compiler/passes/Schedule.h"
#include "dialect/MtfDialect.h"
#include "dialect/OpEmitter.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace meshc::pipeline {

using namespace mlir;
using mtf::NamedDim;
using mtf::OpEmitter;
using mtf::TensorType;

inline TensorType tensorType(Value value) {
  return llvm::cast<TensorType>(value.getType());
}

/// A type as the diagnostics print it.
inline std::string describe(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

/// `type` with dims `dims`.
inline TensorType withDims(TensorType type, ArrayRef<NamedDim> dims) {
  return TensorType::get(type.getContext(), dims, type.getElementType());
}

/// `type` with its dim `from` replaced by `to` (in place).
TensorType replaceDim(TensorType type, StringAttr from, ArrayRef<NamedDim> to);

/// `type` with its dim `from` (if any) called `to`, the same size.
inline TensorType renameDim(TensorType type, StringAttr from, StringAttr to) {
  SmallVector<NamedDim> dims(type.getDims());
  for (NamedDim &dim : dims)
    if (dim.name == from)
      dim.name = to;
  return withDims(type, dims);
}

/// One pipelined loop's sizes and the names of the dims it makes.
struct Stages {
  int64_t stages = 1, perStage = 1, microbatches = 1, ticks = 1;
  /// Each stage's layers where they differ (uneven stages; perStage is the
  /// most), else empty.
  SmallVector<int64_t> blocks;
  /// How the device weights cut the stage dim itself where that is not one
  /// stage per device (refused), else empty.
  SmallVector<int64_t> stagesCut;
  StringAttr stage, layer, ticksDim, last, micro, batch, examples;
  PipelineSchedule schedule = PipelineSchedule::GPipe;
  /// The interleaved schedule: the rounds V (each stage holds V blocks of
  /// perStage layers, stage s the blocks s, s + P, ...; 1 otherwise), and
  /// the names of the dims its weights and microbatches are cut into: the
  /// round of a block, the group of P microbatches and the place in it,
  /// the entries of a group (its V rounds of P), all entries in order, the
  /// round of an entry.
  int64_t rounds = 1;
  StringAttr round, group, inGroup, slot, entry, entryRound;
  /// Interleaved: the layers of a round (L / V), and the dim of them each
  /// stacked parameter is stored with, [round, in_round, ...]: the layer
  /// dim's layout rule cuts in_round into the round's stages (evenly, or
  /// as `blocks` under --uneven or weights, the same in every round).
  int64_t roundLayers = 0;
  StringAttr inRound;
  /// With microbatches, where the layout splits the batch over a stage
  /// axis too (`batch:b+p`) and a microbatch's examples divide evenly so:
  /// the name the examples have in the stacks of the microbatches entering
  /// stage 0 and of the results kept from the last stage, which take the
  /// batch's whole rule, so each device stacks only its share (the stages'
  /// sum of a kept result is a reduce-scatter, an entry an all-gather per
  /// tick, and no whole-batch gather before or after the ticks); else null.
  StringAttr spread;
};

class Pipeliner {
public:
  Pipeliner(mtf::LoopOp loop, Stages names) : loop(loop), s(names) {}

  LogicalResult check();
  void rewrite();

private:
  /// `type` inside the pipeline: the batch dim cut to one microbatch (under
  /// its own name) and, where `staged`, the stage dim first.
  TensorType inner(TensorType type, bool staged) const;
  /// `value` with the size-1 dim `dim` added first.
  Value addUnit(OpEmitter &emit, Value value, StringAttr dim);
  /// [stage=P] of `like`'s element type: 1 at stage `index`, 0 elsewhere
  /// (exact: a window of a 1 padded with zeros).
  Value stageVector(OpEmitter &emit, Value like, int64_t index);
  /// [dim=size] of `element`: 1 at `index`, 0 elsewhere.
  Value unitVector(OpEmitter &emit, Type element, StringAttr dim, int64_t size,
                   int64_t index);
  /// [stage=P] of `like`'s element type: 1 at the stages `in` holds, 0
  /// elsewhere (a window of ones per run of them, added).
  Value stagesVector(OpEmitter &emit, Value like,
                     llvm::function_ref<bool(int64_t)> in);
  /// `type` with the batch dim cut in place into [examples, micro], the
  /// examples named `examples` (default s.examples).
  TensorType microbatched(TensorType type, StringAttr examples = {}) const;
  /// The examples' name in the stacks along the ticks: s.spread, else
  /// s.examples.
  StringAttr stackedExamples() const {
    return s.spread ? s.spread : s.examples;
  }
  /// Per stacked weight, the k-th layer of every stage, [stage=P, ...], for
  /// each k of a stage's layers.
  SmallVector<SmallVector<Value>> layersOfStages(OpEmitter &emit);
  /// The k-th layer of `blocks` (its dim `layer` of perStage layers), of
  /// type `layerType`, for each k.
  SmallVector<Value> eachLayer(OpEmitter &emit, Value blocks,
                               TensorType layerType);
  /// `value` as one microbatch per tick, [ticks=T, ...], microbatch m at
  /// tick m + `at` (zeros in the other ticks); with `spread`, its examples
  /// named stackedExamples().
  Value alongTicks(OpEmitter &emit, Value value, int64_t at = 0,
                   bool spread = false);
  /// The last stage's results of every tick, [ticks=T, ...], as the batch
  /// of type `type` (microbatch m left the last stage at tick m + P - 1).
  Value backToBatch(OpEmitter &emit, Value kept, TensorType type);

  /// Interleaved: `value` with its dim `micro` (M microbatches) laid out as
  /// the entries into stage 0, `entry` (V * M): microbatch g * P + j enters
  /// at g * V * P + j (the first round of group g), zeros in the others.
  Value toEntries(OpEmitter &emit, Value value);
  /// Interleaved: the inverse, [..., entry=V*M, ...] to [..., micro=M, ...]
  /// (the first round's entries of every group).
  Value fromEntries(OpEmitter &emit, Value value);
  /// Interleaved: [entry=V*M, ...] from `perRound` [entry_round=V, ...]:
  /// each entry takes its round's value.
  Value byEntryRound(OpEmitter &emit, Value perRound);
  /// Interleaved: [ticks=T, round=V, stage=P] of `element`: 1 where stage s
  /// runs a block of round v at tick t, 0 elsewhere (selects each stage's
  /// weights per tick).
  Value roundSelect(OpEmitter &emit, Type element);
  /// Interleaved: [ticks=T] of `element`: 1 where stage 0 takes the last
  /// stage's result of this tick at the next (a microbatch's next round),
  /// else 0.
  Value wrapTicks(OpEmitter &emit, Type element);
  /// Interleaved: each stacked parameter [layers=L, ...] stored as [round=V,
  /// in_round=L/V, ...] (the same elements in the same order; its stage's
  /// blocks on each device), and of each its k-th layer of every block,
  /// [round=V, stage=P, ...] (zeros past a stage's layers).
  SmallVector<SmallVector<Value>> blocksOfRounds(OpEmitter &emit);

  /// 1F1B: the ops after the loop that the trained loss is computed by
  /// from the loop's results (in program order), into `head`; refused
  /// where the loss is not a mean over the batch of what those ops make
  /// per example.
  LogicalResult findHead();
  /// 1F1B: `value` as the last stage's microbatch per tick, [ticks=T,
  /// stage=P, ...] (microbatch m at tick m + P - 1, zeros elsewhere, the
  /// same on every stage), in f32 where it is not a float (the tick loop
  /// casts it back).
  Value lastStageTicks(OpEmitter &emit, Value value);

  mtf::LoopOp loop;
  Stages s;
  /// 1F1B: the trained loss's statement and the ops between the loop and it.
  mtf::TrainOp train;
  SmallVector<Operation *> head;
};

} // namespace meshc::pipeline

#endif // MESHC_COMPILER_PASSES_PIPELINER_H
