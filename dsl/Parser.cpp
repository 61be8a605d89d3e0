// The parser: Python source text (the kernel subset) -> ast::Module.
//
// How it works
// ------------
// This is a hand-written recursive-descent parser in the style of chibicc:
// one function per grammar rule, with the rule written in a comment above
// the function (a simplified form of CPython's PEG grammar). Each function
// looks at the current token, consumes what its rule matches, builds the
// node and returns it. Operator precedence is encoded by the chain of
// rules: expression -> disjunction (or) -> conjunction (and) -> inversion
// (not) -> comparison -> | -> ^ -> & -> shifts -> + - -> * / // % @ ->
// unary -> ** -> primary -> atom. Left-associative levels loop; `**` and the
// unary operators recurse to the right.
//
// Tokens come lazily from the Lexer (Lexer.h), which already turned the
// indentation into INDENT/DEDENT tokens and logical lines into NEWLINE
// tokens, so statements are parsed exactly like any other tokens. Because
// tokens are produced on demand, the first error in source order is the one
// reported, lexical or syntactic. The parser needs at most two tokens of
// lookahead (`name =` in a call's arguments, `not in`, `is not`).
//
// Errors: the front-end stops at the first error. Every error names the
// exact location of the offending token (or of the offending expression,
// for "cannot assign to ..."), with a message in the spirit of CPython's:
// "expected ':'", "expected an expression", "invalid syntax", "unexpected
// indent", "expected an indented block after 'if' statement on line 3".
// Python constructs outside the kernel subset (class, with, try, lambda,
// comprehensions, star-args, ...) are recognised and rejected with
// "unsupported construct: ..." at their first token; `try` only at module level
// (where libraries pick their imports with it).
//
// Locations: every node carries the location of its first token, with two
// conventions: a parenthesised expression keeps the location of the
// expression inside (parentheses make no node), so a BinOp, Compare, BoolOp,
// Call, Attribute or Subscript is located at the start of its left-most
// operand (`(a + b) * c` is located at `a`); a FunctionDef is located at its
// `def` keyword, not at its first decorator. An assignment is located at its
// first target; a parenthesised tuple at its '('.
//
// Robustness: the parser must never crash or overflow the stack, whatever the
// input (see tests/fuzz). Expression recursion (parentheses, calls,
// subscripts, unary operators, `**`, conditional expressions) is limited to
// kMaxExprDepth levels, and so is the height of every expression tree, which
// bounds the chains of attributes, calls and subscripts that are built by
// loops; both report "expression nested too deeply". A chain of binary
// operators (`1+1+...+1`) is not nesting: every walk of the tree follows a
// BinOp's left operands in a loop (binOpSpine, AST.h), so only its right
// operands count towards the height; a chain may have kMaxChainLength
// operators ("expression too long"), more than Python 3.11 compiles.
// Blocks nest at most 100 deep (the
// lexer's indentation limit) and elif chains count as nesting too
// ("too many statically nested blocks"), so every later recursive walk of the
// tree (printer, specialiser, destructors) stays shallow.
#include "dsl/Parser.h"

#include <algorithm>

