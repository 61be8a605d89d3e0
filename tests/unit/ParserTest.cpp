// Tests of the DSL parser (dsl/Parser.cpp, dsl/ParseExpr.cpp) and of the AST
// printer (dsl/ASTPrinter.cpp).
#include "dsl/AST.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

using namespace tessera;
using namespace tessera::ast;

namespace {

std::shared_ptr<SourceFile> makeFile(std::string text, uint32_t firstLine = 1) {
  auto file = std::make_shared<SourceFile>();
  file->path = "k.py";
  file->text = std::move(text);
  file->firstLine = firstLine;
  return file;
}

Module parse(const std::string &text, uint32_t firstLine = 1) {
  return parseModule(makeFile(text, firstLine));
}

std::string dump(const std::string &text) { return printAST(parse(text)); }

// The dump of one expression: "a + b" -> "(binop + (name a) (name b))".
std::string exprDump(const std::string &text) {
  std::string d = dump(text + "\n");
  const std::string prefix = "(module\n  (expr ";
  const std::string suffix = "))\n";
  if (d.compare(0, prefix.size(), prefix) != 0 || d.size() < prefix.size() + suffix.size()) {
    ADD_FAILURE() << "not one expression statement:\n" << d;
    return d;
  }
  return d.substr(prefix.size(), d.size() - prefix.size() - suffix.size());
}

// The first statement of a module parsed from `text`.
// (Throws, failing the test, if there is none or it is not a T.)
template <typename T> const T &firstStmt(const Module &m) {
  if (m.body.empty() || !T::classof(m.body[0].get()))
    throw std::runtime_error("unexpected first statement");
  return static_cast<const T &>(*m.body[0]);
}

const Expr &exprOf(const Module &m) { return *firstStmt<ExprStmt>(m).value; }

// The full formatted message of the CompileError that parsing `text` throws.
std::string parseError(const std::string &text, uint32_t firstLine = 1) {
  try {
    parse(text, firstLine);
  } catch (const CompileError &e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return "";
}

const char *kSoftmax = R"(import tessera.language as tl
import tessera
LOG2E = tl.constexpr(1.4426950408889634)

@tessera.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_row_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_row_stride + offs, num / tl.sum(num, axis=0), mask=mask)
)";

} // namespace

TEST(Parser, SoftmaxKernelDump) {
  EXPECT_EQ(dump(kSoftmax),
            R"((module
  (import tessera.language as tl)
  (import tessera)
  (assign (name LOG2E) (call (attr (name tl) constexpr) (const 1.4426950408889634)))
  (def softmax_kernel (params out_ptr in_ptr in_row_stride out_row_stride n_cols (BLOCK : (attr (name tl) constexpr)))
    (decorators (attr (name tessera) jit))
    (assign (name row) (call (attr (name tl) program_id) (const 0)))
    (assign (name offs) (call (attr (name tl) arange) (const 0) (name BLOCK)))
    (assign (name mask) (compare (name offs) < (name n_cols)))
    (assign (name x) (call (attr (name tl) load) (binop + (binop + (name in_ptr) (binop * (name row) (name in_row_stride))) (name offs)) (kw mask (name mask)) (kw other (unary - (call (name float) (const "inf"))))))
    (assign (name x) (binop - (name x) (call (attr (name tl) max) (name x) (kw axis (const 0)))))
    (assign (name num) (call (attr (name tl) exp) (name x)))
    (expr (call (attr (name tl) store) (binop + (binop + (name out_ptr) (binop * (name row) (name out_row_stride))) (name offs)) (binop / (name num) (call (attr (name tl) sum) (name num) (kw axis (const 0)))) (kw mask (name mask))))))
)");
}

TEST(Parser, SoftmaxKernelNodes) {
  Module m = parse(kSoftmax);
  EXPECT_EQ(m.file->path, "k.py");
  ASSERT_EQ(m.body.size(), 4u);
  const auto &def = static_cast<const FunctionDef &>(*m.body[3]);
  ASSERT_EQ(def.kind, StmtKind::FunctionDef);
  EXPECT_EQ(def.name, "softmax_kernel");
  EXPECT_EQ(def.loc.line, 6u); // the `def`, not the decorator
  EXPECT_EQ(def.loc.col, 1u);
  ASSERT_EQ(def.params.size(), 6u);
  EXPECT_EQ(def.params[5].name, "BLOCK");
  EXPECT_EQ(def.params[5].loc.col, 76u);
  ASSERT_TRUE(def.params[5].annotation);
  EXPECT_EQ(def.params[5].annotation->kind, ExprKind::Attribute);
  EXPECT_FALSE(def.params[0].annotation);
  ASSERT_EQ(def.decorators.size(), 1u);
  ASSERT_EQ(def.body.size(), 7u);
  const auto &load = static_cast<const Assign &>(*def.body[3]);
  ASSERT_EQ(load.value->kind, ExprKind::Call);
  const auto &call = static_cast<const Call &>(*load.value);
  EXPECT_EQ(call.loc.line, 10u);
  EXPECT_EQ(call.loc.col, 9u); // the start of the callee `tl.load`
  ASSERT_EQ(call.args.size(), 1u);
  EXPECT_EQ(call.args[0]->loc.col, 17u); // BinOp: the start of its left operand
  ASSERT_EQ(call.keywords.size(), 2u);
  EXPECT_EQ(call.keywords[1].name, "other");
  EXPECT_EQ(call.keywords[1].loc.col, 65u);
}

