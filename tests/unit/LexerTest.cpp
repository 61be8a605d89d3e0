// Tests of the DSL tokenizer (dsl/Lexer.h).
#include "dsl/Lexer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace tessera;
using namespace tessera::ast;

namespace {

SourceFile makeFile(std::string text, uint32_t firstLine = 1) {
  SourceFile file;
  file.path = "k.py";
  file.text = std::move(text);
  file.firstLine = firstLine;
  return file;
}

std::vector<Token> lex(const std::string &text) { return tokenize(makeFile(text)); }

// A compact dump of the token stream: names, keywords and operators as
// written, literals as int:V / float:V / str:V, and NL INDENT DEDENT END.
std::string dump(const std::string &text) {
  std::string out;
  for (const Token &t : lex(text)) {
    if (!out.empty())
      out += " ";
    switch (t.kind) {
    case TokenKind::Name:
    case TokenKind::Keyword:
    case TokenKind::Op: out += t.text; break;
    case TokenKind::Int: out += "int:" + constIntToString(t.intValue); break;
    case TokenKind::Float: out += "float:" + t.text; break;
    case TokenKind::String: out += "str:" + t.stringValue; break;
    case TokenKind::Newline: out += "NL"; break;
    case TokenKind::Indent: out += "INDENT"; break;
    case TokenKind::Dedent: out += "DEDENT"; break;
    case TokenKind::End: out += "END"; break;
    }
  }
  return out;
}

// The full formatted message of the CompileError that lexing `text` throws.
std::string lexError(const std::string &text, uint32_t firstLine = 1) {
  try {
    tokenize(makeFile(text, firstLine));
  } catch (const CompileError &e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for: " << text;
  return "";
}

} // namespace

TEST(Lexer, SimpleStatement) {
  EXPECT_EQ(dump("x = 1\n"), "x = int:1 NL END");
  EXPECT_EQ(dump("x = 1"), "x = int:1 NL END"); // NEWLINE supplied at EOF
  EXPECT_EQ(dump(""), "END");
  EXPECT_EQ(dump("\n\n# only a comment\n"), "END");
}

TEST(Lexer, KeywordsAndNames) {
  std::vector<Token> toks = lex("if iff None none _x1 def\n");
  ASSERT_EQ(toks.size(), 8u);
  EXPECT_EQ(toks[0].kind, TokenKind::Keyword);
  EXPECT_EQ(toks[1].kind, TokenKind::Name);
  EXPECT_EQ(toks[2].kind, TokenKind::Keyword);
  EXPECT_EQ(toks[3].kind, TokenKind::Name);
  EXPECT_EQ(toks[4].kind, TokenKind::Name);
  EXPECT_EQ(toks[4].text, "_x1");
  EXPECT_EQ(toks[5].kind, TokenKind::Keyword);
}

TEST(Lexer, IndentAndDedent) {
  EXPECT_EQ(dump("if a:\n  b\n  c\nd\n"), "if a : NL INDENT b NL c NL DEDENT d NL END");
  EXPECT_EQ(dump("def f():\n  if x:\n    y\n"),
            "def f ( ) : NL INDENT if x : NL INDENT y NL DEDENT DEDENT END");
  EXPECT_EQ(dump("a:\n    b:\n        c\n    d\ne"),
            "a : NL INDENT b : NL INDENT c NL DEDENT d NL DEDENT e NL END");
}

TEST(Lexer, BlankAndCommentLinesProduceNothing) {
  EXPECT_EQ(dump("a\n\n    # indented comment\n  \n\t\nb  # trailing\n"), "a NL b NL END");
  EXPECT_EQ(dump("if a:\n  b\n\n# c\n  c\n"), "if a : NL INDENT b NL c NL DEDENT END");
}

TEST(Lexer, TabsAdvanceToMultiplesOfEight) {
  EXPECT_EQ(dump("if a:\n\tb\n        c\n  \td\n"),
            "if a : NL INDENT b NL c NL d NL DEDENT END");
  EXPECT_EQ(dump("if a:\n\tb\n\t c\n"), "if a : NL INDENT b NL INDENT c NL DEDENT DEDENT END");
}

TEST(Lexer, InconsistentDedentIsAnError) {
  EXPECT_EQ(lexError("if a:\n    b\n  c\n"),
            "k.py:3:3: error: unindent does not match any outer indentation level\n"
            "  c\n"
            "  ^");
}

TEST(Lexer, TooManyIndentationLevels) {
  std::string text;
  for (int i = 0; i < 102; ++i)
    text += std::string(i, ' ') + "if x:\n";
  std::string msg = lexError(text);
  EXPECT_NE(msg.find("k.py:102:102: error: too many levels of indentation"), std::string::npos)
      << msg;
}

TEST(Lexer, ImplicitLineJoining) {
  EXPECT_EQ(dump("x = (1,\n     2)\ny = [\n]\nz = {\n}\n"),
            "x = ( int:1 , int:2 ) NL y = [ ] NL z = { } NL END");
  // Indentation inside brackets does not matter.
  EXPECT_EQ(dump("if a:\n  f(1,\n2)\n  g\n"), "if a : NL INDENT f ( int:1 , int:2 ) NL g NL DEDENT END");
}

TEST(Lexer, ExplicitLineJoining) {
  EXPECT_EQ(dump("x = 1 + \\\n    2\n"), "x = int:1 + int:2 NL END");
  EXPECT_EQ(dump("x = 1 + \\\r\n2\r\n"), "x = int:1 + int:2 NL END");
  EXPECT_EQ(lexError("x = 1 \\ 2\n"),
            "k.py:1:7: error: unexpected character after line continuation character\n"
            "x = 1 \\ 2\n"
            "      ^");
}

TEST(Lexer, CrLfLineEndings) {
  EXPECT_EQ(dump("if a:\r\n  b\r\nc\r\n"), "if a : NL INDENT b NL DEDENT c NL END");
}

TEST(Lexer, IntegerLiterals) {
  std::vector<Token> toks =
      lex("0 7 1_000 0x1F 0XfF 0o17 0b101 0b_1 00 9223372036854775807 0x7fffffffffffffff\n");
  std::vector<int64_t> want = {0, 7, 1000, 31, 255, 15, 5, 1, 0, INT64_MAX, INT64_MAX};
  ASSERT_EQ(toks.size(), want.size() + 2);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(toks[i].kind, TokenKind::Int) << i;
    EXPECT_EQ(static_cast<int64_t>(toks[i].intValue), want[i]) << i;
  }
  EXPECT_EQ(toks[2].text, "1_000");
}

