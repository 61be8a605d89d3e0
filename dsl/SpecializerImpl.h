// Internals of the specialiser, shared by Specializer.cpp (statements and
// control flow), SpecializerExpr.cpp (expressions, promotion, broadcasting),
// SpecializerOperators.cpp (binary, comparison and unary operators, constant
// folding) and Builtins.cpp (the tl.* functions).
#pragma once

#include "dsl/Specializer.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tessera::spec {

// The module path of names imported from other libraries ("other:" and the name as the kernel's
// file binds it, e.g. "other:helpers"): their @jit functions are the ones the host appends to the
// kernel's text, their other values bound to __tessera_attr__helpers__name (python/tessera/_compose.py).
inline constexpr const char *kOtherModule = "other:";

// What a Python name can stand for while a kernel is being specialised.
struct SValue {
  enum class Kind {
    IR,          // a runtime value: ir::Value (scalar or block)
    Const,       // a compile-time Python value
    DType,       // tl.float16, x.dtype, ptr.dtype.element_ty, ... (path non-empty: a dtype
                 // tessera only names, such as "fp8e4b8": it compares, but no value has it)
    Module,      // tl, tl.math, triton, ...
    Function,    // a @jit function of this file
    Builtin,     // a builtin function, e.g. "tl.arange", "range", "float"
    BoundMethod, // x.to: elems[0] is x, path is "to"
    Tuple,       // (a, b): elems
    BlockPointer,// tl.make_block_ptr(...): elems = base, shape, strides, offsets, block_shape, order
                 // (the last five are tuples); loads/stores lower it to pointers + masks
    TensorDescriptor, // tl.make_tensor_descriptor(...): elems = base, shape, strides but the last (always 1),
                      // block_shape (tuples), padding
                      // (a string constant); desc.load/store lower it to pointers + masks (BuiltinsMemory.cpp).
                      // A descriptor argument (Specializer::hostDescriptor) has its fields from hidden
                      // parameters, padding an i32 (1: "nan"), and a sixth: the tensordesc parameter (TMA)
    ConstexprType,    // Triton's constexpr_type: `c.type` of a constexpr, `constexpr_type(10)`; elems[0] the
                      // value (a constant or a tuple of them); equal when the values are
  };
  Kind kind = Kind::Const;
  ir::Value *value = nullptr;
  ConstexprValue c;
  ir::Type dtype;
  std::string path; // Module: canonical path; Builtin: qualified name; BoundMethod: method
  const ast::FunctionDef *fn = nullptr;
  std::vector<SValue> elems;
  std::vector<std::string> fields; // Tuple: a NamedTuple's field names, `t.ptr` (empty: a plain tuple)

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
  bool sameDType(const SValue &o) const { return kind == Kind::DType && o.kind == Kind::DType && dtype == o.dtype && path == o.path; }
};

// Whether fn is decorated @jit / @triton.jit / @tessera.jit(...), or with fusionDecorators also
// @tessera.elementwise / @tessera.fuse, which make @jit functions too (Specializer.cpp).
bool isJitFunction(const ast::FunctionDef &fn, bool fusionDecorators = true);
// `p: tl.constexpr` (also `constexpr`, or a string annotation naming it): SpecializerParameters.cpp.
bool isConstexprAnnotation(const ast::Expr *e);

// "$retval" before a `return`: where one path of a function returns a value and another falls
// off its end, that path returns an unspecified value of the same type (Triton: poison).
inline SValue noReturnValue() {
  SValue s = SValue::constant(ConstexprValue::none());
  s.path = "$noreturn";
  return s;
}
inline bool isNoReturnValue(const SValue &v) { return v.isNone() && v.path == "$noreturn"; }

