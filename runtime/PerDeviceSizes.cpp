//===- PerDeviceSizes.cpp - Sizes that differ between devices -------------===//

#include "runtime/PerDeviceSizes.h"

#include "runtime/JsonNode.h"

#include <algorithm>

namespace meshc::runtime {

using nlohmann::json;

PerDeviceSizes::PerDeviceSizes(const json &document, const layout::Mesh &mesh,
                               const std::string &fileName)
    : document(document), mesh(mesh), fileName(fileName) {
  collect(document, "");
  if (!document.contains("steps") || !document["steps"].is_array())
    return;
  // The step parser checks these lists; here they only tell devices apart.
  for (const json &step : document["steps"]) {
    if (!step.is_object() || !step.contains("axes") || !step["axes"].is_array())
      continue;
    std::vector<std::string> axes;
    for (const json &axis : step["axes"])
      if (axis.is_string() && mesh.axisIndex(axis.get<std::string>()))
        axes.push_back(axis.get<std::string>());
    if (axes.size() != step["axes"].size())
      continue;
    for (const char *key : {"blocks", "split_blocks", "concat_blocks"})
      if (step.contains(key) && step[key].is_array())
        memberLists.emplace_back(axes, &step[key]);
  }
}

bool PerDeviceSizes::isPerDevice(const json &node) {
  return node.is_object() && node.size() == 2 && node.contains("axes") &&
         node.contains("blocks");
}

void PerDeviceSizes::collect(const json &node, const std::string &path) {
  if (check(node, path))
    return;
  if (node.is_object())
    for (auto it = node.begin(); it != node.end(); ++it)
      collect(it.value(), path.empty() ? it.key() : path + "." + it.key());
  else if (node.is_array())
    for (size_t i = 0; i < node.size(); ++i)
      collect(node[i], path + "[" + std::to_string(i) + "]");
}

bool PerDeviceSizes::check(const json &node, const std::string &path) {
  if (!isPerDevice(node))
    return false;
  JsonNode size(node, path, fileName);
  JsonNode axesNode = size.member("axes");
  std::vector<std::string> axes = axesNode.strings();
  if (axes.empty())
    axesNode.fail("a per-device size needs at least one mesh axis");
  int64_t shards = 1;
  for (const std::string &axis : axes) {
    std::optional<size_t> index = mesh.axisIndex(axis);
    if (!index)
      axesNode.fail("'" + axis + "' is not a mesh axis (mesh " +
                    (mesh.rank() ? mesh.str() : std::string("of one device")) +
                    ")");
    if (std::count(axes.begin(), axes.end(), axis) > 1)
      axesNode.fail("mesh axis '" + axis + "' is listed twice");
    shards *= mesh.axisSize(*index);
  }
  std::vector<JsonNode> blocks = size.member("blocks").elements();
  if (static_cast<int64_t>(blocks.size()) != shards)
    size.member("blocks").fail("a per-device size over " +
                               std::to_string(shards) +
                               " shards needs one block per shard, got " +
                               std::to_string(blocks.size()));
  std::pair<std::vector<std::string>, std::vector<int64_t>> entry{axes, {}};
  for (const JsonNode &block : blocks)
    entry.second.push_back(block.integerAtLeast(0));
  if (std::find(distinct.begin(), distinct.end(), entry) == distinct.end())
    distinct.push_back(std::move(entry));
  return true;
}

int64_t PerDeviceSizes::shardIndex(const std::vector<std::string> &axes,
                                   int64_t deviceId) const {
  std::vector<int64_t> coords = mesh.coordinates(deviceId);
  int64_t index = 0;
  for (const std::string &axis : axes) {
    size_t position = *mesh.axisIndex(axis);
    index = index * mesh.axisSize(position) + coords[position];
  }
  return index;
}

json PerDeviceSizes::resolveNode(const json &node,
                                 std::optional<int64_t> deviceId) const {
  if (isPerDevice(node)) {
    const json &blocks = node["blocks"];
    if (!deviceId)
      return *std::max_element(blocks.begin(), blocks.end());
    return blocks[size_t(
        shardIndex(node["axes"].get<std::vector<std::string>>(), *deviceId))];
  }
  if (node.is_object()) {
    json copy = json::object();
    for (auto it = node.begin(); it != node.end(); ++it)
      copy[it.key()] = resolveNode(it.value(), deviceId);
    return copy;
  }
  if (node.is_array()) {
    json copy = json::array();
    for (const json &element : node)
      copy.push_back(resolveNode(element, deviceId));
    return copy;
  }
  return node;
}

json PerDeviceSizes::resolve(std::optional<int64_t> deviceId) const {
  return resolveNode(document, deviceId);
}

std::vector<int64_t> PerDeviceSizes::key(int64_t deviceId) const {
  std::vector<int64_t> sizes;
  for (const auto &[axes, blocks] : distinct)
    sizes.push_back(blocks[size_t(shardIndex(axes, deviceId))]);
  for (const auto &[axes, list] : memberLists) {
    size_t rank = size_t(shardIndex(axes, deviceId));
    json own =
        rank < list->size() ? resolveNode((*list)[rank], deviceId) : json();
    sizes.push_back(own.is_number_integer() ? own.get<int64_t>() : -1);
  }
  return sizes;
}

} // namespace meshc::runtime