// Python's ints are unbounded; tessera keeps literals up to 2^127 - 1 exactly (dsl/ConstInt.h).
TEST(Lexer, IntegerLiteralsBeyond64Bits) {
  std::vector<Token> toks = lex("18446744073709551615 0xffffffffffffffff 170141183460469231731687303715884105727\n");
  ASSERT_EQ(toks.size(), 5u);
  EXPECT_EQ(constIntToString(toks[0].intValue), "18446744073709551615");
  EXPECT_EQ(constIntToString(toks[1].intValue), "18446744073709551615");
  EXPECT_TRUE(toks[2].intValue == kConstIntMax);
}

TEST(Lexer, IntegerLiteralErrors) {
  EXPECT_EQ(lexError("x = 170141183460469231731687303715884105728\n"),
            "k.py:1:5: error: integer literal too large (tessera's integer constants have 128 bits)\n"
            "x = 170141183460469231731687303715884105728\n"
            "    ^");
  EXPECT_NE(lexError("0x80000000000000000000000000000000").find("1:1: error: integer literal too large"),
            std::string::npos);
  EXPECT_NE(lexError("1_").find("error: invalid decimal literal"), std::string::npos);
  EXPECT_NE(lexError("1__0").find("error: invalid decimal literal"), std::string::npos);
  EXPECT_NE(lexError("12abc").find("error: invalid decimal literal"), std::string::npos);
  EXPECT_NE(lexError("0x").find("error: invalid hexadecimal literal"), std::string::npos);
  EXPECT_NE(lexError("0b102").find("error: invalid binary literal"), std::string::npos);
  EXPECT_NE(lexError("0o8").find("error: invalid octal literal"), std::string::npos);
  EXPECT_NE(lexError("3j").find("error: complex literals are not supported"), std::string::npos);
  EXPECT_EQ(lexError("x = 0123\n"),
            "k.py:1:5: error: leading zeros in decimal integer literals are not permitted; "
            "use an 0o prefix for octal integers\n"
            "x = 0123\n"
            "    ^");
}

