//===- AST.h - Syntax tree of the .mtf model language -----------*- C++ -*-===//
//
// What the parser produces and MLIRGen consumes: statements (dimension,
// input, parameter, assignment, output, train and function definitions) and
// expressions. Names are StringRefs into the source buffer, which outlives the
// tree. The tree records syntax only; names and types are resolved by MLIRGen.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_FRONTEND_AST_H
#define MESHC_FRONTEND_AST_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Casting.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace meshc::frontend {

/// A position in the source: 1-based line and byte column.
struct Loc {
  unsigned line = 0;
  unsigned column = 0;
};

/// A name as written, with where it was written.
struct Ident {
  llvm::StringRef name;
  Loc loc;
};

/// A signed number literal outside expressions (sizes, initializer arguments,
/// hyper-parameters).
struct NumberLiteral {
  double value = 0;
  Loc loc;
};

/// The builtin functions (Builtins.def); see Builtins.h for their argument
/// forms.
enum class Builtin {
#define MESHC_BUILTIN(E, NAME, FORMS, MIN, MAX, OUTPUT_DIMS, USAGE) E,
#include "frontend/Builtins.def"
};

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

/// Base of all expressions. `depth` is the height of the expression's tree,
/// which the parser bounds so that walking a tree recursively is safe.
class Expr {
public:
  enum class Kind {
    Number,
    Name,
    Negate,
    Binary,
    Builtin,
    Call,
    Repeat,
    Checkpoint
  };

  virtual ~Expr() = default;
  Kind getKind() const { return kind; }
  /// The token the expression is reported at (its operator or callee).
  Loc getLoc() const { return loc; }
  unsigned getDepth() const { return depth; }

protected:
  Expr(Kind kind, Loc loc, unsigned depth)
      : kind(kind), loc(loc), depth(depth) {}

private:
  Kind kind;
  Loc loc;
  unsigned depth;
};

using ExprPtr = std::unique_ptr<Expr>;

/// A number literal: `3`, `0.5`, `1e-3`.
class NumberExpr : public Expr {
public:
  NumberExpr(Loc loc, double value)
      : Expr(Kind::Number, loc, 1), value(value) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Number; }

  double value;
};

/// A reference to a tensor by name.
class NameExpr : public Expr {
public:
  NameExpr(Loc loc, llvm::StringRef name)
      : Expr(Kind::Name, loc, 1), name(name) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Name; }

  llvm::StringRef name;
};

/// Unary minus.
class NegateExpr : public Expr {
public:
  NegateExpr(Loc loc, ExprPtr operand)
      : Expr(Kind::Negate, loc, operand->getDepth() + 1),
        operand(std::move(operand)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Negate; }

  ExprPtr operand;
};

/// `lhs op rhs` for op one of + - * /.
class BinaryExpr : public Expr {
public:
  BinaryExpr(Loc loc, char op, ExprPtr lhs, ExprPtr rhs)
      : Expr(Kind::Binary, loc, std::max(lhs->getDepth(), rhs->getDepth()) + 1),
        op(op), lhs(std::move(lhs)), rhs(std::move(rhs)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Binary; }

  char op;
  ExprPtr lhs, rhs;
};

/// One `dim: axis+axis` entry of a `constrain`.
struct SplitSpec {
  Ident dim;
  std::vector<Ident> axes;
};

/// A call of a builtin. The parser has checked the argument forms, so:
/// - `operands` are the tensor arguments, in order;
/// - `dims` are einsum's output dimensions, the dimensions a reduction lists,
///   the dimension of softmax / softmax_cross_entropy, or rename's old and new
///   names;
/// - `hasDimList` tells `sum(x, [])` (reduce nothing) from `sum(x)` (all);
/// - `elementType` is cast's target type;
/// - `splits` are constrain's entries.
class BuiltinExpr : public Expr {
public:
  BuiltinExpr(Loc loc, Builtin builtin, llvm::StringRef name, unsigned depth)
      : Expr(Kind::Builtin, loc, depth), builtin(builtin), name(name) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Builtin; }

  Builtin builtin;
  llvm::StringRef name;
  std::vector<ExprPtr> operands;
  std::vector<Ident> dims;
  bool hasDimList = false;
  Ident elementType;
  std::vector<SplitSpec> splits;
};

/// A call of a user function: `block(x)`.
class CallExpr : public Expr {
public:
  CallExpr(Ident callee, std::vector<ExprPtr> args, unsigned depth)
      : Expr(Kind::Call, callee.loc, depth), callee(callee),
        args(std::move(args)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Call; }

  Ident callee;
  std::vector<ExprPtr> args;
};

