//===- ParserExpr.cpp - Expressions of the .mtf model language ------------===//
//
// The expression half of the parser: precedence climbing over + - * /, unary
// minus, calls of builtins and user functions, and `repeat`. Call arguments
// are parsed in one general form (expression, `[dims]`, `dim: axes`, and a
// trailing `-> [dims]`) and then checked against the builtin's signature, so
// a wrong argument gets a message naming the builtin and the position.
//
//===----------------------------------------------------------------------===//

#include "frontend/Parser.h"

using namespace meshc::frontend;
using llvm::failure;
using llvm::LogicalResult;
using llvm::success;

/// One argument of a call as written.
struct Parser::CallArg {
  enum class Form { Expr, DimList, Split };
  Form form = Form::Expr;
  Loc loc;
  ExprPtr expr;
  std::vector<Ident> dims;
  SplitSpec split;
};

namespace {
/// Keeps Parser::nesting equal to the depth of parseUnary calls.
struct NestingScope {
  explicit NestingScope(unsigned &nesting) : nesting(++nesting) {}
  ~NestingScope() { --nesting; }
  unsigned &nesting;
};

llvm::StringRef describeForm(ArgForm form) {
  switch (form) {
  case ArgForm::Tensor:
    return "a tensor";
  case ArgForm::DimName:
    return "a dimension name";
  case ArgForm::DimList:
    return "a dimension list like [batch, seq]";
  case ArgForm::ElementType:
    return "an element type (f32, bf16, f16 or i32)";
  case ArgForm::Split:
    return "a split like 'batch: b'";
  }
  llvm_unreachable("unknown argument form");
}

/// How many arguments a builtin takes, for messages: "2", "1 or 2",
/// "at least 1".
std::string describeArity(const BuiltinInfo &info) {
  std::string count = std::to_string(info.minArgs);
  if (info.maxArgs == BuiltinInfo::kVariadic)
    count = "at least " + count;
  else if (info.maxArgs != info.minArgs)
    count += " or " + std::to_string(info.maxArgs);
  bool singular = info.minArgs == 1 &&
                  (info.maxArgs == 1 || info.maxArgs == BuiltinInfo::kVariadic);
  return count + (singular ? " argument" : " arguments");
}
} // namespace

void Parser::reportTooDeep(Loc loc) {
  diagnostics.error(loc) << "expression nests deeper than " << kMaxNesting
                         << " levels";
}

LogicalResult Parser::checkDepth(const Expr &expr) {
  if (expr.getDepth() <= kMaxNesting)
    return success();
  reportTooDeep(expr.getLoc());
  return failure();
}

ExprPtr Parser::parseExpr() {
  return parseBinaryChain(TokenKind::Plus, TokenKind::Minus,
                          &Parser::parseTerm);
}

ExprPtr Parser::parseTerm() {
  return parseBinaryChain(TokenKind::Star, TokenKind::Slash,
                          &Parser::parseUnary);
}

ExprPtr Parser::parseBinaryChain(TokenKind first, TokenKind second,
                                 ExprPtr (Parser::*operand)()) {
  ExprPtr lhs = (this->*operand)();
  while (lhs && (tok.is(first) || tok.is(second))) {
    Loc loc = tok.loc;
    char op = tok.spelling.front();
    consume();
    ExprPtr rhs = (this->*operand)();
    if (!rhs)
      return nullptr;
    lhs = std::make_unique<BinaryExpr>(loc, op, std::move(lhs), std::move(rhs));
    if (failed(checkDepth(*lhs)))
      return nullptr;
  }
  return lhs;
}

ExprPtr Parser::parseUnary() {
  NestingScope scope(nesting);
  if (nesting > kMaxNesting) {
    reportTooDeep(tok.loc);
    return nullptr;
  }
  if (!tok.is(TokenKind::Minus))
    return parsePrimary();
  Loc loc = tok.loc;
  consume();
  ExprPtr operand = parseUnary();
  if (!operand)
    return nullptr;
  auto negate = std::make_unique<NegateExpr>(loc, std::move(operand));
  if (failed(checkDepth(*negate)))
    return nullptr;
  return negate;
}

