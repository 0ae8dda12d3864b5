//===- Lexer.cpp - Tokens of the .mtf model language ----------------------===//
//
// The tokenizer. Every byte sequence either becomes tokens or one Error token
// with a message that shows the offending character (printable ASCII as is,
// other characters by code point, bytes that are not UTF-8 in hex).
//
//===----------------------------------------------------------------------===//

#include "frontend/Lexer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace meshc::frontend;

namespace {
/// Longest spelling quoted in full by describeToken.
constexpr size_t kMaxQuotedLength = 40;

bool isIdentifierStart(char c) { return llvm::isAlpha(c) || c == '_'; }
bool isIdentifierChar(char c) { return llvm::isAlnum(c) || c == '_'; }
} // namespace

std::string meshc::frontend::describeToken(const Token &token) {
  switch (token.kind) {
  case TokenKind::Eof:
    return "end of file";
  case TokenKind::Newline:
    return "end of line";
  default:
    break;
  }
  if (token.spelling.size() <= kMaxQuotedLength)
    return ("'" + token.spelling + "'").str();
  return ("'" + token.spelling.take_front(kMaxQuotedLength) + "...'").str();
}

void Lexer::advance() {
  if (buffer[pos] == '\n') {
    ++line;
    column = 1;
  } else {
    ++column;
  }
  ++pos;
}

void Lexer::skipTrivia() {
  while (!atEnd()) {
    char c = peek();
    if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' ||
        (c == '\n' && bracketDepth > 0)) {
      advance();
    } else if (c == '#') {
      // Comments may hold any bytes, including ones that are not UTF-8.
      while (!atEnd() && peek() != '\n')
        advance();
    } else {
      return;
    }
  }
}

Token Lexer::makeToken(TokenKind kind, size_t begin) {
  Token token;
  token.kind = kind;
  token.spelling = buffer.slice(begin, pos);
  return token;
}

Token Lexer::makeError(size_t begin, size_t end, std::string message) {
  errorMessage = std::move(message);
  Token token;
  token.kind = TokenKind::Error;
  token.spelling = buffer.slice(begin, end);
  return token;
}

Token Lexer::next() {
  if (finished)
    return finalToken;
  skipTrivia();
  Loc loc{line, column};
  size_t begin = pos;
  Token token;
  if (atEnd()) {
    token = makeToken(TokenKind::Eof, begin);
  } else {
    char c = peek();
    auto single = [&](TokenKind kind) {
      advance();
      return makeToken(kind, begin);
    };
    switch (c) {
    case '\n':
      token = single(TokenKind::Newline);
      break;
    case '(':
    case '[':
      ++bracketDepth;
      token = single(c == '(' ? TokenKind::LParen : TokenKind::LBracket);
      break;
    case ')':
    case ']':
      if (bracketDepth > 0)
        --bracketDepth;
      token = single(c == ')' ? TokenKind::RParen : TokenKind::RBracket);
      break;
    case '{':
      token = single(TokenKind::LBrace);
      break;
    case '}':
      token = single(TokenKind::RBrace);
      break;
    case ',':
      token = single(TokenKind::Comma);
      break;
    case ':':
      token = single(TokenKind::Colon);
      break;
    case '=':
      token = single(TokenKind::Equal);
      break;
    case '+':
      token = single(TokenKind::Plus);
      break;
    case '*':
      token = single(TokenKind::Star);
      break;
    case '/':
      token = single(TokenKind::Slash);
      break;
    case '-':
      advance();
      if (peek() == '>') {
        advance();
        token = makeToken(TokenKind::Arrow, begin);
      } else {
        token = makeToken(TokenKind::Minus, begin);
      }
      break;
    default:
      if (llvm::isDigit(c) || (c == '.' && llvm::isDigit(peek(1))))
        token = lexNumber(begin);
      else if (isIdentifierStart(c))
        token = lexIdentifier(begin);
      else
        token = lexUnexpected(begin);
      break;
    }
  }
  token.loc = loc;
  if (token.is(TokenKind::Eof) || token.is(TokenKind::Error)) {
    finished = true;
    finalToken = token;
  }
  return token;
}

Token Lexer::lexNumber(size_t begin) {
  bool isFloat = false;
  while (llvm::isDigit(peek()))
    advance();
  if (peek() == '.') {
    isFloat = true;
    advance();
    while (llvm::isDigit(peek()))
      advance();
  }
  if (peek() == 'e' || peek() == 'E') {
    isFloat = true;
    advance();
    if (peek() == '+' || peek() == '-')
      advance();
    if (!llvm::isDigit(peek())) {
      while (isIdentifierChar(peek()))
        advance();
      return makeError(begin, pos,
                       ("malformed number '" + buffer.slice(begin, pos) +
                        "': expected digits in the exponent")
                           .str());
    }
    while (llvm::isDigit(peek()))
      advance();
  }
  if (isIdentifierChar(peek()) || peek() == '.') {
    while (isIdentifierChar(peek()) || peek() == '.')
      advance();
    return makeError(
        begin, pos,
        ("malformed number '" + buffer.slice(begin, pos) + "'").str());
  }
  return makeToken(isFloat ? TokenKind::Float : TokenKind::Integer, begin);
}

Token Lexer::lexIdentifier(size_t begin) {
  while (isIdentifierChar(peek()))
    advance();
  Token token = makeToken(TokenKind::Identifier, begin);
  token.kind = llvm::StringSwitch<TokenKind>(token.spelling)
                   .Case("dim", TokenKind::KwDim)
                   .Case("input", TokenKind::KwInput)
                   .Case("param", TokenKind::KwParam)
                   .Case("output", TokenKind::KwOutput)
                   .Case("train", TokenKind::KwTrain)
                   .Case("with", TokenKind::KwWith)
                   .Case("def", TokenKind::KwDef)
                   .Case("return", TokenKind::KwReturn)
                   .Case("repeat", TokenKind::KwRepeat)
                   .Case("checkpoint", TokenKind::KwCheckpoint)
                   .Default(TokenKind::Identifier);
  return token;
}

Token Lexer::lexUnexpected(size_t begin) {
  unsigned char first = static_cast<unsigned char>(peek());
  std::string message;
  llvm::raw_string_ostream os(message);
  size_t end = begin + 1;
  if (first >= 0x21 && first < 0x7f) {
    os << "unexpected character '" << static_cast<char>(first) << "'";
  } else if (first < 0x80) {
    os << "unexpected character U+"
       << llvm::format_hex_no_prefix(first, 4, true);
  } else {
    const auto *source =
        reinterpret_cast<const llvm::UTF8 *>(buffer.data() + begin);
    const auto *sourceEnd =
        reinterpret_cast<const llvm::UTF8 *>(buffer.data() + buffer.size());
    unsigned length = llvm::getNumBytesForUTF8(first);
    llvm::UTF32 codePoint = 0;
    const llvm::UTF8 *cursor = source;
    if (length <= static_cast<size_t>(sourceEnd - source) &&
        llvm::convertUTF8Sequence(&cursor, sourceEnd, &codePoint,
                                  llvm::strictConversion) ==
            llvm::conversionOK) {
      end = begin + length;
      os << "unexpected character '" << buffer.slice(begin, end) << "' (U+"
         << llvm::format_hex_no_prefix(codePoint, 4, true) << ")";
    } else {
      os << "unexpected byte " << llvm::format_hex(first, 4)
         << ", the file is not valid UTF-8";
    }
  }
  return makeError(begin, end, message);
}
