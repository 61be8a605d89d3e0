// The tokenizer; see Lexer.h for the rules it follows.
#include "dsl/Lexer.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <limits>

namespace tessera::ast {

namespace {

constexpr std::string_view kKeywords[] = {
    "False", "None",   "True",    "and",      "as",     "assert", "async",
    "await", "break",  "class",   "continue", "def",    "del",    "elif",
    "else",  "except", "finally", "for",      "from",   "global", "if",
    "import", "in",    "is",      "lambda",   "nonlocal", "not",  "or",
    "pass",  "raise",  "return",  "try",      "while",  "with",   "yield",
};

// Longest first, so that the first match is the longest one.
constexpr std::string_view kOperators[] = {
    "**=", "//=", "<<=", ">>=", "...",
    "**", "//", "<<", ">>", "<=", ">=", "==", "!=", "->", "+=", "-=", "*=",
    "/=", "%=", "&=", "|=", "^=", "@=", ":=",
    "+", "-", "*", "/", "%", "@", "&", "|", "^", "~", "<", ">", "(", ")",
    "[", "]", "{", "}", ",", ":", ".", ";", "=",
};

bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }

int digitValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return 99;
}

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

std::string hex(uint32_t v, int digits) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string s(digits, '0');
  for (int i = digits - 1; i >= 0; --i, v >>= 4)
    s[i] = kHex[v & 0xF];
  return s;
}

// The UTF-8 sequence at `p`: its length and code point, or length 0 when
// the bytes there are not UTF-8 (a stray or overlong byte, a surrogate).
struct Utf8Char {
  int length = 0;
  uint32_t codePoint = 0;
};

Utf8Char decodeUtf8(std::string_view text, size_t p) {
  unsigned char c = text[p];
  if (c < 0x80)
    return {1, c};
  int len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
  if (len == 0 || p + len > text.size())
    return {};
  uint32_t cp = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (int i = 1; i < len; ++i) {
    unsigned char cc = text[p + i];
    if ((cc & 0xC0) != 0x80)
      return {};
    cp = (cp << 6) | (cc & 0x3F);
  }
  static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return {};
  return {len, cp};
}