TEST(Parser, ArithmeticPrecedence) {
  EXPECT_EQ(exprDump("a + b * c"), "(binop + (name a) (binop * (name b) (name c)))");
  EXPECT_EQ(exprDump("a * b + c"), "(binop + (binop * (name a) (name b)) (name c))");
  EXPECT_EQ(exprDump("a - b - c"), "(binop - (binop - (name a) (name b)) (name c))");
  EXPECT_EQ(exprDump("a / b // c % d @ e"),
            "(binop @ (binop % (binop // (binop / (name a) (name b)) (name c)) (name d)) (name e))");
  EXPECT_EQ(exprDump("(a + b) * c"), "(binop * (binop + (name a) (name b)) (name c))");
}

TEST(Parser, PowerAndUnary) {
  EXPECT_EQ(exprDump("-x**2"), "(unary - (binop ** (name x) (const 2)))");
  EXPECT_EQ(exprDump("2**-1"), "(binop ** (const 2) (unary - (const 1)))");
  EXPECT_EQ(exprDump("a**b**c"), "(binop ** (name a) (binop ** (name b) (name c)))");
  EXPECT_EQ(exprDump("-a * ~b + +c"),
            "(binop + (binop * (unary - (name a)) (unary ~ (name b))) (unary + (name c)))");
  EXPECT_EQ(exprDump("a.b**c.d"), "(binop ** (attr (name a) b) (attr (name c) d))");
}

TEST(Parser, BitwisePrecedence) {
  EXPECT_EQ(exprDump("a | b ^ c & d << e + f"),
            "(binop | (name a) (binop ^ (name b) (binop & (name c) (binop << (name d) "
            "(binop + (name e) (name f))))))");
  EXPECT_EQ(exprDump("a >> 1 | b"), "(binop | (binop >> (name a) (const 1)) (name b))");
  EXPECT_EQ(exprDump("a & b == c"), "(compare (binop & (name a) (name b)) == (name c))");
}

TEST(Parser, BooleanPrecedence) {
  EXPECT_EQ(exprDump("a or b and c"), "(or (name a) (and (name b) (name c)))");
  EXPECT_EQ(exprDump("a and b or c and d or e"),
            "(or (and (name a) (name b)) (and (name c) (name d)) (name e))");
  EXPECT_EQ(exprDump("not a == b"), "(unary not (compare (name a) == (name b)))");
  EXPECT_EQ(exprDump("not a and not not b"),
            "(and (unary not (name a)) (unary not (unary not (name b))))");
}

TEST(Parser, ConditionalExpressions) {
  EXPECT_EQ(exprDump("a if b else c"), "(ifexp (name a) if (name b) else (name c))");
  EXPECT_EQ(exprDump("a if b else c if d else e"),
            "(ifexp (name a) if (name b) else (ifexp (name c) if (name d) else (name e)))");
  EXPECT_EQ(exprDump("x or y if a or b else z"),
            "(ifexp (or (name x) (name y)) if (or (name a) (name b)) else (name z))");
  Module m = parse("a if b else c\n");
  const auto &e = static_cast<const IfExp &>(exprOf(m));
  EXPECT_EQ(static_cast<const Name &>(*e.cond).id, "b");
  EXPECT_EQ(static_cast<const Name &>(*e.thenValue).id, "a");
}

TEST(Parser, ChainedComparisons) {
  Module m = parse("a < b <= c\n");
  ASSERT_EQ(exprOf(m).kind, ExprKind::Compare);
  const auto &cmp = static_cast<const Compare &>(exprOf(m));
  ASSERT_EQ(cmp.ops.size(), 2u);
  EXPECT_EQ(cmp.ops[0], CompareOp::Lt);
  EXPECT_EQ(cmp.ops[1], CompareOp::LtE);
  ASSERT_EQ(cmp.operands.size(), 3u);
  EXPECT_EQ(static_cast<const Name &>(*cmp.operands[2]).id, "c");
  EXPECT_EQ(exprDump("a == b != c > d >= e"),
            "(compare (name a) == (name b) != (name c) > (name d) >= (name e))");
  EXPECT_EQ(exprDump("a is not b is c"), "(compare (name a) is not (name b) is (name c))");
  EXPECT_EQ(exprDump("a not in b in c"), "(compare (name a) not in (name b) in (name c))");
  EXPECT_EQ(exprDump("a + 1 < b * 2"),
            "(compare (binop + (name a) (const 1)) < (binop * (name b) (const 2)))");
}

