//===- JsonNode.cpp - JSON values that know where they are ----------------===//
//
// Typed accessors that fail with the value's path and a description of what
// was found instead.
//
//===----------------------------------------------------------------------===//

#include "runtime/JsonNode.h"

#include "runtime/Error.h"

namespace meshc::runtime {

std::string describeJson(const nlohmann::json &value) {
  switch (value.type()) {
  case nlohmann::json::value_t::null:
    return "null";
  case nlohmann::json::value_t::boolean:
    return value.get<bool>() ? "true" : "false";
  case nlohmann::json::value_t::string:
    return "the string " + value.dump();
  case nlohmann::json::value_t::array:
    return "an array";
  case nlohmann::json::value_t::object:
    return "an object";
  default:
    return "the number " + value.dump();
  }
}

void JsonNode::fail(const std::string &message) const {
  std::string where = *fileName + ": ";
  if (!nodePath.empty())
    where += nodePath + ": ";
  throw RuntimeError(where + message);
}

void JsonNode::expected(const std::string &what) const {
  fail("expected " + what + ", got " + describeJson(*value));
}

JsonNode JsonNode::member(const std::string &key) const {
  if (std::optional<JsonNode> found = optionalMember(key))
    return *found;
  fail("missing member \"" + key + "\"");
}

std::optional<JsonNode> JsonNode::optionalMember(const std::string &key) const {
  if (!value->is_object())
    expected("an object");
  auto it = value->find(key);
  if (it == value->end())
    return std::nullopt;
  return JsonNode(*it, nodePath.empty() ? key : nodePath + "." + key,
                  *fileName);
}

std::vector<JsonNode> JsonNode::elements() const {
  if (!value->is_array())
    expected("an array");
  std::vector<JsonNode> result;
  for (size_t i = 0; i < value->size(); ++i)
    result.emplace_back((*value)[i], nodePath + "[" + std::to_string(i) + "]",
                        *fileName);
  return result;
}

std::vector<std::pair<std::string, JsonNode>> JsonNode::members() const {
  if (!value->is_object())
    expected("an object");
  std::vector<std::pair<std::string, JsonNode>> result;
  for (auto it = value->begin(); it != value->end(); ++it)
    result.emplace_back(
        it.key(), JsonNode(it.value(), nodePath + "." + it.key(), *fileName));
  return result;
}

std::string JsonNode::string() const {
  if (!value->is_string())
    expected("a string");
  return value->get<std::string>();
}

int64_t JsonNode::integer() const {
  if (value->is_number_unsigned() &&
      value->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    fail("integer " + value->dump() + " is too large");
  if (!value->is_number_integer())
    expected("an integer");
  return value->get<int64_t>();
}

int64_t JsonNode::integerAtLeast(int64_t min) const {
  int64_t result = integer();
  if (result < min)
    fail("expected an integer >= " + std::to_string(min) + ", got " +
         std::to_string(result));
  return result;
}

double JsonNode::number() const {
  if (!value->is_number())
    expected("a number");
  return value->get<double>();
}

bool JsonNode::boolean() const {
  if (!value->is_boolean())
    expected("true or false");
  return value->get<bool>();
}

std::vector<std::string> JsonNode::strings() const {
  std::vector<std::string> result;
  for (const JsonNode &element : elements())
    result.push_back(element.string());
  return result;
}

} // namespace meshc::runtime
