//===- Names.cpp - Name checks and suggestions for layout errors ----------===//
//
// Implements the identifier check, the edit distance behind "did you mean"
// hints, and the quoting conventions of layout messages.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/Names.h"

#include <algorithm>

namespace meshc::layout {

static bool isIdentifierStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool isIdentifier(std::string_view name) {
  if (name.empty() || !isIdentifierStart(name.front()))
    return false;
  return std::all_of(name.begin() + 1, name.end(), [](char c) {
    return isIdentifierStart(c) || (c >= '0' && c <= '9');
  });
}

size_t editDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance over a full table: names are short.
  std::vector<std::vector<size_t>> d(a.size() + 1,
                                     std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] =
          std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::optional<std::string>
closestName(std::string_view name, const std::vector<std::string> &candidates) {
  std::optional<std::string> best;
  size_t bestDistance = 3;
  for (const std::string &candidate : candidates) {
    size_t distance = editDistance(name, candidate);
    if (distance < bestDistance &&
        distance < std::max(name.size(), candidate.size())) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

std::string quoteName(std::string_view name) {
  return "'" + std::string(name) + "'";
}

std::string quoteNames(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &name : names)
    out += (out.empty() ? "" : ", ") + quoteName(name);
  return out;
}

std::string joinAxes(const std::vector<std::string> &axes) {
  std::string out;
  for (const std::string &axis : axes)
    out += (out.empty() ? "" : "+") + axis;
  return out;
}

Error unknownMeshAxisError(const std::string &subject, std::string_view dim,
                           std::string_view axis,
                           const std::vector<std::string> &meshAxes) {
  std::string axesText = meshAxes.empty() ? "the mesh has no axes"
                                          : "axes: " + quoteNames(meshAxes);
  std::string hint;
  if (std::optional<std::string> close = closestName(axis, meshAxes))
    hint = "did you mean " + quoteName(*close) + "?";
  else
    hint = "add " + quoteName(axis) + " to the mesh or split " +
           quoteName(dim) + " over one of its axes";
  return Error{subject + " is split over mesh axis " + quoteName(axis) +
                   ", which is not in the mesh (" + axesText + ")",
               hint};
}

} // namespace meshc::layout
