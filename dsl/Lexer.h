// The tokenizer for the Python subset of Triton-style kernels.
//
// It follows Python's tokenizer: a logical line ends in a NEWLINE token; the
// change of indentation between logical lines produces INDENT and DEDENT
// tokens (tabs advance to the next multiple of 8); blank and comment-only
// lines produce nothing; lines are joined inside (), [] and {} and after a
// backslash. At the end of the file come a NEWLINE (if the last line had
// tokens), one DEDENT per open indentation level, then END (repeated forever
// if asked again).
//
// Tokens are produced on demand (Lexer::next) so that the parser reports the
// first error in source order, as Python does. Every token carries the
// 1-based line and column (in characters, not bytes) of its first character;
// lines are offset by SourceFile::firstLine - 1.
//
// The text must be UTF-8 (comments and strings too, as in Python: the first
// byte that is not is an error) and may open with a UTF-8 byte-order mark,
// which is skipped.
//
// Deliberate restrictions: identifiers are ASCII; complex literals are
// rejected; string prefixes r/b/u/f (and rb, br, fr, rf in any case) are
// accepted and give a plain string (an f-string is not interpolated).
#pragma once

#include "compiler/support/Diagnostics.h"
#include "dsl/ConstInt.h"

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::ast {

enum class TokenKind {
  Name,     // identifiers that are not keywords
  Keyword,  // if, def, and, None, True, ...
  Int,      // intValue
  Float,    // floatValue
  String,   // stringValue (escapes decoded)
  Op,       // operators and delimiters: "+", "**=", "(", "->", ...
  Newline,  // end of a logical line
  Indent,
  Dedent,
  End,      // end of file
};

const char *tokenKindName(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::End;
  SourceLoc loc;
  std::string text;        // Name/Keyword: the word; Op: its spelling; literals: source text
  ConstInt intValue = 0;
  double floatValue = 0;
  std::string stringValue; // String: the decoded value (UTF-8)

  bool isOp(std::string_view op) const { return kind == TokenKind::Op && text == op; }
  bool isKeyword(std::string_view kw) const { return kind == TokenKind::Keyword && text == kw; }
};

// A short description for diagnostics and tests: "name 'x'", "'+'", "newline",
// "integer literal 3", "end of file", ...
std::string describe(const Token &token);

class Lexer {
public:
  // `file` must outlive the lexer.
  explicit Lexer(const SourceFile &file);

  // The next token; throws CompileError on a lexical error.
  Token next();

  static constexpr size_t kMaxIndentLevels = 100;

private:
  struct Bracket {
    char open;
    SourceLoc loc;
  };

  char peekChar(size_t ahead = 0) const;
  bool atEnd() const { return pos_ >= text_.size(); }
  SourceLoc locAt(size_t pos);
  bool atNewline() const; // "\n" or "\r\n" at pos_
  void consumeNewline();
  [[noreturn]] void error(SourceLoc loc, std::string_view message) const;
  // An error at a byte offset, found before lexing started (NUL, not UTF-8).
  [[noreturn]] void errorBeforeLexing(const SourceFile &shown, size_t offset, std::string_view message);

  bool handleLineStart(); // true if it queued INDENT/DEDENT tokens
  Token lexToken();
  Token lexNumber();
  Token lexString(size_t prefixLen);
  Token lexOperator();
  Token make(TokenKind kind, size_t start, SourceLoc loc);
  void decodeEscape(std::string &out);
  Token endOfFile();

  const SourceFile &file_;
  std::string_view text_;
  size_t pos_ = 0;
  uint32_t line_ = 1;      // file-relative
  size_t lineStart_ = 0;   // offset of the first byte of line_
  size_t colCachePos_ = 0; // locAt cache: byte offset and column on line_
  uint32_t colCacheCol_ = 1;
  uint32_t lineOffset_ = 0;
  bool atLineStart_ = true;
  bool lineHasTokens_ = false;
  std::vector<Bracket> brackets_;
  std::vector<uint32_t> indents_{0};
  std::deque<Token> pending_;
};

// Tokenizes a whole file (through END); throws CompileError on a lexical error.
std::vector<Token> tokenize(const SourceFile &file);

} // namespace tessera::ast
