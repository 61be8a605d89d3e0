// The abstract syntax tree of the Python subset used by Triton-style kernels.
//
// Nodes are plain structs owned through unique_ptr; each carries its kind
// (for llvm::isa/dyn_cast through classof) and the SourceLoc of its first
// token. The parser builds it (dsl/Parser.cpp), printAST dumps it
// (--emit ast), the specialiser (dsl/Specializer.cpp) turns it into block IR.
#pragma once

#include "compiler/support/Diagnostics.h"
#include "dsl/ConstInt.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera::ast {

// ---------------------------------------------------------------- expressions

enum class ExprKind {
  Name,      // x
  Constant,  // 1, 2.5, True, None, "str"
  Attribute, // value.attr
  Subscript, // value[index, ...]
  Slice,     // lower:upper:step (only inside a Subscript)
  Call,      // func(args, key=value)
  BinOp,     // a + b
  UnaryOp,   // -a, not a, ~a, +a
  BoolOp,    // a and b and c
  Compare,   // a < b <= c
  IfExp,     // a if cond else b
  Tuple,     // (a, b) or a, b
  List,      // [a, b]
  ListComp,  // [elt for target in iter if cond ...] (one generator)
  Starred,   // *value (a call's positional argument)
};

struct Expr {
  const ExprKind kind;
  SourceLoc loc;
  Expr(ExprKind kind, SourceLoc loc) : kind(kind), loc(loc) {}
  virtual ~Expr() = default;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Name : Expr {
  std::string id;
  Name(SourceLoc loc, std::string id) : Expr(ExprKind::Name, loc), id(std::move(id)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::Name; }
};

struct Constant : Expr {
  enum class Type { Int, Float, Bool, None, String };
  Type type;
  ConstInt intValue = 0;  // Int (literals of more than 127 bits are rejected by the lexer), Bool (0/1)
  double floatValue = 0;  // Float
  std::string stringValue; // String
  Constant(SourceLoc loc, Type type) : Expr(ExprKind::Constant, loc), type(type) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::Constant; }
};

struct Attribute : Expr {
  ExprPtr value;
  std::string attr;
  Attribute(SourceLoc loc, ExprPtr value, std::string attr)
      : Expr(ExprKind::Attribute, loc), value(std::move(value)), attr(std::move(attr)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::Attribute; }
};

// x[a, :, None]: each index is an expression, a Slice, or a Constant None.
struct Subscript : Expr {
  ExprPtr value;
  std::vector<ExprPtr> indices;
  Subscript(SourceLoc loc, ExprPtr value, std::vector<ExprPtr> indices)
      : Expr(ExprKind::Subscript, loc), value(std::move(value)), indices(std::move(indices)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::Subscript; }
};

struct Slice : Expr {
  ExprPtr lower, upper, step; // each may be null
  Slice(SourceLoc loc) : Expr(ExprKind::Slice, loc) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::Slice; }
};

struct Keyword {
  SourceLoc loc;
  std::string name;
  ExprPtr value;
};

struct Call : Expr {
  ExprPtr func;
  std::vector<ExprPtr> args;
  std::vector<Keyword> keywords;
  Call(SourceLoc loc, ExprPtr func) : Expr(ExprKind::Call, loc), func(std::move(func)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::Call; }
};

enum class BinaryOp {
  Add, Sub, Mul, Div, FloorDiv, Mod, Pow, MatMul,
  LShift, RShift, BitAnd, BitOr, BitXor,
};
const char *spelling(BinaryOp op); // "+", "//", ...

// A chain a + b + c + ... is a BinOp whose lhs is a BinOp, and so on down: as
// long as the source, so everything that walks it follows the lhs links in a
// loop (binOpSpine), the destructor included.
struct BinOp : Expr {
  BinaryOp op;
  ExprPtr lhs, rhs;
  BinOp(SourceLoc loc, BinaryOp op, ExprPtr lhs, ExprPtr rhs)
      : Expr(ExprKind::BinOp, loc), op(op), lhs(std::move(lhs)), rhs(std::move(rhs)) {}
  ~BinOp() override;
  static bool classof(const Expr *e) { return e->kind == ExprKind::BinOp; }
};

// The BinOps of the chain that `top` heads, from `top` down to the first one
// whose lhs is no BinOp (its lhs is the chain's first operand).
std::vector<const BinOp *> binOpSpine(const BinOp &top);