TEST(Parser, PrimaryChains) {
  EXPECT_EQ(exprDump("a.b.c(d)[e].f()"),
            "(call (attr (subscript (call (attr (attr (name a) b) c) (name d)) (name e)) f))");
  EXPECT_EQ(exprDump("f(1, x, k=2, j=y + 1,)"),
            "(call (name f) (const 1) (name x) (kw k (const 2)) (kw j (binop + (name y) (const 1))))");
  EXPECT_EQ(exprDump("f()()"), "(call (call (name f)))");
  EXPECT_EQ(exprDump("f(x, *t, k=1)"), "(call (name f) (name x) (starred (name t)) (kw k (const 1)))");
  EXPECT_EQ(exprDump("[v + 1 for v in t]"), "(listcomp (binop + (name v) (const 1)) for (name v) in (name t))");
  EXPECT_EQ(exprDump("[a for a, (b, c) in t if a > 1 if b]"),
            "(listcomp (name a) for (tuple (name a) (tuple (name b) (name c))) in (name t) "
            "if (compare (name a) > (const 1)) if (name b))");
}

TEST(Parser, SubscriptsAndSlices) {
  Module m = parse("x[:, None]\n");
  ASSERT_EQ(exprOf(m).kind, ExprKind::Subscript);
  const auto &sub = static_cast<const Subscript &>(exprOf(m));
  ASSERT_EQ(sub.indices.size(), 2u);
  ASSERT_EQ(sub.indices[0]->kind, ExprKind::Slice);
  const auto &slice = static_cast<const Slice &>(*sub.indices[0]);
  EXPECT_FALSE(slice.lower || slice.upper || slice.step);
  ASSERT_EQ(sub.indices[1]->kind, ExprKind::Constant);
  EXPECT_EQ(static_cast<const Constant &>(*sub.indices[1]).type, Constant::Type::None);

  EXPECT_EQ(exprDump("x[1:2:3]"), "(subscript (name x) (slice (const 1) (const 2) (const 3)))");
  EXPECT_EQ(exprDump("x[::2]"), "(subscript (name x) (slice _ _ (const 2)))");
  EXPECT_EQ(exprDump("x[a:]"), "(subscript (name x) (slice (name a) _ _))");
  EXPECT_EQ(exprDump("x[:b, None, i + 1]"),
            "(subscript (name x) (slice _ (name b) _) (const None) (binop + (name i) (const 1)))");
  EXPECT_EQ(exprDump("x[None, :]"), "(subscript (name x) (const None) (slice _ _ _))");
  EXPECT_EQ(exprDump("x[0,]"), "(subscript (name x) (const 0))");
  EXPECT_EQ(exprDump("x[a:b:]"), "(subscript (name x) (slice (name a) (name b) _))");
}

TEST(Parser, TuplesAndLists) {
  EXPECT_EQ(exprDump("a, b"), "(tuple (name a) (name b))");
  EXPECT_EQ(exprDump("a,"), "(tuple (name a))");
  EXPECT_EQ(exprDump("(a,)"), "(tuple (name a))");
  EXPECT_EQ(exprDump("()"), "(tuple)");
  EXPECT_EQ(exprDump("(a)"), "(name a)");
  EXPECT_EQ(exprDump("(a, (b, c), [d, e,], [])"),
            "(tuple (name a) (tuple (name b) (name c)) (list (name d) (name e)) (list))");
  EXPECT_EQ(dump("return a, b\n"), "(module\n  (return (tuple (name a) (name b))))\n");
  Module m = parse("x = (a,\n     b)\n");
  const auto &assign = firstStmt<Assign>(m);
  EXPECT_EQ(assign.value->kind, ExprKind::Tuple);
  EXPECT_EQ(assign.value->loc.col, 5u); // at the '('
}

TEST(Parser, Literals) {
  EXPECT_EQ(exprDump("1, 2.5, 1e-06, 1.0, True, False, None, 'a' \"b\", 0x10"),
            "(tuple (const 1) (const 2.5) (const 1e-06) (const 1.0) (const True) (const False) "
            "(const None) (const \"ab\") (const 16))");
  EXPECT_EQ(exprDump("'q\"\\\\\\n\\x01\xC3\xA9'"), "(const \"q\\\"\\\\\\n\\x01\\xc3\\xa9\")");
  EXPECT_EQ(exprDump("0.1 + 1e300 * 1e300"),
            "(binop + (const 0.1) (binop * (const 1e+300) (const 1e+300)))");
  EXPECT_EQ(exprDump("1e999"), "(const inf)");
  Module m = parse("x = 1.4426950408889634\n");
  const auto &c = static_cast<const Constant &>(*firstStmt<Assign>(m).value);
  EXPECT_EQ(c.floatValue, 1.4426950408889634);
}

