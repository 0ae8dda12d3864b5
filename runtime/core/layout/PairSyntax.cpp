//===- PairSyntax.cpp - Mesh-TensorFlow "name:value" lists ----------------===//
//
// A small lexer (words, ':', '+', hard separators; whitespace skipped but
// remembered) and the item grammar
//   list := sep* (item (sep+ item)*)? sep*
//   item := word ':' word ('+' word)*
// where whitespace alone also separates two items.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/layout/PairSyntax.h"

#include "runtime/core/layout/Names.h"

#include <string>

namespace meshc::layout {
namespace {

enum class TokenKind { Word, Colon, Plus, Separator, End };

struct Token {
  TokenKind kind;
  std::string_view text;
  int column;
};

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
         c == '\v';
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }

bool isHardSeparator(char c) { return c == ';' || c == ',' || c == '.'; }

class Lexer {
public:
  Lexer(std::string_view text, bool plusIsToken)
      : text(text), plusIsToken(plusIsToken) {}

  /// The next token; whitespace before it is skipped.
  Token next() {
    while (pos < text.size() && isSpace(text[pos]))
      ++pos;
    int column = static_cast<int>(pos) + 1;
    if (pos == text.size())
      return {TokenKind::End, text.substr(pos), column};
    char c = text[pos];
    if (c == ':' || (plusIsToken && c == '+') || isHardSeparator(c)) {
      TokenKind kind = c == ':'   ? TokenKind::Colon
                       : c == '+' ? TokenKind::Plus
                                  : TokenKind::Separator;
      return {kind, text.substr(pos++, 1), column};
    }
    size_t start = pos;
    while (pos < text.size() && !isSpace(text[pos]) &&
           (!isHardSeparator(text[pos]) || isDecimalPoint(pos)) &&
           text[pos] != ':' && !(plusIsToken && text[pos] == '+'))
      ++pos;
    return {TokenKind::Word, text.substr(start, pos - start), column};
  }

private:
  /// A '.' between two digits belongs to a number ("4.5"), so that a
  /// fractional size is reported whole instead of as two pairs.
  bool isDecimalPoint(size_t at) const {
    return text[at] == '.' && at > 0 && at + 1 < text.size() &&
           isDigit(text[at - 1]) && isDigit(text[at + 1]);
  }

  std::string_view text;
  bool plusIsToken;
  size_t pos = 0;
};

std::string describe(const Token &token) {
  if (token.kind == TokenKind::End)
    return "the end of the text";
  return quoteName(token.text);
}

} // namespace

Result<std::vector<PairItem>> splitPairs(std::string_view text,
                                         const PairSyntax &syntax) {
  Lexer lexer(text, syntax.plusJoinsValues);
  std::vector<PairItem> items;
  Token token = lexer.next();
  auto fail = [&](std::string message, int column) {
    return Error{std::move(message), syntax.syntaxHint, 0, column};
  };
  while (true) {
    while (token.kind == TokenKind::Separator)
      token = lexer.next();
    if (token.kind == TokenKind::End)
      return items;
    if (token.kind != TokenKind::Word)
      return fail(std::string("expected a ") + syntax.nameKind + " name, got " +
                      describe(token),
                  token.column);
    PairItem item;
    item.name = {token.text, token.column};
    token = lexer.next();
    if (token.kind != TokenKind::Colon)
      return fail(std::string("expected ':' after ") + syntax.nameKind +
                      " name " + quoteName(item.name.text) + ", got " +
                      describe(token),
                  token.column);
    int colonColumn = token.column;
    token = lexer.next();
    if (token.kind != TokenKind::Word)
      return fail(std::string(syntax.nameKind) + " " +
                      quoteName(item.name.text) + " has no " + syntax.valueKind,
                  colonColumn);
    item.values.push_back({token.text, token.column});
    token = lexer.next();
    while (token.kind == TokenKind::Plus) {
      int plusColumn = token.column;
      token = lexer.next();
      if (token.kind != TokenKind::Word)
        return fail(std::string("expected a ") + syntax.valueKind +
                        " name after '+' in the rule for " + syntax.nameKind +
                        " " + quoteName(item.name.text) + ", got " +
                        describe(token),
                    plusColumn);
      item.values.push_back({token.text, token.column});
      token = lexer.next();
    }
    if (token.kind == TokenKind::Colon || token.kind == TokenKind::Plus) {
      const PairWord &last = item.values.back();
      size_t begin = static_cast<size_t>(item.name.column - 1);
      size_t end = static_cast<size_t>(last.column - 1) + last.text.size();
      return Error{"unexpected " + describe(token) + " after " +
                       quoteName(text.substr(begin, end - begin)),
                   "separate pairs with ';', ',', '.' or spaces", 0,
                   token.column};
    }
    items.push_back(std::move(item));
  }
}

} // namespace meshc::layout
