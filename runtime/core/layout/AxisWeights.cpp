//===- AxisWeights.cpp - Device weights along mesh axes -------------------===//
//
// Parsing "b=1,1,2;m=1,3" against a mesh, and the largest-remainder split.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/AxisWeights.h"

#include "runtime/core/layout/Names.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <numeric>

namespace meshc::layout {

static constexpr const char *kWeightsSyntaxHint =
    "write name=w1,w2,... per weighted mesh axis, e.g. 'b=1,1,2;m=1,3'";
static constexpr const char *kWeightHint =
    "weights are positive numbers, one per device along the axis, e.g. "
    "'b=1,1,2' or 'b=1,1.5'";

namespace {

/// A word of the text and its 1-based column.
struct Word {
  std::string_view text;
  int column = 0;
};

bool isItemSeparator(char c) {
  return c == ';' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/// "1", "2.5": the shortest text that reads back as `weight`.
std::string formatWeight(double weight) {
  char buffer[32];
  std::to_chars_result done =
      std::to_chars(buffer, buffer + sizeof(buffer), weight);
  return std::string(buffer, done.ptr);
}

} // namespace

AxisWeights AxisWeights::even(const Mesh &mesh) {
  AxisWeights weights;
  for (const MeshAxis &axis : mesh.axes())
    weights.perAxis.push_back(std::vector<double>(size_t(axis.size), 1.0));
  return weights;
}

Result<AxisWeights> AxisWeights::parse(std::string_view text,
                                       const Mesh &mesh) {
  AxisWeights weights = even(mesh);
  std::vector<bool> given(mesh.rank(), false);
  bool any = false;
  size_t pos = 0;
  while (pos < text.size()) {
    if (isItemSeparator(text[pos])) {
      ++pos;
      continue;
    }
    // One item: name '=' weights, up to the next item separator.
    size_t end = pos;
    while (end < text.size() && !isItemSeparator(text[end]))
      ++end;
    std::string_view item = text.substr(pos, end - pos);
    int column = int(pos) + 1;
    size_t equals = item.find('=');
    if (equals == std::string_view::npos)
      return Error{"expected '=' and weights after mesh axis " +
                       quoteName(item),
                   kWeightsSyntaxHint, 0, column};
    std::string name(item.substr(0, equals));
    if (name.empty())
      return Error{"expected a mesh axis name before '='", kWeightsSyntaxHint,
                   0, column};
    std::optional<size_t> axis = mesh.axisIndex(name);
    if (!axis)
      return Error{"axis weights name " + quoteName(name) +
                       ", which is not an axis of the mesh " + mesh.str(),
                   "the mesh axes are " + quoteNames(mesh.axisNames()), 0,
                   column};
    if (given[*axis])
      return Error{"weights of mesh axis " + quoteName(name) +
                       " are given twice",
                   "give each mesh axis's weights once", 0, column};
    given[*axis] = true;
    any = true;

    // The weights, separated by ','.
    std::vector<Word> words;
    size_t start = equals + 1;
    while (true) {
      size_t comma = item.find(',', start);
      size_t stop = comma == std::string_view::npos ? item.size() : comma;
      words.push_back({item.substr(start, stop - start), column + int(start)});
      if (comma == std::string_view::npos)
        break;
      start = comma + 1;
    }
    for (size_t i = 0; i < words.size(); ++i)
      if (words[i].text.empty())
        return Error{"the weight of device " + std::to_string(i) +
                         " along mesh axis " + quoteName(name) + " is missing",
                     kWeightHint, 0, words[i].column};
    int64_t devices = mesh.axisSize(*axis);
    if (int64_t(words.size()) != devices)
      return Error{"mesh axis " + quoteName(name) + " has " +
                       std::to_string(devices) + " device" +
                       (devices == 1 ? "" : "s") + ", but " +
                       std::to_string(words.size()) + " weight" +
                       (words.size() == 1 ? " was" : "s were") + " given",
                   "give one weight per device along " + quoteName(name), 0,
                   column + int(equals) + 1};
    std::vector<double> &axisWeights = weights.perAxis[*axis];
    for (size_t i = 0; i < words.size(); ++i) {
      const Word &word = words[i];
      std::string device = "the weight of device " + std::to_string(i) +
                           " along mesh axis " + quoteName(name);
      // from_chars: no locale, no leading whitespace or '+'.
      double value = 0;
      const char *first = word.text.data();
      const char *last = first + word.text.size();
      std::from_chars_result read = std::from_chars(first, last, value);
      if (read.ec == std::errc::result_out_of_range && read.ptr == last)
        return Error{device + " is out of range, got " + quoteName(word.text),
                     kWeightHint, 0, word.column};
      if (read.ec != std::errc() || read.ptr != last || !std::isfinite(value))
        return Error{device + " is not a number, got " + quoteName(word.text),
                     kWeightHint, 0, word.column};
      if (value <= 0)
        return Error{device + " must be positive, got " +
                         std::string(word.text),
                     kWeightHint, 0, word.column};
      axisWeights[i] = value;
    }
    pos = end;
  }
  if (!any)
    return Error{"axis weights are empty", kWeightsSyntaxHint, 0, 1};
  return weights;
}

const std::vector<double> &AxisWeights::of(size_t axis) const {
  assert(axis < perAxis.size() && "mesh axis out of range");
  return perAxis[axis];
}

bool AxisWeights::isEven(size_t axis) const {
  const std::vector<double> &weights = of(axis);
  return std::all_of(weights.begin(), weights.end(),
                     [&](double w) { return w == weights.front(); });
}

bool AxisWeights::isEven() const {
  for (size_t axis = 0; axis < perAxis.size(); ++axis)
    if (!isEven(axis))
      return false;
  return true;
}

bool AxisWeights::allowsIndivisible(const std::vector<size_t> &axes) const {
  return indivisible || std::any_of(axes.begin(), axes.end(),
                                    [&](size_t axis) { return !isEven(axis); });
}

std::string AxisWeights::str(const Mesh &mesh) const {
  std::string out;
  for (size_t axis = 0; axis < perAxis.size(); ++axis) {
    if (isEven(axis))
      continue;
    out += (out.empty() ? "" : ";") + mesh.axisName(axis) + "=";
    for (size_t i = 0; i < perAxis[axis].size(); ++i)
      out += (i ? "," : "") + formatWeight(perAxis[axis][i]);
  }
  return out;
}

std::vector<int64_t> splitByWeights(int64_t size,
                                    const std::vector<double> &weights) {
  assert(size >= 0 && !weights.empty() && "blocks of a non-negative size");
  if (weights.empty())
    return {};
  long double total = 0;
  for (double w : weights) {
    assert(w > 0 && std::isfinite(w) && "weights are positive and finite");
    total += w;
  }
  size_t n = weights.size();
  std::vector<int64_t> sizes(n);
  std::vector<long double> fraction(n);
  int64_t assigned = 0;
  for (size_t i = 0; i < n; ++i) {
    long double quota = (long double)size * weights[i] / total;
    long double whole =
        std::clamp(std::floor(quota), (long double)0, (long double)size);
    sizes[i] = int64_t(whole);
    fraction[i] = quota - whole;
    assigned += sizes[i];
  }
  // Rounding of the quotas can leave the floors a unit above `size`; take it
  // back from the blocks with the smallest fractional parts.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return fraction[a] > fraction[b];
  });
  for (size_t k = n; assigned > size; k = k == 0 ? n : k) {
    --k;
    if (sizes[order[k]] > 0) {
      --sizes[order[k]];
      --assigned;
    }
  }
  for (size_t k = 0; assigned < size; k = (k + 1) % n) {
    ++sizes[order[k]];
    ++assigned;
  }
  return sizes;
}

std::vector<int64_t> cutBlocks(int64_t size, const std::vector<size_t> &axes,
                               const Mesh &mesh, const AxisWeights &weights) {
  std::vector<int64_t> blocks{size};
  for (size_t axis : axes) {
    assert(axis < mesh.rank() && "mesh axis out of range");
    std::vector<int64_t> next;
    next.reserve(blocks.size() * size_t(mesh.axisSize(axis)));
    for (int64_t block : blocks)
      for (int64_t part : splitByWeights(block, weights.of(axis)))
        next.push_back(part);
    blocks = std::move(next);
  }
  return blocks;
}

} // namespace meshc::layout