TEST(Parser, Assignments) {
  EXPECT_EQ(dump("a = b = 1\n"), "(module\n  (assign (name a) (name b) (const 1)))\n");
  EXPECT_EQ(dump("a, b = b, a\n"),
            "(module\n  (assign (tuple (name a) (name b)) (tuple (name b) (name a))))\n");
  EXPECT_EQ(dump("(a, b), [c, d] = x\n"),
            "(module\n  (assign (tuple (tuple (name a) (name b)) (list (name c) (name d))) "
            "(name x)))\n");
  EXPECT_EQ(dump("x.y[i] = 0\n"),
            "(module\n  (assign (subscript (attr (name x) y) (name i)) (const 0)))\n");
  Module m = parse("a, b = c = f()\n");
  const auto &assign = firstStmt<Assign>(m);
  ASSERT_EQ(assign.targets.size(), 2u);
  EXPECT_EQ(assign.targets[0]->kind, ExprKind::Tuple);
  EXPECT_EQ(assign.targets[1]->kind, ExprKind::Name);
  EXPECT_EQ(assign.value->kind, ExprKind::Call);
}

TEST(Parser, AugmentedAndAnnotatedAssignments) {
  const char *ops[] = {"+", "-", "*", "/", "//", "%", "**", "@", "<<", ">>", "&", "|", "^"};
  for (const char *op : ops) {
    std::string src = std::string("acc ") + op + "= x\n";
    EXPECT_EQ(dump(src), std::string("(module\n  (augassign (name acc) ") + op + "= (name x)))\n");
  }
  Module m = parse("acc //= 2\n");
  EXPECT_EQ(firstStmt<AugAssign>(m).op, BinaryOp::FloorDiv);
  EXPECT_EQ(dump("x: int = 3\ny: tl.tensor\nz.w: int = 1, 2\n"),
            "(module\n"
            "  (annassign (name x) : (name int) = (const 3))\n"
            "  (annassign (name y) : (attr (name tl) tensor))\n"
            "  (annassign (attr (name z) w) : (name int) = (tuple (const 1) (const 2))))\n");
}

TEST(Parser, DecoratorsWithKeywords) {
  EXPECT_EQ(dump("@tessera.jit(num_warps=4, debug=True)\n@other\n"
                 "def f(a: tl.constexpr = 1, b=2,) -> None:\n  pass\n"),
            "(module\n"
            "  (def f (params (a : (attr (name tl) constexpr) = (const 1)) (b = (const 2))) "
            "(returns (const None))\n"
            "    (decorators (call (attr (name tessera) jit) (kw num_warps (const 4)) "
            "(kw debug (const True))) (name other))\n"
            "    (pass)))\n");
  Module m = parse("@jit(k=1)\ndef g():\n  return\n");
  const auto &def = firstStmt<FunctionDef>(m);
  ASSERT_EQ(def.decorators.size(), 1u);
  ASSERT_EQ(def.decorators[0]->kind, ExprKind::Call);
  const auto &call = static_cast<const Call &>(*def.decorators[0]);
  ASSERT_EQ(call.keywords.size(), 1u);
  EXPECT_EQ(call.keywords[0].name, "k");
  EXPECT_EQ(def.loc.line, 2u);
  EXPECT_TRUE(def.params.empty());
}

TEST(Parser, ElifChains) {
  EXPECT_EQ(dump("if a:\n  x = 1\nelif b:\n  x = 2\nelif c:\n  pass\nelse:\n  x = 3\n"),
            "(module\n"
            "  (if (name a)\n"
            "    (assign (name x) (const 1))\n"
            "    (else\n"
            "      (if (name b)\n"
            "        (assign (name x) (const 2))\n"
            "        (else\n"
            "          (if (name c)\n"
            "            (pass)\n"
            "            (else\n"
            "              (assign (name x) (const 3)))))))))\n");
  Module m = parse("if a:\n  pass\nelif b:\n  pass\n");
  const auto &outer = firstStmt<If>(m);
  ASSERT_EQ(outer.orelse.size(), 1u);
  ASSERT_EQ(outer.orelse[0]->kind, StmtKind::If);
  EXPECT_EQ(outer.orelse[0]->loc.line, 3u); // at the `elif`
  EXPECT_TRUE(static_cast<const If &>(*outer.orelse[0]).orelse.empty());
}

