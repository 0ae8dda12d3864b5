//===- Schedule.h - a pipeline's schedule -----------------------*- C++ -*-===//
//
// The order in which a pipeline's stages run the forward and the backward
// of the microbatches (meshc --schedule, docs/pipeline.md): one enum and one
// spelling for meshc's flag, mtf-pipeline-stages' option and the Python
// package.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_PASSES_SCHEDULE_H
#define MESHC_COMPILER_PASSES_SCHEDULE_H

#include "compiler/passes/Choices.h"

namespace meshc {

enum class PipelineSchedule {
  /// Every microbatch's forward, then every backward (each stage keeps the
  /// activations of all M microbatches).
  GPipe,
  /// Each stage runs a microbatch's backward as soon as the stages after it
  /// have, beside the forward of a later one (each keeps at most 2P - 1
  /// ticks' activations).
  OneFOneB,
  /// GPipe's order over V rounds: stage s holds the layer blocks s, s + P,
  /// ..., and a microbatch passes every stage V times (Megatron-LM's
  /// virtual stages, MaxText's circular pipeline): the bubble shrinks to
  /// (P - 1) / (VM + P - 1).
  Interleaved,
};

inline llvm::ArrayRef<Choice<PipelineSchedule>> scheduleChoices() {
  static constexpr Choice<PipelineSchedule> choices[] = {
      {PipelineSchedule::GPipe, "gpipe",
       "every microbatch forward, then every one backward (the default)"},
      {PipelineSchedule::OneFOneB, "1f1b",
       "one forward, one backward: a microbatch's backward starts as soon as "
       "its forward leaves the last stage, so each stage keeps at most "
       "2P - 1 ticks' activations"},
      {PipelineSchedule::Interleaved, "interleaved",
       "GPipe's order over --virtual-stages rounds: stage s holds the layer "
       "blocks s, s + P, ...; a smaller bubble for more per-tick steps"},
  };
  return choices;
}

} // namespace meshc

#endif // MESHC_COMPILER_PASSES_SCHEDULE_H
