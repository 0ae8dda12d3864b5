//===- Diagnostics.cpp - Reporting .mtf errors ----------------------------===//
//
// Locations and the "did you mean" suggestion.
//
//===----------------------------------------------------------------------===//

#include "frontend/Diagnostics.h"

#include <charconv>

using namespace meshc::frontend;

namespace {
/// Most edits a suggestion may be away from the name.
constexpr unsigned kMaxSuggestionEdits = 2;
} // namespace

DiagnosticEmitter::DiagnosticEmitter(mlir::MLIRContext &context,
                                     llvm::StringRef filename)
    : context(&context), filename(mlir::StringAttr::get(&context, filename)) {}

mlir::FileLineColLoc DiagnosticEmitter::location(Loc loc) const {
  return mlir::FileLineColLoc::get(filename, loc.line, loc.column);
}

std::string
meshc::frontend::didYouMean(llvm::StringRef name,
                            llvm::ArrayRef<llvm::StringRef> candidates) {
  llvm::StringRef best;
  unsigned bestDistance = kMaxSuggestionEdits + 1;
  for (llvm::StringRef candidate : candidates) {
    unsigned distance = name.edit_distance(
        candidate, /*AllowReplacements=*/true, kMaxSuggestionEdits);
    // A name two edits from a two-letter name is no suggestion at all.
    if (distance < bestDistance && distance < name.size() &&
        distance < candidate.size()) {
      best = candidate;
      bestDistance = distance;
    }
  }
  if (best.empty())
    return "";
  return ("; did you mean '" + best + "'?").str();
}

std::string meshc::frontend::formatNumber(double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, ec == std::errc() ? end : buffer);
}
