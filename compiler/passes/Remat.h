//===- Remat.h - activation recomputation choices ---------------*- C++ -*-===//
//
// Which forward activations the backward pass recomputes instead of keeping
// (meshc --remat, docs/training.md): one enum and one spelling for meshc's
// flag and for the passes that act on it (mtf-autodiff's loops, mtf-remat).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_COMPILER_PASSES_REMAT_H
#define MESHC_COMPILER_PASSES_REMAT_H

#include "compiler/passes/Choices.h"

namespace meshc {

enum class Remat {
  /// None: every activation is kept, `checkpoint(...)` included.
  None,
  /// Those of the model's `checkpoint(...)` expressions.
  Marked,
  /// Those too and every instance of an outermost `repeat` (of a loop: each
  /// layer, from its input).
  Repeat,
};

/// The spellings of Remat, for meshc's flag, the passes' option and the
/// Python package.
inline llvm::ArrayRef<Choice<Remat>> rematChoices() {
  static constexpr Choice<Remat> choices[] = {
      {Remat::None, "none",
       "keep every activation for the backward pass, also those of "
       "checkpoint(...)"},
      {Remat::Marked, "marked",
       "recompute what the model's checkpoint(...) expressions compute (the "
       "default)"},
      {Remat::Repeat, "repeat",
       "also each repeat instance: it keeps only its inputs and is "
       "recomputed in the backward pass"},
  };
  return choices;
}

} // namespace meshc

#endif // MESHC_COMPILER_PASSES_REMAT_H
