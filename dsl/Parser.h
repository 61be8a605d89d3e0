// The recursive-descent parser (internal to the front-end; the public entry
// point is ast::parseModule in AST.h). The approach is described at the top of
// Parser.cpp; statements are parsed there, expressions in ParseExpr.cpp.
#pragma once

#include "dsl/AST.h"
#include "dsl/Lexer.h"

#include <deque>
#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace tessera::ast {

class Parser {
public:
  // Deepest nesting of expressions (parentheses, calls, unary operators, and
  // the height of the expression tree, where a chain a+b+c+... does not count)
  // and of statement blocks (indentation, elif chains).
  static constexpr unsigned kMaxExprDepth = 200;
  static constexpr unsigned kMaxBlockDepth = 200;
  // Most binary operators in one chain: more than Python 3.11 compiles (about
  // 3000); the optimiser's time grows faster than linearly with the chain.
  static constexpr unsigned kMaxChainLength = 5000;

  explicit Parser(std::shared_ptr<const SourceFile> file, bool recoverFunctionBodies = false);
  Module parseModule();

private:
  // ---- tokens (Parser.cpp)
  const Token &tok(size_t ahead = 0);
  Token take();
  bool isOp(std::string_view op, size_t ahead = 0) { return tok(ahead).isOp(op); }
  bool isKeyword(std::string_view kw, size_t ahead = 0) { return tok(ahead).isKeyword(kw); }
  bool acceptOp(std::string_view op);
  void expectOp(std::string_view op, std::string_view message);
  std::string expectName(std::string_view message);
  bool startsExpression(const Token &t) const;
  [[noreturn]] void error(SourceLoc loc, std::string_view message) const;
  [[noreturn]] void unsupported(SourceLoc loc, std::string_view what) const;

  // Counts recursion; throws `message` at the current token past `limit`.
  struct DepthGuard {
    DepthGuard(Parser &p, unsigned &counter, unsigned limit, const char *message);
    ~DepthGuard() { --depth; }
    unsigned &depth;
  };

  // ---- statements (Parser.cpp)
  void parseStatement(Body &out);
  void parseSimpleStatements(Body &out);
  StmtPtr parseSimpleStatement();
  StmtPtr parseExprStatement();
  StmtPtr parseReturn();
  StmtPtr parseAssert();
  StmtPtr parseRaise();
  StmtPtr parseImport();
  StmtPtr parseImportFrom();
  std::string parseDottedName();
  StmtPtr parseIf();
  StmtPtr parseFor();
  StmtPtr parseWhile();
  StmtPtr parseTry();
  StmtPtr parseDecorated();
  StmtPtr parseFunctionDef(std::vector<ExprPtr> decorators);
  void parseParams(FunctionDef &def);
  void parseBlock(Body &out, const std::string &after);
  void parseElse(Body &out);
  ExprPtr parseTargetList();
  void checkTarget(const Expr &target) const;
  void checkAugTarget(const Expr &target) const;

  // ---- expressions (ParseExpr.cpp)
  ExprPtr parseStarExpressions();
  ExprPtr parseStarItem();
  ExprPtr parseExpression();
  ExprPtr parseDisjunction();
  ExprPtr parseConjunction();
  ExprPtr parseInversion();
  ExprPtr parseComparison();
  ExprPtr parseBitOr();
  ExprPtr parseBitXor();
  ExprPtr parseBitAnd();
  ExprPtr parseShift();
  ExprPtr parseSum();
  ExprPtr parseTerm();
  ExprPtr parseFactor();
  ExprPtr parsePower();
  ExprPtr parsePrimary();
  ExprPtr parseAtom();
  ExprPtr parseParenthesized();
  ExprPtr parseList();
  ExprPtr parseStrings();
  ExprPtr parseCall(ExprPtr func);
  ExprPtr parseSubscript(ExprPtr value);
  ExprPtr parseSliceItem();
  using Operand = ExprPtr (Parser::*)();
  ExprPtr parseBinaryLevel(Operand operand,
                           std::initializer_list<std::pair<std::string_view, BinaryOp>> ops);

  // Records the height of a freshly built node (1 + its tallest child) and
  // rejects trees taller than kMaxExprDepth.
  ExprPtr finish(ExprPtr node);
  unsigned heightOf(const Expr *e) const;

  std::shared_ptr<const SourceFile> file_;
  Lexer lexer_;
  std::deque<Token> tokens_; // tokens_[0] is the current token
  unsigned exprDepth_ = 0;
  unsigned blockDepth_ = 0;
  unsigned functionDepth_ = 0; // inside a def: `try` is not part of the kernel language
  bool recoverFunctionBodies_ = false;
  // After an error in a top-level function's body: the tokens up to the next top-level statement.
  void skipToTopLevelStatement();
  StmtPtr skipHostStatement();
  std::unordered_map<const Expr *, unsigned> heights_;
  std::unordered_map<const Expr *, unsigned> chainLengths_; // BinOps: operators down the lhs links
};

// Short descriptions for "cannot assign to ..." messages: "function call", ...
const char *describeForAssignment(const Expr &e);

} // namespace tessera::ast
