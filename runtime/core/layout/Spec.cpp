//===- Spec.cpp - JSON mesh-and-layout spec files -------------------------===//
//
// nlohmann/json parses the text (and reports syntax errors); JsonLocations
// finds where each key and value is, so that every semantic error can name
// both the JSON path and the line and column of the offending value. All
// nlohmann/json exceptions are caught here: none leaves the library.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/Spec.h"

#include "runtime/core/layout/JsonLocations.h"
#include "runtime/core/layout/Names.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

namespace meshc::layout {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char *kSpecExample =
    "a spec looks like {\"mesh\": {\"b\": 4, \"m\": 2}, \"layout\": "
    "{\"batch\": \"b\"}}";

/// Compact JSON text of a value, or its kind for objects and arrays.
std::string describe(const Json &value) {
  if (value.is_object())
    return "an object";
  if (value.is_array())
    return "an array";
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

/// Reads the entries of one spec whose text has been parsed.
class SpecReader {
public:
  SpecReader(std::string fileName, JsonLocations locations)
      : fileName(std::move(fileName)), locations(std::move(locations)) {}

  Result<Spec> read(const Json &root);

private:
  /// An error at `loc` in this file.
  Error fail(std::string message, std::string hint, SourceLoc loc) const {
    return Error{std::move(message), std::move(hint), loc.line, loc.column,
                 fileName};
  }
  /// `inner` (from parsing the string form at `path`) located in the file.
  Error failInString(const std::string &path, const Error &inner) const;

  Result<Mesh> readMesh(const Json &value, const std::string &path);
  Result<LayoutRules> readLayout(const Json &value, const std::string &path);
  Status readAxisList(const Json &value, const std::string &path,
                      std::vector<std::string> &axes,
                      std::vector<SourceLoc> &locs);

  std::string fileName;
  JsonLocations locations;
};

Error SpecReader::failInString(const std::string &path,
                               const Error &inner) const {
  SourceLoc loc = locations.valueLoc(path);
  if (inner.column > 0)
    loc.column += inner.column;
  return fail(path + ": " + inner.message, inner.hint, loc);
}

Result<Spec> SpecReader::read(const Json &root) {
  if (const std::optional<JsonLocations::Duplicate> &dup =
          locations.duplicate())
    return fail("key \"" + dup->key + "\" appears twice in " +
                    (dup->parentPath.empty() ? "the spec" : dup->parentPath),
                "each key of a JSON object may appear only once", dup->loc);
  if (!root.is_object())
    return fail("the spec must be a JSON object, got " + describe(root),
                kSpecExample, locations.valueLoc(""));

  static const std::vector<std::string> known = {
      "mesh", "layout", "axis_weights", "uneven", "options"};
  for (const auto &[key, value] : root.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end())
      continue;
    std::string hint = "the known keys are \"mesh\", \"layout\", "
                       "\"axis_weights\", \"uneven\" and \"options\"";
    if (std::optional<std::string> close = closestName(key, known))
      hint = "did you mean \"" + *close + "\"? " + hint;
    return fail("unknown key \"" + key + "\" in the spec", hint,
                locations.keyLoc(jsonMemberPath("", key)));
  }

  Spec spec;
  auto meshEntry = root.find("mesh");
  if (meshEntry == root.end())
    return fail("the spec has no \"mesh\"",
                "add e.g. \"mesh\": {\"b\": 4, \"m\": 2}",
                locations.valueLoc(""));
  Result<Mesh> mesh = readMesh(*meshEntry, jsonMemberPath("", "mesh"));
  if (!mesh)
    return mesh.error();
  spec.mesh = *mesh;

  auto layoutEntry = root.find("layout");
  if (layoutEntry != root.end() && layoutEntry->is_string() &&
      layoutEntry->get<std::string>() == "auto") {
    spec.autoLayout = true;
  } else if (layoutEntry != root.end()) {
    std::string path = jsonMemberPath("", "layout");
    Result<LayoutRules> rules = readLayout(*layoutEntry, path);
    if (!rules)
      return rules.error();
    Status checked = rules->checkAgainstMesh(spec.mesh);
    if (!checked) {
      Error error = checked.error();
      error.message = path + ": " + error.message;
      error.source = fileName;
      return error;
    }
    spec.rules = *rules;
  }

  auto weightsEntry = root.find("axis_weights");
  if (weightsEntry != root.end()) {
    std::string path = jsonMemberPath("", "axis_weights");
    if (!weightsEntry->is_string())
      return fail(path + ": expected a string such as \"b=1,1,2\", got " +
                      describe(*weightsEntry),
                  "", locations.valueLoc(path));
    std::string text = weightsEntry->get<std::string>();
    Result<AxisWeights> weights = AxisWeights::parse(text, spec.mesh);
    if (!weights)
      return failInString(path, weights.error());
    spec.axisWeights = text;
  }
  auto unevenEntry = root.find("uneven");
  if (unevenEntry != root.end()) {
    std::string path = jsonMemberPath("", "uneven");
    if (!unevenEntry->is_boolean())
      return fail(path + ": expected true or false, got " +
                      describe(*unevenEntry),
                  "", locations.valueLoc(path));
    spec.uneven = unevenEntry->get<bool>();
  }

  auto optionsEntry = root.find("options");
  if (optionsEntry != root.end()) {
    std::string path = jsonMemberPath("", "options");
    if (!optionsEntry->is_object())
      return fail(path + ": expected an object, got " + describe(*optionsEntry),
                  "write options as {\"name\": value}",
                  locations.valueLoc(path));
    for (const auto &[key, value] : optionsEntry->items())
      spec.options[key] =
          value.is_string()
              ? value.get<std::string>()
              : value.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  return spec;
}

Result<Mesh> SpecReader::readMesh(const Json &value, const std::string &path) {
  if (value.is_string()) {
    Result<Mesh> mesh = Mesh::parse(value.get<std::string>());
    if (!mesh)
      return failInString(path, mesh.error());
    return mesh;
  }
  if (!value.is_object())
    return fail(path +
                    ": expected an object of axis sizes such as {\"b\": "
                    "4, \"m\": 2} or a string such as \"b:4;m:2\", got " +
                    describe(value),
                "", locations.valueLoc(path));
  std::vector<MeshAxis> axes;
  for (const auto &[name, size] : value.items()) {
    std::string axisPath = jsonMemberPath(path, name);
    if (!isIdentifier(name))
      return fail(axisPath + ": " + quoteName(name) +
                      " is not a valid mesh axis name",
                  kIdentifierHint, locations.keyLoc(axisPath));
    bool positive = size.is_number_integer() &&
                    (size.is_number_unsigned()
                         ? size.get<uint64_t>() > 0 &&
                               size.get<uint64_t>() <=
                                   uint64_t(std::numeric_limits<int64_t>::max())
                         : size.get<int64_t>() > 0);
    if (!positive)
      return fail(axisPath + ": expected a positive integer, got " +
                      describe(size),
                  "write the size as a number, e.g. \"" + name + "\": 4",
                  locations.valueLoc(axisPath));
    axes.push_back({name, size.get<int64_t>()});
  }
  Result<Mesh> mesh = Mesh::fromAxes(std::move(axes));
  if (!mesh)
    return fail(path + ": " + mesh.error().message, mesh.error().hint,
                locations.valueLoc(path));
  return mesh;
}

Status SpecReader::readAxisList(const Json &value, const std::string &path,
                                std::vector<std::string> &axes,
                                std::vector<SourceLoc> &locs) {
  if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      std::string elementPath = jsonElementPath(path, i);
      SourceLoc loc = locations.valueLoc(elementPath);
      if (!value[i].is_string())
        return fail(elementPath + ": expected a mesh axis name, got " +
                        describe(value[i]),
                    "list mesh axes as strings, e.g. [\"b\", \"m\"]", loc);
      std::string axis = value[i].get<std::string>();
      if (!isIdentifier(axis))
        return fail(elementPath + ": " + quoteName(axis) +
                        " is not a valid mesh axis name",
                    kIdentifierHint, loc);
      axes.push_back(axis);
      locs.push_back(loc);
    }
    return success();
  }
  SourceLoc loc = locations.valueLoc(path);
  if (!value.is_string())
    return fail(path +
                    ": expected a mesh axis name, \"b+m\" or a list of "
                    "mesh axis names, got " +
                    describe(value),
                "e.g. \"batch\": \"b\", \"batch\": \"b+m\" or \"batch\": "
                "[\"b\", \"m\"]",
                loc);
  std::string joined = value.get<std::string>();
  if (joined.find_first_not_of(" \t") == std::string::npos)
    return success(); // No axes: LayoutRules::add reports it.
  size_t start = 0;
  while (true) {
    size_t plus = joined.find('+', start);
    std::string axis = joined.substr(start, plus - start);
    size_t first = axis.find_first_not_of(" \t");
    size_t last = axis.find_last_not_of(" \t");
    axis =
        first == std::string::npos ? "" : axis.substr(first, last - first + 1);
    if (!isIdentifier(axis))
      return fail(path + ": expected mesh axis names joined by '+', got " +
                      describe(value),
                  std::string("e.g. \"b\" or \"b+m\"; ") + kIdentifierHint,
                  loc);
    axes.push_back(axis);
    locs.push_back(loc);
    if (plus == std::string::npos)
      return success();
    start = plus + 1;
  }
}

