//===- Error.h - User-facing errors of the layout algebra -------*- C++ -*-===//
//
// The layout library reports every problem with a mesh, a layout or a spec
// file as a value, never as an exception: its consumers (the MLIR passes and
// the driver) are built with -fno-exceptions. An Error carries a lowercase
// message that names the offending values, an optional hint, and where the
// problem is inside the text the user gave (a --mesh/--layout string or a
// JSON spec file). Result<T> holds either a T or an Error.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CORE_LAYOUT_ERROR_H
#define MESHC_RUNTIME_CORE_LAYOUT_ERROR_H

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace meshc::layout {

/// A position inside user-given text; 0 means unknown. Columns are 1-based
/// byte offsets within the line.
struct SourceLoc {
  int line = 0;
  int column = 0;
};

/// A user-facing error: lowercase message without trailing period that names
/// the values involved; an optional hint saying how to fix it; and where it
/// is. `column` is the 1-based column inside a parsed --mesh/--layout string
/// (with `line` 0), or `line` and `column` inside a JSON spec file. `source`
/// names the file the error is in (empty for command-line strings).
struct Error {
  Error() = default;
  Error(std::string message, std::string hint = "", int line = 0,
        int column = 0, std::string source = "")
      : message(std::move(message)), hint(std::move(hint)), line(line),
        column(column), source(std::move(source)) {}

  std::string message;
  std::string hint;
  int line = 0;
  int column = 0;
  std::string source;

  /// Returns a copy of this error located at `loc` (when `loc` is known).
  Error at(SourceLoc loc) const;

  /// Renders the error in the compiler's diagnostic style:
  /// "spec.json:3:10: error: <message>" and, when there is a hint, a second
  /// line "hint: <hint>". Without a source the location is "<column>:" or
  /// "<line>:<column>:"; without any location it is omitted.
  std::string str() const;
};

/// Renders an error found in the value of a command-line flag, showing the
/// text with a caret under the offending column:
///   error: --mesh: mesh axis 'b' is given twice
///     b:4;b:2
///         ^
///   hint: ...
std::string formatFlagError(const Error &error, std::string_view flag,
                            std::string_view text);

/// Either a value of type T or an Error. Check ok() (or the explicit bool
/// conversion) before calling value().
template <typename T> class [[nodiscard]] Result {
public:
  /// A successful result.
  Result(T value) : payload(std::in_place_index<0>, std::move(value)) {}
  /// A failed result.
  Result(Error error) : payload(std::in_place_index<1>, std::move(error)) {}

  /// A failed result (spelled out for readability at call sites).
  static Result failure(Error error) { return Result(std::move(error)); }

  /// True when the result holds a value.
  bool ok() const { return payload.index() == 0; }
  explicit operator bool() const { return ok(); }

  /// The value; the result must be ok().
  T &value() {
    assert(ok() && "value() of a failed Result");
    return *std::get_if<0>(&payload);
  }
  const T &value() const {
    assert(ok() && "value() of a failed Result");
    return *std::get_if<0>(&payload);
  }
  T &operator*() { return value(); }
  const T &operator*() const { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  /// The error; the result must not be ok().
  const Error &error() const {
    assert(!ok() && "error() of a successful Result");
    return *std::get_if<1>(&payload);
  }

private:
  std::variant<T, Error> payload;
};

/// The result of an operation that produces no value.
using Status = Result<std::monostate>;

/// A successful Status.
inline Status success() { return Status(std::monostate{}); }

} // namespace meshc::layout

#endif // MESHC_RUNTIME_CORE_LAYOUT_ERROR_H
