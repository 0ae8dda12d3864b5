//===- JsonLocations.h - Where things are in a JSON text --------*- C++ -*-===//
//
// nlohmann/json reports positions only for syntax errors. To point semantic
// errors of a spec file at the offending key or value, this scanner walks a
// JSON text that nlohmann/json has already accepted and records where every
// key and value starts, by JSON path. It also finds keys repeated within one
// object, which nlohmann/json silently merges. Internal to the layout
// library; it does not depend on nlohmann/json.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CORE_LAYOUT_JSONLOCATIONS_H
#define MESHC_RUNTIME_CORE_LAYOUT_JSONLOCATIONS_H

#include "runtime/core/layout/Error.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace meshc::layout {

/// The path of member `key` of the object at `parent`: `"mesh"."b"`. The
/// root's path is empty.
std::string jsonMemberPath(const std::string &parent, std::string_view key);

/// The path of element `index` of the array at `parent`: `"x"[1]`.
std::string jsonElementPath(const std::string &parent, size_t index);

/// The 1-based line and column of byte `offset` in `text`.
SourceLoc locOfOffset(std::string_view text, size_t offset);

/// Start locations of the keys and values of a valid JSON text.
class JsonLocations {
public:
  /// Scans `text`, which must be valid JSON. Keys are recorded as written
  /// (escape sequences are not decoded).
  static JsonLocations scan(std::string_view text);

  /// Where the value at `path` starts (unknown when absent).
  SourceLoc valueLoc(const std::string &path) const;
  /// Where the key of the member at `path` starts (unknown when absent).
  SourceLoc keyLoc(const std::string &path) const;

  /// A key repeated within one object: the repeated member's path and where
  /// its second occurrence is.
  struct Duplicate {
    std::string path;
    std::string parentPath;
    std::string key;
    SourceLoc loc;
  };
  /// The first repeated key, if any.
  const std::optional<Duplicate> &duplicate() const { return firstDuplicate; }

private:
  std::map<std::string, SourceLoc> values;
  std::map<std::string, SourceLoc> keys;
  std::optional<Duplicate> firstDuplicate;

  friend class JsonScanner;
};

} // namespace meshc::layout

#endif // MESHC_RUNTIME_CORE_LAYOUT_JSONLOCATIONS_H