namespace tessera::ast {

Parser::Parser(std::shared_ptr<const SourceFile> file, bool recoverFunctionBodies)
    : file_(std::move(file)), lexer_(*file_), recoverFunctionBodies_(recoverFunctionBodies) {}

// ------------------------------------------------------------------ tokens

const Token &Parser::tok(size_t ahead) {
  while (tokens_.size() <= ahead)
    tokens_.push_back(lexer_.next());
  return tokens_[ahead];
}

Token Parser::take() {
  tok();
  Token t = std::move(tokens_.front());
  tokens_.pop_front();
  return t;
}

bool Parser::acceptOp(std::string_view op) {
  if (!isOp(op))
    return false;
  take();
  return true;
}

void Parser::expectOp(std::string_view op, std::string_view message) {
  if (!acceptOp(op))
    error(tok().loc, message);
}

std::string Parser::expectName(std::string_view message) {
  if (tok().kind != TokenKind::Name)
    error(tok().loc, message);
  return take().text;
}

// Whether `t` can begin an expression (including the constructs that the
// expression parser recognises only to reject them).
bool Parser::startsExpression(const Token &t) const {
  switch (t.kind) {
  case TokenKind::Name:
  case TokenKind::Int:
  case TokenKind::Float:
  case TokenKind::String:
    return true;
  case TokenKind::Keyword:
    return t.text == "not" || t.text == "True" || t.text == "False" || t.text == "None" ||
           t.text == "lambda" || t.text == "await" || t.text == "yield";
  case TokenKind::Op:
    return t.text == "(" || t.text == "[" || t.text == "{" || t.text == "-" || t.text == "+" ||
           t.text == "~" || t.text == "..." || t.text == "*";
  default:
    return false;
  }
}

void Parser::error(SourceLoc loc, std::string_view message) const {
  raiseError(*file_, loc, message);
}

void Parser::unsupported(SourceLoc loc, std::string_view what) const {
  error(loc, "unsupported construct: " + std::string(what));
}

Parser::DepthGuard::DepthGuard(Parser &p, unsigned &counter, unsigned limit, const char *message)
    : depth(counter) {
  if (++depth > limit) {
    --depth;
    p.error(p.tok().loc, message);
  }
}

// -------------------------------------------------------------- statements

// file: statement* END
Module Parser::parseModule() {
  Module module;
  module.file = file_;
  while (tok().kind != TokenKind::End)
    parseStatement(module.body);
  return module;
}

// statement: compound_stmt | simple_stmts
// compound_stmt: if_stmt | for_stmt | while_stmt | function_def
void Parser::parseStatement(Body &out) {
  const Token &t = tok();
  if (t.kind == TokenKind::Indent)
    error(t.loc, "unexpected indent");
  if (t.kind == TokenKind::Keyword) {
    if (t.text == "if") {
      out.push_back(parseIf());
      return;
    }
    if (t.text == "for") {
      out.push_back(parseFor());
      return;
    }
    if (t.text == "while") {
      out.push_back(parseWhile());
      return;
    }
    if (t.text == "def") {
      out.push_back(parseFunctionDef({}));
      return;
    }
    if (t.text == "try" && functionDepth_ == 0) {
      out.push_back(parseTry());
      return;
    }
    if (t.text == "class" || t.text == "with" || t.text == "try" || t.text == "async") {
      if (recoverFunctionBodies_ && functionDepth_ == 0) { // module level, in an `if` or `try` too
        out.push_back(skipHostStatement());
        return;
      }
      unsupported(t.loc, "'" + t.text + "'");
    }
  }
  if (t.isOp("@")) {
    out.push_back(parseDecorated());
    return;
  }
  parseSimpleStatements(out);
}

// simple_stmts: simple_stmt (';' simple_stmt)* [';'] NEWLINE
void Parser::parseSimpleStatements(Body &out) {
  out.push_back(parseSimpleStatement());
  while (acceptOp(";")) {
    if (tok().kind == TokenKind::Newline)
      break;
    out.push_back(parseSimpleStatement());
  }
  if (tok().kind != TokenKind::Newline)
    error(tok().loc, "invalid syntax");
  take();
}

// simple_stmt: 'pass' | 'break' | 'continue' | return_stmt | assert_stmt | raise_stmt
//            | import_name | import_from | expr_stmt
StmtPtr Parser::parseSimpleStatement() {
  const Token &t = tok();
  if (t.kind == TokenKind::Keyword) {
    SourceLoc loc = t.loc;
    if (t.text == "pass") {
      take();
      return std::make_unique<Pass>(loc);
    }
    if (t.text == "break") {
      take();
      return std::make_unique<Break>(loc);
    }
    if (t.text == "continue") {
      take();
      return std::make_unique<Continue>(loc);
    }
    if (t.text == "return")
      return parseReturn();
    if (t.text == "assert")
      return parseAssert();
    if (t.text == "import")
      return parseImport();
    if (t.text == "from")
      return parseImportFrom();
    if (t.text == "raise")
      return parseRaise();
    if (t.text == "global" || t.text == "nonlocal" || t.text == "del" ||
        t.text == "class" || t.text == "with" || t.text == "try" || t.text == "async")
      unsupported(loc, "'" + t.text + "'");
  }
  if (!startsExpression(t))
    error(t.loc, "invalid syntax");
  return parseExprStatement();
}

// expr_stmt: star_expressions
//          | single_target ':' expression ['=' star_expressions]
//          | (star_targets '=')+ star_expressions
//          | single_target augassign star_expressions
// augassign: '+=' | '-=' | '*=' | '@=' | '/=' | '//=' | '%=' | '**=' | '<<='
//          | '>>=' | '&=' | '|=' | '^='
StmtPtr Parser::parseExprStatement() {
  ExprPtr first = parseStarExpressions();
  SourceLoc loc = first->loc;

  if (isOp(":")) {
    if (first->kind == ExprKind::Tuple || first->kind == ExprKind::List)
      error(first->loc, first->kind == ExprKind::Tuple
                            ? "only single target (not tuple) can be annotated"
                            : "only single target (not list) can be annotated");
    if (first->kind != ExprKind::Name && first->kind != ExprKind::Attribute &&
        first->kind != ExprKind::Subscript)
      error(first->loc, "illegal target for annotation");
    take();
    auto node = std::make_unique<AnnAssign>(loc);
    node->target = std::move(first);
    node->annotation = parseExpression();
    if (acceptOp("="))
      node->value = parseStarExpressions();
    return node;
  }

  static const std::pair<std::string_view, BinaryOp> kAugOps[] = {
      {"+=", BinaryOp::Add},     {"-=", BinaryOp::Sub},     {"*=", BinaryOp::Mul},
      {"@=", BinaryOp::MatMul},  {"/=", BinaryOp::Div},     {"//=", BinaryOp::FloorDiv},
      {"%=", BinaryOp::Mod},     {"**=", BinaryOp::Pow},    {"<<=", BinaryOp::LShift},
      {">>=", BinaryOp::RShift}, {"&=", BinaryOp::BitAnd},  {"|=", BinaryOp::BitOr},
      {"^=", BinaryOp::BitXor},
  };
  for (auto &[spelling, op] : kAugOps) {
    if (!isOp(spelling))
      continue;
    checkAugTarget(*first);
    take();
    ExprPtr value = parseStarExpressions();
    return std::make_unique<AugAssign>(loc, std::move(first), op, std::move(value));
  }

  if (!isOp("="))
    return std::make_unique<ExprStmt>(loc, std::move(first));
  auto node = std::make_unique<Assign>(loc);
  node->targets.push_back(std::move(first));
  while (acceptOp("="))
    node->targets.push_back(parseStarExpressions());
  node->value = std::move(node->targets.back());
  node->targets.pop_back();
  for (const ExprPtr &target : node->targets)
    checkTarget(*target);
  return node;
}

const char *describeForAssignment(const Expr &e) {
  switch (e.kind) {
  case ExprKind::Call: return "function call";
  case ExprKind::Constant:
    switch (static_cast<const Constant &>(e).type) {
    case Constant::Type::Bool: return static_cast<const Constant &>(e).intValue ? "True" : "False";
    case Constant::Type::None: return "None";
    default: return "literal";
    }
  case ExprKind::Compare: return "comparison";
  case ExprKind::IfExp: return "conditional expression";
  case ExprKind::Tuple: return "tuple";
  case ExprKind::List: return "list";
  case ExprKind::Name: return "name";
  case ExprKind::Attribute: return "attribute";
  case ExprKind::Subscript: return "subscript";
  case ExprKind::Slice: return "slice";
  default: return "expression";
  }
}

// target: NAME | primary '.' NAME | primary '[' slices ']' | '(' targets ')' | '[' targets ']'
void Parser::checkTarget(const Expr &target) const {
  switch (target.kind) {
  case ExprKind::Name:
  case ExprKind::Attribute:
  case ExprKind::Subscript:
    return;
  case ExprKind::Tuple:
    for (const ExprPtr &elt : static_cast<const Tuple &>(target).elts)
      checkTarget(*elt);
    return;
  case ExprKind::List:
    for (const ExprPtr &elt : static_cast<const List &>(target).elts)
      checkTarget(*elt);
    return;
  default:
    error(target.loc, std::string("cannot assign to ") + describeForAssignment(target));
  }
}

// single_target: NAME | primary '.' NAME | primary '[' slices ']'
void Parser::checkAugTarget(const Expr &target) const {
  if (target.kind == ExprKind::Name || target.kind == ExprKind::Attribute ||
      target.kind == ExprKind::Subscript)
    return;
  error(target.loc, std::string("'") + describeForAssignment(target) +
                        "' is an illegal expression for augmented assignment");
}

// return_stmt: 'return' [star_expressions]
StmtPtr Parser::parseReturn() {
  SourceLoc loc = take().loc;
  ExprPtr value;
  if (startsExpression(tok()))
    value = parseStarExpressions();
  return std::make_unique<Return>(loc, std::move(value));
}

// assert_stmt: 'assert' expression [',' expression]
StmtPtr Parser::parseAssert() {
  auto node = std::make_unique<Assert>(take().loc);
  node->cond = parseExpression();
  if (acceptOp(","))
    node->msg = parseExpression();
  return node;
}

// raise_stmt: 'raise' [expression ['from' expression]]
StmtPtr Parser::parseRaise() {
  auto node = std::make_unique<Raise>(take().loc);
  if (startsExpression(tok())) {
    node->exc = parseExpression();
    if (tok().kind == TokenKind::Keyword && tok().text == "from") {
      take();
      parseExpression(); // the cause: not needed for the error the statement becomes
    }
  }
  return node;
}

// dotted_name: NAME ('.' NAME)*
std::string Parser::parseDottedName() {
  std::string name = expectName("expected a module name");
  while (acceptOp("."))
    name += "." + expectName("expected a name after '.'");
  return name;
}

// import_name: 'import' dotted_as_name (',' dotted_as_name)*
// dotted_as_name: dotted_name ['as' NAME]
StmtPtr Parser::parseImport() {
  auto node = std::make_unique<Import>(take().loc);
  do {
    Import::Alias alias;
    alias.module = parseDottedName();
    if (isKeyword("as")) {
      take();
      alias.asName = expectName("expected a name after 'as'");
    }
    node->names.push_back(std::move(alias));
  } while (acceptOp(","));
  return node;
}

// import_from: 'from' ('.' | '...')* dotted_name 'import' import_from_targets
//            | 'from' ('.' | '...')+ 'import' import_from_targets
// import_from_targets: '(' import_as_names [','] ')' | import_as_names | '*'
// import_as_names: NAME ['as' NAME] (',' NAME ['as' NAME])*
StmtPtr Parser::parseImportFrom() {
  auto node = std::make_unique<ImportFrom>(take().loc);
  for (;;) {
    if (acceptOp("."))
      node->module += ".";
    else if (acceptOp("..."))
      node->module += "...";
    else
      break;
  }
  if (!isKeyword("import") || node->module.empty())
    node->module += parseDottedName();
  if (!isKeyword("import"))
    error(tok().loc, "expected 'import'");
  take();
  if (acceptOp("*")) {
    node->names.push_back({"*", ""});
    return node;
  }
  bool parenthesized = acceptOp("(");
  do {
    if (parenthesized && isOp(")") && !node->names.empty())
      break; // trailing comma
    ImportFrom::Alias alias;
    alias.name = expectName("expected a name to import");
    if (isKeyword("as")) {
      take();
      alias.asName = expectName("expected a name after 'as'");
    }
    node->names.push_back(std::move(alias));
  } while (acceptOp(","));
  if (parenthesized)
    expectOp(")", "expected ',' or ')'");
  return node;
}

// block: NEWLINE INDENT statement+ DEDENT | simple_stmts
// `after` names the owner for the error message: "'if' statement on line 3".
void Parser::parseBlock(Body &out, const std::string &after) {
  DepthGuard guard(*this, blockDepth_, kMaxBlockDepth, "too many statically nested blocks");
  if (tok().kind != TokenKind::Newline) {
    parseSimpleStatements(out);
    return;
  }
  take();
  if (tok().kind != TokenKind::Indent)
    error(tok().loc, "expected an indented block after " + after);
  take();
  while (tok().kind != TokenKind::Dedent && tok().kind != TokenKind::End)
    parseStatement(out);
  take();
}

// else_block: 'else' ':' block
void Parser::parseElse(Body &out) {
  Token kw = take();
  expectOp(":", "expected ':'");
  parseBlock(out, "'else' statement on line " + std::to_string(kw.loc.line));
}

// if_stmt: 'if' expression ':' block (elif_stmt | [else_block])
// elif_stmt: 'elif' expression ':' block (elif_stmt | [else_block])
// An elif becomes an If nested in the orelse of the previous one.
StmtPtr Parser::parseIf() {
  Token kw = take();
  auto node = std::make_unique<If>(kw.loc);
  node->cond = parseExpression();
  expectOp(":", "expected ':'");
  parseBlock(node->body, "'" + kw.text + "' statement on line " + std::to_string(kw.loc.line));
  if (isKeyword("elif")) {
    DepthGuard guard(*this, blockDepth_, kMaxBlockDepth, "too many statically nested blocks");
    node->orelse.push_back(parseIf());
  }
  else if (isKeyword("else"))
    parseElse(node->orelse);
  return node;
}

// star_targets: target (',' target)* [',']
// A target is parsed as a bitwise_or expression (so that `in` is left for
// the for statement) and then checked to be assignable.
ExprPtr Parser::parseTargetList() {
  SourceLoc loc = tok().loc;
  if (isOp("*"))
    unsupported(loc, "starred expression");
  ExprPtr first = parseBitOr();
  if (!isOp(",")) {
    checkTarget(*first);
    return first;
  }
  auto tuple = std::make_unique<Tuple>(loc);
  tuple->elts.push_back(std::move(first));
  while (acceptOp(",") && startsExpression(tok())) {
    if (isOp("*"))
      unsupported(tok().loc, "starred expression");
    tuple->elts.push_back(parseBitOr());
  }
  checkTarget(*tuple);
  return finish(std::move(tuple));
}

// for_stmt: 'for' star_targets 'in' star_expressions ':' block [else_block]
StmtPtr Parser::parseFor() {
  Token kw = take();
  auto node = std::make_unique<For>(kw.loc);
  node->target = parseTargetList();
  if (!isKeyword("in"))
    error(tok().loc, "expected 'in'");
  take();
  node->iter = parseStarExpressions();
  expectOp(":", "expected ':'");
  parseBlock(node->body, "'for' statement on line " + std::to_string(kw.loc.line));
  if (isKeyword("else"))
    parseElse(node->orelse);
  return node;
}

// while_stmt: 'while' expression ':' block [else_block]
StmtPtr Parser::parseWhile() {
  Token kw = take();
  auto node = std::make_unique<While>(kw.loc);
  node->cond = parseExpression();
  expectOp(":", "expected ':'");
  parseBlock(node->body, "'while' statement on line " + std::to_string(kw.loc.line));
  if (isKeyword("else"))
    parseElse(node->orelse);
  return node;
}

// try_stmt: 'try' ':' block except_block+ [else_block] [finally_block]
//         | 'try' ':' block finally_block
// except_block: 'except' [expression ['as' NAME]] ':' block
// finally_block: 'finally' ':' block
StmtPtr Parser::parseTry() {
  Token kw = take();
  auto node = std::make_unique<Try>(kw.loc);
  expectOp(":", "expected ':'");
  parseBlock(node->body, "'try' statement on line " + std::to_string(kw.loc.line));
  while (isKeyword("except")) {
    Token ex = take();
    Try::Handler handler;
    handler.loc = ex.loc;
    if (!isOp(":")) {
      handler.type = parseExpression();
      if (isKeyword("as")) {
        take();
        handler.name = expectName("expected a name after 'as'");
      }
    }
    expectOp(":", "expected ':'");
    parseBlock(handler.body, "'except' statement on line " + std::to_string(ex.loc.line));
    node->handlers.push_back(std::move(handler));
  }
  if (!node->handlers.empty() && isKeyword("else")) parseElse(node->orelse);
  if (isKeyword("finally")) {
    Token fin = take();
    expectOp(":", "expected ':'");
    parseBlock(node->finalbody, "'finally' statement on line " + std::to_string(fin.loc.line));
  } else if (node->handlers.empty()) {
    error(tok().loc, "expected 'except' or 'finally' block");
  }
  return node;
}

// decorated: ('@' expression NEWLINE)+ function_def
StmtPtr Parser::parseDecorated() {
  std::vector<ExprPtr> decorators;
  while (acceptOp("@")) {
    decorators.push_back(parseExpression());
    if (tok().kind != TokenKind::Newline)
      error(tok().loc, "invalid syntax");
    take();
  }
  const Token &t = tok();
  if (t.isKeyword("class") || t.isKeyword("async")) {
    // A decorated class at module level (a @dataclass, a @triton_op wrapper's class): host code, skipped
    // as an undecorated one is.
    if (recoverFunctionBodies_ && functionDepth_ == 0) return skipHostStatement();
    unsupported(t.loc, "'" + t.text + "'");
  }
  if (!t.isKeyword("def"))
    error(t.loc, "expected 'def' after decorator");
  return parseFunctionDef(std::move(decorators));
}

// function_def: 'def' NAME '(' [params] ')' ['->' expression] ':' block
StmtPtr Parser::parseFunctionDef(std::vector<ExprPtr> decorators) {
  Token kw = take();
  auto node = std::make_unique<FunctionDef>(kw.loc);
  node->decorators = std::move(decorators);
  node->name = expectName("expected a function name");
  expectOp("(", "expected '('");
  parseParams(*node);
  if (acceptOp("->"))
    node->returns = parseExpression();
  expectOp(":", "expected ':'");
  const bool topLevel = functionDepth_ == 0 && blockDepth_ == 0;
  ++functionDepth_;
  if (!recoverFunctionBodies_ || !topLevel) {
    parseBlock(node->body, "function definition on line " + std::to_string(kw.loc.line));
    --functionDepth_;
    return node;
  }
  try {
    parseBlock(node->body, "function definition on line " + std::to_string(kw.loc.line));
  } catch (const CompileError &e) {
    node->body.clear();
    node->parseError = e.what();
    node->parseErrorLoc = e.loc();
    skipToTopLevelStatement();
  }
  functionDepth_ = 0; // nested defs the error left open
  return node;
}

// A module-level class, with or async statement (a library's host code beside its kernels, as
// GPTQModel's autograd Function, or a dataclass in the kernel's own file), at the top or inside a
// module-level `if` / `try`: kept as an empty FunctionDef of the name it defines, if any, whose
// error is raised where a kernel uses that name, and skipped (its header line and indented block).
StmtPtr Parser::skipHostStatement() {
  const Token kw = take();
  auto node = std::make_unique<FunctionDef>(kw.loc);
  node->skippedHostCode = true;
  if (kw.text == "class" && tok().kind == TokenKind::Name) node->name = tok().text;
  try {
    unsupported(kw.loc, "'" + kw.text + "'");
  } catch (const CompileError &e) {
    node->parseError = e.what();
    node->parseErrorLoc = e.loc();
  }
  while (tok().kind != TokenKind::Newline && tok().kind != TokenKind::End) take();
  if (tok().kind == TokenKind::Newline) take();
  if (tok().kind != TokenKind::Indent) return node; // `class A: pass`
  take();
  for (unsigned depth = 1; depth > 0 && tok().kind != TokenKind::End;) {
    if (tok().kind == TokenKind::Indent) ++depth;
    else if (tok().kind == TokenKind::Dedent) --depth;
    take();
  }
  return node;
}

void Parser::skipToTopLevelStatement() {
  bool lineStart = false;
  for (;;) {
    const Token &t = tok();
    if (t.kind == TokenKind::End) return;
    if (lineStart && t.loc.col == 1 && t.kind != TokenKind::Newline && t.kind != TokenKind::Indent &&
        t.kind != TokenKind::Dedent)
      return;
    lineStart = t.kind == TokenKind::Newline || t.kind == TokenKind::Dedent;
    take();
  }
}

// params: [param (',' param)* [',']] ')'
// param: NAME [':' expression] ['=' expression]
void Parser::parseParams(FunctionDef &def) {
  while (!isOp(")")) {
    const Token &t = tok();
    if (t.isOp("*") || t.isOp("**") || t.isOp("/"))
      unsupported(t.loc, "'" + t.text + "' in a parameter list");
    Param param;
    param.loc = t.loc;
    param.name = expectName("expected a parameter name");
    for (const Param &other : def.params)
      if (other.name == param.name)
        error(param.loc, "duplicate argument '" + param.name + "' in function definition");
    if (acceptOp(":"))
      param.annotation = parseExpression();
    if (acceptOp("="))
      param.defaultValue = parseExpression();
    else if (!def.params.empty() && def.params.back().defaultValue)
      error(param.loc, "parameter without a default follows parameter with a default");
    def.params.push_back(std::move(param));
    if (!acceptOp(","))
      break;
  }
  expectOp(")", "expected ',' or ')'");
}

Module parseModule(std::shared_ptr<const SourceFile> file, bool recoverFunctionBodies) {
  Parser parser(std::move(file), recoverFunctionBodies);
  return parser.parseModule();
}

} // namespace tessera::ast
