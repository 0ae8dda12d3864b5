//===- LayoutSpace.cpp - Every layout of a model on a mesh ----------------===//

#include "runtime/core/layout/LayoutSpace.h"

#include "runtime/core/layout/LayoutRules.h"

#include <algorithm>
#include <cassert>
#include <functional>

namespace meshc::layout {

namespace {

/// The canonical text (LayoutRules::str) of `dims[d]` split over
/// `splits[d]`, for the dims with a split.
std::string layoutText(const std::vector<std::string> &dims,
                       const std::vector<std::vector<std::string>> &splits) {
  LayoutRules rules;
  for (size_t d = 0; d < dims.size(); ++d)
    if (!splits[d].empty()) {
      Status added = rules.add(dims[d], splits[d]);
      assert(added && "dim and axis names come from a model and a mesh");
      (void)added;
    }
  return rules.str();
}

} // namespace

std::vector<std::string> enumerateLayouts(const std::vector<std::string> &dims,
                                          const Mesh &mesh, size_t limit) {
  std::vector<std::string> texts;
  std::vector<std::vector<std::string>> splits(dims.size());
  std::function<void(size_t)> assign = [&](size_t axis) {
    if (texts.size() > limit)
      return;
    if (axis == mesh.rank()) {
      texts.push_back(layoutText(dims, splits));
      return;
    }
    assign(axis + 1);
    for (size_t d = 0; d < dims.size(); ++d)
      for (size_t pos = 0; pos <= splits[d].size(); ++pos) {
        splits[d].insert(splits[d].begin() + pos, mesh.axisName(axis));
        assign(axis + 1);
        splits[d].erase(splits[d].begin() + pos);
      }
  };
  assign(0);
  return texts;
}

std::vector<std::string>
enumerateSearchLayouts(const std::map<std::string, int64_t> &dims,
                       const std::vector<std::vector<std::string>> &tensors,
                       const Mesh &mesh, size_t limit,
                       const AxisWeights *weights) {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  std::map<std::string, size_t> index;
  for (const auto &[name, size] : dims) {
    index[name] = names.size();
    names.push_back(name);
    sizes.push_back(size);
  }
  size_t n = names.size();
  // meets[d][e]: dims d and e appear in one tensor, so no axis splits both.
  std::vector<std::vector<bool>> meets(n, std::vector<bool>(n, false));
  for (const std::vector<std::string> &tensor : tensors)
    for (const std::string &a : tensor)
      for (const std::string &b : tensor) {
        auto ia = index.find(a), ib = index.find(b);
        if (ia != index.end() && ib != index.end() && ia->second != ib->second)
          meets[ia->second][ib->second] = true;
      }
  // The sets of dims one axis may split: every set of pairwise apart dims
  // that some axis divides (no superset of a set no axis divides is
  // divided either), smaller sets first, then by the order of the dims.
  // Each set is a layout on its own, so past `limit` sets the listing
  // stops.
  // Whether the weights let `axis` cut sizes it does not divide; then any
  // axis may, as long as a dim so cut ends up over a weighted one (checked
  // once every axis is assigned).
  auto weighs = [&](size_t axis) {
    return weights && weights->allowsIndivisible(std::vector<size_t>{axis});
  };
  bool anyWeighs = false;
  for (size_t axis = 0; axis < mesh.rank(); ++axis)
    anyWeighs |= weighs(axis);
  std::vector<uint64_t> dividers(n, 0);
  for (size_t d = 0; d < n; ++d)
    for (size_t axis = 0; axis < mesh.rank() && axis < 64; ++axis)
      if (mesh.axisSize(axis) > 1 &&
          (sizes[d] % mesh.axisSize(axis) == 0 || anyWeighs))
        dividers[d] |= uint64_t(1) << axis;
  std::vector<std::vector<size_t>> sets = {{}};
  std::function<void(size_t, std::vector<size_t> &, uint64_t)> grow =
      [&](size_t from, std::vector<size_t> &set, uint64_t axes) {
        for (size_t d = from; d < n && sets.size() <= limit; ++d) {
          if ((axes & dividers[d]) == 0)
            continue;
          if (std::any_of(set.begin(), set.end(),
                          [&](size_t e) { return meets[d][e]; }))
            continue;
          set.push_back(d);
          sets.push_back(set);
          grow(d + 1, set, axes & dividers[d]);
          set.pop_back();
        }
      };
  std::vector<size_t> start;
  grow(0, start, ~uint64_t(0));
  std::stable_sort(
      sets.begin(), sets.end(),
      [](const std::vector<size_t> &a, const std::vector<size_t> &b) {
        return a.size() < b.size();
      });

  std::vector<std::string> texts;
  std::vector<std::vector<std::string>> splits(n);
  std::vector<int64_t> product(n, 1);
  // Per dim: how many of its axes let indivisible sizes be cut.
  std::vector<int> weighted(n, 0);
  std::function<void(size_t)> emitOrders = [&](size_t d) {
    if (texts.size() > limit)
      return;
    if (d == n) {
      texts.push_back(layoutText(names, splits));
      return;
    }
    std::vector<std::string> &axes = splits[d];
    std::vector<std::string> original = axes;
    std::sort(axes.begin(), axes.end());
    do
      emitOrders(d + 1);
    while (std::next_permutation(axes.begin(), axes.end()));
    axes = original;
  };
  std::function<void(size_t)> assign = [&](size_t axis) {
    if (texts.size() > limit)
      return;
    if (axis == mesh.rank()) {
      for (size_t d = 0; d < n; ++d)
        if (sizes[d] % product[d] != 0 && weighted[d] == 0)
          return;
      emitOrders(0);
      return;
    }
    int64_t size = mesh.axisSize(axis);
    // An axis of one device splits nothing: it stays unused.
    if (size == 1) {
      assign(axis + 1);
      return;
    }
    for (const std::vector<size_t> &set : sets) {
      bool divides = std::all_of(set.begin(), set.end(), [&](size_t d) {
        return sizes[d] % (product[d] * size) == 0 || anyWeighs;
      });
      if (!divides)
        continue;
      for (size_t d : set) {
        splits[d].push_back(mesh.axisName(axis));
        product[d] *= size;
        weighted[d] += weighs(axis) ? 1 : 0;
      }
      assign(axis + 1);
      for (size_t d : set) {
        splits[d].pop_back();
        product[d] /= size;
        weighted[d] -= weighs(axis) ? 1 : 0;
      }
    }
  };
  assign(0);
  return texts;
}

} // namespace meshc::layout