TEST(Lexer, FloatLiterals) {
  std::vector<Token> toks = lex("1.5 .5 1. 1e-6 2.5E+3 1_0.2_5 1e10 0.0 012.5 1e999\n");
  std::vector<double> want = {1.5, .5, 1., 1e-6, 2.5E+3, 10.25, 1e10, 0.0, 12.5, HUGE_VAL};
  ASSERT_EQ(toks.size(), want.size() + 2);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(toks[i].kind, TokenKind::Float) << i;
    EXPECT_EQ(toks[i].floatValue, want[i]) << i;
  }
  EXPECT_NE(lexError("1e").find("error: invalid decimal literal"), std::string::npos);
  EXPECT_NE(lexError("1.5e+").find("error: invalid decimal literal"), std::string::npos);
  // A dot after a name is an attribute access, not a float.
  EXPECT_EQ(dump("a.b 1 .x"), "a . b int:1 . x NL END");
}

TEST(Lexer, StringLiterals) {
  EXPECT_EQ(dump(R"(x = 'a' "b" 'it''s')"), "x = str:a str:b str:it str:s NL END");
  std::vector<Token> toks = lex(R"("\n\t\\\'\"\x41\101\u00e9\U0001F600\q" r'\n\'' b'x' f"{y}" Rb"\d")");
  ASSERT_EQ(toks.size(), 7u);
  EXPECT_EQ(toks[0].stringValue, "\n\t\\'\"AA\xC3\xA9\xF0\x9F\x98\x80\\q");
  EXPECT_EQ(toks[1].stringValue, "\\n\\'");
  EXPECT_EQ(toks[2].stringValue, "x");
  EXPECT_EQ(toks[3].stringValue, "{y}"); // f-strings are plain strings
  EXPECT_EQ(toks[4].stringValue, "\\d");
  EXPECT_EQ(toks[0].kind, TokenKind::String);
}

TEST(Lexer, TripleQuotedStrings) {
  std::vector<Token> toks = lex("s = \"\"\"one\n  'two' \"\n\"\"\"\nt = '''a\\\nb'''\n");
  ASSERT_EQ(toks.size(), 9u);
  EXPECT_EQ(toks[2].stringValue, "one\n  'two' \"\n");
  EXPECT_EQ(toks[3].kind, TokenKind::Newline);
  EXPECT_EQ(toks[4].loc.line, 4u); // line counting continues after the string
  EXPECT_EQ(toks[6].stringValue, "ab"); // backslash-newline is removed
}

TEST(Lexer, StringErrors) {
  EXPECT_EQ(lexError("x = 'abc\ny = 2\n"),
            "k.py:1:5: error: unterminated string literal (detected at line 1)\n"
            "x = 'abc\n"
            "    ^");
  EXPECT_EQ(lexError("x = 1\ny = \"\"\"abc\n\nz"),
            "k.py:2:5: error: unterminated triple-quoted string literal (detected at line 4)\n"
            "y = \"\"\"abc\n"
            "    ^");
  EXPECT_EQ(lexError("s = 'a\\x4'"),
            "k.py:1:7: error: truncated \\xXX escape\n"
            "s = 'a\\x4'\n"
            "      ^");
  EXPECT_NE(lexError("'\\N{DASH}'").find("unsupported escape sequence"), std::string::npos);
}