// Python's str.isprintable() for the characters a pasted line brings along:
// controls, the invisible spaces and format characters (U+00A0, U+200B,
// U+FEFF, ...), private use. A message shows these by number, not as text.
bool isNonPrintable(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD || cp == 0x061C || cp == 0x1680 ||
         cp == 0x180E || (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
         (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || (cp >= 0xE000 && cp <= 0xF8FF) ||
         cp == 0xFEFF || (cp >= 0xFFF0 && cp <= 0xFFFB) || (cp >= 0xE0000 && cp <= 0xE007F) ||
         cp >= 0xF0000;
}

// "invalid character ..." for the (possibly multi-byte) character at `p`
// (the text is UTF-8: the constructor checked it). Python's wording.
std::string invalidCharacterMessage(std::string_view text, size_t p) {
  Utf8Char ch = decodeUtf8(text, p);
  if (ch.length == 0)
    return "invalid UTF-8 byte 0x" + hex(static_cast<unsigned char>(text[p]), 2);
  if (ch.codePoint >= 0x21 && ch.codePoint < 0x7F)
    return std::string("invalid character '") + text[p] + "'";
  std::string number = "U+" + hex(ch.codePoint, ch.codePoint > 0xFFFF ? 6 : 4);
  if (isNonPrintable(ch.codePoint))
    return "invalid non-printable character " + number;
  return "invalid character '" + std::string(text.substr(p, ch.length)) + "' (" + number + ")";
}

char closerOf(char open) { return open == '(' ? ')' : open == '[' ? ']' : '}'; }

} // namespace

const char *tokenKindName(TokenKind kind) {
  switch (kind) {
  case TokenKind::Name: return "name";
  case TokenKind::Keyword: return "keyword";
  case TokenKind::Int: return "int";
  case TokenKind::Float: return "float";
  case TokenKind::String: return "string";
  case TokenKind::Op: return "op";
  case TokenKind::Newline: return "newline";
  case TokenKind::Indent: return "indent";
  case TokenKind::Dedent: return "dedent";
  case TokenKind::End: return "end";
  }
  return "?";
}

std::string describe(const Token &token) {
  switch (token.kind) {
  case TokenKind::Name: return "name '" + token.text + "'";
  case TokenKind::Keyword: return "keyword '" + token.text + "'";
  case TokenKind::Int: return "integer literal " + token.text;
  case TokenKind::Float: return "float literal " + token.text;
  case TokenKind::String: return "string literal";
  case TokenKind::Op: return "'" + token.text + "'";
  case TokenKind::Newline: return "newline";
  case TokenKind::Indent: return "indent";
  case TokenKind::Dedent: return "dedent";
  case TokenKind::End: return "end of file";
  }
  return "?";
}

Lexer::Lexer(const SourceFile &file)
    : file_(file), text_(file.text), lineOffset_(file.firstLine ? file.firstLine - 1 : 0) {
  // A UTF-8 byte-order mark may open the file, as in Python; it is no character.
  if (text_.substr(0, 3) == "\xEF\xBB\xBF")
    pos_ = lineStart_ = 3;
  // As in Python, a NUL byte anywhere is an error before anything else. The
  // quoted source line shows it as a space: C strings cannot hold it.
  size_t nul = text_.find('\0');
  if (nul != std::string_view::npos) {
    SourceFile shown = file;
    std::replace(shown.text.begin(), shown.text.end(), '\0', ' ');
    errorBeforeLexing(shown, nul, "source code cannot contain null bytes");
  }
  // Python source is UTF-8, comments and strings included: the first byte
  // that is not is an error (the quoted line shows such bytes as '?', so
  // that the message itself is UTF-8).
  for (size_t p = 0; p < text_.size();) {
    int length = decodeUtf8(text_, p).length;
    if (length == 0) {
      SourceFile shown = file;
      for (size_t q = 0; q < shown.text.size();) {
        int n = decodeUtf8(shown.text, q).length;
        if (n == 0)
          shown.text[q++] = '?';
        else
          q += n;
      }
      errorBeforeLexing(shown, p,
                        "invalid UTF-8 byte 0x" + hex(static_cast<unsigned char>(text_[p]), 2) +
                            ": a kernel file must be UTF-8, as Python source is");
    }
    p += length;
  }
}

void Lexer::errorBeforeLexing(const SourceFile &shown, size_t offset, std::string_view message) {
  for (size_t p = text_.find('\n'); p < offset; p = text_.find('\n', p + 1)) {
    ++line_;
    lineStart_ = p + 1;
  }
  raiseError(shown, locAt(offset), message);
}

char Lexer::peekChar(size_t ahead) const {
  return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
}

SourceLoc Lexer::locAt(size_t pos) {
  if (colCachePos_ < lineStart_ || colCachePos_ > pos) {
    colCachePos_ = lineStart_;
    colCacheCol_ = 1;
  }
  // Columns count characters: skip UTF-8 continuation bytes.
  for (; colCachePos_ < pos; ++colCachePos_)
    if ((static_cast<unsigned char>(text_[colCachePos_]) & 0xC0) != 0x80)
      ++colCacheCol_;
  return {line_ + lineOffset_, colCacheCol_};
}

bool Lexer::atNewline() const {
  return peekChar() == '\n' || (peekChar() == '\r' && peekChar(1) == '\n');
}

void Lexer::consumeNewline() {
  if (peekChar() == '\r')
    ++pos_;
  ++pos_;
  ++line_;
  lineStart_ = pos_;
}

void Lexer::error(SourceLoc loc, std::string_view message) const {
  raiseError(file_, loc, message);
}

Token Lexer::make(TokenKind kind, size_t start, SourceLoc loc) {
  Token t;
  t.kind = kind;
  t.loc = loc;
  t.text = std::string(text_.substr(start, pos_ - start));
  return t;
}

// Measures the indentation of a new logical line and queues INDENT/DEDENT
// tokens. Blank and comment-only lines are left to next(), which skips them.
bool Lexer::handleLineStart() {
  atLineStart_ = false;
  uint32_t width = 0;
  for (; !atEnd(); ++pos_) {
    char c = peekChar();
    if (c == ' ')
      ++width;
    else if (c == '\t')
      width = (width / 8 + 1) * 8;
    else if (c == '\f')
      width = 0;
    else if (c == '\r' && peekChar(1) != '\n')
      continue;
    else
      break;
  }
  if (atEnd() || peekChar() == '#' || atNewline())
    return false;
  if (width == indents_.back())
    return false;
  SourceLoc loc = locAt(pos_);
  Token t;
  t.loc = loc;
  if (width > indents_.back()) {
    if (indents_.size() > kMaxIndentLevels)
      error(loc, "too many levels of indentation");
    indents_.push_back(width);
    t.kind = TokenKind::Indent;
    pending_.push_back(t);
    return true;
  }
  while (width < indents_.back()) {
    indents_.pop_back();
    t.kind = TokenKind::Dedent;
    pending_.push_back(t);
  }
  if (width != indents_.back())
    error(loc, "unindent does not match any outer indentation level");
  return true;
}

Token Lexer::endOfFile() {
  SourceLoc loc = locAt(pos_);
  if (!brackets_.empty())
    error(brackets_.back().loc, std::string("'") + brackets_.back().open + "' was never closed");
  Token t;
  t.loc = loc;
  if (lineHasTokens_) {
    lineHasTokens_ = false;
    t.kind = TokenKind::Newline;
    return t;
  }
  t.kind = TokenKind::Dedent;
  while (indents_.size() > 1) {
    indents_.pop_back();
    pending_.push_back(t);
  }
  t.kind = TokenKind::End;
  if (pending_.empty())
    return t;
  pending_.push_back(t);
  Token first = pending_.front();
  pending_.pop_front();
  return first;
}

Token Lexer::next() {
  for (;;) {
    if (!pending_.empty()) {
      Token t = std::move(pending_.front());
      pending_.pop_front();
      return t;
    }
    if (atLineStart_ && brackets_.empty() && handleLineStart())
      continue;
    while (!atEnd()) {
      char c = peekChar();
      if (c == ' ' || c == '\t' || c == '\f' || (c == '\r' && peekChar(1) != '\n'))
        ++pos_;
      else
        break;
    }
    if (atEnd())
      return endOfFile();
    char c = peekChar();
    if (c == '#') {
      while (!atEnd() && peekChar() != '\n')
        ++pos_;
      continue;
    }
    if (atNewline()) {
      SourceLoc loc = locAt(pos_);
      consumeNewline();
      if (!brackets_.empty())
        continue; // implicit line joining
      atLineStart_ = true;
      if (lineHasTokens_) {
        lineHasTokens_ = false;
        Token t;
        t.kind = TokenKind::Newline;
        t.loc = loc;
        return t;
      }
      continue;
    }
    if (c == '\\') {
      SourceLoc loc = locAt(pos_);
      ++pos_;
      if (atNewline()) {
        consumeNewline(); // explicit line joining
        continue;
      }
      if (atEnd())
        error(loc, "unexpected end of file after line continuation character");
      error(loc, "unexpected character after line continuation character");
    }
    lineHasTokens_ = true;
    return lexToken();
  }
}

Token Lexer::lexToken() {
  char c = peekChar();
  if (isIdentStart(c)) {
    size_t start = pos_;
    while (isIdentChar(peekChar()))
      ++pos_;
    std::string_view word = text_.substr(start, pos_ - start);
    char q = peekChar();
    if ((q == '\'' || q == '"') && word.size() <= 2) {
      std::string lower;
      for (char w : word)
        lower += char(w | 0x20);
      if (lower == "r" || lower == "b" || lower == "u" || lower == "f" || lower == "rb" ||
          lower == "br" || lower == "fr" || lower == "rf") {
        pos_ = start;
        return lexString(word.size());
      }
    }
    SourceLoc loc = locAt(start);
    bool keyword = false;
    for (std::string_view kw : kKeywords)
      keyword |= kw == word;
    return make(keyword ? TokenKind::Keyword : TokenKind::Name, start, loc);
  }
  if (isDigit(c) || (c == '.' && isDigit(peekChar(1))))
    return lexNumber();
  if (c == '\'' || c == '"')
    return lexString(0);
  return lexOperator();
}

Token Lexer::lexNumber() {
  size_t start = pos_;
  SourceLoc loc = locAt(start);
  char c1 = peekChar(1) | 0x20;
  if (peekChar() == '0' && (c1 == 'x' || c1 == 'o' || c1 == 'b')) {
    int radix = c1 == 'x' ? 16 : c1 == 'o' ? 8 : 2;
    const char *what = radix == 16 ? "invalid hexadecimal literal"
                       : radix == 8 ? "invalid octal literal"
                                    : "invalid binary literal";
    pos_ += 2;
    unsigned __int128 value = 0;
    bool any = false, tooLarge = false;
    for (;;) {
      if (peekChar() == '_') {
        ++pos_;
        if (digitValue(peekChar()) >= radix)
          error(loc, what);
      }
      int d = digitValue(peekChar());
      if (d >= radix)
        break;
      if (value > ((unsigned __int128)kConstIntMax - d) / radix)
        tooLarge = true;
      value = value * radix + d;
      any = true;
      ++pos_;
    }
    if (!any || isIdentChar(peekChar()))
      error(loc, what);
    if (tooLarge)
      error(loc, "integer literal too large (tessera's integer constants have 128 bits)");
    Token t = make(TokenKind::Int, start, loc);
    t.intValue = ConstInt(value);
    return t;
  }

  // digitpart: digit (['_'] digit)*
  auto digitPart = [&]() {
    if (!isDigit(peekChar()))
      return false;
    ++pos_;
    for (;;) {
      if (peekChar() == '_') {
        ++pos_;
        if (!isDigit(peekChar()))
          error(loc, "invalid decimal literal");
      } else if (isDigit(peekChar())) {
        ++pos_;
      } else {
        return true;
      }
    }
  };
  bool isFloat = false;
  digitPart();
  if (peekChar() == '.') {
    ++pos_;
    isFloat = true;
    digitPart();
  }
  if ((peekChar() | 0x20) == 'e') {
    ++pos_;
    if (peekChar() == '+' || peekChar() == '-')
      ++pos_;
    if (!digitPart())
      error(loc, "invalid decimal literal");
    isFloat = true;
  }
  if ((peekChar() | 0x20) == 'j')
    error(loc, "complex literals are not supported");
  if (isIdentChar(peekChar()))
    error(loc, "invalid decimal literal");

  Token t = make(isFloat ? TokenKind::Float : TokenKind::Int, start, loc);
  std::string digits;
  for (char ch : t.text)
    if (ch != '_')
      digits += ch;
  const char *first = digits.data(), *last = digits.data() + digits.size();
  if (isFloat) {
    auto [ptr, ec] = std::from_chars(first, last, t.floatValue);
    if (ec == std::errc::result_out_of_range)
      t.floatValue = std::strtod(digits.c_str(), nullptr); // inf or a denormal/zero
    else if (ec != std::errc() || ptr != last)
      error(loc, "invalid decimal literal");
    return t;
  }
  if (digits.size() > 1 && digits[0] == '0' && digits.find_first_not_of('0') != std::string::npos)
    error(loc, "leading zeros in decimal integer literals are not permitted; "
               "use an 0o prefix for octal integers");
  t.intValue = 0;
  for (const char *d = first; d != last; ++d) {
    if (!isDigit(*d))
      error(loc, "invalid decimal literal");
    if (t.intValue > (kConstIntMax - (*d - '0')) / 10)
      error(loc, "integer literal too large (tessera's integer constants have 128 bits)");
    t.intValue = t.intValue * 10 + (*d - '0');
  }
  return t;
}

// One escape sequence of a non-raw string; pos_ is at the backslash.
void Lexer::decodeEscape(std::string &out) {
  SourceLoc loc = locAt(pos_);
  ++pos_;
  if (atEnd())
    return; // the caller reports the unterminated string
  if (atNewline()) {
    consumeNewline(); // backslash-newline: the string continues
    return;
  }
  char e = peekChar();
  auto hexDigits = [&](int n, const char *what) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      int d = digitValue(peekChar());
      if (d >= 16)
        error(loc, what);
      v = v * 16 + d;
      ++pos_;
    }
    return v;
  };
  switch (e) {
  case '\\': case '\'': case '"': out += e; ++pos_; return;
  case 'a': out += '\a'; ++pos_; return;
  case 'b': out += '\b'; ++pos_; return;
  case 'f': out += '\f'; ++pos_; return;
  case 'n': out += '\n'; ++pos_; return;
  case 'r': out += '\r'; ++pos_; return;
  case 't': out += '\t'; ++pos_; return;
  case 'v': out += '\v'; ++pos_; return;
  case 'x':
    ++pos_;
    appendUtf8(out, hexDigits(2, "truncated \\xXX escape"));
    return;
  case 'u':
    ++pos_;
    appendUtf8(out, hexDigits(4, "truncated \\uXXXX escape"));
    return;
  case 'U': {
    ++pos_;
    uint32_t cp = hexDigits(8, "truncated \\UXXXXXXXX escape");
    if (cp > 0x10FFFF)
      error(loc, "illegal Unicode character in \\U escape");
    appendUtf8(out, cp);
    return;
  }
  case 'N':
    error(loc, "unsupported escape sequence '\\N{...}'");
  default:
    break;
  }
  if (e >= '0' && e <= '7') {
    uint32_t v = 0;
    for (int i = 0; i < 3 && peekChar() >= '0' && peekChar() <= '7'; ++i, ++pos_)
      v = v * 8 + (peekChar() - '0');
    appendUtf8(out, v);
    return;
  }
  out += '\\'; // unknown escapes keep their backslash, as in Python
}

