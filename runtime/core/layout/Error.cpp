//===- Error.cpp - Rendering layout errors --------------------------------===//
//
// Turns an Error into the text the driver prints: a file-located diagnostic
// for spec files, or the flag's value with a caret under the offending column
// for --mesh/--layout strings.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/Error.h"

namespace meshc::layout {

Error Error::at(SourceLoc loc) const {
  Error located = *this;
  if (loc.line > 0 || loc.column > 0) {
    located.line = loc.line;
    located.column = loc.column;
  }
  return located;
}

std::string Error::str() const {
  std::string location = source;
  if (line > 0) {
    if (!location.empty())
      location += ":";
    location += std::to_string(line) + ":" + std::to_string(column);
  } else if (column > 0) {
    location += location.empty() ? "column " : ":";
    location += std::to_string(column);
  }
  std::string text = location.empty() ? "" : location + ": ";
  text += "error: " + message;
  if (!hint.empty())
    text += "\nhint: " + hint;
  return text;
}

std::string formatFlagError(const Error &error, std::string_view flag,
                            std::string_view text) {
  std::string out = "error: " + std::string(flag) + ": " + error.message;
  if (error.column > 0) {
    out += "\n  " + std::string(text) + "\n  ";
    out += std::string(static_cast<size_t>(error.column - 1), ' ') + "^";
  }
  if (!error.hint.empty())
    out += "\nhint: " + error.hint;
  return out;
}

} // namespace meshc::layout
