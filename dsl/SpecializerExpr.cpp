// The specialiser, part 2: expressions. Compile-time values fold with
// Python's semantics; runtime values follow Triton's rules: Python literals
// are "weakly" typed (they take the other operand's type), then operands are
// promoted to a common element type and broadcast to a common shape.
#include "dsl/SpecializerImpl.h"

#include "llvm/Support/Casting.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <limits>

using llvm::cast;
using llvm::dyn_cast;
using llvm::isa;

namespace tessera::spec {

using ir::OpCode;
using ir::ScalarType;
using CK = ConstexprValue::Kind;

std::string Specializer::describe(const SValue &v) const {
  switch (v.kind) {
  case SValue::Kind::IR: return (v.value->type.isBlock() ? "a block of type " : "a value of type ") + v.value->type.str();
  case SValue::Kind::Const: return "the constant " + v.c.str();
  case SValue::Kind::DType: return "the dtype " + (v.path.empty() ? v.dtype.str() : v.path);
  case SValue::Kind::Module:
    if (v.path.rfind(kOtherModule, 0) == 0)
      return "'" + v.path.substr(std::string(kOtherModule).size()) + "' (not a @jit function tessera was given)";
    return "a module";
  case SValue::Kind::Function: return "the function '" + v.fn->name + "'";
  case SValue::Kind::Builtin: return "the builtin '" + v.path + "'";
  case SValue::Kind::BoundMethod: return "the method '" + v.path + "'";
  case SValue::Kind::Tuple: return "a tuple of " + std::to_string(v.elems.size());
  case SValue::Kind::BlockPointer: return "a block pointer";
  case SValue::Kind::TensorDescriptor: return "a tensor descriptor";
  case SValue::Kind::ConstexprType: return "the type constexpr_type[" + describe(v.elems[0]) + "]";
  }
  return "a value";
}

ConstexprValue Specializer::requireConst(const SValue &v, SourceLoc loc, const std::string &what) const {
  if (v.isConst()) return v.c;
  if (auto it = v.isIR() ? assignedNumbers_.find(v.value) : assignedNumbers_.end(); it != assignedNumbers_.end()) {
    const auto &[name, number] = it->second;
    error(loc, what + " must be a constexpr, but '" + name + "' is a scalar tensor: as in Triton, `" + name + " = " +
                   number + "` makes one; write `" + name + ": tl.constexpr = " + number +
                   "` to keep a compile-time constant");
  }
  error(loc, what + " must be a constexpr (a literal, a tl.constexpr parameter or a global), but it is " + describe(v));
}

int64_t Specializer::requireInt(const SValue &v, SourceLoc loc, const std::string &what) const {
  ConstexprValue c = requireConst(v, loc, what);
  if (c.kind != CK::Int && c.kind != CK::Bool) error(loc, what + " must be an integer, got " + c.str());
  if (!fitsInt64(c.intValue)) error(loc, what + " does not fit in 64 bits: " + c.str());
  return int64_t(c.intValue);
}

ir::Type Specializer::requireDType(const SValue &v, SourceLoc loc, const std::string &what) const {
  if (v.kind == SValue::Kind::DType && !v.path.empty())
    error(loc, what + " is tl.float8" + v.path.substr(3) + ", a dtype tessera names but does not support yet");
  if (v.kind == SValue::Kind::DType && v.dtype.isBlock())
    error(loc, what + " must be a dtype such as tl.float32, got the block type " + v.dtype.str() +
                   " (its .element_ty is the dtype)");
  if (v.kind == SValue::Kind::DType) return v.dtype;
  error(loc, what + " must be a dtype such as tl.float32, got " + describe(v));
}

// ------------------------------------------------------------------- values

// Whether a double is exactly a value of a float format with `precision` bits
// of significand, whose smallest subnormal is 2^minExponent.
static bool fitsFloatFormat(double v, int precision, int minExponent, double max) {
  if (v == 0 || std::isnan(v) || std::isinf(v)) return true;
  if (std::fabs(v) > max) return false;
  int e = 0;
  std::frexp(v, &e); // |v| = m * 2^e, 0.5 <= m < 1
  double scaled = std::ldexp(v, -std::max(e - precision, minExponent));
  return scaled == std::trunc(scaled);
}

static bool exactInFloat(double v, ScalarType t) {
  switch (t) {
  case ScalarType::F64: return true;
  case ScalarType::F32: return std::isnan(v) || double(float(v)) == v;
  case ScalarType::F16: return fitsFloatFormat(v, 11, -24, 65504.0);
  case ScalarType::BF16: return fitsFloatFormat(v, 8, -133, std::ldexp(2.0 - std::ldexp(1.0, -7), 127));
  default: return false; // fp8: compare in the promoted type
  }
}

static ConstInt intMin(ScalarType t) { return isSigned(t) ? -(ConstInt(1) << (bitWidth(t) - 1)) : 0; }
static ConstInt intMax(ScalarType t) {
  return isSigned(t) ? (ConstInt(1) << (bitWidth(t) - 1)) - 1 : (ConstInt(1) << bitWidth(t)) - 1;
}

// The 64-bit pattern of a value in [-2^63, 2^64) (u64 constants are stored as their bits).
static int64_t bits64(ConstInt v) { return static_cast<int64_t>(static_cast<uint64_t>(v)); }

// semantic.py to_tensor: ints take the first of i32, u32, i64, u64 that holds
// them; floats are f32 unless only f64 holds them (not inf, nan or 0).
ir::Type Specializer::literalType(const ConstexprValue &c, SourceLoc loc) const {
  switch (c.kind) {
  case CK::Bool: return ir::Type(ScalarType::I1);
  case CK::Int:
    for (ScalarType t : {ScalarType::I32, ScalarType::U32, ScalarType::I64, ScalarType::U64})
      if (c.intValue >= intMin(t) && c.intValue <= intMax(t)) return ir::Type(t);
    error(loc, "the integer constant " + c.str() + " does not fit in 64 bits");
  case CK::Float: {
    double m = std::fabs(c.floatValue);
    bool f32 = std::isinf(m) || std::isnan(m) || m == 0 ||
               (m >= std::ldexp(1.0, -126) && m <= double(std::numeric_limits<float>::max()));
    return ir::Type(f32 ? ScalarType::F32 : ScalarType::F64);
  }
  case CK::None: error(loc, "expected a value but got None");
  case CK::String: error(loc, "expected a value but got the string " + c.str());
  }
  error(loc, "expected a value");
}

// A Python literal next to a runtime operand takes that operand's type (the
// operand's kind ranks at least as high: bool < int < float); otherwise the
// literal's own type.
ir::Value *Specializer::toIR(const SValue &v, SourceLoc loc, const ir::Type *peer) {
  if (v.isIR()) return v.value;
  if (v.kind == SValue::Kind::Tuple) error(loc, "expected a value but got a tuple");
  if (!v.isConst()) error(loc, "expected a value but got " + describe(v));
  if (evaluatingGlobal_) error(loc, "module-level value is not a constant");
  const ConstexprValue &c = v.c;
  ir::Type elem = peer ? peer->element() : ir::Type();
  bool peerInt = peer && peer->isIntElement() && peer->scalar != ScalarType::I1;
  bool peerFloat = peer && peer->isFloatElement();
  ir::Type own = literalType(c, loc);
  switch (c.kind) {
  case CK::Int:
    if (peerFloat) return b_.floatConstant(double(c.intValue), elem);
    return b_.intConstant(bits64(c.intValue), peerInt ? elem : own);
  case CK::Float: return b_.floatConstant(c.floatValue, peerFloat ? elem : own);
  case CK::Bool: return b_.intConstant(int64_t(c.intValue), peerInt ? elem : own);
  default: break;
  }
  error(loc, "expected a value");
}

// semantic.py binary_op_type_checking_impl: an int literal that takes an int
// block's type must be a value of that type.
ir::Value *Specializer::arithmeticOperand(const SValue &literal, SourceLoc loc, const ir::Type &peer) {
  ir::Type elem = peer.element();
  if (literal.isConst() && literal.c.kind == CK::Int && peer.isIntElement() && elem.scalar != ScalarType::I1) {
    ConstInt v = literal.c.intValue;
    if (v < 0 && !isSigned(elem.scalar))
      error(loc, "cannot combine the negative constant " + literal.c.str() + " with a value of unsigned type " +
                     elem.str() + "; cast one of them");
    if (v < intMin(elem.scalar) || v > intMax(elem.scalar))
      error(loc, "the constant " + literal.c.str() + " is out of range for type " + elem.str());
  }
  return toIR(literal, loc, &peer);
}

// core.py tensor.__lt__ & co. turn the literal into a value of its own type
// first (to_tensor: a float literal is rounded to f32) and then promote both
// operands. Where the literal is exactly a value of the other operand's type
// the comparison there gives the same answer, so it stays in that type.
ir::Value *Specializer::comparisonOperand(const SValue &literal, SourceLoc loc, const ir::Type &peer) {
  if (!literal.isConst() || peer.pointer) return toIR(literal, loc, &peer);
  const ConstexprValue &c = literal.c;
  ir::Type own = literalType(c, loc), elem = peer.element();
  if (c.kind == CK::Float) {
    double v = own.scalar == ScalarType::F32 ? double(float(c.floatValue)) : c.floatValue;
    return b_.floatConstant(v, peer.isFloatElement() && exactInFloat(v, elem.scalar) ? elem : own);
  }
  ConstInt v = c.intValue;
  if (peer.isIntElement() && v >= intMin(elem.scalar) && v <= intMax(elem.scalar))
    return b_.intConstant(bits64(v), elem);
  if (peer.isFloatElement() && ConstInt(double(v)) == v && exactInFloat(double(v), elem.scalar))
    return b_.floatConstant(double(v), elem);
  return b_.intConstant(bits64(v), own);
}

ir::Value *Specializer::castElement(ir::Value *v, const ir::Type &elem) {
  ir::Type target = v->type.withElement(elem.element());
  if (target == v->type) return v;
  if (!v->type.pointer && !target.pointer &&
      (v->type.scalar == ScalarType::F8E4B15 || target.scalar == ScalarType::F8E4B15))
    return castFp8E4B15(v, target);
  return b_.op(OpCode::Cast, {v}, target);
}

// fp8e4b15 has no conversion instruction: Triton converts its bits (language/extra/cuda/utils.py,
// convert_custom_float8_sm80) and so do we, with the same results. It shares f16's exponent bias, so
// widening is a shift: S.EEEE.MMM -> S.0EEEE.MMM0000000 (0x7f is 1.875; there is no inf or NaN).
// Narrowing goes through f16 (an f32 is first rounded toward zero): the magnitude's bits clamped to
// 1.75 (0x3f00; NaN and inf clamp too), plus half a unit, shifted right by 7, under the sign: round half
// away from zero, and 0x7e is the largest result.
ir::Value *Specializer::castFp8E4B15(ir::Value *v, const ir::Type &target) {
  const ir::Type u8 = v->type.withElement(ir::Type(ScalarType::U8)), u16 = v->type.withElement(ir::Type(ScalarType::U16));
  auto constant = [&](int64_t c) { return b_.intConstant(c, u16); }; // a block constant is a splat
  auto bin = [&](OpCode code, ir::Value *x, ir::Value *y) { return b_.op(code, {x, y}, u16); };
  if (v->type.scalar == ScalarType::F8E4B15) {
    if (target.scalar == ScalarType::F8E4B15) return v;
    ir::Value *bits = b_.op(OpCode::Cast, {b_.op(OpCode::Bitcast, {v}, u8)}, u16);
    ir::Value *sign = bin(OpCode::Shl, bin(OpCode::And, bits, constant(0x80)), constant(8));
    ir::Value *rest = bin(OpCode::Shl, bin(OpCode::And, bits, constant(0x7F)), constant(7));
    ir::Value *half = b_.op(OpCode::Bitcast, {bin(OpCode::Or, sign, rest)}, v->type.withElement(ir::Type(ScalarType::F16)));
    return castElement(half, target.element());
  }
  ir::Value *half = v;
  if (v->type.scalar != ScalarType::F16) {
    ir::Value *f32 = castElement(v, ir::Type(ScalarType::F32)); // bf16 and f64 (Triton takes f16 and f32 only)
    half = castTowardZero(f32, ir::Type(ScalarType::F16));
  }
  ir::Value *bits = b_.op(OpCode::Bitcast, {half}, u16);
  ir::Value *magnitude = bin(OpCode::And, bits, constant(0x7FFF));
  ir::Value *large = b_.op(OpCode::Cmp, {magnitude, constant(0x3F00)}, v->type.withElement(ir::Type(ScalarType::I1)),
                           {{"predicate", std::string("gt")}});
  magnitude = b_.op(OpCode::Select, {large, constant(0x3F00), magnitude}, u16);
  ir::Value *rounded = bin(OpCode::Shr, bin(OpCode::Add, magnitude, constant(0x40)), constant(7));
  ir::Value *sign = bin(OpCode::Shr, bin(OpCode::And, bits, constant(0x8000)), constant(8));
  ir::Value *byte = b_.op(OpCode::Cast, {bin(OpCode::Or, rounded, sign)}, u8);
  return b_.op(OpCode::Bitcast, {byte}, target);
}

// Rounded to nearest (even) first, then one unit toward zero where that grew the magnitude: the
// toward-zero result is then the representable value just below it (an overflow to inf steps to the
// largest finite value). The formats are sign-magnitude, so one less in the bits is one unit less in
// magnitude; NaN compares false and stays NaN.
ir::Value *Specializer::castTowardZero(ir::Value *v, const ir::Type &elem) {
  ir::Value *nearest = castElement(v, elem);
  ir::Value *back = castElement(nearest, v->type.element());
  ir::Value *grew = b_.op(OpCode::Cmp, {b_.op(OpCode::Abs, {back}, back->type), b_.op(OpCode::Abs, {v}, v->type)},
                          v->type.withElement(ir::Type(ScalarType::I1)), {{"predicate", std::string("gt")}});
  unsigned width = bitWidth(elem.scalar);
  ir::Type bitsElem(width == 8 ? ScalarType::U8 : width == 16 ? ScalarType::U16 : ScalarType::U32);
  ir::Value *bits = b_.op(OpCode::Bitcast, {nearest}, nearest->type.withElement(bitsElem));
  ir::Value *one = b_.intConstant(1, bitsElem);
  if (bits->type.isBlock()) one = b_.op(OpCode::Splat, {one}, bits->type);
  ir::Value *stepped = b_.op(OpCode::Bitcast, {b_.op(OpCode::Sub, {bits, one}, bits->type)}, nearest->type);
  return b_.op(OpCode::Select, {grew, stepped, nearest}, nearest->type);
}

// semantic.cast converts integers to and from the standard floating types
// only: an integer (or int1) to fp8, or fp8 to an integer, is an error there
// (by .to(), tl.cast, and the implicit casts of tl.store's value and
// tl.load's `other`), so it is one here too.
void Specializer::requireCastable(const ir::Type &from, const ir::Type &to, SourceLoc loc) {
  auto fp8 = [](ScalarType t) { return t == ScalarType::F8E4M3 || t == ScalarType::F8E5M2 || t == ScalarType::F8E4B15; };
  if (from.pointer || to.pointer) return;
  if ((from.isIntElement() && fp8(to.scalar)) || (fp8(from.scalar) && to.isIntElement()))
    error(loc, "cannot cast " + from.element().str() + " to " + to.element().str() +
                   " (integers convert to and from fp8 only through a floating type, e.g. .to(tl.float16) first)");
}

ir::Type Specializer::elementTypeOf(const SValue &v, SourceLoc loc) {
  if (v.isIR()) return v.value->type.element();
  if (v.isConst() && (v.c.kind == CK::Int || v.c.kind == CK::Float || v.c.kind == CK::Bool))
    return literalType(v.c, loc).element();
  return ir::Type();
}

ir::Value *Specializer::toBool(ir::Value *v) {
  if (v->type.isBoolElement()) return v;
  if (v->type.isPointerElement()) return v; // rejected by callers that care
  ir::Value *zero = v->type.isFloatElement() ? b_.floatConstant(0.0, v->type.element())
                                             : b_.intConstant(0, v->type.element());
  if (v->type.isBlock()) zero = b_.op(OpCode::Splat, {zero}, v->type);
  return b_.op(OpCode::Cmp, {v, zero}, v->type.withElement(ir::Type(ScalarType::I1)), {{"predicate", std::string("ne")}});
}

static std::string shapeText(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::vector<int64_t> Specializer::broadcastShapes(const ir::Type &a, const ir::Type &b, SourceLoc loc) const {
  const auto &sa = a.shape, &sb = b.shape;
  size_t rank = std::max(sa.size(), sb.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - sa.size() ? 1 : sa[i - (rank - sa.size())];
    int64_t db = i < rank - sb.size() ? 1 : sb[i - (rank - sb.size())];
    if (da != db && da != 1 && db != 1)
      error(loc, "cannot broadcast shapes " + shapeText(sa) + " and " + shapeText(sb));
    out[i] = std::max(da, db);
  }
  if (sa.empty() && sb.empty()) out.clear();
  return out;
}

ir::Value *Specializer::broadcastTo(ir::Value *v, const std::vector<int64_t> &shape, SourceLoc loc) {
  if (v->type.shape == shape) return v;
  if (shape.empty()) error(loc, "cannot turn " + v->type.str() + " into a scalar");
  if (!v->type.isBlock()) return b_.op(OpCode::Splat, {v}, v->type.withShape(shape));
  if (v->type.rank() > shape.size())
    error(loc, "cannot broadcast shape " + shapeText(v->type.shape) + " to " + shapeText(shape));
  while (v->type.rank() < shape.size()) {
    std::vector<int64_t> s = v->type.shape;
    s.insert(s.begin(), 1);
    v = b_.op(OpCode::ExpandDims, {v}, v->type.withShape(s), {{"axis", int64_t(0)}});
  }
  for (size_t i = 0; i < shape.size(); ++i)
    if (v->type.shape[i] != shape[i] && v->type.shape[i] != 1)
      error(loc, "cannot broadcast shape " + shapeText(v->type.shape) + " to " + shapeText(shape));
  return b_.op(OpCode::Broadcast, {v}, v->type.withShape(shape));
}

// Triton's computation type of two element types.
ir::Type Specializer::promote(const ir::Type &a0, const ir::Type &b0, const char *opText, SourceLoc loc) const {
  ir::Type a = a0.element(), b = b0.element();
  if (a == b) return a;
  if (a.pointer || b.pointer)
    error(loc, std::string("unsupported operand types for ") + opText + ": " + a.str() + " and " + b.str());
  bool af = isFloat(a.scalar), bf = isFloat(b.scalar);
  // semantic.py computation_type_impl, in its order.
  auto either = [&](ScalarType t) { return a.scalar == t || b.scalar == t; };
  if (af || bf) {
    if (either(ScalarType::F64)) return ir::Type(ScalarType::F64);
    if (either(ScalarType::F32)) return ir::Type(ScalarType::F32);
    if (either(ScalarType::F16)) return ir::Type(ScalarType::F16);
    if (either(ScalarType::BF16)) return ir::Type(ScalarType::F32); // bf16 with fp8 or an int
    if (af && bf) return ir::Type(ScalarType::F16);                 // two different fp8 types
    error(loc, std::string("unsupported operand types for ") + opText + ": " + a.str() + " and " + b.str() +
                   " (cast the fp8 operand to a wider float first)");
  }
  if (a.scalar == ScalarType::I1) return b;
  if (b.scalar == ScalarType::I1) return a;
  unsigned wa = bitWidth(a.scalar), wb = bitWidth(b.scalar);
  if (isSigned(a.scalar) == isSigned(b.scalar)) return wa >= wb ? a : b;
  const ir::Type &u = isSigned(a.scalar) ? b : a, &s = isSigned(a.scalar) ? a : b;
  return bitWidth(u.scalar) >= bitWidth(s.scalar) ? u : s;
}

// -------------------------------------------------------------- expressions

// Triton's bound on a block (TRITON_MAX_TENSOR_NUMEL): larger blocks are refused where
// they are made, with Triton's words, before codegen unrolls them into registers.
constexpr int64_t kMaxBlockElements = int64_t{1} << 20;

void Specializer::checkBlockSize(const SValue &v, SourceLoc loc) const {
  if (!v.isIR() || !v.value->type.isBlock()) return;
  int64_t numel = 1;
  bool huge = false; // a product beyond int64 (every dim is at most 2^62)
  for (int64_t d : v.value->type.shape) {
    if (d != 0 && numel > std::numeric_limits<int64_t>::max() / d) huge = true;
    else numel *= d;
  }
  std::string product; // beyond int64: the dims, multiplied
  for (int64_t d : v.value->type.shape) product += (product.empty() ? "" : "*") + std::to_string(d);
  if (huge || numel > kMaxBlockElements)
    error(loc, "numel (" + (huge ? product : std::to_string(numel)) +
                   ") exceeds triton maximum tensor numel (" + std::to_string(kMaxBlockElements) + ")");
}

SValue Specializer::eval(const ast::Expr &e) {
  SValue v = evalUnchecked(e);
  checkBlockSize(v, e.loc);
  return v;
}

SValue Specializer::evalUnchecked(const ast::Expr &e) {
  switch (e.kind) {
  case ast::ExprKind::Name: return evalName(cast<ast::Name>(e));
  case ast::ExprKind::Constant: {
    auto &c = cast<ast::Constant>(e);
    switch (c.type) {
    case ast::Constant::Type::Int: return SValue::constant(ConstexprValue::ofInt(c.intValue));
    case ast::Constant::Type::Float: return SValue::constant(ConstexprValue::ofFloat(c.floatValue));
    case ast::Constant::Type::Bool: return SValue::constant(ConstexprValue::ofBool(c.intValue != 0));
    case ast::Constant::Type::None: return SValue::constant(ConstexprValue::none());
    case ast::Constant::Type::String: return SValue::constant(ConstexprValue::ofString(c.stringValue));
    }
    break;
  }
  case ast::ExprKind::Attribute: return evalAttribute(cast<ast::Attribute>(e));
  case ast::ExprKind::Subscript: return evalSubscript(cast<ast::Subscript>(e));
  case ast::ExprKind::Slice: error(e.loc, "a slice is only allowed inside []");
  case ast::ExprKind::Call: return evalCall(cast<ast::Call>(e));
  case ast::ExprKind::BinOp: {
    // a + b + c + ...: the left operands in a loop (any length), in Python's order.
    std::vector<const ast::BinOp *> spine = ast::binOpSpine(cast<ast::BinOp>(e));
    SValue lhs = eval(*spine.back()->lhs);
    for (auto b = spine.rbegin(); b != spine.rend(); ++b) {
      SValue rhs = eval(*(*b)->rhs);
      lhs = binary((*b)->op, lhs, rhs, (*b)->loc);
      checkBlockSize(lhs, (*b)->loc);
    }
    return lhs;
  }
  case ast::ExprKind::UnaryOp: {
    auto &u = cast<ast::UnaryOp>(e);
    return unary(u.op, eval(*u.operand), e.loc);
  }
  case ast::ExprKind::BoolOp: return evalBoolOp(cast<ast::BoolOp>(e));
  case ast::ExprKind::Compare: return evalCompare(cast<ast::Compare>(e));
  case ast::ExprKind::IfExp: return evalIfExp(cast<ast::IfExp>(e));
  case ast::ExprKind::Tuple:
  case ast::ExprKind::List: {
    const auto &elts = e.kind == ast::ExprKind::Tuple ? cast<ast::Tuple>(e).elts : cast<ast::List>(e).elts;
    std::vector<SValue> values;
    for (const auto &x : elts) values.push_back(eval(*x));
    return SValue::tuple(std::move(values));
  }
  case ast::ExprKind::ListComp: return evalListComp(cast<ast::ListComp>(e));
  case ast::ExprKind::Starred: error(e.loc, "a starred expression is only allowed as a call's argument (f(*t))");
  }
  error(e.loc, "unsupported expression");
}

SValue Specializer::evalName(const ast::Name &e) {
  if (env_) {
    auto it = env_->find(e.id);
    if (it != env_->end()) return it->second;
  }
  auto it = globals_.find(e.id);
  if (it != globals_.end() && it->second.kind == SValue::Kind::Function && it->second.fn->skippedHostCode)
    error(e.loc, "'" + e.id + "' is the class defined on line " + std::to_string(it->second.fn->loc.line) +
                     ", host code that a kernel cannot use (pass its values as arguments or constexprs)");
  if (it != globals_.end()) return it->second;
  if (auto u = undecidedGlobals_.find(e.id); u != undecidedGlobals_.end() && !inPrelude_)
    error(e.loc, "name '" + e.id + "' is bound under the module-level statement on line " +
                     std::to_string(u->second.line) + ", whose branch is not known at compile time");
  error(e.loc, "name '" + e.id + "' is not defined");
}

SValue Specializer::evalAttribute(const ast::Attribute &e) { return attributeOf(eval(*e.value), e.attr, e.loc); }

SValue Specializer::attributeOf(const SValue &base, const std::string &attr, SourceLoc loc) {
  switch (base.kind) {
  case SValue::Kind::Module: {
    if (base.path == "top") {
      if (attr == "language") return SValue::module("lang");
      return SValue::builtin("top." + attr);
    }
    if (base.path == "lang") {
      if (attr == "math") return SValue::module("lang.math");
      if (attr == "random") return SValue::module("lang.random");
      if (attr == "extra") return SValue::module("lang.extra");
      if (attr == "core" || attr == "standard") return base; // tl.core.get_int_dtype: Triton's submodules, one namespace here
      if (attr == "CONSTEXPR_0") return SValue::constant(ConstexprValue::ofInt(0)); // Triton's core.CONSTEXPR_0
      if (attr == "target_info") return SValue::module("lang.target_info");
      if (auto s = ir::parseScalarType(attr); s && attr != "i1" && attr != "bool")
        return SValue::dtypeOf(ir::Type(*s));
      if (attr == "int1") return SValue::dtypeOf(ir::Type(ScalarType::I1));
      if (attr == "pi32_t") return SValue::dtypeOf(ir::Type::ptr(ScalarType::I32)); // Triton's pointer_type(int32)
      for (const char *unsupported : {"float8e4b8", "float8e5b16"}) // Triton's AMD fp8 types
        if (attr == unsupported) {
          SValue d = SValue::dtypeOf(ir::Type(ScalarType::F8E4M3));
          d.path = "fp8" + attr.substr(6);
          return d;
        }
      return SValue::builtin("lang." + attr);
    }
    if (base.path == "lang.extra") return SValue::module("lang.math");
    if (base.path == "lang.math" && attr == "libdevice") return base; // tl.extra.cuda.libdevice
    if (base.path.rfind(kOtherModule, 0) == 0) {
      // helpers.fn: the @jit function the host appended; helpers.name (a language function or a
      // constant): what the host bound to __tessera_attr__helpers__name (python/tessera/_compose.py)
      std::string chain = base.path.substr(std::string(kOtherModule).size()) + "." + attr, mangled = "__tessera_attr__";
      for (char ch : chain) ch == '.' ? (void)(mangled += "__") : (void)(mangled += ch);
      if (auto it = globals_.find(mangled); it != globals_.end()) return it->second;
      auto it = globals_.find(attr);
      if (it != globals_.end() && it->second.kind == SValue::Kind::Function) return it->second;
      return SValue::module(kOtherModule + chain);
    }
    return SValue::builtin(base.path + "." + attr);
  }
  case SValue::Kind::DType:
    return dtypeAttribute(base, attr, loc);
  case SValue::Kind::BlockPointer:
    // Triton's is pointer<block<elt>>; its element_ty is used to cast to the element type.
    if (attr == "dtype" || attr == "type") return SValue::dtypeOf(base.elems[0].value->type.element());
    error(loc, describe(base) + " has no attribute '" + attr + "'");
  case SValue::Kind::IR:
    if (base.value->type.isTensorDesc()) { // desc.dtype, desc.block_shape (Triton's tensor_descriptor)
      const ir::Type &t = base.value->type;
      if (attr == "dtype") return SValue::dtypeOf(ir::Type(t.scalar));
      if (attr == "block_shape") {
        std::vector<SValue> dims;
        for (int64_t d : t.descBlock) dims.push_back(SValue::constant(ConstexprValue::ofInt(d)));
        return SValue::tuple(std::move(dims));
      }
      if (attr != "load" && attr != "store")
        error(loc, "a tensor descriptor has no attribute '" + attr + "' (it has dtype, block_shape, load and store)");
    }
    if (attr == "dtype") return SValue::dtypeOf(base.value->type.element());
    // Triton's x.type: the dtype for a scalar, a block type (element_ty, shape, ...) for a block.
    if (attr == "type" && !base.value->type.isTensorDesc()) return SValue::dtypeOf(base.value->type);
    if (attr == "shape") {
      std::vector<SValue> dims;
      for (int64_t d : base.value->type.shape) dims.push_back(SValue::constant(ConstexprValue::ofInt(d)));
      return SValue::tuple(std::move(dims));
    }
    if (attr == "numel") return SValue::constant(ConstexprValue::ofInt(base.value->type.numElements()));
    if (attr == "T") { // Triton's code generator: permute(x, (1, 0)), so only a 2-D block has one
      CallArgs swap;
      swap.loc = loc;
      const SValue one = SValue::constant(ConstexprValue::ofInt(1)), zero = SValue::constant(ConstexprValue::ofInt(0));
      swap.args = {base, SValue::tuple({one, zero})};
      swap.argLocs = {loc, loc};
      return callBuiltin("lang.permute", swap);
    }
    {
      SValue m;
      m.kind = SValue::Kind::BoundMethod;
      m.path = attr;
      m.elems = {base};
      return m;
    }
  case SValue::Kind::TensorDescriptor: // Triton's tensor_descriptor: base, shape, strides, block_shape, dtype
    if (attr == "base") return base.elems[0];
    if (attr == "shape") return base.elems[1];
    if (attr == "strides") return descriptorStrides(base);
    if (attr == "block_shape") return base.elems[3];
    if (attr == "dtype") return SValue::dtypeOf(ir::Type(base.elems[0].value->type.scalar));
    if (attr == "load" || attr == "store" || attr.rfind("atomic_", 0) == 0) {
      SValue m;
      m.kind = SValue::Kind::BoundMethod;
      m.path = attr;
      m.elems = {base};
      return m;
    }
    error(loc, "a tensor descriptor has no attribute '" + attr +
                     "' (it has base, shape, strides, block_shape, dtype, load, store and atomic_*)");
  case SValue::Kind::Builtin:
    if (base.path == "lang.PropagateNan") { // tl.PropagateNan.NONE / ALL
      if (std::optional<ConstexprValue> member = ConstexprValue::ofEnumMember("PropagateNan", attr))
        return SValue::constant(*member);
      error(loc, "tl.PropagateNan has no member '" + attr + "' (it has NONE and ALL)");
    }
    error(loc, describe(base) + " has no attribute '" + attr + "'");
  case SValue::Kind::Tuple:
    for (size_t i = 0; i < base.fields.size() && i < base.elems.size(); ++i) // a NamedTuple's field
      if (base.fields[i] == attr) return base.elems[i];
    if (attr == "type") return constexprTypeOf(base, loc);
    error(loc, describe(base) + " has no attribute '" + attr + "'");
  case SValue::Kind::Const:
    if (base.c.kind == CK::Enum) { // an enum member's name and value, as in Python
      if (attr == "name") return SValue::constant(ConstexprValue::ofString(base.c.stringValue.substr(base.c.stringValue.find('.') + 1)));
      if (attr == "value") return SValue::constant(ConstexprValue::ofInt(base.c.intValue));
    }
    if (attr == "value") return base; // tl.constexpr(...).value, of any constexpr (a bool, a string, None too)
    if (attr == "type") return constexprTypeOf(base, loc); // Triton's constexpr.type
    if (attr == "to" || attr == "dtype") // as in Triton: a constexpr is a Python value, not a tensor
      error(loc, describe(base) + " has no attribute '" + attr + "' (a constexpr is a Python value, as in Triton; "
                 "tl.cast(value, dtype) or tl.full((), value, dtype) make a typed scalar)");
    error(loc, describe(base) + " has no attribute '" + attr + "'");
  default:
    error(loc, describe(base) + " has no attribute '" + attr + "'");
  }
}

// Triton's constexpr_type(value): `c.type` of a constexpr (a number, None, a string, a tuple of them).
SValue Specializer::constexprTypeOf(const SValue &value, SourceLoc loc) {
  std::function<bool(const SValue &)> constant = [&](const SValue &v) {
    if (v.kind == SValue::Kind::Tuple) return std::all_of(v.elems.begin(), v.elems.end(), constant);
    return v.isConst() || v.kind == SValue::Kind::DType;
  };
  if (!constant(value)) error(loc, "constexpr_type() needs a constexpr, got " + describe(value));
  SValue t;
  t.kind = SValue::Kind::ConstexprType;
  t.elems = {value};
  return t;
}

// shape[1:], shape[:-1], shape[::-1]: Python's slice of a tuple.
SValue Specializer::sliceTuple(const SValue &tuple, const ast::Slice &sl) {
  const int64_t n = static_cast<int64_t>(tuple.elems.size());
  auto bound = [&](const ast::ExprPtr &e, const char *what) -> std::optional<int64_t> {
    if (!e) return std::nullopt;
    SValue v = eval(*e);
    if (v.isNone()) return std::nullopt;
    return requireInt(v, e->loc, std::string("a slice's ") + what);
  };
  int64_t step = bound(sl.step, "step").value_or(1);
  if (step == 0) error(sl.loc, "slice step cannot be zero");
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t i = *v < 0 ? *v + n : *v;
    return step > 0 ? std::clamp<int64_t>(i, 0, n) : std::clamp<int64_t>(i, -1, n - 1);
  };
  int64_t start = clamp(bound(sl.lower, "start"), step > 0 ? 0 : n - 1);
  int64_t stop = clamp(bound(sl.upper, "stop"), step > 0 ? n : -1);
  std::vector<SValue> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(tuple.elems[size_t(i)]);
  return SValue::tuple(std::move(out));
}

SValue Specializer::evalSubscript(const ast::Subscript &e) {
  SValue base = eval(*e.value);
  if (base.kind == SValue::Kind::Tuple) {
    if (e.indices.size() != 1) error(e.loc, "a tuple takes one index");
    if (auto *sl = dyn_cast<ast::Slice>(e.indices[0].get())) return sliceTuple(base, *sl);
    int64_t i = requireInt(eval(*e.indices[0]), e.indices[0]->loc, "a tuple index");
    int64_t n = static_cast<int64_t>(base.elems.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) error(e.indices[0]->loc, "tuple index out of range");
    return base.elems[i];
  }
  if (!base.isIR()) error(e.loc, describe(base) + " cannot be indexed");
  // x[:, None]: every index is ':' (keep a dim) or None (insert a size-1 dim).
  ir::Value *v = base.value;
  size_t dim = 0;
  // A slice part that is absent or the constexpr None (x[None:None:None] is x[:], as in Triton).
  auto isNonePart = [&](const ast::ExprPtr &part) { return !part || eval(*part).isNone(); };
  for (const auto &idx : e.indices) {
    const bool noneIndex = !isa<ast::Slice>(idx.get()) && eval(*idx).isNone();
    if (noneIndex) {
      std::vector<int64_t> s = v->type.shape;
      if (!v->type.isBlock()) {
        // A scalar becomes <1> wherever the None stands: Triton splats it to its shape with a 1 inserted at
        // the index's position, which Python's list.insert clamps (s[:, None] is <1>; SGLang's fused MoE
        // indexes a scale that some configurations load as a scalar).
        v = b_.op(OpCode::Splat, {v}, v->type.withShape({1}));
      } else {
        if (dim > s.size()) error(idx->loc, "too many indices");
        s.insert(s.begin() + dim, 1);
        v = b_.op(OpCode::ExpandDims, {v}, v->type.withShape(s), {{"axis", int64_t(dim)}});
      }
      ++dim;
    } else if (auto *sl = dyn_cast<ast::Slice>(idx.get());
               sl && isNonePart(sl->lower) && isNonePart(sl->upper) && isNonePart(sl->step)) {
      // Past the last dim ':' keeps nothing, as in Triton (Z[None, None, None, :] of a scalar pointer is <1x1x1>).
      ++dim;
    } else { // Triton's message: "unsupported tensor index: slice(10, None, None)"
      auto text = [&](const ast::Expr *part) -> std::string {
        if (!part) return "None";
        SValue v = eval(*part);
        return v.isConst() ? v.c.str() : describe(v);
      };
      std::string index = sl ? "slice(" + text(sl->lower.get()) + ", " + text(sl->upper.get()) + ", " +
                                   text(sl->step.get()) + ")"
                             : text(idx.get());
      error(idx->loc, "unsupported tensor index: " + index + " (a block takes only ':' and None, as in x[:, None])");
    }
  }
  if (dim < v->type.rank() && !e.indices.empty()) {
    // Trailing dims are implicitly ':' (as in numpy).
  }
  return SValue::ir(v);
}

void Specializer::evalPositionalArguments(const std::vector<ast::ExprPtr> &args, std::vector<SValue> &values,
                                          std::vector<SourceLoc> &locs) {
  for (const auto &a : args) {
    auto *starred = dyn_cast<ast::Starred>(a.get());
    if (!starred) {
      values.push_back(eval(*a));
      locs.push_back(a->loc);
      continue;
    }
    SValue t = eval(*starred->value);
    if (t.kind != SValue::Kind::Tuple)
      error(a->loc, "argument after * must be a tuple, not " + describe(t));
    for (SValue &v : t.elems) {
      values.push_back(std::move(v));
      locs.push_back(a->loc);
    }
  }
}

// Triton's visit_ListComp: [elt for target in iter if cond ...] over a tuple is a tuple. The target is
// bound while the comprehension runs (its earlier binding, if any, comes back after); a condition must
// be a compile-time value.
SValue Specializer::evalListComp(const ast::ListComp &e) {
  SValue iter = eval(*e.iter);
  if (iter.kind != SValue::Kind::Tuple)
    error(e.iter->loc, "only tuple comprehensions are supported: iterate over a tuple, got " + describe(iter));
  std::vector<std::string> names;
  std::function<void(const ast::Expr &)> collect = [&](const ast::Expr &t) {
    if (auto *n = dyn_cast<ast::Name>(&t)) names.push_back(n->id);
    else if (auto *tu = dyn_cast<ast::Tuple>(&t)) for (const auto &x : tu->elts) collect(*x);
    else if (auto *l = dyn_cast<ast::List>(&t)) for (const auto &x : l->elts) collect(*x);
    else error(t.loc, "a comprehension's target must be a name or a tuple of names");
  };
  collect(*e.target);
  std::vector<std::pair<std::string, std::optional<SValue>>> saved;
  for (const std::string &n : names) {
    auto it = env_->find(n);
    saved.emplace_back(n, it == env_->end() ? std::nullopt : std::optional<SValue>(it->second));
  }
  std::vector<SValue> results;
  for (const SValue &item : iter.elems) {
    execAssign(*e.target, item);
    bool keep = true;
    for (const auto &cond : e.ifs) {
      SValue c = eval(*cond);
      if (!c.isConst())
        error(cond->loc, "a comprehension's condition must be a compile-time value, got " + describe(c));
      if (!truthy(c.c)) {
        keep = false;
        break;
      }
    }
    if (keep) results.push_back(eval(*e.elt));
  }
  for (auto &[n, v] : saved) {
    if (v) (*env_)[n] = *v;
    else env_->erase(n);
  }
  return SValue::tuple(std::move(results));
}

SValue Specializer::evalCall(const ast::Call &e) {
  SValue callee = eval(*e.func);
  CallArgs args;
  args.loc = e.loc;
  evalPositionalArguments(e.args, args.args, args.argLocs);
  for (const auto &k : e.keywords) {
    args.keywords.emplace_back(k.name, eval(*k.value));
    args.keywordLocs.push_back(k.loc);
  }
  return evalCallOf(callee, e, args);
}

SValue Specializer::evalCallOf(const SValue &callee, const ast::Call &e, CallArgs &args) {
  switch (callee.kind) {
  case SValue::Kind::Builtin: return callBuiltin(callee.path, args);
  case SValue::Kind::BoundMethod: return callMethod(callee.elems[0], callee.path, args);
  case SValue::Kind::Function: {
    const ast::FunctionDef &fn = *callee.fn;
    const bool jit = isJitFunction(fn); // @jit, tessera.elementwise / fuse (tessera/fusion.py), @builtin
    if (fn.skippedHostCode) throw CompileError(fn.parseError, fn.parseErrorLoc);
    if (!jit) error(e.loc, "'" + fn.name + "' is not a @jit function; only @jit functions can be called from a kernel");
    if (evaluatingGlobal_) error(e.loc, "module-level value is not a constant");
    return inlineCall(fn, args);
  }
  case SValue::Kind::DType: error(e.loc, "a dtype is not callable; use x.to(" + callee.dtype.str() + ")");
  case SValue::Kind::Const: {
    // A @jit function passed as a constexpr (Triton's `EPILOGUE: tl.constexpr` then
    // `EPILOGUE(acc)`): the launcher hands over the function's name (tessera/_compose.py
    // appends its source to the kernel's), so calling a string constexpr calls the @jit
    // function of that name.
    auto *calleeName = dyn_cast<ast::Name>(e.func.get());
    std::string what = "'" + (calleeName ? calleeName->id : std::string("callee")) + "'";
    if (callee.c.kind == CK::String) {
      // A language function passed as a constexpr (Triton's test_globaltimer passes
      // tl.extra.cuda.globaltimer): the launcher hands over its dotted name under tessera.language
      // (python/tessera/_compose.py, language_function_name), looked up here as the kernel would.
      static const std::string kLanguage = "tessera.language.";
      if (const std::string &s = callee.c.stringValue; s.rfind(kLanguage, 0) == 0) {
        SValue fn = SValue::module("lang");
        for (size_t start = kLanguage.size(); start <= s.size();) {
          const size_t end = std::min(s.find('.', start), s.size());
          fn = attributeOf(fn, s.substr(start, end - start), e.loc);
          start = end + 1;
        }
        return evalCallOf(fn, e, args);
      }
      auto it = globals_.find(callee.c.stringValue);
      if (it == globals_.end() || it->second.kind != SValue::Kind::Function)
        error(e.loc, "constexpr " + what + " is the string " + callee.c.str() +
                         ", which names no @jit function of this file; pass a @tessera.jit function");
      SValue fnValue = it->second;
      return evalCallOf(fnValue, e, args);
    }
    if (callee.isNone())
      error(e.loc, what + " is None, not a function: pass a @tessera.jit function for it, or guard the call "
                   "with `if " + what.substr(1, what.size() - 2) + " is not None:`");
    error(e.loc, what + " is the constexpr " + callee.c.str() + ", not a function: pass a @tessera.jit function");
  }
  default: error(e.loc, describe(callee) + " is not callable");
  }
}

bool truthy(const ConstexprValue &c) {
  switch (c.kind) {
  case CK::Int:
  case CK::Bool: return c.intValue != 0;
  case CK::Float: return c.floatValue != 0;
  case CK::None: return false;
  case CK::String: return !c.stringValue.empty();
  }
  return false;
}

SValue Specializer::evalBoolOp(const ast::BoolOp &e) {
  // Python's short circuit for constexprs and tuples (true when not empty: `(3, 4) or (5, 6)` is
  // (3, 4)); logical and/or for runtime values.
  auto staticTruth = [](const SValue &v) -> std::optional<bool> {
    if (v.isConst()) return truthy(v.c);
    if (v.kind == SValue::Kind::Tuple) return !v.elems.empty();
    return std::nullopt;
  };
  SValue acc = eval(*e.values[0]);
  for (size_t i = 1; i < e.values.size(); ++i) {
    if (std::optional<bool> accTruth = staticTruth(acc)) {
      bool t = *accTruth;
      if (e.isAnd ? !t : t) return acc;
      acc = eval(*e.values[i]);
      continue;
    }
    SValue rhs = eval(*e.values[i]);
    if (std::optional<bool> rhsTruth = staticTruth(rhs)) {
      bool t = *rhsTruth;
      if (e.isAnd ? t : !t) continue; // x and True == x (as a bool)
      acc = rhs;
      continue;
    }
    ir::Value *a = toBool(toIR(acc, e.loc));
    ir::Value *b = toBool(toIR(rhs, e.values[i]->loc));
    auto shape = broadcastShapes(a->type, b->type, e.loc);
    a = broadcastTo(a, shape, e.loc);
    b = broadcastTo(b, shape, e.loc);
    acc = SValue::ir(b_.op(e.isAnd ? OpCode::And : OpCode::Or, {a, b}, a->type));
  }
  return acc;
}

SValue Specializer::evalCompare(const ast::Compare &e) {
  SValue lhs = eval(*e.operands[0]);
  SValue result;
  for (size_t i = 0; i < e.ops.size(); ++i) {
    SValue rhs = eval(*e.operands[i + 1]);
    SValue r = compare(e.ops[i], lhs, rhs, e.loc);
    if (i == 0) {
      result = r;
    } else if (result.isConst() && r.isConst()) {
      result = SValue::constant(ConstexprValue::ofBool(truthy(result.c) && truthy(r.c)));
    } else {
      result = binary(ast::BinaryOp::BitAnd, result, r, e.loc);
    }
    lhs = rhs;
  }
  return result;
}

SValue Specializer::evalIfExp(const ast::IfExp &e) {
  SValue cond = eval(*e.cond);
  if (cond.isConst()) return eval(truthy(cond.c) ? *e.thenValue : *e.elseValue);
  // An arm that is a call (tl.store(...), tl.load(...), f(x)) runs only when chosen, as in
  // Triton: a scalar condition becomes an if whose branches evaluate the arms.
  if (cond.isIR() && !cond.value->type.isBlock() && (isa<ast::Call>(e.thenValue.get()) || isa<ast::Call>(e.elseValue.get())))
    return branchingIfExp(e, toBool(cond.value));
  SValue a = eval(*e.thenValue), b = eval(*e.elseValue);
  // Numbers promote as in tl.where; pointers must agree (pointee and tl.const).
  if (a.isIR() && b.isIR() && (a.value->type.pointer || b.value->type.pointer) &&
      a.value->type.element() != b.value->type.element())
    error(e.loc, "Ternary expression with dynamic condition has inconsistent types " + a.value->type.str() + " and " +
                     b.value->type.str());
  CallArgs args;
  args.loc = e.loc;
  args.args = {cond, a, b};
  args.argLocs = {e.cond->loc, e.thenValue->loc, e.elseValue->loc};
  return callBuiltin("lang.where", args);
}

SValue Specializer::branchingIfExp(const ast::IfExp &e, ir::Value *cond) {
  ir::Operation *ifOp = b_.create(OpCode::If, {cond}, {}, {}, 2);
  auto after = b_.block()->ops.end();
  ir::Block *outer = b_.block();
  b_.setInsertionPointToEnd(ifOp->region(0));
  SValue a = eval(*e.thenValue);
  b_.setInsertionPointToEnd(ifOp->region(1));
  SValue b = eval(*e.elseValue);
  std::vector<ir::Value *> thenValues, elseValues;
  if (!a.isNone() || !b.isNone()) {
    if (!(a.isIR() || a.isConst()) || !(b.isIR() || b.isConst()) || a.isNone() || b.isNone())
      error(e.loc, "Ternary expression with dynamic condition has inconsistent types: " + describe(a) + " and " +
                       describe(b));
    // Each arm materialised in its own branch, typed like the other arm.
    b_.setInsertionPointToEnd(ifOp->region(0));
    ir::Value *av = toIR(a, e.thenValue->loc, b.isIR() ? &b.value->type : nullptr);
    b_.setInsertionPointToEnd(ifOp->region(1));
    ir::Value *bv = toIR(b, e.elseValue->loc, a.isIR() ? &a.value->type : nullptr);
    if (av->type != bv->type)
      error(e.loc, "Ternary expression with dynamic condition has inconsistent types " + av->type.str() + " and " +
                       bv->type.str());
    thenValues.push_back(av);
    elseValues.push_back(bv);
  }
  b_.setInsertionPointToEnd(ifOp->region(0));
  b_.create(OpCode::Yield, thenValues, {});
  b_.setInsertionPointToEnd(ifOp->region(1));
  b_.create(OpCode::Yield, elseValues, {});
  b_.setInsertionPoint(outer, after);
  if (thenValues.empty()) return SValue::constant(ConstexprValue::none());
  auto v = std::make_unique<ir::Value>();
  v->type = thenValues[0]->type;
  v->definingOp = ifOp;
  v->index = 0;
  ir::Value *result = v.get();
  ifOp->results.push_back(std::move(v));
  return SValue::ir(result);
}

} // namespace tessera::spec
