//===- Lexer.h - Tokens of the .mtf model language --------------*- C++ -*-===//
//
// Splits a .mtf buffer into tokens. The language is line-oriented: a newline
// ends a statement, except inside parentheses or brackets where it is
// whitespace (so a long einsum may span lines). `#` starts a comment that runs
// to the end of the line. The lexer never reads past the buffer's end and
// accepts any bytes: what it cannot tokenize becomes an Error token carrying
// the message the parser reports.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_FRONTEND_LEXER_H
#define MESHC_FRONTEND_LEXER_H

#include "frontend/AST.h"

#include "llvm/ADT/StringRef.h"

#include <string>

namespace meshc::frontend {

/// What a token is.
enum class TokenKind {
  Eof,
  Newline,
  Identifier,
  Integer, ///< Digits only.
  Float,   ///< A number with a '.' or an exponent.
  // Keywords.
  KwDim,
  KwInput,
  KwParam,
  KwOutput,
  KwTrain,
  KwWith,
  KwDef,
  KwReturn,
  KwRepeat,
  KwCheckpoint,
  // Punctuation.
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Equal,
  Arrow,
  Plus,
  Minus,
  Star,
  Slash,
  /// Something that is not a token; Lexer::getErrorMessage() says why.
  Error,
};

/// One token: its kind, its text inside the buffer and where it starts.
struct Token {
  TokenKind kind = TokenKind::Eof;
  llvm::StringRef spelling;
  Loc loc;

  bool is(TokenKind k) const { return kind == k; }
};

/// Describes a token for a diagnostic: its spelling in quotes ('foo', shortened
/// when long), or "end of line" / "end of file".
std::string describeToken(const Token &token);

/// Produces the tokens of one buffer on demand.
class Lexer {
public:
  explicit Lexer(llvm::StringRef buffer) : buffer(buffer) {}

  /// Returns the next token; after Eof or Error it keeps returning that token.
  Token next();

  /// The message of the last Error token.
  const std::string &getErrorMessage() const { return errorMessage; }

private:
  /// Skips spaces, comments and (inside brackets) newlines.
  void skipTrivia();
  Token makeToken(TokenKind kind, size_t begin);
  Token lexNumber(size_t begin);
  Token lexIdentifier(size_t begin);
  Token lexUnexpected(size_t begin);
  Token makeError(size_t begin, size_t end, std::string message);

  /// Moves one byte forward, keeping the line and column up to date.
  void advance();
  bool atEnd() const { return pos >= buffer.size(); }
  char peek(size_t ahead = 0) const {
    return pos + ahead < buffer.size() ? buffer[pos + ahead] : '\0';
  }

  llvm::StringRef buffer;
  size_t pos = 0;
  unsigned line = 1;
  unsigned column = 1;
  /// Open '(' and '[' not yet closed: newlines inside them are whitespace.
  unsigned bracketDepth = 0;
  /// Set once an Eof or Error token was produced.
  bool finished = false;
  Token finalToken;
  std::string errorMessage;
};

} // namespace meshc::frontend

#endif // MESHC_FRONTEND_LEXER_H
