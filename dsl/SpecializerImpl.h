// Internals of the specialiser, shared by Specializer.cpp (statements and
// control flow), SpecializerExpr.cpp (expressions, promotion, broadcasting)
// and Builtins.cpp (the tl.* functions).
#pragma once

#include "dsl/Specializer.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tessera::spec {

// What a Python name can stand for while a kernel is being specialised.
struct SValue {
  enum class Kind {
    IR,          // a runtime value: ir::Value (scalar or block)
    Const,       // a compile-time Python value
    DType,       // tl.float16, x.dtype, ptr.dtype.element_ty, ...
    Module,      // tl, tl.math, triton, ...
    Function,    // a @jit function of this file
    Builtin,     // a builtin function, e.g. "tl.arange", "range", "float"
    BoundMethod, // x.to: elems[0] is x, path is "to"
    Tuple,       // (a, b): elems
  };
  Kind kind = Kind::Const;
  ir::Value *value = nullptr;
  ConstexprValue c;
  ir::Type dtype;
  std::string path; // Module: canonical path; Builtin: qualified name; BoundMethod: method
  const ast::FunctionDef *fn = nullptr;
  std::vector<SValue> elems;

  static SValue ir(ir::Value *v) { SValue s; s.kind = Kind::IR; s.value = v; return s; }
  static SValue constant(ConstexprValue c) { SValue s; s.kind = Kind::Const; s.c = std::move(c); return s; }
  static SValue dtypeOf(ir::Type t) { SValue s; s.kind = Kind::DType; s.dtype = std::move(t); return s; }
  static SValue module(std::string p) { SValue s; s.kind = Kind::Module; s.path = std::move(p); return s; }
  static SValue builtin(std::string p) { SValue s; s.kind = Kind::Builtin; s.path = std::move(p); return s; }
  static SValue function(const ast::FunctionDef *f) { SValue s; s.kind = Kind::Function; s.fn = f; return s; }
  static SValue tuple(std::vector<SValue> e) { SValue s; s.kind = Kind::Tuple; s.elems = std::move(e); return s; }

  bool isIR() const { return kind == Kind::IR; }
  bool isConst() const { return kind == Kind::Const; }
  bool isNone() const { return kind == Kind::Const && c.kind == ConstexprValue::Kind::None; }
};

using Env = std::map<std::string, SValue>;

// Call arguments after evaluation.
struct CallArgs {
  SourceLoc loc;
  std::vector<SValue> args;
  std::vector<SourceLoc> argLocs;
  std::vector<std::pair<std::string, SValue>> keywords;
  std::vector<SourceLoc> keywordLocs;
};

class Specializer {
public:
  Specializer(const ast::Module &module, const Specialization &spec);
  std::unique_ptr<ir::Function> run();

  // --- errors
  [[noreturn]] void error(SourceLoc loc, const std::string &message) const;

  // --- expressions (SpecializerExpr.cpp)
  SValue eval(const ast::Expr &e);
  SValue evalName(const ast::Name &e);
  SValue evalAttribute(const ast::Attribute &e);
  SValue evalSubscript(const ast::Subscript &e);
  SValue evalCall(const ast::Call &e);
  SValue evalCompare(const ast::Compare &e);
  SValue evalBoolOp(const ast::BoolOp &e);
  SValue evalIfExp(const ast::IfExp &e);
  SValue unary(ast::UnaryOperator op, const SValue &v, SourceLoc loc);
  SValue binary(ast::BinaryOp op, const SValue &lhs, const SValue &rhs, SourceLoc loc);
  SValue compare(ast::CompareOp op, const SValue &lhs, const SValue &rhs, SourceLoc loc);

  // --- values and types
  ir::Value *toIR(const SValue &v, SourceLoc loc, const ir::Type *peer = nullptr);
  ir::Value *castElement(ir::Value *v, const ir::Type &elem);
  ir::Value *broadcastTo(ir::Value *v, const std::vector<int64_t> &shape, SourceLoc loc);
  std::vector<int64_t> broadcastShapes(const ir::Type &a, const ir::Type &b, SourceLoc loc) const;
  ir::Type promote(const ir::Type &a, const ir::Type &b, const char *opText, SourceLoc loc) const;
  ir::Value *toBool(ir::Value *v);
  ConstexprValue requireConst(const SValue &v, SourceLoc loc, const std::string &what) const;
  int64_t requireInt(const SValue &v, SourceLoc loc, const std::string &what) const;
  ir::Type requireDType(const SValue &v, SourceLoc loc, const std::string &what) const;
  std::string describe(const SValue &v) const;

  // --- builtins (Builtins.cpp)
  SValue callBuiltin(const std::string &name, CallArgs &args);
  SValue callMethod(const SValue &self, const std::string &method, CallArgs &args);
  SValue reduce(ir::Value *x, const SValue &axis, const std::string &kind, bool keepDims, SourceLoc loc);

  // --- statements (Specializer.cpp)
  enum class Flow { Normal, Returned };
  Flow execBody(const ast::Body &body);
  Flow execStmt(const ast::Stmt &s);
  void execAssign(const ast::Expr &target, const SValue &value);
  void execIf(const ast::If &s);
  void execFor(const ast::For &s);
  void execWhile(const ast::While &s);
  SValue inlineCall(const ast::FunctionDef &fn, CallArgs &args);

  ir::Builder &builder() { return b_; }
  const SourceFile &file() const { return *module_.file; }

private:
  const ast::Module &module_;
  const Specialization &spec_;
  Env globals_;
  Env *env_ = nullptr; // the current function's variables
  SValue returnValue_;
  unsigned inlineDepth_ = 0;
  bool evaluatingGlobal_ = false;
  std::unique_ptr<ir::Function> fn_;
  ir::Builder b_;
  ir::Block scratch_; // builder's initial block before the kernel exists

  void collectModuleScope();
  SValue evalGlobal(const ast::Expr &e);
  const ast::FunctionDef *findKernel() const;
  void bindParameters(const ast::FunctionDef &kernel);
};

// Names assigned anywhere in a body (recursively), in first-assignment order.
std::vector<std::string> assignedNames(const ast::Body &body);

} // namespace tessera::spec
