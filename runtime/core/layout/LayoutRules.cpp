//===- LayoutRules.cpp - Name-based layout rules --------------------------===//
//
// Parsing and validation of layout rules, and their checks against a mesh
// and against the dimensions of a model.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/LayoutRules.h"

#include "runtime/core/layout/Names.h"
#include "runtime/core/layout/PairSyntax.h"

#include <algorithm>

namespace meshc::layout {

static constexpr const char *kLayoutSyntaxHint =
    "write each rule as dimension:axes, e.g. 'batch:b' or 'batch:b+m'";

Result<LayoutRules> LayoutRules::parse(std::string_view text) {
  static const PairSyntax syntax{"dimension", "mesh axis", kLayoutSyntaxHint,
                                 true};
  Result<std::vector<PairItem>> items = splitPairs(text, syntax);
  if (!items)
    return items.error();
  LayoutRules rules;
  for (const PairItem &item : *items) {
    std::vector<std::string> axes;
    std::vector<SourceLoc> axisLocs;
    for (const PairWord &word : item.values) {
      axes.emplace_back(word.text);
      axisLocs.push_back({0, word.column});
    }
    Status added = rules.add(std::string(item.name.text), std::move(axes),
                             {0, item.name.column}, std::move(axisLocs));
    if (!added)
      return added.error();
  }
  return rules;
}

Status LayoutRules::add(std::string dim, std::vector<std::string> axes,
                        SourceLoc dimLoc, std::vector<SourceLoc> axisLocs) {
  axisLocs.resize(axes.size());
  if (!isIdentifier(dim))
    return Error{quoteName(dim) + " is not a valid dimension name",
                 kIdentifierHint}
        .at(dimLoc);
  if (axes.empty())
    return Error{"dimension " + quoteName(dim) + " has no mesh axis",
                 kLayoutSyntaxHint}
        .at(dimLoc);
  for (size_t i = 0; i < axes.size(); ++i) {
    if (!isIdentifier(axes[i]))
      return Error{quoteName(axes[i]) + " is not a valid mesh axis name",
                   kIdentifierHint}
          .at(axisLocs[i]);
    if (std::find(axes.begin(), axes.begin() + i, axes[i]) != axes.begin() + i)
      return Error{"dimension " + quoteName(dim) + " lists mesh axis " +
                       quoteName(axes[i]) + " twice",
                   "a mesh axis can split a dimension only once; list "
                   "different axes, e.g. 'batch:b+m'"}
          .at(axisLocs[i]);
  }
  for (const LayoutRule &rule : ruleList) {
    if (rule.dim != dim)
      continue;
    std::vector<std::string> merged = rule.axes;
    for (const std::string &axis : axes)
      if (std::find(merged.begin(), merged.end(), axis) == merged.end())
        merged.push_back(axis);
    std::string hint =
        merged == rule.axes
            ? "remove one of the two rules for " + quoteName(dim)
            : "to split one dimension over several mesh axes write " + dim +
                  ":" + joinAxes(merged);
    return Error{"dimension " + quoteName(dim) + " is assigned twice (to " +
                     quoteName(joinAxes(rule.axes)) + " and to " +
                     quoteName(joinAxes(axes)) + ")",
                 hint}
        .at(dimLoc);
  }
  ruleList.push_back(
      {std::move(dim), std::move(axes), dimLoc, std::move(axisLocs)});
  return success();
}

const std::vector<std::string> *
LayoutRules::axesFor(std::string_view dim) const {
  for (const LayoutRule &rule : ruleList)
    if (rule.dim == dim)
      return &rule.axes;
  return nullptr;
}

std::string LayoutRules::str() const {
  std::string out;
  for (const LayoutRule &rule : ruleList)
    out += (out.empty() ? "" : ";") + rule.dim + ":" + joinAxes(rule.axes);
  return out;
}

Status LayoutRules::checkAgainstMesh(const Mesh &mesh) const {
  for (const LayoutRule &rule : ruleList)
    for (size_t i = 0; i < rule.axes.size(); ++i)
      if (!mesh.axisIndex(rule.axes[i]))
        return unknownMeshAxisError("dimension " + quoteName(rule.dim),
                                    rule.dim, rule.axes[i], mesh.axisNames())
            .at(i < rule.axisLocs.size() ? rule.axisLocs[i] : rule.dimLoc);
  return success();
}

Status LayoutRules::checkAgainstDims(
    const std::map<std::string, int64_t> &modelDims) const {
  for (const LayoutRule &rule : ruleList) {
    if (modelDims.count(rule.dim))
      continue;
    std::vector<std::string> names;
    for (const auto &[name, size] : modelDims)
      names.push_back(name);
    std::string hint;
    if (std::optional<std::string> close = closestName(rule.dim, names))
      hint = "did you mean " + quoteName(*close) + "?";
    else if (names.empty())
      hint = "the model has no named dimensions";
    else
      hint = "the model's dimensions are " + quoteNames(names);
    return Error{"the layout splits dimension " + quoteName(rule.dim) +
                     ", which the model does not have",
                 hint}
        .at(rule.dimLoc);
  }
  return success();
}

bool LayoutRules::operator==(const LayoutRules &other) const {
  return std::equal(ruleList.begin(), ruleList.end(), other.ruleList.begin(),
                    other.ruleList.end(),
                    [](const LayoutRule &a, const LayoutRule &b) {
                      return a.dim == b.dim && a.axes == b.axes;
                    });
}

} // namespace meshc::layout