TEST(Lexer, Operators) {
  const char *ops[] = {"**", "//", "<<", ">>", "->", "+=", "-=", "*=", "/=", "//=", "%=",
                       "**=", "<<=", ">>=", "&=", "|=", "^=", "@=", "@", "<=", ">=", "==",
                       "!=", "~", "+", "-", "*", "/", "%", "&", "|", "^", "<", ">", ",",
                       ":", ".", ";", "=", "..."};
  std::string text;
  for (const char *op : ops)
    text += std::string(op) + " ";
  std::vector<Token> toks = lex(text);
  ASSERT_EQ(toks.size(), std::size(ops) + 2);
  for (size_t i = 0; i < std::size(ops); ++i) {
    EXPECT_EQ(toks[i].kind, TokenKind::Op);
    EXPECT_EQ(toks[i].text, ops[i]);
  }
  // Longest match without spaces.
  EXPECT_EQ(dump("a**=b//c<<=d->e"), "a **= b // c <<= d -> e NL END");
}

TEST(Lexer, Locations) {
  std::vector<Token> toks = lex("def f(x):\n    return x  # c\n");
  // def f ( x ) : NL INDENT return x NL DEDENT END
  ASSERT_EQ(toks.size(), 13u);
  EXPECT_EQ(toks[1].loc.line, 1u);
  EXPECT_EQ(toks[1].loc.col, 5u);
  EXPECT_EQ(toks[6].kind, TokenKind::Newline);
  EXPECT_EQ(toks[6].loc.col, 10u);
  EXPECT_EQ(toks[7].kind, TokenKind::Indent);
  EXPECT_EQ(toks[7].loc.line, 2u);
  EXPECT_EQ(toks[7].loc.col, 5u);
  EXPECT_EQ(toks[9].loc.col, 12u);
  EXPECT_EQ(toks[12].kind, TokenKind::End);
  EXPECT_EQ(toks[12].loc.line, 3u);
}

TEST(Lexer, ColumnsCountCharactersNotBytes) {
  std::vector<Token> toks = lex("s = \"\xC3\xA9\xE2\x82\xAC\"; x\n");
  ASSERT_EQ(toks.size(), 7u);
  EXPECT_EQ(toks[4].text, "x");
  EXPECT_EQ(toks[4].loc.col, 11u);
}

TEST(Lexer, FirstLineOffsetsLocations) {
  std::vector<Token> toks = tokenize(makeFile("a\nb\n", 40));
  EXPECT_EQ(toks[0].loc.line, 40u);
  EXPECT_EQ(toks[2].loc.line, 41u);
  EXPECT_EQ(lexError("x = 1\ny = $\n", 40),
            "k.py:41:5: error: invalid character '$'\n"
            "y = $\n"
            "    ^");
}

TEST(Lexer, InvalidCharacters) {
  EXPECT_EQ(lexError("x = a ? b\n"),
            "k.py:1:7: error: invalid character '?'\n"
            "x = a ? b\n"
            "      ^");
  EXPECT_NE(lexError("x = \xE2\x82\xAC\n").find("1:5: error: invalid character '\xE2\x82\xAC' (U+20AC)"),
            std::string::npos);
  EXPECT_NE(lexError("x\x01").find("1:2: error: invalid non-printable character U+0001"), std::string::npos);
  EXPECT_NE(lexError("x \xFF").find("1:3: error: invalid UTF-8 byte 0xFF"), std::string::npos);
  // Invisible characters are named by number, as Python does, not printed.
  EXPECT_NE(lexError("x =\xC2\xA0" "1\n").find("1:4: error: invalid non-printable character U+00A0"),
            std::string::npos);
  EXPECT_NE(lexError("x = 1\xE2\x80\x8B\n").find("1:6: error: invalid non-printable character U+200B"),
            std::string::npos);
  EXPECT_NE(lexError("x !").find("1:3: error: invalid character '!'"), std::string::npos);
}

TEST(Lexer, NulBytesAreRejectedFirst) {
  // Reported before the syntax error on line 1, with the NUL shown as a space.
  EXPECT_EQ(lexError(std::string("x = = 1\ns = 'a\0b'\n", 18)),
            "k.py:2:7: error: source code cannot contain null bytes\n"
            "s = 'a b'\n"
            "      ^");
}

