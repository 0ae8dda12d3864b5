//===- Loader.h - Reading and validating .mprog files -----------*- C++ -*-===//
//
// The loader turns .mprog JSON (docs/mprog.md) into a Program and rejects
// anything a backend could trip over: JSON syntax errors (with line:column),
// a foreign format or unsupported version, missing or mistyped members (by
// JSON path), unknown ops, functions and dtypes, buffers outside the arena,
// operands that do not fit their buffers, dims and sizes that disagree, and
// mesh axes the mesh lacks. It also plans each step's scratch, einsums
// included. Every failure is a RuntimeError whose message starts with the
// file name.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_LOADER_H
#define MESHC_RUNTIME_LOADER_H

#include "runtime/Program.h"

#include <optional>
#include <string>
#include <string_view>

namespace meshc::runtime {

/// The .mprog format version this runtime reads.
constexpr int kMprogVersion = 1;

/// Parses and validates the .mprog text `text`; `fileName` is used in
/// messages and recorded in the Program. Throws RuntimeError.
Program parseProgram(std::string_view text, const std::string &fileName);

/// parseProgram for callers built without exceptions (meshc --explain): the
/// program, or nothing with the RuntimeError's message in `error`.
std::optional<Program> tryParseProgram(std::string_view text,
                                       const std::string &fileName,
                                       std::string &error);

/// Reads the .mprog file at `path` and parses it. Throws RuntimeError.
Program loadProgram(const std::string &path);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_LOADER_H
