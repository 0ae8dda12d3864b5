//===- LayoutSpace.h - Every layout of a model on a mesh --------*- C++ -*-===//
//
// The space of layout rules meshc can choose from. Layouts are name-based,
// so the space is small enough to list: each mesh axis unused or splitting
// one named dimension, a dimension split over several axes in every order
// ((dims + 1)^axes assignments, times the orders): the layout sweep tests
// every one. --layout auto also lets one axis split several dims that never
// meet in one tensor (Megatron's heads and d_ff over the model axis), and
// leaves out splits that do not divide a dim.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CORE_LAYOUT_LAYOUTSPACE_H
#define MESHC_RUNTIME_CORE_LAYOUT_LAYOUTSPACE_H

#include "runtime/core/layout/AxisWeights.h"
#include "runtime/core/layout/Mesh.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace meshc::layout {

/// Every layout-rule text over `dims` on `mesh` (LayoutRules::parse reads
/// each), each once, in a fixed order: the empty layout (every tensor
/// replicated) first, then by mesh axis, each axis unused before it splits
/// dims[0], dims[1], ..., at each position of that dim's axis list. Rules
/// within a text follow the order of `dims`. Stops after `limit` + 1 texts,
/// so a caller can tell a space larger than `limit` without listing it.
std::vector<std::string> enumerateLayouts(const std::vector<std::string> &dims,
                                          const Mesh &mesh,
                                          size_t limit = SIZE_MAX - 1);

/// The layouts --layout auto considers, as texts in a fixed order: each
/// mesh axis unused or splitting a set of the dims of `dims` (name -> size)
/// of which no two appear together in one of `tensors` (each the dim names
/// of one tensor), each dim's size divisible by the product of its axes'
/// sizes unless `weights` cut it (over an axis it weighs, or anywhere with
/// --uneven: AxisWeights::allowsIndivisible); a dim over several axes in
/// every order; an axis of size 1 always unused. Stops after `limit` + 1
/// texts.
std::vector<std::string>
enumerateSearchLayouts(const std::map<std::string, int64_t> &dims,
                       const std::vector<std::vector<std::string>> &tensors,
                       const Mesh &mesh, size_t limit = SIZE_MAX - 1,
                       const AxisWeights *weights = nullptr);

} // namespace meshc::layout

#endif // MESHC_RUNTIME_CORE_LAYOUT_LAYOUTSPACE_H