Token Lexer::lexString(size_t prefixLen) {
  size_t start = pos_;
  SourceLoc loc = locAt(start);
  bool raw = false;
  for (size_t i = 0; i < prefixLen; ++i)
    raw |= (text_[start + i] | 0x20) == 'r';
  pos_ += prefixLen;
  char quote = peekChar();
  bool triple = peekChar(1) == quote && peekChar(2) == quote;
  pos_ += triple ? 3 : 1;
  std::string value;
  auto unterminated = [&]() {
    error(loc, std::string(triple ? "unterminated triple-quoted string literal"
                                  : "unterminated string literal") +
                   " (detected at line " + std::to_string(line_ + lineOffset_) + ")");
  };
  for (;;) {
    if (atEnd())
      unterminated();
    char c = peekChar();
    if (c == quote) {
      if (!triple) {
        ++pos_;
        break;
      }
      if (peekChar(1) == quote && peekChar(2) == quote) {
        pos_ += 3;
        break;
      }
      value += c;
      ++pos_;
    } else if (atNewline()) {
      if (!triple)
        unterminated();
      value += '\n';
      consumeNewline();
    } else if (c == '\\' && !raw) {
      decodeEscape(value);
    } else if (c == '\\') {
      // Raw: the backslash stays, and the next character cannot end the string.
      value += '\\';
      ++pos_;
      if (atNewline()) {
        value += '\n';
        consumeNewline();
      } else if (!atEnd()) {
        value += peekChar();
        ++pos_;
      }
    } else {
      value += c;
      ++pos_;
    }
  }
  Token t;
  t.kind = TokenKind::String;
  t.loc = loc;
  t.text = std::string(text_.substr(start, pos_ - start));
  t.stringValue = std::move(value);
  return t;
}

