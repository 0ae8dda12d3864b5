//===- Parser.cpp - Statements of the .mtf model language -----------------===//
//
// The statement half of the parser: token handling, top-level statements,
// function definitions, types, initializers and numbers. Expressions are in
// ParserExpr.cpp.
//
//===----------------------------------------------------------------------===//

#include "frontend/Parser.h"

#include <cmath>
#include <limits>

using namespace meshc::frontend;
using llvm::failure;
using llvm::LogicalResult;
using llvm::success;

Parser::Parser(llvm::StringRef buffer, const DiagnosticEmitter &diagnostics)
    : lexer(buffer), diagnostics(diagnostics) {
  consume();
}

//===----------------------------------------------------------------------===//
// Tokens
//===----------------------------------------------------------------------===//

void Parser::consume() {
  if (hasAhead) {
    tok = ahead;
    hasAhead = false;
  } else {
    tok = lexer.next();
  }
}

const Token &Parser::peekAhead() {
  if (!hasAhead) {
    ahead = lexer.next();
    hasAhead = true;
  }
  return ahead;
}

mlir::InFlightDiagnostic Parser::unexpected(llvm::StringRef what) {
  mlir::InFlightDiagnostic diag = diagnostics.error(tok.loc);
  if (tok.is(TokenKind::Error))
    diag << lexer.getErrorMessage();
  else
    diag << "expected " << what << ", got " << describeToken(tok);
  return diag;
}

LogicalResult Parser::expect(TokenKind kind, llvm::StringRef what) {
  if (!tok.is(kind))
    return unexpected(what);
  consume();
  return success();
}

LogicalResult Parser::expectClosing(TokenKind kind, llvm::StringRef what,
                                    Loc opener, llvm::StringRef openerText) {
  if (tok.is(kind)) {
    consume();
    return success();
  }
  mlir::InFlightDiagnostic diag = unexpected(what);
  // Pointing back at the opener only helps when it is on another line.
  if (!tok.is(TokenKind::Error) && tok.loc.line != opener.line)
    diag.attachNote(diagnostics.location(opener))
        << "to match this '" << openerText << "'";
  return diag;
}

LogicalResult Parser::parseIdentifier(Ident &ident, llvm::StringRef what) {
  if (!tok.is(TokenKind::Identifier))
    return unexpected(what);
  ident = Ident{tok.spelling, tok.loc};
  consume();
  return success();
}

