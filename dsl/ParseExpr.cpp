// The expression half of the parser (see the top of Parser.cpp).
//
// Precedence, loosest first:
//   a if c else b  <  or  <  and  <  not  <  comparisons (chained)  <  |  <  ^
//   <  &  <  << >>  <  + -  <  * / // % @  <  unary - + ~  <  **  <  primary
// `**` is right-associative and binds tighter than a unary operator on its
// left (-x**2 is -(x**2)) but not on its right (2**-1 is 2**(-1)).
#include "dsl/Parser.h"

#include <algorithm>
#include <optional>

namespace tessera::ast {

namespace {
constexpr const char *kTooDeep = "expression nested too deeply";
} // namespace

unsigned Parser::heightOf(const Expr *e) const {
  if (!e)
    return 0;
  auto it = heights_.find(e);
  return it == heights_.end() ? 1 : it->second;
}

ExprPtr Parser::finish(ExprPtr node) {
  unsigned h = 0;
  auto see = [&](const Expr *child) { h = std::max(h, heightOf(child)); };
  auto seeAll = [&](const std::vector<ExprPtr> &children) {
    for (const ExprPtr &c : children)
      see(c.get());
  };
  switch (node->kind) {
  case ExprKind::Name:
  case ExprKind::Constant:
    break;
  case ExprKind::Attribute:
    see(static_cast<Attribute &>(*node).value.get());
    break;
  case ExprKind::Subscript:
    see(static_cast<Subscript &>(*node).value.get());
    seeAll(static_cast<Subscript &>(*node).indices);
    break;
  case ExprKind::Slice: {
    auto &s = static_cast<Slice &>(*node);
    see(s.lower.get());
    see(s.upper.get());
    see(s.step.get());
    break;
  }
  case ExprKind::Call: {
    auto &c = static_cast<Call &>(*node);
    see(c.func.get());
    seeAll(c.args);
    for (const Keyword &k : c.keywords)
      see(k.value.get());
    break;
  }
  case ExprKind::BinOp: {
    // The left operand of a binary operator may be another one without
    // counting as nesting: a + b + c + ... is walked as a loop (BinOp's
    // spine, AST.h), so only the right operands add height.
    auto &b = static_cast<BinOp &>(*node);
    unsigned lhs = heightOf(b.lhs.get());
    bool chained = b.lhs->kind == ExprKind::BinOp;
    h = chained ? lhs - 1 : lhs;
    see(b.rhs.get());
    unsigned length = chained ? chainLengths_[b.lhs.get()] + 1 : 1;
    if (length > kMaxChainLength)
      error(node->loc, "expression too long: more than " + std::to_string(kMaxChainLength) +
                           " binary operators in one chain (split it over several statements)");
    chainLengths_[node.get()] = length;
    break;
  }
  case ExprKind::UnaryOp:
    see(static_cast<UnaryOp &>(*node).operand.get());
    break;
  case ExprKind::BoolOp:
    seeAll(static_cast<BoolOp &>(*node).values);
    break;
  case ExprKind::Compare:
    seeAll(static_cast<Compare &>(*node).operands);
    break;
  case ExprKind::IfExp: {
    auto &i = static_cast<IfExp &>(*node);
    see(i.cond.get());
    see(i.thenValue.get());
    see(i.elseValue.get());
    break;
  }
  case ExprKind::Tuple:
    seeAll(static_cast<Tuple &>(*node).elts);
    break;
  case ExprKind::List:
    seeAll(static_cast<List &>(*node).elts);
    break;
  case ExprKind::ListComp: {
    auto &c = static_cast<ListComp &>(*node);
    see(c.elt.get());
    see(c.target.get());
    see(c.iter.get());
    seeAll(c.ifs);
    break;
  }
  case ExprKind::Starred:
    see(static_cast<Starred &>(*node).value.get());
    break;
  }
  ++h;
  if (h > kMaxExprDepth)
    error(node->loc, kTooDeep);
  if (h > 1)
    heights_[node.get()] = h;
  return node;
}

// star_expressions: star_item (',' star_item)* [',']
// A Tuple (located at its first element) when there is a comma.
ExprPtr Parser::parseStarExpressions() {
  SourceLoc loc = tok().loc;
  ExprPtr first = parseStarItem();
  if (!isOp(","))
    return first;
  auto tuple = std::make_unique<Tuple>(loc);
  tuple->elts.push_back(std::move(first));
  while (acceptOp(",") && startsExpression(tok()))
    tuple->elts.push_back(parseStarItem());
  return finish(std::move(tuple));
}

// star_item: expression      ('*' expression is recognised and rejected)
ExprPtr Parser::parseStarItem() {
  if (isOp("*"))
    unsupported(tok().loc, "starred expression");
  return parseExpression();
}

// expression: disjunction ['if' disjunction 'else' expression]
ExprPtr Parser::parseExpression() {
  DepthGuard guard(*this, exprDepth_, kMaxExprDepth, kTooDeep);
  ExprPtr e = parseDisjunction();
  if (isKeyword("if")) {
    take();
    ExprPtr cond = parseDisjunction();
    if (!isKeyword("else"))
      error(tok().loc, "expected 'else' after 'if' expression");
    take();
    ExprPtr elseValue = parseExpression();
    SourceLoc loc = e->loc;
    e = finish(std::make_unique<IfExp>(loc, std::move(cond), std::move(e), std::move(elseValue)));
  }
  if (isOp(":="))
    unsupported(tok().loc, "':='");
  return e;
}

// disjunction: conjunction ('or' conjunction)*
ExprPtr Parser::parseDisjunction() {
  ExprPtr first = parseConjunction();
  if (!isKeyword("or"))
    return first;
  auto node = std::make_unique<BoolOp>(first->loc, /*isAnd=*/false);
  node->values.push_back(std::move(first));
  while (isKeyword("or")) {
    take();
    node->values.push_back(parseConjunction());
  }
  return finish(std::move(node));
}

// conjunction: inversion ('and' inversion)*
ExprPtr Parser::parseConjunction() {
  ExprPtr first = parseInversion();
  if (!isKeyword("and"))
    return first;
  auto node = std::make_unique<BoolOp>(first->loc, /*isAnd=*/true);
  node->values.push_back(std::move(first));
  while (isKeyword("and")) {
    take();
    node->values.push_back(parseInversion());
  }
  return finish(std::move(node));
}

// inversion: 'not' inversion | comparison
ExprPtr Parser::parseInversion() {
  if (!isKeyword("not"))
    return parseComparison();
  DepthGuard guard(*this, exprDepth_, kMaxExprDepth, kTooDeep);
  SourceLoc loc = take().loc;
  ExprPtr operand = parseInversion();
  return finish(std::make_unique<UnaryOp>(loc, UnaryOperator::Not, std::move(operand)));
}

// comparison: bitwise_or (compare_op bitwise_or)*
// compare_op: '==' | '!=' | '<' | '<=' | '>' | '>=' | 'in' | 'not' 'in'
//           | 'is' | 'is' 'not'
// A chain a < b <= c is one Compare with operands {a, b, c}.
ExprPtr Parser::parseComparison() {
  ExprPtr first = parseBitOr();
  std::unique_ptr<Compare> node;
  for (;;) {
    const Token &t = tok();
    std::optional<CompareOp> op;
    int length = 1;
    if (t.isOp("=="))
      op = CompareOp::Eq;
    else if (t.isOp("!="))
      op = CompareOp::NotEq;
    else if (t.isOp("<"))
      op = CompareOp::Lt;
    else if (t.isOp("<="))
      op = CompareOp::LtE;
    else if (t.isOp(">"))
      op = CompareOp::Gt;
    else if (t.isOp(">="))
      op = CompareOp::GtE;
    else if (t.isKeyword("in"))
      op = CompareOp::In;
    else if (t.isKeyword("is"))
      op = isKeyword("not", 1) ? (length = 2, CompareOp::IsNot) : CompareOp::Is;
    else if (t.isKeyword("not") && isKeyword("in", 1))
      op = CompareOp::NotIn, length = 2;
    if (!op)
      break;
    for (int i = 0; i < length; ++i)
      take();
    if (!node) {
      node = std::make_unique<Compare>(first->loc);
      node->operands.push_back(std::move(first));
    }
    node->ops.push_back(*op);
    node->operands.push_back(parseBitOr());
  }
  if (!node)
    return first;
  return finish(std::move(node));
}

// The loop shared by the left-associative binary levels below:
//   level: operand (op operand)*
// Each BinOp is located at the start of its left operand.
ExprPtr Parser::parseBinaryLevel(
    Operand operand, std::initializer_list<std::pair<std::string_view, BinaryOp>> ops) {
  ExprPtr lhs = (this->*operand)();
  for (;;) {
    const Token &t = tok();
    std::optional<BinaryOp> op;
    for (const auto &[spelling, binop] : ops)
      if (t.isOp(spelling))
        op = binop;
    if (!op)
      return lhs;
    take();
    ExprPtr rhs = (this->*operand)();
    SourceLoc loc = lhs->loc;
    lhs = finish(std::make_unique<BinOp>(loc, *op, std::move(lhs), std::move(rhs)));
  }
}

// bitwise_or: bitwise_xor ('|' bitwise_xor)*
ExprPtr Parser::parseBitOr() {
  return parseBinaryLevel(&Parser::parseBitXor, {{"|", BinaryOp::BitOr}});
}

// bitwise_xor: bitwise_and ('^' bitwise_and)*
ExprPtr Parser::parseBitXor() {
  return parseBinaryLevel(&Parser::parseBitAnd, {{"^", BinaryOp::BitXor}});
}

// bitwise_and: shift_expr ('&' shift_expr)*
ExprPtr Parser::parseBitAnd() {
  return parseBinaryLevel(&Parser::parseShift, {{"&", BinaryOp::BitAnd}});
}

// shift_expr: sum (('<<' | '>>') sum)*
ExprPtr Parser::parseShift() {
  return parseBinaryLevel(&Parser::parseSum,
                          {{"<<", BinaryOp::LShift}, {">>", BinaryOp::RShift}});
}

// sum: term (('+' | '-') term)*
ExprPtr Parser::parseSum() {
  return parseBinaryLevel(&Parser::parseTerm, {{"+", BinaryOp::Add}, {"-", BinaryOp::Sub}});
}

// term: factor (('*' | '/' | '//' | '%' | '@') factor)*
ExprPtr Parser::parseTerm() {
  return parseBinaryLevel(&Parser::parseFactor,
                          {{"*", BinaryOp::Mul},
                           {"/", BinaryOp::Div},
                           {"//", BinaryOp::FloorDiv},
                           {"%", BinaryOp::Mod},
                           {"@", BinaryOp::MatMul}});
}

// factor: ('+' | '-' | '~') factor | power
ExprPtr Parser::parseFactor() {
  UnaryOperator op;
  if (isOp("-"))
    op = UnaryOperator::Neg;
  else if (isOp("+"))
    op = UnaryOperator::Pos;
  else if (isOp("~"))
    op = UnaryOperator::Invert;
  else
    return parsePower();
  DepthGuard guard(*this, exprDepth_, kMaxExprDepth, kTooDeep);
  SourceLoc loc = take().loc;
  ExprPtr operand = parseFactor();
  return finish(std::make_unique<UnaryOp>(loc, op, std::move(operand)));
}

// power: primary ['**' factor]
ExprPtr Parser::parsePower() {
  ExprPtr base = parsePrimary();
  if (!isOp("**"))
    return base;
  take();
  DepthGuard guard(*this, exprDepth_, kMaxExprDepth, kTooDeep);
  ExprPtr exponent = parseFactor();
  SourceLoc loc = base->loc;
  return finish(std::make_unique<BinOp>(loc, BinaryOp::Pow, std::move(base), std::move(exponent)));
}

// primary: atom ('.' NAME | '(' [arguments] ')' | '[' slices ']')*
ExprPtr Parser::parsePrimary() {
  ExprPtr e = parseAtom();
  for (;;) {
    if (acceptOp(".")) {
      std::string attr = expectName("expected a name after '.'");
      SourceLoc loc = e->loc;
      e = finish(std::make_unique<Attribute>(loc, std::move(e), std::move(attr)));
    } else if (isOp("(")) {
      e = parseCall(std::move(e));
    } else if (isOp("[")) {
      e = parseSubscript(std::move(e));
    } else {
      return e;
    }
  }
}

// atom: NAME | 'True' | 'False' | 'None' | NUMBER | strings | group_or_tuple | list
ExprPtr Parser::parseAtom() {
  const Token &t = tok();
  SourceLoc loc = t.loc;
  switch (t.kind) {
  case TokenKind::Name: {
    Token name = take();
    return std::make_unique<Name>(loc, std::move(name.text));
  }
  case TokenKind::Int: {
    auto c = std::make_unique<Constant>(loc, Constant::Type::Int);
    c->intValue = take().intValue;
    return c;
  }
  case TokenKind::Float: {
    auto c = std::make_unique<Constant>(loc, Constant::Type::Float);
    c->floatValue = take().floatValue;
    return c;
  }
  case TokenKind::String:
    return parseStrings();
  case TokenKind::Keyword:
    if (t.text == "True" || t.text == "False") {
      auto c = std::make_unique<Constant>(loc, Constant::Type::Bool);
      c->intValue = t.text == "True";
      take();
      return c;
    }
    if (t.text == "None") {
      take();
      return std::make_unique<Constant>(loc, Constant::Type::None);
    }
    if (t.text == "lambda" || t.text == "yield" || t.text == "await")
      unsupported(loc, "'" + t.text + "'");
    break;
  case TokenKind::Op:
    if (t.text == "(")
      return parseParenthesized();
    if (t.text == "[")
      return parseList();
    if (t.text == "{")
      unsupported(loc, "dict or set display");
    if (t.text == "...")
      unsupported(loc, "'...'");
    if (t.text == "*")
      unsupported(loc, "starred expression");
    break;
  default:
    break;
  }
  error(loc, "expected an expression");
}

// strings: STRING+          (adjacent literals are concatenated)
// Adjacent literals concatenate. An f-string (Triton's visit_JoinedStr: constexpr values only) becomes
// "lit" + $format(expr, conversion) + ...: the specialiser formats each value as Python's str() (or
// repr() for !r); a format spec is dropped, as Triton drops it.
ExprPtr Parser::parseStrings() {
  SourceLoc loc = tok().loc;
  std::vector<ExprPtr> parts;
  std::string literal;
  auto flushLiteral = [&] {
    auto c = std::make_unique<Constant>(loc, Constant::Type::String);
    c->stringValue = std::move(literal);
    literal.clear();
    parts.push_back(std::move(c));
  };
  while (tok().kind == TokenKind::String) {
    Token t = take();
    std::string prefix = t.text.substr(0, t.text.find_first_of("'\""));
    bool fstring = prefix.find_first_of("fF") != std::string::npos;
    if (!fstring) {
      literal += t.stringValue;
      continue;
    }
    const std::string &s = t.stringValue;
    for (size_t i = 0; i < s.size(); ++i) {
      if ((s[i] == '{' || s[i] == '}') && i + 1 < s.size() && s[i + 1] == s[i]) {
        literal += s[i++];
        continue;
      }
      if (s[i] == '}') error(t.loc, "f-string: single '}' is not allowed");
      if (s[i] != '{') {
        literal += s[i];
        continue;
      }
      // {expr[!conv][:spec]}: the expression ends at the first top-level '!', ':' or '}'
      size_t j = i + 1;
      int depth = 0;
      char quote = 0;
      for (; j < s.size(); ++j) {
        char ch = s[j];
        if (quote) {
          if (ch == quote) quote = 0;
        } else if (ch == '\'' || ch == '"') {
          quote = ch;
        } else if (ch == '(' || ch == '[' || ch == '{') {
          ++depth;
        } else if (ch == ')' || ch == ']' || (ch == '}' && depth > 0)) {
          --depth;
        } else if (depth == 0 && (ch == '}' || ch == ':' || (ch == '!' && j + 1 < s.size() && s[j + 1] != '='))) {
          break;
        }
      }
      if (j >= s.size()) error(t.loc, "f-string: expecting '}'");
      std::string exprText = s.substr(i + 1, j - i - 1);
      char conversion = 's';
      if (s[j] == '!') {
        if (j + 1 >= s.size() || (s[j + 1] != 's' && s[j + 1] != 'r' && s[j + 1] != 'a'))
          error(t.loc, "f-string: invalid conversion character: expected 's', 'r', or 'a'");
        conversion = s[j + 1] == 'a' ? 'r' : s[j + 1];
        j += 2;
      }
      if (j < s.size() && s[j] == ':') { // the format spec (dropped, as Triton does)
        int nested = 0;
        for (++j; j < s.size() && (s[j] != '}' || nested > 0); ++j)
          nested += s[j] == '{' ? 1 : s[j] == '}' ? -1 : 0;
      }
      if (j >= s.size() || s[j] != '}') error(t.loc, "f-string: expecting '}'");
      if (exprText.find_first_not_of(" \t") == std::string::npos) error(t.loc, "f-string: empty expression not allowed");
      auto file = std::make_shared<SourceFile>(SourceFile{file_->path, "(" + exprText + ")\n", t.loc.line});
      Parser inner(file);
      ExprPtr value = inner.parseExpression();
      while (inner.tok().kind == TokenKind::Newline) inner.take();
      if (inner.tok().kind != TokenKind::End) error(t.loc, "f-string: invalid expression '" + exprText + "'");
      flushLiteral();
      auto call = std::make_unique<Call>(t.loc, std::make_unique<Name>(t.loc, "$format"));
      call->args.push_back(std::move(value));
      auto conv = std::make_unique<Constant>(t.loc, Constant::Type::String);
      conv->stringValue = std::string(1, conversion);
      call->args.push_back(std::move(conv));
      parts.push_back(std::move(call));
      i = j;
    }
  }
  flushLiteral();
  ExprPtr out = std::move(parts[0]);
  for (size_t k = 1; k < parts.size(); ++k) {
    if (parts[k]->kind == ExprKind::Constant && static_cast<Constant &>(*parts[k]).stringValue.empty()) continue;
    out = std::make_unique<BinOp>(loc, BinaryOp::Add, std::move(out), std::move(parts[k]));
  }
  return out;
}

// group_or_tuple: '(' ')'
//               | '(' star_item ')'
//               | '(' star_item ',' [star_item (',' star_item)* [',']] ')'
// A group returns the inner expression itself; a tuple is located at '('.
ExprPtr Parser::parseParenthesized() {
  SourceLoc loc = take().loc;
  if (acceptOp(")"))
    return std::make_unique<Tuple>(loc);
  ExprPtr first = parseStarItem();
  if (isKeyword("for"))
    unsupported(loc, "generator expression");
  if (acceptOp(")"))
    return first;
  if (!isOp(","))
    error(tok().loc, "expected ',' or ')'");
  auto tuple = std::make_unique<Tuple>(loc);
  tuple->elts.push_back(std::move(first));
  while (acceptOp(",") && !isOp(")"))
    tuple->elts.push_back(parseStarItem());
  expectOp(")", "expected ',' or ')'");
  return finish(std::move(tuple));
}

// list: '[' [star_item (',' star_item)* [',']] ']'
// listcomp: '[' expression 'for' star_targets 'in' disjunction ('if' disjunction)* ']'
ExprPtr Parser::parseList() {
  SourceLoc loc = take().loc;
  auto list = std::make_unique<List>(loc);
  while (!isOp("]")) {
    list->elts.push_back(parseStarItem());
    if (isKeyword("for")) {
      if (list->elts.size() != 1)
        error(tok().loc, "invalid syntax");
      auto comp = std::make_unique<ListComp>(loc);
      comp->elt = std::move(list->elts[0]);
      take();
      comp->target = parseTargetList();
      if (!isKeyword("in"))
        error(tok().loc, "expected 'in'");
      take();
      comp->iter = parseDisjunction();
      while (isKeyword("if")) {
        take();
        comp->ifs.push_back(parseDisjunction());
      }
      if (isKeyword("for"))
        unsupported(tok().loc, "nested comprehension (more than one 'for')");
      expectOp("]", "expected ']'");
      return finish(std::move(comp));
    }
    if (!acceptOp(","))
      break;
  }
  expectOp("]", "expected ',' or ']'");
  return finish(std::move(list));
}

// call: primary '(' [arguments] ')'
// arguments: argument (',' argument)* [',']
// argument: NAME '=' expression | expression
// Positional arguments (`*tuple` among them) must come first; `**kwargs` and
// generator arguments are rejected.
ExprPtr Parser::parseCall(ExprPtr func) {
  take();
  SourceLoc loc = func->loc;
  auto call = std::make_unique<Call>(loc, std::move(func));
  while (!isOp(")")) {
    const Token &t = tok();
    if (t.isOp("**"))
      unsupported(t.loc, "argument unpacking with '" + t.text + "'");
    if (t.isOp("*")) {
      SourceLoc starLoc = take().loc;
      call->args.push_back(finish(std::make_unique<Starred>(starLoc, parseExpression())));
      if (!acceptOp(","))
        break;
      continue;
    }
    if (t.kind == TokenKind::Name && isOp("=", 1)) {
      Keyword kw;
      kw.loc = t.loc;
      kw.name = take().text;
      take();
      for (const Keyword &other : call->keywords)
        if (other.name == kw.name)
          error(kw.loc, "keyword argument repeated: " + kw.name);
      kw.value = parseExpression();
      call->keywords.push_back(std::move(kw));
    } else {
      ExprPtr arg = parseExpression();
      if (isOp("="))
        error(arg->loc, "expression cannot contain assignment, perhaps you meant \"==\"?");
      if (isKeyword("for"))
        unsupported(arg->loc, "generator expression");
      if (!call->keywords.empty())
        error(arg->loc, "positional argument follows keyword argument");
      call->args.push_back(std::move(arg));
    }
    if (!acceptOp(","))
      break;
  }
  expectOp(")", "expected ',' or ')'");
  return finish(std::move(call));
}

// subscript: primary '[' slices ']'
// slices: slice (',' slice)* [',']
ExprPtr Parser::parseSubscript(ExprPtr value) {
  take();
  std::vector<ExprPtr> indices;
  do {
    if (isOp("]") && !indices.empty())
      break; // trailing comma
    indices.push_back(parseSliceItem());
  } while (acceptOp(","));
  expectOp("]", "expected ',' or ']'");
  SourceLoc loc = value->loc;
  return finish(std::make_unique<Subscript>(loc, std::move(value), std::move(indices)));
}

// slice: [expression] ':' [expression] [':' [expression]] | star_item
// A Slice is located at its first token (the lower bound or the ':').
ExprPtr Parser::parseSliceItem() {
  SourceLoc loc = tok().loc;
  ExprPtr lower;
  if (!isOp(":")) {
    lower = parseStarItem();
    if (!isOp(":"))
      return lower;
  }
  take();
  auto slice = std::make_unique<Slice>(loc);
  slice->lower = std::move(lower);
  if (startsExpression(tok()))
    slice->upper = parseExpression();
  if (acceptOp(":") && startsExpression(tok()))
    slice->step = parseExpression();
  return finish(std::move(slice));
}

} // namespace tessera::ast
