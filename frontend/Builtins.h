//===- Builtins.h - The builtin functions of .mtf ---------------*- C++ -*-===//
//
// The table of builtin functions (einsum, relu, sum, softmax, ...): their
// names and how their arguments are written. The parser checks every builtin
// call against it, so a wrong number or kind of arguments is reported even in
// a function that is never called.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_FRONTEND_BUILTINS_H
#define MESHC_FRONTEND_BUILTINS_H

#include "frontend/AST.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <climits>

namespace meshc::frontend {

/// How one argument of a builtin is written.
enum class ArgForm {
  Tensor,      ///< An expression.
  DimName,     ///< A dimension name: `classes`.
  DimList,     ///< A bracketed list of dimension names: `[batch, seq]`.
  ElementType, ///< `f32`, `bf16`, `f16` or `i32`.
  Split,       ///< `dim: axis` or `dim: axis+axis`.
};

/// The signature of one builtin.
struct BuiltinInfo {
  Builtin builtin;
  llvm::StringLiteral name;
  /// The form of each argument; the last one repeats when maxArgs is
  /// kVariadic.
  llvm::ArrayRef<ArgForm> forms;
  unsigned minArgs;
  unsigned maxArgs;
  /// Whether the call ends with `-> [dims]` (einsum's output dimensions).
  bool takesOutputDims;
  /// How a call is written, for messages: "softmax(x, dim)".
  llvm::StringLiteral usage;

  static constexpr unsigned kVariadic = UINT_MAX;
  /// The form of the argument at `index` (0-based).
  ArgForm formOf(unsigned index) const {
    return index < forms.size() ? forms[index] : forms.back();
  }
};

/// The builtin called `name`, or null.
const BuiltinInfo *lookupBuiltin(llvm::StringRef name);

/// Every builtin, in the order the documentation lists them.
llvm::ArrayRef<BuiltinInfo> getBuiltins();

} // namespace meshc::frontend

#endif // MESHC_FRONTEND_BUILTINS_H