LogicalResult Parser::parseEndOfStatement() {
  if (tok.is(TokenKind::Eof))
    return success();
  return expect(TokenKind::Newline, "end of line after the statement");
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

LogicalResult Parser::parseTopLevel(StmtPtr &stmt) {
  stmt = nullptr;
  while (tok.is(TokenKind::Newline))
    consume();
  if (tok.is(TokenKind::Eof))
    return success();
  return parseStatement(stmt, /*inFunction=*/false);
}

LogicalResult Parser::parseStatement(StmtPtr &stmt, bool inFunction) {
  switch (tok.kind) {
  case TokenKind::KwDim:
  case TokenKind::KwInput:
  case TokenKind::KwOutput:
  case TokenKind::KwTrain:
    if (inFunction)
      return diagnostics.error(tok.loc)
             << "'" << tok.spelling
             << "' is not allowed inside a function; a function body holds "
                "only 'param' statements, assignments and 'return'";
    if (tok.is(TokenKind::KwDim))
      return parseDim(stmt);
    if (tok.is(TokenKind::KwInput))
      return parseInput(stmt);
    if (tok.is(TokenKind::KwOutput))
      return parseOutput(stmt);
    return parseTrain(stmt);
  case TokenKind::KwDef:
    if (inFunction)
      return diagnostics.error(tok.loc)
             << "functions cannot be defined inside a function";
    return parseDef(stmt);
  case TokenKind::KwReturn:
    return diagnostics.error(tok.loc)
           << "'return' is only allowed inside a function";
  case TokenKind::KwParam:
    return parseParam(stmt);
  case TokenKind::Identifier:
    return parseAssign(stmt);
  default:
    return unexpected("a statement");
  }
}

LogicalResult Parser::parseDim(StmtPtr &stmt) {
  Loc loc = tok.loc;
  consume();
  Ident name;
  if (failed(parseIdentifier(name, "a dimension name after 'dim'")) ||
      failed(expect(TokenKind::Equal,
                    ("'=' after 'dim " + name.name + "'").str())))
    return failure();
  Loc sizeLoc = tok.loc;
  int64_t size;
  if (failed(parseInteger(
          size, /*allowMinus=*/true,
          ("an integer size for dimension '" + name.name + "'").str())))
    return failure();
  if (size <= 0)
    return diagnostics.error(sizeLoc)
           << "dimension '" << name.name << "' must have a positive size, got "
           << size;
  stmt = std::make_unique<DimStmt>(loc, name, size, sizeLoc);
  return parseEndOfStatement();
}

LogicalResult Parser::parseInput(StmtPtr &stmt) {
  Loc loc = tok.loc;
  consume();
  Ident name;
  TypeSpec type;
  if (failed(parseIdentifier(name, "a tensor name after 'input'")) ||
      failed(
          expect(TokenKind::Colon,
                 ("':' and a type after 'input " + name.name + "'").str())) ||
      failed(parseType(type)))
    return failure();
  stmt = std::make_unique<InputStmt>(loc, name, std::move(type));
  return parseEndOfStatement();
}

LogicalResult Parser::parseParam(StmtPtr &stmt) {
  Loc loc = tok.loc;
  consume();
  Ident name;
  TypeSpec type;
  InitSpec init;
  if (failed(parseIdentifier(name, "a parameter name after 'param'")) ||
      failed(
          expect(TokenKind::Colon,
                 ("':' and a type after 'param " + name.name + "'").str())) ||
      failed(parseType(type)) ||
      failed(expect(TokenKind::Equal,
                    ("'=' and an initializer after the type of parameter '" +
                     name.name + "'")
                        .str())) ||
      failed(parseInitializer(init)))
    return failure();
  stmt =
      std::make_unique<ParamStmt>(loc, name, std::move(type), std::move(init));
  return parseEndOfStatement();
}

LogicalResult Parser::parseAssign(StmtPtr &stmt) {
  Ident name{tok.spelling, tok.loc};
  consume();
  if (failed(expect(TokenKind::Equal, ("'=' after '" + name.name + "'").str())))
    return failure();
  ExprPtr value = parseExpr();
  if (!value)
    return failure();
  stmt = std::make_unique<AssignStmt>(name, std::move(value));
  return parseEndOfStatement();
}

LogicalResult Parser::parseOutput(StmtPtr &stmt) {
  Loc loc = tok.loc;
  consume();
  std::vector<Ident> names(1);
  if (failed(parseIdentifier(names.back(), "a tensor name after 'output'")))
    return failure();
  while (tok.is(TokenKind::Comma)) {
    consume();
    names.emplace_back();
    if (failed(parseIdentifier(names.back(), "a tensor name after ','")))
      return failure();
  }
  stmt = std::make_unique<OutputStmt>(loc, std::move(names));
  return parseEndOfStatement();
}

LogicalResult Parser::parseTrain(StmtPtr &stmt) {
  Loc loc = tok.loc;
  consume();
  Ident loss, optimizer;
  if (failed(parseIdentifier(loss, "the name of the loss after 'train'")) ||
      failed(expect(
          TokenKind::KwWith,
          ("'with' and an optimizer after 'train " + loss.name + "'").str())) ||
      failed(parseIdentifier(optimizer, "an optimizer name after 'with'")))
    return failure();
  std::vector<HyperParam> hyperParams;
  if (tok.is(TokenKind::LParen)) {
    Loc opener = tok.loc;
    consume();
    while (!tok.is(TokenKind::RParen)) {
      HyperParam param;
      if (failed(parseIdentifier(param.name, "a hyper-parameter name")) ||
          failed(expect(
              TokenKind::Equal,
              ("'=' after hyper-parameter '" + param.name.name + "'").str())) ||
          failed(parseSignedNumber(
              param.value,
              ("a number for hyper-parameter '" + param.name.name + "'")
                  .str())))
        return failure();
      hyperParams.push_back(param);
      if (!tok.is(TokenKind::Comma))
        break;
      consume();
    }
    if (failed(expectClosing(TokenKind::RParen,
                             "')' after the hyper-parameters", opener, "(")))
      return failure();
  }
  stmt =
      std::make_unique<TrainStmt>(loc, loss, optimizer, std::move(hyperParams));
  return parseEndOfStatement();
}

LogicalResult Parser::parseDef(StmtPtr &stmt) {
  Loc loc = tok.loc;
  consume();
  Ident name;
  if (failed(parseIdentifier(name, "a function name after 'def'")))
    return failure();
  std::string context = ("'def " + name.name + "'").str();
  Loc opener = tok.loc;
  if (failed(expect(TokenKind::LParen, "'(' after " + context)))
    return failure();
  std::vector<Ident> args;
  while (!tok.is(TokenKind::RParen)) {
    args.emplace_back();
    if (failed(parseIdentifier(args.back(), "an argument name")))
      return failure();
    if (!tok.is(TokenKind::Comma))
      break;
    consume();
  }
  if (failed(expectClosing(TokenKind::RParen,
                           "')' after the arguments of " + context, opener,
                           "(")))
    return failure();
  auto def = std::make_unique<DefStmt>(loc, name, std::move(args));
  Loc brace = tok.loc;
  if (failed(expect(TokenKind::LBrace, "'{' after " + context)) ||
      failed(expect(TokenKind::Newline, "end of line after '{'")))
    return failure();
  while (true) {
    while (tok.is(TokenKind::Newline))
      consume();
    if (tok.is(TokenKind::RBrace))
      break;
    if (tok.is(TokenKind::Eof)) {
      mlir::InFlightDiagnostic diag =
          unexpected(("'}' to end the body of '" + name.name + "'").str());
      diag.attachNote(diagnostics.location(brace)) << "to match this '{'";
      return diag;
    }
    if (def->result)
      return diagnostics.error(tok.loc)
             << "unreachable statement after 'return' in function '"
             << name.name << "'";
    if (tok.is(TokenKind::KwReturn)) {
      consume();
      def->result = parseExpr();
      if (!def->result || failed(parseEndOfStatement()))
        return failure();
      continue;
    }
    StmtPtr bodyStmt;
    if (failed(parseStatement(bodyStmt, /*inFunction=*/true)))
      return failure();
    def->body.push_back(std::move(bodyStmt));
  }
  if (!def->result)
    return diagnostics.error(tok.loc)
           << "function '" << name.name << "' has no 'return' statement";
  consume();
  stmt = std::move(def);
  return parseEndOfStatement();
}

//===----------------------------------------------------------------------===//
// Types, initializers and numbers
//===----------------------------------------------------------------------===//

LogicalResult Parser::parseType(TypeSpec &type) {
  if (failed(parseIdentifier(type.elementType,
                             "an element type (f32, bf16, f16 or i32)")))
    return failure();
  if (!tok.is(TokenKind::LBracket))
    return unexpected(("'[' and dimensions after '" + type.elementType.name +
                       "' (write " + type.elementType.name + "[] for a scalar)")
                          .str());
  return parseDimList(type.dims, "dimension list");
}

LogicalResult Parser::parseDimList(std::vector<Ident> &dims,
                                   llvm::StringRef context) {
  Loc opener = tok.loc;
  consume();
  while (!tok.is(TokenKind::RBracket)) {
    dims.emplace_back();
    if (failed(parseIdentifier(dims.back(), "a dimension name")))
      return failure();
    if (!tok.is(TokenKind::Comma))
      break;
    consume();
  }
  return expectClosing(TokenKind::RBracket, ("']' after " + context).str(),
                       opener, "[");
}

LogicalResult Parser::parseInitializer(InitSpec &init) {
  if (failed(parseIdentifier(
          init.kind,
          "an initializer (zeros, ones, constant, normal or uniform)")))
    return failure();
  if (!tok.is(TokenKind::LParen))
    return success();
  Loc opener = tok.loc;
  consume();
  while (!tok.is(TokenKind::RParen)) {
    init.args.emplace_back();
    if (failed(parseSignedNumber(init.args.back(), "a number")))
      return failure();
    if (!tok.is(TokenKind::Comma))
      break;
    consume();
  }
  return expectClosing(
      TokenKind::RParen,
      ("')' after the arguments of '" + init.kind.name + "'").str(), opener,
      "(");
}

LogicalResult Parser::parseNumberToken(double &value) {
  if (tok.is(TokenKind::Integer)) {
    int64_t integer;
    if (failed(parseIntegerToken(integer)))
      return failure();
    value = static_cast<double>(integer);
    return success();
  }
  if (tok.spelling.getAsDouble(value) || !std::isfinite(value))
    return diagnostics.error(tok.loc)
           << "number '" << tok.spelling << "' is out of range";
  consume();
  return success();
}

LogicalResult Parser::parseIntegerToken(int64_t &value) {
  if (tok.spelling.getAsInteger(10, value))
    return diagnostics.error(tok.loc)
           << "integer literal '" << tok.spelling
           << "' is too large (the maximum is "
           << std::numeric_limits<int64_t>::max() << ")";
  consume();
  return success();
}

LogicalResult Parser::parseSignedNumber(NumberLiteral &number,
                                        llvm::StringRef what) {
  number.loc = tok.loc;
  bool negative = tok.is(TokenKind::Minus);
  if (negative)
    consume();
  if (!tok.is(TokenKind::Integer) && !tok.is(TokenKind::Float))
    return unexpected(what);
  if (failed(parseNumberToken(number.value)))
    return failure();
  if (negative)
    number.value = -number.value;
  return success();
}

LogicalResult Parser::parseInteger(int64_t &value, bool allowMinus,
                                   llvm::StringRef what) {
  bool negative = allowMinus && tok.is(TokenKind::Minus);
  if (negative)
    consume();
  if (!tok.is(TokenKind::Integer))
    return unexpected(what);
  if (failed(parseIntegerToken(value)))
    return failure();
  if (negative)
    value = -value;
  return success();
}