ExprPtr Parser::parsePrimary() {
  switch (tok.kind) {
  case TokenKind::Integer:
  case TokenKind::Float: {
    Loc loc = tok.loc;
    double value;
    if (failed(parseNumberToken(value)))
      return nullptr;
    return std::make_unique<NumberExpr>(loc, value);
  }
  case TokenKind::Identifier: {
    Ident name{tok.spelling, tok.loc};
    consume();
    if (tok.is(TokenKind::LParen))
      return parseCall(name);
    return std::make_unique<NameExpr>(name.loc, name.name);
  }
  case TokenKind::LParen: {
    Loc opener = tok.loc;
    consume();
    ExprPtr inner = parseExpr();
    if (!inner ||
        failed(expectClosing(TokenKind::RParen, "')' after the expression",
                             opener, "(")))
      return nullptr;
    return inner;
  }
  case TokenKind::KwRepeat:
    return parseRepeat();
  case TokenKind::KwCheckpoint:
    return parseCheckpoint();
  default:
    unexpected("an expression");
    return nullptr;
  }
}

LogicalResult
Parser::parseCallArgs(Ident callee, std::vector<CallArg> &args,
                      std::optional<std::vector<Ident>> *outputDims) {
  Loc opener = tok.loc;
  consume();
  while (!tok.is(TokenKind::RParen) && !tok.is(TokenKind::Arrow)) {
    CallArg arg;
    arg.loc = tok.loc;
    if (tok.is(TokenKind::LBracket)) {
      arg.form = CallArg::Form::DimList;
      if (failed(parseDimList(arg.dims, "dimension list")))
        return failure();
    } else if (tok.is(TokenKind::Identifier) &&
               peekAhead().is(TokenKind::Colon)) {
      arg.form = CallArg::Form::Split;
      arg.split.dim = Ident{tok.spelling, tok.loc};
      consume();
      consume();
      do {
        if (!arg.split.axes.empty())
          consume();
        arg.split.axes.emplace_back();
        if (failed(parseIdentifier(arg.split.axes.back(), "a mesh axis name")))
          return failure();
      } while (tok.is(TokenKind::Plus));
    } else {
      arg.expr = parseExpr();
      if (!arg.expr)
        return failure();
    }
    args.push_back(std::move(arg));
    if (!tok.is(TokenKind::Comma))
      break;
    consume();
  }
  if (tok.is(TokenKind::Arrow)) {
    if (!outputDims)
      return diagnostics.error(tok.loc)
             << "'->' output dimensions are only allowed in 'einsum'";
    consume();
    outputDims->emplace();
    if (!tok.is(TokenKind::LBracket))
      return unexpected("'[' and the output dimensions after '->'");
    if (failed(parseDimList(**outputDims, "output dimensions")))
      return failure();
  }
  return expectClosing(
      TokenKind::RParen,
      ("')' after the arguments of '" + callee.name + "'").str(), opener, "(");
}

ExprPtr Parser::parseCall(Ident callee) {
  if (const BuiltinInfo *info = lookupBuiltin(callee.name))
    return parseBuiltinCall(*info, callee);
  std::vector<ExprPtr> args;
  unsigned depth;
  if (failed(parseUserCallArgs(callee, args, depth)))
    return nullptr;
  auto call = std::make_unique<CallExpr>(callee, std::move(args), depth);
  if (failed(checkDepth(*call)))
    return nullptr;
  return call;
}

LogicalResult Parser::parseUserCallArgs(Ident callee,
                                        std::vector<ExprPtr> &operands,
                                        unsigned &depth) {
  std::vector<CallArg> args;
  if (failed(parseCallArgs(callee, args, nullptr)))
    return failure();
  depth = 1;
  for (auto [index, arg] : llvm::enumerate(args)) {
    if (arg.form != CallArg::Form::Expr)
      return diagnostics.error(arg.loc) << "argument " << index + 1 << " of '"
                                        << callee.name << "' must be a tensor";
    depth = std::max(depth, arg.expr->getDepth() + 1);
    operands.push_back(std::move(arg.expr));
  }
  return success();
}

