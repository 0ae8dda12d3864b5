//===- Spec.h - JSON mesh-and-layout spec files -----------------*- C++ -*-===//
//
// A spec file carries a mesh, layout rules and options in one JSON object
// (read with nlohmann/json, which stays out of this header):
//
//   {"mesh": {"b": 4, "m": 2},
//    "layout": {"batch": "b", "d_ff": "m", "experts": ["b", "m"]},
//    "axis_weights": "b=1,1,1,2", "uneven": true,
//    "options": {"lr": 0.001}}
//
// "mesh" and "layout" may also be given in their string forms ("b:4;m:2",
// "batch:b;d_ff:m"). "axis_weights" is AxisWeights' text. Errors name the JSON
// path of the offending value and its line and column in the file.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CORE_LAYOUT_SPEC_H
#define MESHC_RUNTIME_CORE_LAYOUT_SPEC_H

#include "runtime/core/layout/AxisWeights.h"
#include "runtime/core/layout/Error.h"
#include "runtime/core/layout/LayoutRules.h"
#include "runtime/core/layout/Mesh.h"

#include <map>
#include <string>
#include <string_view>

namespace meshc::layout {

/// The contents of a spec file.
struct Spec {
  /// The "mesh" entry (required).
  Mesh mesh;
  /// The "layout" entry; no rules when absent. Checked against `mesh`.
  LayoutRules rules;
  /// The "layout" entry is the string "auto": meshc searches the layout
  /// (--layout auto); `rules` is empty.
  bool autoLayout = false;
  /// The "axis_weights" entry (AxisWeights' text, checked against `mesh`);
  /// empty when absent.
  std::string axisWeights;
  /// The "uneven" entry (AxisWeights::allowIndivisible).
  bool uneven = false;
  /// The "options" object, kept for the stages that read it: string values
  /// as they are, other values as compact JSON text ("true", "3", "[1,2]").
  std::map<std::string, std::string> options;
};

/// Parses a spec from JSON `text`; `fileName` is used in errors only (as
/// Error::source).
Result<Spec> parseSpecJson(std::string_view text, std::string_view fileName);

/// Reads and parses the spec file at `path`.
Result<Spec> loadSpecFile(const std::string &path);

} // namespace meshc::layout

#endif // MESHC_RUNTIME_CORE_LAYOUT_SPEC_H