Result<LayoutRules> SpecReader::readLayout(const Json &value,
                                           const std::string &path) {
  LayoutRules rules;
  if (value.is_string()) {
    Result<LayoutRules> parsed = LayoutRules::parse(value.get<std::string>());
    if (!parsed)
      return failInString(path, parsed.error());
    // Re-add the rules with their locations in the file.
    SourceLoc base = locations.valueLoc(path);
    auto inFile = [&](SourceLoc loc) {
      return SourceLoc{base.line, base.column + loc.column};
    };
    for (const LayoutRule &rule : parsed->rules()) {
      std::vector<SourceLoc> axisLocs;
      for (SourceLoc loc : rule.axisLocs)
        axisLocs.push_back(inFile(loc));
      Status added = rules.add(rule.dim, rule.axes, inFile(rule.dimLoc),
                               std::move(axisLocs));
      assert(added && "rules that parsed are valid");
      (void)added;
    }
    return rules;
  }
  if (!value.is_object())
    return fail(path +
                    ": expected an object such as {\"batch\": \"b\"} or "
                    "a string such as \"batch:b\", got " +
                    describe(value),
                "", locations.valueLoc(path));
  for (const auto &[dim, axesValue] : value.items()) {
    std::string dimPath = jsonMemberPath(path, dim);
    std::vector<std::string> axes;
    std::vector<SourceLoc> locs;
    Status read = readAxisList(axesValue, dimPath, axes, locs);
    if (!read)
      return read.error();
    Status added = rules.add(dim, std::move(axes), locations.keyLoc(dimPath),
                             std::move(locs));
    if (!added) {
      Error error = added.error();
      return fail(dimPath + ": " + error.message, error.hint,
                  {error.line, error.column});
    }
  }
  return rules;
}

} // namespace