TEST(Lexer, ByteOrderMarkAtTheStartIsSkipped) {
  EXPECT_EQ(dump("\xEF\xBB\xBFx = 1\n"), "x = int:1 NL END");
  std::vector<Token> toks = lex("\xEF\xBB\xBF  x\n");
  EXPECT_EQ(toks[0].kind, TokenKind::Indent); // the mark is no indentation either
  EXPECT_EQ(toks[1].loc.col, 3u);
  // Columns do not count it, and the quoted line does not show it.
  EXPECT_EQ(lexError("\xEF\xBB\xBFx = $\n"),
            "k.py:1:5: error: invalid character '$'\n"
            "x = $\n"
            "    ^");
}

TEST(Lexer, ByteOrderMarkElsewhereIsAnError) {
  EXPECT_EQ(lexError("x = 1\n\xEF\xBB\xBFy = 2\n"),
            "k.py:2:1: error: invalid non-printable character U+FEFF\n"
            "\xEF\xBB\xBFy = 2\n"
            "^");
}

TEST(Lexer, TextThatIsNotUtf8IsAnErrorEvenInAComment) {
  // Python refuses such a file; the whole text is checked before the first
  // token (the syntax error on line 1 comes later), and the quoted line
  // shows the bad bytes as '?' so that the message is UTF-8.
  EXPECT_EQ(lexError("x = = 1\ny = 2  # caf\xE9 \xFF\n"),
            "k.py:2:13: error: invalid UTF-8 byte 0xE9: a kernel file must be UTF-8, as Python source is\n"
            "y = 2  # caf? ?\n"
            "            ^");
  EXPECT_NE(lexError("s = 'a\x80'\n").find("1:7: error: invalid UTF-8 byte 0x80"), std::string::npos);
  EXPECT_NE(lexError("# \xC0\x80\n").find("1:3: error: invalid UTF-8 byte 0xC0"), std::string::npos); // overlong
  EXPECT_NE(lexError("# \xED\xA0\x80\n").find("1:3: error: invalid UTF-8 byte 0xED"),
            std::string::npos); // a surrogate
  EXPECT_NE(lexError("# \xE2\x82\n").find("1:3: error: invalid UTF-8 byte 0xE2"), std::string::npos); // cut
  EXPECT_EQ(dump("# caf\xC3\xA9 \xF0\x9F\x98\x80\nx\n"), "x NL END");
}

TEST(Lexer, BracketErrors) {
  EXPECT_EQ(lexError("x = f(1, [2, 3)\n"),
            "k.py:1:15: error: closing parenthesis ')' does not match opening parenthesis '['\n"
            "x = f(1, [2, 3)\n"
            "              ^");
  EXPECT_EQ(lexError("x = (1,\n2]\n"),
            "k.py:2:2: error: closing parenthesis ']' does not match opening parenthesis '(' on "
            "line 1\n"
            "2]\n"
            " ^");
  EXPECT_EQ(lexError("x = 1)\n"),
            "k.py:1:6: error: unmatched ')'\n"
            "x = 1)\n"
            "     ^");
  EXPECT_EQ(lexError("x = f(a,\n  [b\n"),
            "k.py:2:3: error: '[' was never closed\n"
            "  [b\n"
            "  ^");
}

TEST(Lexer, EndIsRepeated) {
  SourceFile file = makeFile("x");
  Lexer lexer(file);
  EXPECT_EQ(lexer.next().kind, TokenKind::Name);
  EXPECT_EQ(lexer.next().kind, TokenKind::Newline);
  EXPECT_EQ(lexer.next().kind, TokenKind::End);
  EXPECT_EQ(lexer.next().kind, TokenKind::End);
}

TEST(Lexer, Describe) {
  std::vector<Token> toks = lex("x if 3 '+' +");
  EXPECT_EQ(describe(toks[0]), "name 'x'");
  EXPECT_EQ(describe(toks[1]), "keyword 'if'");
  EXPECT_EQ(describe(toks[2]), "integer literal 3");
  EXPECT_EQ(describe(toks[3]), "string literal");
  EXPECT_EQ(describe(toks[4]), "'+'");
  EXPECT_EQ(describe(toks[5]), "newline");
  EXPECT_EQ(describe(toks[6]), "end of file");
}
