//===- JsonLocations.cpp - Where things are in a JSON text ----------------===//
//
// A recursive scanner over valid JSON. Because the text is known to be valid,
// it only needs to find where each token starts and ends; every loop is
// still bounded by the end of the text.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/JsonLocations.h"

namespace meshc::layout {

std::string jsonMemberPath(const std::string &parent, std::string_view key) {
  return parent + (parent.empty() ? "" : ".") + "\"" + std::string(key) + "\"";
}

std::string jsonElementPath(const std::string &parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

SourceLoc locOfOffset(std::string_view text, size_t offset) {
  SourceLoc loc{1, 1};
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++loc.line;
      loc.column = 1;
    } else {
      ++loc.column;
    }
  }
  return loc;
}

class JsonScanner {
public:
  JsonScanner(std::string_view text, JsonLocations &out)
      : text(text), out(out) {
    // nlohmann/json skips a UTF-8 byte order mark.
    if (text.substr(0, 3) == "\xEF\xBB\xBF")
      pos = 3;
  }

  void scanValue(const std::string &path) {
    skipSpace();
    if (pos >= text.size())
      return;
    out.values.emplace(path, here());
    char c = text[pos];
    if (c == '{')
      scanObject(path);
    else if (c == '[')
      scanArray(path);
    else if (c == '"')
      skipString();
    else
      while (pos < text.size() && !isDelimiter(text[pos]))
        ++pos;
  }

private:
  /// The location of `pos`, advanced from the last one asked for: `pos`
  /// never moves backwards.
  SourceLoc here() {
    for (; lastOffset < pos && lastOffset < text.size(); ++lastOffset) {
      if (text[lastOffset] == '\n') {
        ++lastLoc.line;
        lastLoc.column = 1;
      } else {
        ++lastLoc.column;
      }
    }
    return lastLoc;
  }

  static bool isDelimiter(char c) {
    return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' ||
           c == '\n' || c == '\r';
  }

  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }

  /// Skips a string starting at its opening quote and returns its raw text.
  std::string_view skipString() {
    size_t start = ++pos;
    while (pos < text.size() && text[pos] != '"')
      pos += text[pos] == '\\' ? 2 : 1;
    std::string_view raw =
        text.substr(start, std::min(pos, text.size()) - start);
    ++pos;
    return raw;
  }

  void scanObject(const std::string &path) {
    ++pos;
    std::map<std::string, bool> seen;
    while (true) {
      skipSpace();
      if (pos >= text.size() || text[pos] == '}') {
        ++pos;
        return;
      }
      if (text[pos] == ',') {
        ++pos;
        continue;
      }
      SourceLoc keyLoc = here();
      std::string key(skipString());
      std::string memberPath = jsonMemberPath(path, key);
      if (seen[key] && !out.firstDuplicate)
        out.firstDuplicate = {memberPath, path, key, keyLoc};
      seen[key] = true;
      out.keys.emplace(memberPath, keyLoc);
      skipSpace();
      ++pos; // ':'
      scanValue(memberPath);
    }
  }

  void scanArray(const std::string &path) {
    ++pos;
    size_t index = 0;
    while (true) {
      skipSpace();
      if (pos >= text.size() || text[pos] == ']') {
        ++pos;
        return;
      }
      if (text[pos] == ',') {
        ++pos;
        continue;
      }
      scanValue(jsonElementPath(path, index++));
    }
  }

  std::string_view text;
  JsonLocations &out;
  size_t pos = 0;
  size_t lastOffset = 0;
  SourceLoc lastLoc{1, 1};
};

JsonLocations JsonLocations::scan(std::string_view text) {
  JsonLocations locations;
  JsonScanner(text, locations).scanValue("");
  return locations;
}

SourceLoc JsonLocations::valueLoc(const std::string &path) const {
  auto it = values.find(path);
  return it == values.end() ? SourceLoc() : it->second;
}

SourceLoc JsonLocations::keyLoc(const std::string &path) const {
  auto it = keys.find(path);
  return it == keys.end() ? SourceLoc() : it->second;
}

} // namespace meshc::layout