Token Lexer::lexOperator() {
  size_t start = pos_;
  SourceLoc loc = locAt(start);
  for (std::string_view op : kOperators) {
    if (text_.substr(pos_, op.size()) != op)
      continue;
    char c = op[0];
    if (op.size() == 1 && (c == '(' || c == '[' || c == '{')) {
      brackets_.push_back({c, loc});
    } else if (op.size() == 1 && (c == ')' || c == ']' || c == '}')) {
      if (brackets_.empty())
        error(loc, std::string("unmatched '") + c + "'");
      Bracket open = brackets_.back();
      if (closerOf(open.open) != c) {
        std::string msg = std::string("closing parenthesis '") + c +
                          "' does not match opening parenthesis '" + open.open + "'";
        if (open.loc.line != loc.line)
          msg += " on line " + std::to_string(open.loc.line);
        error(loc, msg);
      }
      brackets_.pop_back();
    }
    pos_ += op.size();
    return make(TokenKind::Op, start, loc);
  }
  error(loc, invalidCharacterMessage(text_, pos_));
}

std::vector<Token> tokenize(const SourceFile &file) {
  Lexer lexer(file);
  std::vector<Token> tokens;
  do
    tokens.push_back(lexer.next());
  while (tokens.back().kind != TokenKind::End);
  return tokens;
}

} // namespace tessera::ast
