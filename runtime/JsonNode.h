//===- JsonNode.h - JSON values that know where they are --------*- C++ -*-===//
//
// The loader reads the .mprog through JsonNode: a nlohmann::json value with
// its JSON path ("steps[3].in[0].buf") and the file name, so that every
// type or range error names exactly what is wrong and where:
//   mlp.mprog: steps[3].sizes.batch: expected an integer, got the string "4"
// Internal to the loader.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_JSONNODE_H
#define MESHC_RUNTIME_JSONNODE_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace meshc::runtime {

/// A JSON value with its path in the document.
class JsonNode {
public:
  /// `value` at `path` in the document read from `fileName`; both must
  /// outlive the node.
  JsonNode(const nlohmann::json &value, std::string path,
           const std::string &fileName)
      : value(&value), nodePath(std::move(path)), fileName(&fileName) {}

  /// The path: "" for the root, "steps[3].out".
  const std::string &path() const { return nodePath; }
  /// The value.
  const nlohmann::json &json() const { return *value; }

  /// Throws RuntimeError "<file>: <path>: <message>".
  [[noreturn]] void fail(const std::string &message) const;

  /// Member `key` of this object; fails when this is not an object or the
  /// member is missing.
  JsonNode member(const std::string &key) const;
  /// Member `key` of this object, if present.
  std::optional<JsonNode> optionalMember(const std::string &key) const;
  /// The elements of this array.
  std::vector<JsonNode> elements() const;
  /// The (key, value) pairs of this object, sorted by key.
  std::vector<std::pair<std::string, JsonNode>> members() const;

  /// This string.
  std::string string() const;
  /// This integer.
  int64_t integer() const;
  /// This integer, which must be at least `min`.
  int64_t integerAtLeast(int64_t min) const;
  /// This number (integer or floating point).
  double number() const;
  /// This boolean.
  bool boolean() const;
  /// This array of strings.
  std::vector<std::string> strings() const;

private:
  /// Fails with "expected <what>, got <description of the value>".
  [[noreturn]] void expected(const std::string &what) const;

  const nlohmann::json *value;
  std::string nodePath;
  const std::string *fileName;
};

/// How messages describe a JSON value: `the string "4"`, `the number 4.5`,
/// `an array`, `an object`, `null`, `true`.
std::string describeJson(const nlohmann::json &value);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_JSONNODE_H
