//===- CompileBinding.cpp - compile() of the extension _meshc -------------===//
//
// _meshc.compile(source, name, from_file, options) runs meshc's compile
// entry (compileModel, compiler/driver/Compile.h) on a model file or source
// text, without the interpreter's lock, and returns a dict: the .mprog text,
// the explanation as JSON text, the search's report, and every diagnostic as
// data (severity, file, line, column, message, hint, notes) with the text
// the meshc tool would print. meshc/_compile.py turns that into a Program or
// a CompileError.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "compiler/driver/Compile.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/FormatVariadic.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <stdexcept>
#include <vector>

namespace nb = nanobind;

namespace meshc::python {
namespace {

/// One diagnostic as data.
struct Diagnostic {
  std::string severity = "error";
  std::optional<std::string> file;
  std::optional<unsigned> line, column;
  std::string message;
  std::optional<std::string> hint;
  /// Notes: (message, file, line, column).
  std::vector<Diagnostic> notes;
};

nb::dict toDict(const Diagnostic &diagnostic) {
  nb::dict dict;
  dict["severity"] = diagnostic.severity;
  dict["file"] = diagnostic.file;
  dict["line"] = diagnostic.line;
  dict["column"] = diagnostic.column;
  dict["message"] = diagnostic.message;
  dict["hint"] = diagnostic.hint;
  nb::list notes;
  for (const Diagnostic &note : diagnostic.notes)
    notes.append(toDict(note));
  dict["notes"] = notes;
  return dict;
}

/// The model's place `loc` points at (the first file location inside it).
void locate(mlir::Location loc, Diagnostic &diagnostic) {
  if (auto file = loc->findInstanceOf<mlir::FileLineColLoc>()) {
    diagnostic.file = file.getFilename().str();
    diagnostic.line = file.getLine();
    diagnostic.column = file.getColumn();
  }
}

Diagnostic fromMlir(mlir::Diagnostic &diag) {
  Diagnostic diagnostic;
  switch (diag.getSeverity()) {
  case mlir::DiagnosticSeverity::Error:
    diagnostic.severity = "error";
    break;
  case mlir::DiagnosticSeverity::Warning:
    diagnostic.severity = "warning";
    break;
  case mlir::DiagnosticSeverity::Note:
  case mlir::DiagnosticSeverity::Remark:
    diagnostic.severity = "note";
    break;
  }
  diagnostic.message = diag.str();
  locate(diag.getLocation(), diagnostic);
  for (mlir::Diagnostic &note : diag.getNotes()) {
    Diagnostic noted;
    noted.severity = "note";
    noted.message = note.str();
    locate(note.getLocation(), noted);
    diagnostic.notes.push_back(std::move(noted));
  }
  return diagnostic;
}

/// A place "FILE:LINE:COL" (a spec file's error) into `diagnostic`; false
/// when `place` is no such place.
bool parsePlace(llvm::StringRef place, Diagnostic &diagnostic) {
  auto [head, column] = place.rsplit(':');
  auto [file, line] = head.rsplit(':');
  unsigned lineNumber = 0, columnNumber = 0;
  if (file.empty() || line.getAsInteger(10, lineNumber) ||
      column.getAsInteger(10, columnNumber))
    return false;
  diagnostic.file = file.str();
  diagnostic.line = lineNumber;
  diagnostic.column = columnNumber;
  return true;
}

/// The errors meshc prints for flags and files (CompileResult::errors) as
/// data. Each starts at a line "meshc: [--FLAG: ][PLACE: ]error: MESSAGE"
/// (PLACE: a spec file's FILE:LINE:COL), the flag's text and a caret under
/// it may follow (indented), and a line "hint: HINT" ends it.
std::vector<Diagnostic> parseFlagErrors(llvm::StringRef text) {
  std::vector<Diagnostic> errors;
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef line : lines) {
    if (line.consume_front("meshc: ")) {
      Diagnostic error;
      llvm::StringRef flag;
      if (line.starts_with("--") && !line.starts_with("--layout auto") &&
          line.contains(": ") && !line.split(": ").first.contains(' '))
        std::tie(flag, line) = line.split(": ");
      if (!line.consume_front("error: ")) {
        auto [place, rest] = line.split(": error: ");
        if (!rest.empty() && !parsePlace(place, error))
          rest = line;
        line = rest.empty() ? line : rest;
      }
      error.message = flag.empty() ? line.str() : (flag + ": " + line).str();
      errors.push_back(std::move(error));
    } else if (line.consume_front("hint: ") && !errors.empty()) {
      errors.back().hint = line.str();
    } else if (!errors.empty() && !line.starts_with(" ")) {
      // A message of several lines.
      errors.back().message += "\n" + line.str();
    }
  }
  return errors;
}

template <typename T> T take(nb::dict &options, const char *key) {
  if (!options.contains(key))
    throw std::invalid_argument(std::string("internal: option '") + key +
                                "' missing");
  T value = nb::cast<T>(options[key]);
  nb::del(options[key]);
  return value;
}

/// The value of a keyword `option` spelt `value` (meshc's flag's spelling).
template <typename Enum>
Enum choose(const std::string &value, const char *option,
            llvm::ArrayRef<Choice<Enum>> choices) {
  if (std::optional<Enum> found = findChoice(choices, value))
    return *found;
  throw std::invalid_argument(option + std::string(" must be one of ") +
                              choiceNames(choices) + ", got '" + value + "'");
}

/// The CompileOptions of meshc/_compile.py's dict (its keys are the
/// keyword arguments of meshc.compile; each must be there, none other).
CompileOptions toOptions(nb::dict options) {
  CompileOptions compile;
  compile.mesh = take<std::optional<std::string>>(options, "mesh");
  compile.layout = take<std::optional<std::string>>(options, "layout");
  compile.spec = take<std::optional<std::string>>(options, "spec").value_or("");
  compile.axisWeights =
      take<std::optional<std::string>>(options, "axis_weights");
  compile.uneven = take<bool>(options, "uneven");
  compile.precision = choose(take<std::string>(options, "precision"),
                             "precision", precisionChoices());
  compile.remat =
      choose(take<std::string>(options, "remat"), "remat", rematChoices());
  if (auto repeat = take<std::optional<std::string>>(options, "repeat"))
    compile.repeat = choose(*repeat, "repeat", repeatChoices());
  compile.microbatches = take<int64_t>(options, "microbatches");
  compile.microbatchDim =
      take<std::optional<std::string>>(options, "microbatch_dim");
  compile.schedule = choose(take<std::string>(options, "pipeline_schedule"),
                            "pipeline_schedule", scheduleChoices());
  compile.virtualStages =
      take<std::optional<int64_t>>(options, "virtual_stages");
  compile.shardOptimizer = take<bool>(options, "shard_optimizer");
  compile.shardParams = take<bool>(options, "shard_params");
  compile.machine = take<std::optional<std::string>>(options, "machine");
  compile.memoryLimit =
      take<std::optional<std::string>>(options, "memory_limit");
  compile.bucketSize = take<std::string>(options, "bucket_size");
  compile.overlapLimit = take<std::string>(options, "overlap_limit");
  compile.noFuse = !take<bool>(options, "fuse");
  compile.noFuseAttention = !take<bool>(options, "fuse_attention");
  compile.noSchedule = !take<bool>(options, "schedule");
  compile.noPrefetch = !take<bool>(options, "prefetch");
  compile.interleaveHalves =
      choose(take<std::string>(options, "interleave_halves"),
             "interleave_halves", halvesChoices());
  compile.keepGathered = take<bool>(options, "keep_gathered");
  compile.seed = take<uint64_t>(options, "seed");
  compile.outputGrads = take<bool>(options, "output_grads");
  if (options.size() != 0)
    throw std::invalid_argument("internal: unknown compile options " +
                                nb::cast<std::string>(nb::str(options)));
  // The program, and the report as data beside it.
  compile.emit = EmitKind::Mprog;
  compile.explain = true;
  return compile;
}

nb::dict compileSource(const std::string &source, const std::string &name,
                       bool fromFile, nb::dict optionsDict) {
  CompileOptions options = toOptions(optionsDict);
  options.input = name;

  CompileResult result;
  std::vector<Diagnostic> diagnostics;
  std::string printed;
  bool ok = false;
  {
    nb::gil_scoped_release unlocked;
    llvm::raw_string_ostream printedStream(printed);
    ModelHooks hooks;
    if (!fromFile)
      hooks.text = source;
    // Each model diagnostic as data, and as meshc prints it.
    hooks.diagnostics = &printedStream;
    hooks.observe = [&](mlir::Diagnostic &diag) {
      diagnostics.push_back(fromMlir(diag));
    };
    ok = succeeded(compileModel(options, &result, hooks));
  }
  for (Diagnostic &error : parseFlagErrors(result.errors))
    diagnostics.push_back(std::move(error));

  nb::dict out;
  out["ok"] = ok;
  out["program"] = result.program
                       ? std::optional<std::string>(
                             llvm::formatv("{0:2}", *result.program).str())
                       : std::nullopt;
  out["explanation"] =
      result.explanation ? std::optional<std::string>(
                               llvm::formatv("{0}", *result.explanation).str())
                         : std::nullopt;
  out["search_report"] = result.searchReport;
  out["text"] = printed + result.errors;
  nb::list list;
  for (const Diagnostic &diagnostic : diagnostics)
    list.append(toDict(diagnostic));
  out["diagnostics"] = list;
  return out;
}

} // namespace

void defineCompile(nb::module_ &module) {
  module.def("compile", &compileSource, nb::arg("source"), nb::arg("name"),
             nb::arg("from_file"), nb::arg("options"),
             "Compiles a model (meshc._compile wraps it).");
}

} // namespace meshc::python
