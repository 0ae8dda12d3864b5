//===- LayoutRules.h - Name-based layout rules ------------------*- C++ -*-===//
//
// Layout rules say which tensor dimension is split over which mesh axes, by
// dimension name, as in Mesh-TensorFlow: "batch:b;d_ff:m" splits every
// tensor's 'batch' dimension over mesh axis 'b' and every 'd_ff' over 'm'.
// Beyond Mesh-TensorFlow, one dimension may be split over several mesh axes,
// written "batch:b+m" (axes major to minor). Dimensions without a rule are
// not split. Rules remember where they were written so that later checks
// against a mesh or a model can point at them.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CORE_LAYOUT_LAYOUTRULES_H
#define MESHC_RUNTIME_CORE_LAYOUT_LAYOUTRULES_H

#include "runtime/core/layout/Error.h"
#include "runtime/core/layout/Mesh.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace meshc::layout {

/// One rule: dimension `dim` is split over `axes`, major to minor.
struct LayoutRule {
  std::string dim;
  std::vector<std::string> axes;
  /// Where the dimension name was written (0 when built in code).
  SourceLoc dimLoc;
  /// Where each axis was written; empty or parallel to `axes`.
  std::vector<SourceLoc> axisLocs;
};

/// An ordered list of layout rules with at most one rule per dimension.
class LayoutRules {
public:
  /// No rules: every tensor is replicated.
  LayoutRules() = default;

  /// Parses "batch:b;d_ff:m;x:b+m"; separators as for Mesh::parse. The empty
  /// text gives no rules. Errors carry the 1-based column of the offending
  /// word.
  static Result<LayoutRules> parse(std::string_view text);

  /// Appends the rule `dim` -> `axes`. Fails when a name is not an
  /// identifier, `axes` is empty or lists an axis twice, or `dim` already has
  /// a rule. Errors are located with `dimLoc` / `axisLocs`.
  Status add(std::string dim, std::vector<std::string> axes,
             SourceLoc dimLoc = {}, std::vector<SourceLoc> axisLocs = {});

  /// The mesh axes `dim` is split over, or nullptr when it is not split.
  const std::vector<std::string> *axesFor(std::string_view dim) const;
  /// The rules in the order they were given.
  const std::vector<LayoutRule> &rules() const { return ruleList; }
  /// True when there are no rules.
  bool empty() const { return ruleList.empty(); }

  /// The canonical string form "batch:b;x:b+m" (empty without rules).
  std::string str() const;

  /// Fails when a rule uses a mesh axis that `mesh` does not have.
  Status checkAgainstMesh(const Mesh &mesh) const;
  /// Fails when a rule names a dimension that is not among `modelDims`
  /// (dimension name -> size).
  Status
  checkAgainstDims(const std::map<std::string, int64_t> &modelDims) const;

  /// Rules are equal when they split the same dimensions over the same axes
  /// in the same order; source locations do not count.
  bool operator==(const LayoutRules &other) const;
  bool operator!=(const LayoutRules &other) const { return !(*this == other); }

private:
  std::vector<LayoutRule> ruleList;
};

} // namespace meshc::layout

#endif // MESHC_RUNTIME_CORE_LAYOUT_LAYOUTRULES_H