// A tensor descriptor's strides, the last (1, not held) included (BuiltinsMemory.cpp).
SValue descriptorStrides(const SValue &desc);

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
  SValue eval(const ast::Expr &e); // evalUnchecked, then checkBlockSize
  SValue evalUnchecked(const ast::Expr &e);
  void checkBlockSize(const SValue &v, SourceLoc loc) const; // at most 2^20 elements, as Triton
  SValue evalName(const ast::Name &e);
  SValue evalAttribute(const ast::Attribute &e);
  SValue attributeOf(const SValue &base, const std::string &attr, SourceLoc loc); // base.attr, getattr()
  SValue dtypeAttribute(const SValue &dtype, const std::string &attr, SourceLoc loc);
  SValue evalSubscript(const ast::Subscript &e);
  SValue evalCall(const ast::Call &e);
  // A call's positional arguments, `*tuple` ones spread into their elements.
  void evalPositionalArguments(const std::vector<ast::ExprPtr> &args, std::vector<SValue> &values,
                               std::vector<SourceLoc> &locs);
  SValue evalListComp(const ast::ListComp &e);
  SValue evalCallOf(const SValue &callee, const ast::Call &e, CallArgs &args);
  SValue evalCompare(const ast::Compare &e);
  SValue evalBoolOp(const ast::BoolOp &e);
  SValue evalIfExp(const ast::IfExp &e);
  SValue branchingIfExp(const ast::IfExp &e, ir::Value *cond);
  // (SpecializerOperators.cpp)
  SValue unary(ast::UnaryOperator op, const SValue &v, SourceLoc loc);
  SValue binary(ast::BinaryOp op, const SValue &lhs, const SValue &rhs, SourceLoc loc);
  SValue compare(ast::CompareOp op, const SValue &lhs, const SValue &rhs, SourceLoc loc);
  SValue compareTuples(ast::CompareOp op, const SValue &lhs, const SValue &rhs, SourceLoc loc);
  SValue sliceTuple(const SValue &tuple, const ast::Slice &slice);
  SValue constexprTypeOf(const SValue &value, SourceLoc loc); // Triton's constexpr_type(value)

  // --- values and types
  ir::Value *toIR(const SValue &v, SourceLoc loc, const ir::Type *peer = nullptr);
  // Triton's typing of Python numbers (semantic.py): the type a lone literal
  // takes (to_tensor); a literal operand of an arithmetic op next to a block
  // (binary_op_type_checking_impl: it takes the block's type and must fit it);
  // a literal operand of a comparison (to_tensor first, then promotion).
  ir::Type literalType(const ConstexprValue &c, SourceLoc loc) const;
  ir::Value *arithmeticOperand(const SValue &literal, SourceLoc loc, const ir::Type &peer);
  ir::Value *comparisonOperand(const SValue &literal, SourceLoc loc, const ir::Type &peer);
  ir::Value *castElement(ir::Value *v, const ir::Type &elem);
  ir::Value *castFp8E4B15(ir::Value *v, const ir::Type &target); // to or from fp8e4b15, by its bits
  // A narrowing float conversion rounded toward zero (fp_downcast_rounding="rtz").
  ir::Value *castTowardZero(ir::Value *v, const ir::Type &elem);
  // Triton's semantic.cast refuses int <-> fp8 (see SpecializerExpr.cpp).
  void requireCastable(const ir::Type &from, const ir::Type &to, SourceLoc loc);
  // The element type a value has before any implicit conversion (a literal's own: int32, fp32, int1).
  ir::Type elementTypeOf(const SValue &v, SourceLoc loc);
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
  SValue callDescriptorMethod(ir::Value *desc, const std::string &method, CallArgs &args);
  SValue reduce(ir::Value *x, const SValue &axis, const std::string &kind, bool keepDims, SourceLoc loc);

  // --- the rest of triton.language (dsl/Builtins{Math,Shape,Reduce,Dot,Memory,Debug}.cpp). Each
  // returns nullopt for a name it does not define, so the older builtins stay the fallback.
  std::optional<SValue> callLanguageBuiltin(const std::string &name, CallArgs &args);
  std::optional<SValue> callLanguageMethod(const SValue &self, const std::string &method, CallArgs &args);
  std::optional<SValue> callMathBuiltin(const std::string &name, CallArgs &args);
  std::optional<SValue> callShapeBuiltin(const std::string &name, CallArgs &args);
  std::optional<SValue> callReduceBuiltin(const std::string &name, CallArgs &args);
  std::optional<SValue> callDotBuiltin(const std::string &name, CallArgs &args); // tl.dot (BuiltinsDot.cpp)
  std::optional<SValue> callMemoryBuiltin(const std::string &name, CallArgs &args);
  SValue makeTensorDescriptor(CallArgs &args); // tl.make_tensor_descriptor (BuiltinsMemory.cpp)
  SValue hostDescriptor(const std::string &name, ir::Value *map); // a descriptor argument (Specializer.cpp)
  // The kernel's descriptor parameters (name, tensordesc argument), given their hidden fields after the others.
  std::vector<std::pair<std::string, ir::Value *>> hostDescriptors;
  // desc.load(offsets) / desc.store(offsets, value) on a descriptor the kernel made (BuiltinsMemory.cpp).
  SValue callMadeDescriptorMethod(const SValue &desc, const std::string &method, CallArgs &args);
  std::optional<SValue> callDebugBuiltin(const std::string &name, CallArgs &args);
  std::optional<SValue> callDataDependentBuiltin(const std::string &name, CallArgs &args); // sort, gather, histogram
  std::optional<SValue> callInlineAsmBuiltin(const std::string &name, CallArgs &args);
  std::optional<SValue> callDotScaledBuiltin(const std::string &name, CallArgs &args); // BuiltinsDotScaled.cpp
  std::optional<SValue> callMapElementwiseBuiltin(const std::string &name, CallArgs &args); // tl.map_elementwise
  void requirePerElementOps(const ir::Block &region, const std::string &fname, const std::string &fnName, SourceLoc loc);
  ir::Value *reshapeTo(ir::Value *x, const std::vector<int64_t> &shape, SourceLoc loc);
  // Builds the region of a reduce_combine/scan op by inlining `combineFn` on scalars.
  void buildCombineRegion(ir::Operation *op, const SValue &combineFn, SourceLoc loc);
  // Calls a @jit function of the language prelude (dsl/LanguagePrelude.cpp).
  SValue callPrelude(const std::string &fn, CallArgs args);
  SValue preludeFunction(const std::string &fn);
  bool debugEnabled() const { return spec_.debug; }

  // --- statements (Specializer.cpp)
  // Returned / Broke / Continued: the rest of the body is dead. Finished: an
  // if that may break/continue/return already ran the rest of the enclosing
  // bodies (up to the loop or function) inside its branches.
  enum class Flow { Normal, Returned, Broke, Continued, Finished };
  Flow execBody(const ast::Body &body, size_t start = 0);
  Flow execStmt(const ast::Stmt &s);
  void execAssign(const ast::Expr &target, const SValue &value);
  // Triton's visit_Assign: a plain assignment turns a Python number into a scalar tensor.
  SValue assignedValue(const ast::Expr &target, const SValue &value, const ast::Expr *valueExpr, SourceLoc loc);
  Flow execIf(const ast::If &s);
  Flow execFor(const ast::For &s);
  Flow execWhile(const ast::While &s);
  SValue inlineCall(const ast::FunctionDef &fn, CallArgs &args);

  // Every variable of the current function that holds `from` holds `to` from here on (a hint
  // applies to the value, as Triton's in-place tl.multiple_of does).
  void rebindValue(ir::Value *from, ir::Value *to);

  ir::Builder &builder() { return b_; }
  const SourceFile &file() const { return *module_.file; }