Result<Spec> parseSpecJson(std::string_view text, std::string_view fileName) {
  std::string source(fileName);
  try {
    Json root;
    try {
      root = Json::parse(text.begin(), text.end());
    } catch (const Json::parse_error &e) {
      // e.byte counts the characters read, the offending one included.
      SourceLoc loc = locOfOffset(text, e.byte > 0 ? e.byte - 1 : 0);
      std::string what = e.what();
      size_t detail = what.find(": ", what.find("parse error"));
      if (detail != std::string::npos)
        what = what.substr(detail + 2);
      return Error{"invalid JSON: " + what, kSpecExample, loc.line, loc.column,
                   source};
    }
    return SpecReader(source, JsonLocations::scan(text)).read(root);
  } catch (const std::exception &e) {
    return Error{std::string("cannot read the spec: ") + e.what(), "", 0, 0,
                 source};
  }
}

Result<Spec> loadSpecFile(const std::string &path) {
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    return Error{"cannot open spec file " + quoteName(path) + ": " +
                     std::strerror(errno),
                 "", 0, 0, path};
  std::string text;
  char buffer[4096];
  size_t count;
  while ((count = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
    text.append(buffer, count);
  bool failed = std::ferror(file);
  int readErrno = errno;
  std::fclose(file);
  if (failed)
    return Error{"cannot read spec file " + quoteName(path) + ": " +
                     std::strerror(readErrno),
                 "", 0, 0, path};
  return parseSpecJson(text, path);
}

} // namespace meshc::layout
