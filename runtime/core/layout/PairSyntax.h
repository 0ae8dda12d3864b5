//===- PairSyntax.h - Mesh-TensorFlow "name:value" lists --------*- C++ -*-===//
//
// Splits the string forms of --mesh ("b:4;m:2") and --layout
// ("batch:b;d_ff:m+x") into items, following Mesh-TensorFlow: pairs are
// separated by ';', ',', '.' or whitespace, in any mix (a '.' between two
// digits stays in its word, so "b:4.5" is one bad size). Whitespace around ':'
// and '+' is allowed. Only the shape of the text is checked here; what the
// words mean (sizes, names) is checked by Mesh and LayoutRules, which report
// the column of the offending word. Internal to the layout library.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CORE_LAYOUT_PAIRSYNTAX_H
#define MESHC_RUNTIME_CORE_LAYOUT_PAIRSYNTAX_H

#include "runtime/core/layout/Error.h"

#include <string_view>
#include <vector>

namespace meshc::layout {

/// A word of a pair list and its 1-based column.
struct PairWord {
  std::string_view text;
  int column = 0;
};

/// One "name:value" item; `values` has several words only for "name:a+b".
struct PairItem {
  PairWord name;
  std::vector<PairWord> values;
};

/// The vocabulary of one pair-list syntax, used in its error messages.
struct PairSyntax {
  /// What the name before ':' is: "mesh axis" or "dimension".
  const char *nameKind;
  /// What the word after ':' is: "size" or "mesh axis".
  const char *valueKind;
  /// The hint that shows the syntax.
  const char *syntaxHint;
  /// Whether "a+b" lists several values (layouts) or '+' is an ordinary
  /// character of a word (meshes, where "4+2" is then a bad size).
  bool plusJoinsValues;
};

/// Splits `text` into items, or reports the first malformed item with its
/// column. Leading, trailing and repeated separators are allowed.
Result<std::vector<PairItem>> splitPairs(std::string_view text,
                                         const PairSyntax &syntax);

} // namespace meshc::layout

#endif // MESHC_RUNTIME_CORE_LAYOUT_PAIRSYNTAX_H