enum class UnaryOperator { Neg, Pos, Not, Invert };
const char *spelling(UnaryOperator op); // "-", "+", "not", "~"

struct UnaryOp : Expr {
  UnaryOperator op;
  ExprPtr operand;
  UnaryOp(SourceLoc loc, UnaryOperator op, ExprPtr operand)
      : Expr(ExprKind::UnaryOp, loc), op(op), operand(std::move(operand)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::UnaryOp; }
};

struct BoolOp : Expr {
  bool isAnd; // and / or
  std::vector<ExprPtr> values; // two or more
  BoolOp(SourceLoc loc, bool isAnd) : Expr(ExprKind::BoolOp, loc), isAnd(isAnd) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::BoolOp; }
};

enum class CompareOp { Eq, NotEq, Lt, LtE, Gt, GtE, Is, IsNot, In, NotIn };
const char *spelling(CompareOp op);

// a < b <= c: operands = {a, b, c}, ops = {Lt, LtE}.
struct Compare : Expr {
  std::vector<CompareOp> ops;
  std::vector<ExprPtr> operands;
  Compare(SourceLoc loc) : Expr(ExprKind::Compare, loc) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::Compare; }
};

struct IfExp : Expr {
  ExprPtr cond, thenValue, elseValue;
  IfExp(SourceLoc loc, ExprPtr cond, ExprPtr thenValue, ExprPtr elseValue)
      : Expr(ExprKind::IfExp, loc), cond(std::move(cond)), thenValue(std::move(thenValue)),
        elseValue(std::move(elseValue)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::IfExp; }
};

struct Tuple : Expr {
  std::vector<ExprPtr> elts;
  Tuple(SourceLoc loc) : Expr(ExprKind::Tuple, loc) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::Tuple; }
};

struct List : Expr {
  std::vector<ExprPtr> elts;
  List(SourceLoc loc) : Expr(ExprKind::List, loc) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::List; }
};

// Triton's visit_ListComp: one generator over a tuple, giving a tuple.
struct ListComp : Expr {
  ExprPtr elt;
  ExprPtr target; // a name, or a tuple / list of targets
  ExprPtr iter;
  std::vector<ExprPtr> ifs;
  ListComp(SourceLoc loc) : Expr(ExprKind::ListComp, loc) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::ListComp; }
};

// f(a, *t): t's elements as positional arguments (Triton's visit_Starred in visit_Call).
struct Starred : Expr {
  ExprPtr value;
  Starred(SourceLoc loc, ExprPtr value) : Expr(ExprKind::Starred, loc), value(std::move(value)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::Starred; }
};

// ----------------------------------------------------------------- statements

enum class StmtKind {
  Expr, Assign, AugAssign, AnnAssign, If, For, While, Break, Continue, Return,
  Assert, Pass, Raise, FunctionDef, Import, ImportFrom, Try,
};

struct Stmt {
  const StmtKind kind;
  SourceLoc loc;
  Stmt(StmtKind kind, SourceLoc loc) : kind(kind), loc(loc) {}
  virtual ~Stmt() = default;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct ExprStmt : Stmt {
  ExprPtr value;
  ExprStmt(SourceLoc loc, ExprPtr value) : Stmt(StmtKind::Expr, loc), value(std::move(value)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Expr; }
};

// a = b = value; a, b = value. Targets are Name, Tuple of targets, Subscript, Attribute.
struct Assign : Stmt {
  std::vector<ExprPtr> targets;
  ExprPtr value;
  Assign(SourceLoc loc) : Stmt(StmtKind::Assign, loc) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Assign; }
};

struct AugAssign : Stmt {
  ExprPtr target;
  BinaryOp op;
  ExprPtr value;
  AugAssign(SourceLoc loc, ExprPtr target, BinaryOp op, ExprPtr value)
      : Stmt(StmtKind::AugAssign, loc), target(std::move(target)), op(op), value(std::move(value)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::AugAssign; }
};

// x: annotation = value (value may be null)
struct AnnAssign : Stmt {
  ExprPtr target, annotation, value;
  AnnAssign(SourceLoc loc) : Stmt(StmtKind::AnnAssign, loc) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::AnnAssign; }
};

// elif chains are nested Ifs in orelse.
struct If : Stmt {
  ExprPtr cond;
  Body body, orelse;
  If(SourceLoc loc) : Stmt(StmtKind::If, loc) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::If; }
};

