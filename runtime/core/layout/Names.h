//===- Names.h - Name checks and suggestions for layout errors --*- C++ -*-===//
//
// Helpers shared by the layout library's own sources (not part of its public
// API): what counts as a mesh-axis or dimension name, how names are quoted in
// messages, and the "did you mean" suggestion used when a name is unknown.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CORE_LAYOUT_NAMES_H
#define MESHC_RUNTIME_CORE_LAYOUT_NAMES_H

#include "runtime/core/layout/Error.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace meshc::layout {

/// True for `[A-Za-z_][A-Za-z0-9_]*`, the spelling of mesh-axis and
/// dimension names.
bool isIdentifier(std::string_view name);

/// The hint attached to every "is not a valid name" error.
inline constexpr const char *kIdentifierHint =
    "names start with a letter or '_' and contain only letters, digits "
    "and '_'";

/// Edit distance between two names, counting an insertion, a deletion, a
/// substitution or a swap of two neighbouring characters as one edit.
size_t editDistance(std::string_view a, std::string_view b);

/// The candidate closest to `name` when it is within two edits and the edits
/// do not rewrite the whole name (so 'c' does not suggest 'b'); the first
/// such candidate wins ties.
std::optional<std::string>
closestName(std::string_view name, const std::vector<std::string> &candidates);

/// `name` in single quotes, the way every message spells a name.
std::string quoteName(std::string_view name);

/// "'a', 'b', 'c'".
std::string quoteNames(const std::vector<std::string> &names);

/// "b+m": mesh axes of one split, major to minor.
std::string joinAxes(const std::vector<std::string> &axes);

/// The error for splitting dimension `dim` over `axis`, which is not among
/// `meshAxes`. `subject` names the dimension ("dimension 'batch'" or "tensor
/// 'x' dimension 'batch'"); the hint suggests a close axis name.
Error unknownMeshAxisError(const std::string &subject, std::string_view dim,
                           std::string_view axis,
                           const std::vector<std::string> &meshAxes);

} // namespace meshc::layout

#endif // MESHC_RUNTIME_CORE_LAYOUT_NAMES_H