private:
  const ast::Module &module_;
  const Specialization &spec_;
  Env globals_;
  Env *env_ = nullptr; // the current function's variables
  unsigned inlineDepth_ = 0;
  bool evaluatingGlobal_ = false;
  std::unique_ptr<ir::Function> fn_;
  ir::Builder b_;
  ir::Block scratch_; // builder's initial block before the kernel exists

  // Control flow with break/continue/return (dsl/SpecializerControlFlow.cpp).
  struct PendingRest { const ast::Body *body; size_t next; };
  std::vector<PendingRest> pending_; // the rest of the enclosing bodies, innermost last
  unsigned loopDepth_ = 0;           // runtime loops around the statement, in this function
  bool inStaticLoop_ = false;        // directly inside tl.static_range (no runtime loop in between)
  Flow runPending();
  Flow escapingIf(ir::Value *cond, const std::function<Flow()> &thenFn, const std::function<Flow()> &elseFn,
                  SourceLoc loc);
  void endBranch(Flow f);
  Flow afterLoopThatMayReturn(SourceLoc loc);
  void execForAsWhile(const ast::For &s, const SValue &lb, const SValue &ub, const SValue &step, ir::Type ivType);
  void execWhileLoop(const ast::Body &body, SourceLoc loc, const std::string &extraName, bool breaks,
                     const std::function<ir::Value *(const Env &)> &condition,
                     const std::function<void(Env &)> &enter, const std::function<void(Env &)> &latch);
  void mergeBranches(ir::Operation *ifOp, const Env &thenEnv, const Env &elseEnv, SourceLoc loc);
  // The language prelude: its module, its globals, and whether they are current.
  std::shared_ptr<const ast::Module> prelude_; // parsed once a process (BuiltinsLanguage.cpp)
  Env preludeGlobals_;
  bool inPrelude_ = false;
  void loadPrelude();

  void collectModuleScope(const ast::Module &module);
  bool collectModuleStatements(const ast::Body &body, bool inTry);
  // Module globals bound under an `if` whose condition does not fold: where.
  std::map<std::string, SourceLoc> undecidedGlobals_;
  // Scalar tensors made by `name = <number>`: the name and the number, for the hint
  // of requireConst (`name: tl.constexpr = <number>` keeps a compile-time constant).
  struct AssignedNumber { std::string name, number; };
  std::map<const ir::Value *, AssignedNumber> assignedNumbers_;
  SValue evalGlobal(const ast::Expr &e);
  const ast::FunctionDef *findKernel() const;
  void bindParameters(const ast::FunctionDef &kernel);
  SValue bindRuntimeParameter(const std::string &name, const ArgSpec &arg, const ast::Expr *annotation);
  SValue bindTupleArgument(const ConstexprValue &given, const std::string &name, size_t &argIndex, SourceLoc loc);
};

// Triton's dtype.name of a dtype value: "fp16", "uint8", "pointer<fp32>", ... (BuiltinsLanguage.cpp).
std::string tritonDTypeName(const SValue &dtype);

// Python's truth value of a constexpr.
bool truthy(const ConstexprValue &c);

// Names assigned anywhere in a body (recursively), in first-assignment order.
std::vector<std::string> assignedNames(const ast::Body &body);

} // namespace tessera::spec