struct For : Stmt {
  ExprPtr target; // Name or Tuple
  ExprPtr iter;   // usually Call to range / tl.range / tl.static_range
  Body body, orelse;
  For(SourceLoc loc) : Stmt(StmtKind::For, loc) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::For; }
};

struct While : Stmt {
  ExprPtr cond;
  Body body, orelse;
  While(SourceLoc loc) : Stmt(StmtKind::While, loc) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::While; }
};

struct Break : Stmt {
  Break(SourceLoc loc) : Stmt(StmtKind::Break, loc) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Break; }
};
struct Continue : Stmt {
  Continue(SourceLoc loc) : Stmt(StmtKind::Continue, loc) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Continue; }
};
struct Pass : Stmt {
  Pass(SourceLoc loc) : Stmt(StmtKind::Pass, loc) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Pass; }
};

// `raise X` / `raise X from Y`: an error if the compiler reaches it (Triton compiles only the branch a
// constexpr `if` takes, so libraries keep `raise ValueError(...)` in branches no specialisation takes).
struct Raise : Stmt {
  ExprPtr exc; // may be null (a bare `raise`)
  Raise(SourceLoc loc) : Stmt(StmtKind::Raise, loc) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Raise; }
};

struct Return : Stmt {
  ExprPtr value; // may be null
  Return(SourceLoc loc, ExprPtr value) : Stmt(StmtKind::Return, loc), value(std::move(value)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Return; }
};

struct Assert : Stmt {
  ExprPtr cond, msg; // msg may be null
  Assert(SourceLoc loc) : Stmt(StmtKind::Assert, loc) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Assert; }
};

struct Param {
  SourceLoc loc;
  std::string name;
  ExprPtr annotation;   // may be null; `tl.constexpr` marks a constexpr parameter
  ExprPtr defaultValue; // may be null
};

struct FunctionDef : Stmt {
  std::string name;
  std::vector<ExprPtr> decorators; // e.g. Attribute(tessera.jit) or Call(jit, keywords)
  std::vector<Param> params;
  ExprPtr returns; // may be null
  Body body;
  // A top-level function whose body did not parse (parseModule with recoverFunctionBodies): the
  // formatted diagnostic, raised where the function is compiled or called; body is then empty.
  std::string parseError;
  SourceLoc parseErrorLoc;
  // Not a function: a top-level class / with / async statement that recovery skipped (host code of a
  // library file), kept under the class's name so that a kernel using it gets parseError.
  bool skippedHostCode = false;
  FunctionDef(SourceLoc loc) : Stmt(StmtKind::FunctionDef, loc) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::FunctionDef; }
};

// import a.b.c as d
struct Import : Stmt {
  struct Alias { std::string module; std::string asName; }; // asName empty if none
  std::vector<Alias> names;
  Import(SourceLoc loc) : Stmt(StmtKind::Import, loc) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Import; }
};

// from a.b import c as d, e
struct ImportFrom : Stmt {
  std::string module; // may start with dots for relative imports
  struct Alias { std::string name; std::string asName; };
  std::vector<Alias> names; // name "*" for star imports
  ImportFrom(SourceLoc loc) : Stmt(StmtKind::ImportFrom, loc) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::ImportFrom; }
};

// try: ... except [type [as name]]: ... else: ... finally: ... (module level only:
// libraries choose their imports this way).
struct Try : Stmt {
  struct Handler { SourceLoc loc; ExprPtr type; std::string name; Body body; }; // type may be null
  Body body;
  std::vector<Handler> handlers;
  Body orelse, finalbody;
  Try(SourceLoc loc) : Stmt(StmtKind::Try, loc) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Try; }
};

// A whole file. Top level holds imports, function definitions, assignments of
// constants; anything else is parsed and ignored by the specialiser.
struct Module {
  std::shared_ptr<const SourceFile> file;
  Body body;
};

// Parses a file; throws CompileError on the first syntax error. With recoverFunctionBodies, an error
// in the body of a top-level function is kept in that FunctionDef (parseError) instead, and parsing
// goes on with the next top-level statement: Triton compiles only the functions a kernel reaches, so
// one helper with an unsupported construct must not break the other kernels of its file.
Module parseModule(std::shared_ptr<const SourceFile> file, bool recoverFunctionBodies = false);

// A stable, indented S-expression dump (the `--emit ast` stage).
std::string printAST(const Module &module);

} // namespace tessera::ast