TEST(Parser, ModuleLevelTry) {
  // Libraries choose their imports with try/except at module level (not inside kernels).
  EXPECT_EQ(dump("try:\n  from a import b\nexcept (ImportError, KeyError) as e:\n  b = 1\nexcept:\n  pass\n"
                 "else:\n  c = 2\nfinally:\n  d = 3\n"),
            "(module\n"
            "  (try\n"
            "    (from a import b)\n"
            "    (except (tuple (name ImportError) (name KeyError)) as e\n"
            "      (assign (name b) (const 1)))\n"
            "    (except\n"
            "      (pass))\n"
            "    (else\n"
            "      (assign (name c) (const 2)))\n"
            "    (finally\n"
            "      (assign (name d) (const 3)))))\n");
  EXPECT_NE(parseError("try:\n  pass\nelse:\n  pass\n").find("3:1: error: expected 'except' or 'finally' block"),
            std::string::npos);
}

TEST(Parser, Loops) {
  EXPECT_EQ(dump("for i, (j, k) in zip(a, b):\n  if i: break\n  continue\nelse:\n  pass\n"
                 "while x < 10:\n  x += 1\n"),
            "(module\n"
            "  (for (tuple (name i) (tuple (name j) (name k))) in (call (name zip) (name a) (name b))\n"
            "    (if (name i)\n"
            "      (break))\n"
            "    (continue)\n"
            "    (else\n"
            "      (pass)))\n"
            "  (while (compare (name x) < (const 10))\n"
            "    (augassign (name x) += (const 1))))\n");
  EXPECT_EQ(dump("for x in a, b: pass\nwhile 1:\n  pass\nelse:\n  pass\n"),
            "(module\n"
            "  (for (name x) in (tuple (name a) (name b))\n"
            "    (pass))\n"
            "  (while (const 1)\n"
            "    (pass)\n"
            "    (else\n"
            "      (pass))))\n");
}

TEST(Parser, Imports) {
  EXPECT_EQ(dump("import a.b as c, d\nfrom a.b import c as d, e\nfrom . import x\n"
                 "from ..m import (p, q as r,)\nfrom x import *\n"),
            "(module\n"
            "  (import a.b as c, d)\n"
            "  (from a.b import c as d, e)\n"
            "  (from . import x)\n"
            "  (from ..m import p, q as r)\n"
            "  (from x import *))\n");
  Module m = parse("import tessera.language as tl\n");
  const auto &imp = firstStmt<Import>(m);
  ASSERT_EQ(imp.names.size(), 1u);
  EXPECT_EQ(imp.names[0].module, "tessera.language");
  EXPECT_EQ(imp.names[0].asName, "tl");
}

TEST(Parser, SimpleStatementsAndOneLineSuites) {
  EXPECT_EQ(dump("if x: y = 1; z = 2\nelse: pass;\na; b\n"),
            "(module\n"
            "  (if (name x)\n"
            "    (assign (name y) (const 1))\n"
            "    (assign (name z) (const 2))\n"
            "    (else\n"
            "      (pass)))\n"
            "  (expr (name a))\n"
            "  (expr (name b)))\n");
  EXPECT_EQ(dump("def f():\n  \"\"\"Doc.\"\"\"\n  assert x > 0, f\"bad {x}\"\n  assert y\n  return\n"),
            "(module\n"
            "  (def f (params)\n"
            "    (expr (const \"Doc.\"))\n"
            // an f-string is "lit" + $format(value, conversion) (formatted by the specialiser, constexprs only)
            "    (assert (compare (name x) > (const 0)) (binop + (const \"bad \") (call (name $format) (name x) (const \"s\"))))\n"
            "    (assert (name y))\n"
            "    (return)))\n");
  EXPECT_EQ(dump(""), "(module)\n");
  EXPECT_EQ(dump("\n# nothing\n"), "(module)\n");
}

TEST(Parser, MultiLineExpressions) {
  EXPECT_EQ(dump("x = f(a,\n      b,\n)\ny = (1 +\n  2)\n"),
            "(module\n"
            "  (assign (name x) (call (name f) (name a) (name b)))\n"
            "  (assign (name y) (binop + (const 1) (const 2))))\n");
}

TEST(Parser, FirstLineOffsetsLocations) {
  Module m = parse("def f(x):\n    return x + 1\n", 40);
  const auto &def = firstStmt<FunctionDef>(m);
  EXPECT_EQ(def.loc.line, 40u);
  ASSERT_EQ(def.body.size(), 1u);
  EXPECT_EQ(def.body[0]->loc.line, 41u);
  EXPECT_EQ(def.body[0]->loc.col, 5u);
  EXPECT_EQ(parseError("def f(x):\n    return x +\n", 40),
            "k.py:41:15: error: expected an expression\n"
            "    return x +\n"
            "              ^");
}

// ------------------------------------------------------------ syntax errors

TEST(ParserErrors, ExpectedColon) {
  EXPECT_EQ(parseError("if x\n    y = 1\n"),
            "k.py:1:5: error: expected ':'\n"
            "if x\n"
            "    ^");
  EXPECT_EQ(parseError("def f(a) -> int\n  pass\n"),
            "k.py:1:16: error: expected ':'\n"
            "def f(a) -> int\n"
            "               ^");
}