/// `repeat N f(x, extra...)` or `repeat layers f(x, extra...)`: N (the size
/// of dim `layers`) chained calls of `f`, each taking the previous result as
/// its first argument and the same extra arguments.
class RepeatExpr : public Expr {
public:
  RepeatExpr(Loc loc, int64_t count, std::optional<Ident> dim, Ident callee,
             std::vector<ExprPtr> args, unsigned depth)
      : Expr(Kind::Repeat, loc, depth), count(count), dim(std::move(dim)),
        callee(callee), args(std::move(args)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Repeat; }

  /// The count written (0 when a dim is named instead).
  int64_t count;
  /// The layer dim named instead of a count.
  std::optional<Ident> dim;
  Ident callee;
  std::vector<ExprPtr> args;
};

/// `checkpoint(expr)`: the ops of `expr` keep no activations for the backward
/// pass; mtf-remat recomputes them there (docs/training.md).
class CheckpointExpr : public Expr {
public:
  CheckpointExpr(Loc loc, ExprPtr inner)
      : Expr(Kind::Checkpoint, loc, inner->getDepth() + 1),
        inner(std::move(inner)) {}
  static bool classof(const Expr *e) {
    return e->getKind() == Kind::Checkpoint;
  }

  ExprPtr inner;
};

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

/// `f32[batch, io]`.
struct TypeSpec {
  Ident elementType;
  std::vector<Ident> dims;
};

/// `normal(0, 0.05)`, `zeros`, ...
struct InitSpec {
  Ident kind;
  std::vector<NumberLiteral> args;
};

/// `lr = 1e-3` inside `train ... with adam(...)`.
struct HyperParam {
  Ident name;
  NumberLiteral value;
};

/// Base of all statements.
class Stmt {
public:
  enum class Kind { Dim, Input, Param, Assign, Output, Train, Def };

  virtual ~Stmt() = default;
  Kind getKind() const { return kind; }
  /// Where the statement starts.
  Loc getLoc() const { return loc; }

protected:
  Stmt(Kind kind, Loc loc) : kind(kind), loc(loc) {}

private:
  Kind kind;
  Loc loc;
};

using StmtPtr = std::unique_ptr<Stmt>;

/// `dim batch = 256`.
class DimStmt : public Stmt {
public:
  DimStmt(Loc loc, Ident name, int64_t size, Loc sizeLoc)
      : Stmt(Kind::Dim, loc), name(name), size(size), sizeLoc(sizeLoc) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Dim; }

  Ident name;
  int64_t size;
  Loc sizeLoc;
};

/// `input x : f32[batch, io]`.
class InputStmt : public Stmt {
public:
  InputStmt(Loc loc, Ident name, TypeSpec type)
      : Stmt(Kind::Input, loc), name(name), type(std::move(type)) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Input; }

  Ident name;
  TypeSpec type;
};

/// `param w : f32[io, hidden] = normal(0, 0.05)`.
class ParamStmt : public Stmt {
public:
  ParamStmt(Loc loc, Ident name, TypeSpec type, InitSpec init)
      : Stmt(Kind::Param, loc), name(name), type(std::move(type)),
        init(std::move(init)) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Param; }

  Ident name;
  TypeSpec type;
  InitSpec init;
};

/// `h = expr`.
class AssignStmt : public Stmt {
public:
  AssignStmt(Ident name, ExprPtr value)
      : Stmt(Kind::Assign, name.loc), name(name), value(std::move(value)) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Assign; }

  Ident name;
  ExprPtr value;
};

/// `output a, b`.
class OutputStmt : public Stmt {
public:
  OutputStmt(Loc loc, std::vector<Ident> names)
      : Stmt(Kind::Output, loc), names(std::move(names)) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Output; }

  std::vector<Ident> names;
};

/// `train loss with adam(lr = 1e-3)`.
class TrainStmt : public Stmt {
public:
  TrainStmt(Loc loc, Ident loss, Ident optimizer,
            std::vector<HyperParam> hyperParams)
      : Stmt(Kind::Train, loc), loss(loss), optimizer(optimizer),
        hyperParams(std::move(hyperParams)) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Train; }

  Ident loss;
  Ident optimizer;
  std::vector<HyperParam> hyperParams;
};

/// `def name(args) { body; return result }`. The body holds only ParamStmt
/// and AssignStmt.
class DefStmt : public Stmt {
public:
  DefStmt(Loc loc, Ident name, std::vector<Ident> args)
      : Stmt(Kind::Def, loc), name(name), args(std::move(args)) {}
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Def; }

  Ident name;
  std::vector<Ident> args;
  std::vector<StmtPtr> body;
  ExprPtr result;
};

} // namespace meshc::frontend

#endif // MESHC_FRONTEND_AST_H
