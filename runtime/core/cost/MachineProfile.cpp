//===- MachineProfile.cpp - Machine profiles from JSON --------------------===//
//
// The same discipline as layout/Spec.cpp: nlohmann/json parses, and
// JsonLocations points every semantic error at the key or value it is
// about. No exception leaves the library.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/cost/MachineProfile.h"

#include "runtime/core/layout/JsonLocations.h"
#include "runtime/core/layout/Names.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

namespace meshc::cost {
namespace {

using Json = nlohmann::ordered_json;
using layout::Error;
using layout::JsonLocations;
using layout::jsonMemberPath;
using layout::Result;
using layout::SourceLoc;

/// The presets, by name: the JSON texts of cost/machines/*.json
/// (generated into MachinePresets.inc at configure time).
const std::vector<std::pair<std::string, std::string>> &presets() {
  static const std::vector<std::pair<std::string, std::string>> all = {
#include "MachinePresets.inc"
  };
  return all;
}

constexpr const char *kProfileExample =
    "a profile looks like {\"name\": \"box\", \"gemm_flops\": {\"f32\": 1e11}, "
    "\"vector_flops\": 2e10, \"memory_bandwidth\": 1e10, \"links\": "
    "{\"intra_node\": {\"latency\": 1e-6, \"bandwidth\": 5e9}}} (docs/cost.md)";

std::string describe(const Json &value) {
  if (value.is_object())
    return "an object";
  if (value.is_array())
    return "an array";
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

class ProfileReader {
public:
  ProfileReader(std::string fileName, JsonLocations locations)
      : fileName(std::move(fileName)), locations(std::move(locations)) {}

  Result<MachineProfile> read(const Json &root) {
    if (const auto &dup = locations.duplicate())
      return fail(
          "key \"" + dup->key + "\" appears twice in " +
              (dup->parentPath.empty() ? "the profile" : dup->parentPath),
          "each key of a JSON object may appear only once", dup->loc);
    if (!root.is_object())
      return fail("a machine profile must be a JSON object, got " +
                      describe(root),
                  kProfileExample, locations.valueLoc(""));
    if (Error *e = checkKeys(root, "",
                             {"name", "description", "devices_per_node",
                              "gemm_flops", "vector_flops", "fused_flops",
                              "attention_flops", "memory_bandwidth",
                              "step_overhead", "gemm_call_overhead",
                              "run_overhead", "overlaps_communication",
                              "tree_all_reduce", "links", "sources"}))
      return *e;
    MachineProfile profile;
    const Json *name = member(root, "", "name", true);
    if (!name)
      return error;
    if (!name->is_string() || name->get<std::string>().empty())
      return fail("\"name\": expected a non-empty string, got " +
                      describe(*name),
                  "", locations.valueLoc(jsonMemberPath("", "name")));
    profile.name = name->get<std::string>();
    if (const Json *text = member(root, "", "description", false)) {
      if (!text->is_string())
        return fail("\"description\": expected a string, got " +
                        describe(*text),
                    "", locations.valueLoc(jsonMemberPath("", "description")));
      profile.description = text->get<std::string>();
    } else if (failed) {
      return error;
    }

    const Json *gemm = member(root, "", "gemm_flops", true);
    if (!gemm)
      return error;
    std::string gemmPath = jsonMemberPath("", "gemm_flops");
    if (!gemm->is_object())
      return fail(gemmPath +
                      ": expected an object such as {\"f32\": 1e12, "
                      "\"bf16\": 2e12}, got " +
                      describe(*gemm),
                  "", locations.valueLoc(gemmPath));
    if (Error *e = checkKeys(*gemm, gemmPath, {"f32", "bf16"}))
      return *e;
    if (!positive(*gemm, gemmPath, "f32", true, profile.gemmF32))
      return error;
    profile.gemmBf16 = profile.gemmF32;
    if (!positive(*gemm, gemmPath, "bf16", false, profile.gemmBf16))
      return error;
    if (!positive(root, "", "vector_flops", true, profile.vectorFlops) ||
        !positive(root, "", "memory_bandwidth", true, profile.memoryBandwidth))
      return error;
    profile.fusedFlops = profile.vectorFlops;
    if (!positive(root, "", "fused_flops", false, profile.fusedFlops) ||
        !positive(root, "", "attention_flops", false, profile.attentionFlops))
      return error;
    if (!nonNegative(root, "", "step_overhead", profile.stepOverhead) ||
        !nonNegative(root, "", "gemm_call_overhead",
                     profile.gemmCallOverhead) ||
        !nonNegative(root, "", "run_overhead", profile.runOverhead))
      return error;
    if (!boolean(root, "", "overlaps_communication",
                 profile.overlapsCommunication) ||
        !boolean(root, "", "tree_all_reduce", profile.treeAllReduce))
      return error;
    double perNode = 1;
    if (!positive(root, "", "devices_per_node", false, perNode))
      return error;
    if (perNode != std::floor(perNode) || perNode > 1e15)
      return fail(jsonMemberPath("", "devices_per_node") +
                      ": expected a whole number of devices, got " +
                      describe(root["devices_per_node"]),
                  "",
                  locations.valueLoc(jsonMemberPath("", "devices_per_node")));
    profile.devicesPerNode = static_cast<int64_t>(perNode);

    const Json *links = member(root, "", "links", true);
    if (!links)
      return error;
    std::string linksPath = jsonMemberPath("", "links");
    if (!links->is_object())
      return fail(linksPath +
                      ": expected an object with \"intra_node\" "
                      "(and \"inter_node\"), got " +
                      describe(*links),
                  kProfileExample, locations.valueLoc(linksPath));
    if (Error *e = checkKeys(*links, linksPath, {"intra_node", "inter_node"}))
      return *e;
    if (!readLink(*links, linksPath, "intra_node", true, profile.intraNode))
      return error;
    profile.interNode = profile.intraNode;
    if (!readLink(*links, linksPath, "inter_node", false, profile.interNode))
      return error;

    if (const Json *sources = member(root, "", "sources", false)) {
      std::string path = jsonMemberPath("", "sources");
      if (!sources->is_object())
        return fail(path + ": expected an object of texts, got " +
                        describe(*sources),
                    "", locations.valueLoc(path));
      for (const auto &[key, text] : sources->items()) {
        if (!text.is_string())
          return fail(jsonMemberPath(path, key) + ": expected a text, got " +
                          describe(text),
                      "", locations.valueLoc(jsonMemberPath(path, key)));
        profile.sources[key] = text.get<std::string>();
      }
    } else if (failed) {
      return error;
    }
    return profile;
  }

private:
  Error fail(std::string message, std::string hint, SourceLoc loc) const {
    return Error{std::move(message), std::move(hint), loc.line, loc.column,
                 fileName};
  }

  /// Refuses a key of `object` (at `path`) that is not in `known`.
  Error *checkKeys(const Json &object, const std::string &path,
                   const std::vector<std::string> &known) {
    for (const auto &[key, value] : object.items()) {
      if (std::find(known.begin(), known.end(), key) != known.end())
        continue;
      std::string list;
      for (size_t i = 0; i < known.size(); ++i)
        list += (i == 0                  ? "\""
                 : i + 1 == known.size() ? " and \""
                                         : ", \"") +
                known[i] + "\"";
      std::string hint = "the known keys are " + list;
      if (std::optional<std::string> close = layout::closestName(key, known))
        hint = "did you mean \"" + *close + "\"? " + hint;
      error = fail("unknown key \"" + key + "\" in " +
                       (path.empty() ? "the profile" : path),
                   hint, locations.keyLoc(jsonMemberPath(path, key)));
      return &error;
    }
    return nullptr;
  }

  /// Member `key` of `object`; null (setting `failed` when `required`) when
  /// it is absent.
  const Json *member(const Json &object, const std::string &path,
                     const char *key, bool required) {
    failed = false;
    auto found = object.find(key);
    if (found != object.end())
      return &*found;
    if (required) {
      failed = true;
      error = fail((path.empty() ? std::string("the profile") : path) +
                       " has no \"" + key + "\"",
                   kProfileExample, locations.valueLoc(path));
    }
    return nullptr;
  }

  /// Reads optional member `key` as true or false into `out` (left alone
  /// when absent); false with `error` set when wrong.
  bool boolean(const Json &object, const std::string &path, const char *key,
               bool &out) {
    const Json *value = member(object, path, key, false);
    if (!value)
      return !failed;
    std::string at = jsonMemberPath(path, key);
    if (!value->is_boolean()) {
      error = fail(at + ": expected true or false, got " + describe(*value), "",
                   locations.valueLoc(at));
      return false;
    }
    out = value->get<bool>();
    return true;
  }

  /// Reads member `key` as a finite number > 0 into `out` (left alone when
  /// absent and not required); false with `error` set when wrong.
  bool positive(const Json &object, const std::string &path, const char *key,
                bool required, double &out) {
    return number(object, path, key, required, out, /*allowZero=*/false);
  }
  bool nonNegative(const Json &object, const std::string &path, const char *key,
                   double &out) {
    return number(object, path, key, false, out, /*allowZero=*/true);
  }
  bool number(const Json &object, const std::string &path, const char *key,
              bool required, double &out, bool allowZero) {
    const Json *value = member(object, path, key, required);
    if (!value)
      return !failed;
    std::string at = jsonMemberPath(path, key);
    double x = value->is_number() ? value->get<double>() : 0;
    if (!value->is_number() || !std::isfinite(x) || x < 0 ||
        (x == 0 && !allowZero)) {
      error = fail(at + ": expected a " +
                       (allowZero ? "number >= 0" : "positive number") +
                       ", got " + describe(*value),
                   "", locations.valueLoc(at));
      return false;
    }
    out = x;
    return true;
  }

  bool readLink(const Json &links, const std::string &path, const char *key,
                bool required, Link &out) {
    const Json *link = member(links, path, key, required);
    if (!link)
      return !failed;
    std::string at = jsonMemberPath(path, key);
    if (!link->is_object()) {
      error = fail(at +
                       ": expected {\"latency\": seconds, \"bandwidth\": "
                       "bytes per second}, got " +
                       describe(*link),
                   "", locations.valueLoc(at));
      return false;
    }
    if (Error *e = checkKeys(*link, at, {"latency", "bandwidth"})) {
      error = *e;
      return false;
    }
    return nonNegative(*link, at, "latency", out.latency) &&
           positive(*link, at, "bandwidth", true, out.bandwidth);
  }

  std::string fileName;
  JsonLocations locations;
  Error error;
  bool failed = false;
};

} // namespace

layout::Result<MachineProfile> parseMachineProfile(std::string_view text,
                                                   std::string_view fileName) {
  std::string source(fileName);
  try {
    Json root;
    try {
      root = Json::parse(text.begin(), text.end());
    } catch (const Json::parse_error &e) {
      SourceLoc loc = layout::locOfOffset(text, e.byte > 0 ? e.byte - 1 : 0);
      std::string what = e.what();
      size_t detail = what.find(": ", what.find("parse error"));
      if (detail != std::string::npos)
        what = what.substr(detail + 2);
      return Error{"invalid JSON: " + what, kProfileExample, loc.line,
                   loc.column, source};
    }
    return ProfileReader(source, JsonLocations::scan(text)).read(root);
  } catch (const std::exception &e) {
    return Error{std::string("cannot read the machine profile: ") + e.what(),
                 "", 0, 0, source};
  }
}

layout::Result<MachineProfile> loadMachineProfile(const std::string &name) {
  for (const auto &[preset, text] : presets())
    if (preset == name)
      return parseMachineProfile(text, "<preset " + preset + ">");
  std::FILE *file = std::fopen(name.c_str(), "rb");
  if (!file) {
    std::string list;
    for (const std::string &preset : machinePresetNames())
      list += (list.empty() ? "" : ", ") + preset;
    return Error{"no machine preset named " + layout::quoteName(name) +
                     " and no such file: " + std::strerror(errno),
                 "the presets are " + list +
                     "; or give a JSON profile file (docs/cost.md)",
                 0, 0, ""};
  }
  std::string text;
  char buffer[4096];
  size_t count;
  while ((count = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
    text.append(buffer, count);
  bool bad = std::ferror(file);
  std::fclose(file);
  if (bad)
    return Error{"cannot read machine profile " + layout::quoteName(name), "",
                 0, 0, name};
  return parseMachineProfile(text, name);
}

std::vector<std::string> machinePresetNames() {
  std::vector<std::string> names;
  for (const auto &[name, text] : presets())
    names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace meshc::cost