TEST(ParserErrors, ExpectedAnExpression) {
  EXPECT_EQ(parseError("x = 1 +\n"),
            "k.py:1:8: error: expected an expression\n"
            "x = 1 +\n"
            "       ^");
  EXPECT_EQ(parseError("y = x[]\n"),
            "k.py:1:7: error: expected an expression\n"
            "y = x[]\n"
            "      ^");
}

TEST(ParserErrors, UnexpectedIndent) {
  EXPECT_EQ(parseError("x = 1\n    y = 2\n"),
            "k.py:2:5: error: unexpected indent\n"
            "    y = 2\n"
            "    ^");
}

TEST(ParserErrors, ExpectedAnIndentedBlock) {
  EXPECT_EQ(parseError("def f(a):\nreturn a\n"),
            "k.py:2:1: error: expected an indented block after function definition on line 1\n"
            "return a\n"
            "^");
  EXPECT_EQ(parseError("for i in x:\n  if i:\n  pass\n"),
            "k.py:3:3: error: expected an indented block after 'if' statement on line 2\n"
            "  pass\n"
            "  ^");
  EXPECT_EQ(parseError("if a:\n  pass\nelse:\n"),
            "k.py:4:1: error: expected an indented block after 'else' statement on line 3\n"
            "\n"
            "^");
}

TEST(ParserErrors, InvalidSyntax) {
  EXPECT_EQ(parseError("x = 1 2\n"),
            "k.py:1:7: error: invalid syntax\n"
            "x = 1 2\n"
            "      ^");
  EXPECT_EQ(parseError("else:\n  pass\n"),
            "k.py:1:1: error: invalid syntax\n"
            "else:\n"
            "^");
}

TEST(ParserErrors, CannotAssign) {
  EXPECT_EQ(parseError("f() = 3\n"),
            "k.py:1:1: error: cannot assign to function call\n"
            "f() = 3\n"
            "^");
  EXPECT_EQ(parseError("a, 1 = x\n"),
            "k.py:1:4: error: cannot assign to literal\n"
            "a, 1 = x\n"
            "   ^");
  EXPECT_EQ(parseError("for a + b in x: pass\n"),
            "k.py:1:5: error: cannot assign to expression\n"
            "for a + b in x: pass\n"
            "    ^");
  EXPECT_EQ(parseError("x = None = 1\n"),
            "k.py:1:5: error: cannot assign to None\n"
            "x = None = 1\n"
            "    ^");
  EXPECT_EQ(parseError("a, b += 1\n"),
            "k.py:1:1: error: 'tuple' is an illegal expression for augmented assignment\n"
            "a, b += 1\n"
            "^");
  EXPECT_EQ(parseError("a, b: int\n"),
            "k.py:1:1: error: only single target (not tuple) can be annotated\n"
            "a, b: int\n"
            "^");
}

TEST(ParserErrors, UnsupportedConstructs) {
  EXPECT_EQ(parseError("class A:\n  pass\n"),
            "k.py:1:1: error: unsupported construct: 'class'\n"
            "class A:\n"
            "^");
  EXPECT_EQ(parseError("def f():\n  with a:\n    pass\n"),
            "k.py:2:3: error: unsupported construct: 'with'\n"
            "  with a:\n"
            "  ^");
  EXPECT_EQ(parseError("x = lambda y: y\n"),
            "k.py:1:5: error: unsupported construct: 'lambda'\n"
            "x = lambda y: y\n"
            "    ^");
  EXPECT_EQ(parseError("f(**kwargs)\n"),
            "k.py:1:3: error: unsupported construct: argument unpacking with '**'\n"
            "f(**kwargs)\n"
            "  ^");
  EXPECT_EQ(parseError("x = [i for i in y for j in z]\n"),
            "k.py:1:19: error: unsupported construct: nested comprehension (more than one 'for')\n"
            "x = [i for i in y for j in z]\n"
            "                  ^");
  EXPECT_NE(parseError("global x\n").find("1:1: error: unsupported construct: 'global'"),
            std::string::npos);
  EXPECT_NE(parseError("def f():\n  try:\n    pass\n  except:\n    pass\n").find("2:3: error: unsupported construct: 'try'"),
            std::string::npos);
  EXPECT_NE(parseError("try:\n  pass\nx = 1\n").find("3:1: error: expected 'except' or 'finally' block"),
            std::string::npos);
  EXPECT_NE(parseError("del x\n").find("1:1: error: unsupported construct: 'del'"),
            std::string::npos);
  EXPECT_NE(parseError("x = {}\n").find("1:5: error: unsupported construct: dict or set display"),
            std::string::npos);
  EXPECT_NE(parseError("x = yield\n").find("1:5: error: unsupported construct: 'yield'"),
            std::string::npos);
  EXPECT_NE(parseError("if (n := 1): pass\n").find("1:7: error: unsupported construct: ':='"),
            std::string::npos);
  EXPECT_NE(parseError("a, *b = x\n").find("1:4: error: unsupported construct: starred expression"),
            std::string::npos);
  EXPECT_NE(parseError("def f(*a): pass\n").find("1:7: error: unsupported construct: '*' in a "
                                                  "parameter list"),
            std::string::npos);
  EXPECT_NE(parseError("@jit\nclass A: pass\n").find("2:1: error: unsupported construct: 'class'"),
            std::string::npos);
}

