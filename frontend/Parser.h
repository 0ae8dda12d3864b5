//===- Parser.h - Parser of the .mtf model language -------------*- C++ -*-===//
//
// A recursive-descent parser that hands out one top-level statement at a time,
// so MLIRGen can check each statement before the next is parsed and the first
// error reported is the first one in the file. It checks syntax only, plus the
// argument forms of builtin calls; it reports the first error and stops.
// Expressions may nest at most kMaxNesting levels, which keeps parsing and
// every later walk over the tree within a small, fixed stack.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_FRONTEND_PARSER_H
#define MESHC_FRONTEND_PARSER_H

#include "frontend/AST.h"
#include "frontend/Builtins.h"
#include "frontend/Diagnostics.h"
#include "frontend/Lexer.h"

#include "llvm/Support/LogicalResult.h"

namespace meshc::frontend {

/// Parses the statements of one buffer.
class Parser {
public:
  /// Deepest expression nesting (parentheses, calls, operators) accepted.
  static constexpr unsigned kMaxNesting = 256;

  Parser(llvm::StringRef buffer, const DiagnosticEmitter &diagnostics);

  /// Parses the next top-level statement into `stmt`, which is null at the end
  /// of the file. Fails after reporting an error.
  llvm::LogicalResult parseTopLevel(StmtPtr &stmt);

private:
  /// One argument of a call before it is checked against a signature.
  struct CallArg;

  // Token handling.
  void consume();
  const Token &peekAhead();
  /// Reports "expected <what>, got <token>" at the current token (or the
  /// lexer's message when the current token is an Error).
  mlir::InFlightDiagnostic unexpected(llvm::StringRef what);
  /// Consumes a token of `kind` or reports "expected <what>".
  llvm::LogicalResult expect(TokenKind kind, llvm::StringRef what);
  /// Like expect() for a closing bracket, with a note at its opener.
  llvm::LogicalResult expectClosing(TokenKind kind, llvm::StringRef what,
                                    Loc opener, llvm::StringRef openerText);
  llvm::LogicalResult parseIdentifier(Ident &ident, llvm::StringRef what);
  llvm::LogicalResult parseEndOfStatement();

  // Statements.
  llvm::LogicalResult parseStatement(StmtPtr &stmt, bool inFunction);
  llvm::LogicalResult parseDim(StmtPtr &stmt);
  llvm::LogicalResult parseInput(StmtPtr &stmt);
  llvm::LogicalResult parseParam(StmtPtr &stmt);
  llvm::LogicalResult parseAssign(StmtPtr &stmt);
  llvm::LogicalResult parseOutput(StmtPtr &stmt);
  llvm::LogicalResult parseTrain(StmtPtr &stmt);
  llvm::LogicalResult parseDef(StmtPtr &stmt);
  llvm::LogicalResult parseType(TypeSpec &type);
  llvm::LogicalResult parseDimList(std::vector<Ident> &dims,
                                   llvm::StringRef context);
  llvm::LogicalResult parseInitializer(InitSpec &init);
  /// Converts the current Integer or Float token to a double and consumes it.
  llvm::LogicalResult parseNumberToken(double &value);
  /// Converts the current Integer token to an int64_t and consumes it.
  llvm::LogicalResult parseIntegerToken(int64_t &value);
  llvm::LogicalResult parseSignedNumber(NumberLiteral &number,
                                        llvm::StringRef what);
  llvm::LogicalResult parseInteger(int64_t &value, bool allowMinus,
                                   llvm::StringRef what);

  // Expressions.
  ExprPtr parseExpr();
  ExprPtr parseTerm();
  /// A left-associative chain of `operand`s joined by the binary operators
  /// `first` or `second` (one precedence level).
  ExprPtr parseBinaryChain(TokenKind first, TokenKind second,
                           ExprPtr (Parser::*operand)());
  ExprPtr parseUnary();
  ExprPtr parsePrimary();
  ExprPtr parseCall(Ident callee);
  ExprPtr parseRepeat();
  ExprPtr parseCheckpoint();
  ExprPtr parseBuiltinCall(const BuiltinInfo &info, Ident callee);
  /// Parses the arguments of a user function (all tensors) and the depth of
  /// the call expression they make.
  llvm::LogicalResult
  parseUserCallArgs(Ident callee, std::vector<ExprPtr> &args, unsigned &depth);
  /// Parses `(args)`. `outputDims` is null where `-> [dims]` is not allowed;
  /// otherwise it receives those dimensions when the call has them.
  llvm::LogicalResult
  parseCallArgs(Ident callee, std::vector<CallArg> &args,
                std::optional<std::vector<Ident>> *outputDims);
  /// Fails (with the error) when `expr` is nested too deeply.
  llvm::LogicalResult checkDepth(const Expr &expr);
  /// Reports that the expression at `loc` nests too deeply.
  void reportTooDeep(Loc loc);

  Lexer lexer;
  const DiagnosticEmitter &diagnostics;
  Token tok;
  Token ahead;
  bool hasAhead = false;
  /// Current recursion depth of parseUnary.
  unsigned nesting = 0;
};

} // namespace meshc::frontend

#endif // MESHC_FRONTEND_PARSER_H