ExprPtr Parser::parseBuiltinCall(const BuiltinInfo &info, Ident callee) {
  std::vector<CallArg> args;
  std::optional<std::vector<Ident>> outputDims;
  if (failed(parseCallArgs(callee, args,
                           info.takesOutputDims ? &outputDims : nullptr)))
    return nullptr;
  if (args.size() < info.minArgs || args.size() > info.maxArgs) {
    diagnostics.error(callee.loc)
        << "'" << info.name << "' takes " << describeArity(info) << ", got "
        << args.size() << "; write " << info.usage;
    return nullptr;
  }
  if (info.takesOutputDims && !outputDims) {
    diagnostics.error(callee.loc)
        << "'" << info.name
        << "' needs its output dimensions after '->'; write " << info.usage;
    return nullptr;
  }
  unsigned depth = 0;
  for (const CallArg &arg : args)
    if (arg.expr)
      depth = std::max(depth, arg.expr->getDepth());
  auto call = std::make_unique<BuiltinExpr>(callee.loc, info.builtin, info.name,
                                            depth + 1);
  if (outputDims)
    call->dims = std::move(*outputDims);
  for (auto [index, arg] : llvm::enumerate(args)) {
    ArgForm form = info.formOf(index);
    auto *name = llvm::dyn_cast_or_null<NameExpr>(arg.expr.get());
    bool fits = false;
    switch (form) {
    case ArgForm::Tensor:
      if ((fits = arg.form == CallArg::Form::Expr))
        call->operands.push_back(std::move(arg.expr));
      break;
    case ArgForm::DimName:
      if ((fits = name != nullptr))
        call->dims.push_back(Ident{name->name, name->getLoc()});
      break;
    case ArgForm::ElementType:
      if ((fits = name != nullptr))
        call->elementType = Ident{name->name, name->getLoc()};
      break;
    case ArgForm::DimList:
      if ((fits = arg.form == CallArg::Form::DimList)) {
        call->dims = std::move(arg.dims);
        call->hasDimList = true;
      }
      break;
    case ArgForm::Split:
      if ((fits = arg.form == CallArg::Form::Split))
        call->splits.push_back(std::move(arg.split));
      break;
    }
    if (!fits) {
      diagnostics.error(arg.loc)
          << "argument " << index + 1 << " of '" << info.name << "' must be "
          << describeForm(form) << "; write " << info.usage;
      return nullptr;
    }
  }
  if (failed(checkDepth(*call)))
    return nullptr;
  return call;
}

ExprPtr Parser::parseRepeat() {
  Loc loc = tok.loc;
  consume();
  Loc countLoc = tok.loc;
  int64_t count = 0;
  std::optional<Ident> dim;
  std::string written;
  // `repeat f(x)`: the count is missing, f is no layer dim.
  if (tok.is(TokenKind::Identifier) && !peekAhead().is(TokenKind::LParen)) {
    dim.emplace();
    if (failed(parseIdentifier(*dim, "a layer dim after 'repeat'")))
      return nullptr;
    written = dim->name.str();
  } else {
    if (failed(parseInteger(count, /*allowMinus=*/false,
                            "a repeat count or a layer dim after 'repeat'")))
      return nullptr;
    if (count < 1) {
      diagnostics.error(countLoc)
          << "repeat count must be at least 1, got " << count;
      return nullptr;
    }
    written = std::to_string(count);
  }
  Ident callee;
  if (failed(parseIdentifier(callee,
                             "a function name after 'repeat " + written + "'")))
    return nullptr;
  if (lookupBuiltin(callee.name)) {
    diagnostics.error(callee.loc) << "'repeat' needs a function defined with "
                                     "'def', not the builtin '"
                                  << callee.name << "'";
    return nullptr;
  }
  if (!tok.is(TokenKind::LParen)) {
    unexpected("'(' after 'repeat " + written + " " + callee.name.str() + "'");
    return nullptr;
  }
  std::vector<ExprPtr> args;
  unsigned depth;
  if (failed(parseUserCallArgs(callee, args, depth)))
    return nullptr;
  if (args.empty()) {
    diagnostics.error(callee.loc)
        << "'repeat' needs at least one argument for '" << callee.name
        << "': the tensor passed from each instance to the next";
    return nullptr;
  }
  auto repeat = std::make_unique<RepeatExpr>(loc, count, std::move(dim), callee,
                                             std::move(args), depth);
  if (failed(checkDepth(*repeat)))
    return nullptr;
  return repeat;
}

ExprPtr Parser::parseCheckpoint() {
  Loc loc = tok.loc;
  consume();
  if (!tok.is(TokenKind::LParen)) {
    unexpected("'(' after 'checkpoint'");
    return nullptr;
  }
  Loc opener = tok.loc;
  consume();
  ExprPtr inner = parseExpr();
  if (!inner || failed(expectClosing(TokenKind::RParen,
                                     "')' after the checkpointed expression",
                                     opener, "(")))
    return nullptr;
  auto checkpoint = std::make_unique<CheckpointExpr>(loc, std::move(inner));
  if (failed(checkDepth(*checkpoint)))
    return nullptr;
  return checkpoint;
}