TEST(ParserErrors, ConditionalWithoutElse) {
  EXPECT_EQ(parseError("x = a if b\n"),
            "k.py:1:11: error: expected 'else' after 'if' expression\n"
            "x = a if b\n"
            "          ^");
}

TEST(ParserErrors, CallArguments) {
  EXPECT_EQ(parseError("f(a=1, 2)\n"),
            "k.py:1:8: error: positional argument follows keyword argument\n"
            "f(a=1, 2)\n"
            "       ^");
  EXPECT_EQ(parseError("f(a=1, a=2)\n"),
            "k.py:1:8: error: keyword argument repeated: a\n"
            "f(a=1, a=2)\n"
            "       ^");
  EXPECT_EQ(parseError("f(a.b=1)\n"),
            "k.py:1:3: error: expression cannot contain assignment, perhaps you meant \"==\"?\n"
            "f(a.b=1)\n"
            "  ^");
  EXPECT_EQ(parseError("f(a b)\n"),
            "k.py:1:5: error: expected ',' or ')'\n"
            "f(a b)\n"
            "    ^");
}

TEST(ParserErrors, FunctionDefinitions) {
  EXPECT_EQ(parseError("def f(a, a): pass\n"),
            "k.py:1:10: error: duplicate argument 'a' in function definition\n"
            "def f(a, a): pass\n"
            "         ^");
  EXPECT_EQ(parseError("def f(a=1, b): pass\n"),
            "k.py:1:12: error: parameter without a default follows parameter with a default\n"
            "def f(a=1, b): pass\n"
            "           ^");
  EXPECT_EQ(parseError("@jit\nx = 1\n"),
            "k.py:2:1: error: expected 'def' after decorator\n"
            "x = 1\n"
            "^");
  EXPECT_EQ(parseError("def (x): pass\n"),
            "k.py:1:5: error: expected a function name\n"
            "def (x): pass\n"
            "    ^");
}

TEST(ParserErrors, MiscMessages) {
  EXPECT_EQ(parseError("for x y: pass\n"),
            "k.py:1:7: error: expected 'in'\n"
            "for x y: pass\n"
            "      ^");
  EXPECT_EQ(parseError("import\n"),
            "k.py:1:7: error: expected a module name\n"
            "import\n"
            "      ^");
  EXPECT_EQ(parseError("from a b\n"),
            "k.py:1:8: error: expected 'import'\n"
            "from a b\n"
            "       ^");
  EXPECT_EQ(parseError("x = a.\n"),
            "k.py:1:7: error: expected a name after '.'\n"
            "x = a.\n"
            "      ^");
  EXPECT_EQ(parseError("x = [1 2]\n"),
            "k.py:1:8: error: expected ',' or ']'\n"
            "x = [1 2]\n"
            "       ^");
}

TEST(ParserErrors, LexicalErrorsComeInSourceOrder) {
  // The syntax error on line 1 is reported before the bad character on line 2.
  EXPECT_EQ(parseError("x = = 1\ny = $\n"),
            "k.py:1:5: error: expected an expression\n"
            "x = = 1\n"
            "    ^");
  EXPECT_EQ(parseError("x = f(1,\n"),
            "k.py:1:6: error: '(' was never closed\n"
            "x = f(1,\n"
            "     ^");
}

TEST(ParserErrors, NestingLimits) {
  // 150 levels are fine.
  std::string ok = "x = " + std::string(150, '(') + "1" + std::string(150, ')') + "\n";
  EXPECT_NO_THROW(parse(ok));
  std::string deep = "x = " + std::string(300, '(') + "1" + std::string(300, ')') + "\n";
  EXPECT_NE(parseError(deep).find("error: expression nested too deeply"), std::string::npos);
  std::string unary = "x = " + std::string(300, '-') + "1\n";
  EXPECT_NE(parseError(unary).find("error: expression nested too deeply"), std::string::npos);
  std::string power = "x = 2";
  for (int i = 0; i < 300; ++i)
    power += "**2";
  EXPECT_NE(parseError(power + "\n").find("error: expression nested too deeply"),
            std::string::npos);
  // Nesting on the right of a binary operator is nesting.
  std::string right = "x = 1";
  for (int i = 0; i < 300; ++i)
    right += "+(1";
  EXPECT_NE(parseError(right + std::string(300, ')') + "\n").find("error: expression nested too deeply"),
            std::string::npos);
  std::string attrs = "x = a";
  for (int i = 0; i < 300; ++i)
    attrs += ".b";
  EXPECT_NE(parseError(attrs + "\n").find("error: expression nested too deeply"),
            std::string::npos);
  std::string elifs = "if a: pass\n";
  for (int i = 0; i < 300; ++i)
    elifs += "elif a: pass\n";
  EXPECT_NE(parseError(elifs).find("error: too many statically nested blocks"), std::string::npos);
}

TEST(Parser, ChainsOfBinaryOperatorsAreNotNesting) {
  // a + b + c + ... up to 5000 operators, an operand itself as deep as allowed.
  std::string chain = "x = 1", deep = std::string(150, '(') + "1" + std::string(150, ')');
  for (int i = 0; i < 5000; ++i)
    chain += i % 2 ? "+1" : i % 1000 ? "-2" : "-" + deep;
  std::string printed = printAST(parse(chain + "\n"));
  EXPECT_EQ(printed.substr(0, 53), "(module\n  (assign (name x) (binop + (binop - (binop +");
  EXPECT_EQ(printed.substr(printed.size() - 13), "(const 1))))\n");
  EXPECT_NE(parseError(chain + "+1\n")
                .find("k.py:1:5: error: expression too long: more than 5000 binary operators in one chain "
                      "(split it over several statements)\nx = 1"),
            std::string::npos);
  // Printed with the left operands first, as a recursive walk would.
  EXPECT_EQ(dump("x = a - b + c * d\n"),
            "(module\n  (assign (name x) (binop + (binop - (name a) (name b)) (binop * (name c) (name d)))))\n");
}

TEST(Parser, Spellings) {
  EXPECT_STREQ(spelling(BinaryOp::FloorDiv), "//");
  EXPECT_STREQ(spelling(BinaryOp::MatMul), "@");
  EXPECT_STREQ(spelling(UnaryOperator::Not), "not");
  EXPECT_STREQ(spelling(UnaryOperator::Invert), "~");
  EXPECT_STREQ(spelling(CompareOp::IsNot), "is not");
  EXPECT_STREQ(spelling(CompareOp::NotIn), "not in");
}

// Compiling parses with recoverFunctionBodies: an error in a top-level function's body stays with that
// function (raised where it is compiled or called), and the functions after it parse.
TEST(ParserRecovery, BrokenBodyIsKeptAndParsingGoesOn) {
  const std::string text = "@jit\n"
                           "def broken(x):\n"
                           "    if x:\n"
                           "        with x:\n"
                           "            pass\n"
                           "    return x\n"
                           "\n"
                           "@jit\n"
                           "def good(x):\n"
                           "    return x + 1\n";
  EXPECT_THROW(parse(text), CompileError);
  Module m = parseModule(makeFile(text), /*recoverFunctionBodies=*/true);
  ASSERT_EQ(m.body.size(), 2u);
  const auto &broken = static_cast<const FunctionDef &>(*m.body[0]);
  const auto &good = static_cast<const FunctionDef &>(*m.body[1]);
  EXPECT_EQ(broken.name, "broken");
  EXPECT_TRUE(broken.body.empty());
  EXPECT_NE(broken.parseError.find("k.py:4:9: error: unsupported construct: 'with'"), std::string::npos)
      << broken.parseError;
  EXPECT_EQ(good.name, "good");
  EXPECT_TRUE(good.parseError.empty());
  EXPECT_EQ(good.body.size(), 1u);
}

// Host code at module level of a compiled file (a decorated class, a class under a module-level `if`)
// is skipped with its whole indented block; what follows it parses.
TEST(ParserRecovery, HostClassesAreSkippedWithTheirBlocks) {
  const std::string text = "@dataclass(frozen=True)\n"
                           "class Config:\n"
                           "    block: int = 128\n"
                           "\n"
                           "    def total(self):\n"
                           "        return {k: v for k, v in self.items()}\n"
                           "if HAVE_TORCH:\n"
                           "    class Fn(torch.autograd.Function):\n"
                           "        pass\n"
                           "    X = 1\n"
                           "else:\n"
                           "    X = 2\n"
                           "@jit\n"
                           "def good(x):\n"
                           "    return x + 1\n";
  EXPECT_THROW(parse(text), CompileError);
  Module m = parseModule(makeFile(text), /*recoverFunctionBodies=*/true);
  ASSERT_EQ(m.body.size(), 3u);
  const auto &config = static_cast<const FunctionDef &>(*m.body[0]);
  EXPECT_TRUE(config.skippedHostCode);
  EXPECT_EQ(config.name, "Config");
  EXPECT_EQ(config.loc.line, 2u);
  const auto &good = static_cast<const FunctionDef &>(*m.body[2]);
  EXPECT_EQ(good.name, "good");
  EXPECT_TRUE(good.parseError.empty());
}
