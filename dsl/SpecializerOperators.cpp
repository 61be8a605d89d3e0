// The specialiser, part 3: operators. Binary, comparison and unary operators on
// compile-time values fold with Python's semantics (ints exact in 128 bits); on
// runtime values they follow Triton's typing: a Python literal takes the other
// operand's type where it fits, then both are promoted and broadcast
// (SpecializerExpr.cpp has the promotion and broadcasting helpers).
#include "dsl/SpecializerImpl.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::spec {

using ir::OpCode;
using ir::ScalarType;
using CK = ConstexprValue::Kind;

// ----------------------------------------------------------- constant folding

// Python's int arithmetic, exact in 128 bits (dsl/ConstInt.h).
static SValue foldIntBinary(const Specializer &sp, ast::BinaryOp op, const ConstexprValue &a, const ConstexprValue &b,
                            SourceLoc loc) {
  ConstInt ia = a.intValue, ib = b.intValue;
  auto exact = [&](std::optional<ConstInt> v) {
    if (!v)
      sp.error(loc, "the constant " + a.str() + " " + ast::spelling(op) + " " + b.str() +
                        " needs more than 128 bits (tessera folds integer constants exactly up to 127 bits)");
    return SValue::constant(ConstexprValue::ofInt(*v));
  };
  auto boolOr = [&](ConstInt v) {
    if (a.kind == CK::Bool && b.kind == CK::Bool) return SValue::constant(ConstexprValue::ofBool(v != 0));
    return SValue::constant(ConstexprValue::ofInt(v));
  };
  switch (op) {
  case ast::BinaryOp::Add: return exact(constIntAdd(ia, ib));
  case ast::BinaryOp::Sub: return exact(constIntSub(ia, ib));
  case ast::BinaryOp::Mul: return exact(constIntMul(ia, ib));
  case ast::BinaryOp::Div:
    if (ib == 0) sp.error(loc, "division by zero in a constant expression");
    return SValue::constant(ConstexprValue::ofFloat(double(ia) / double(ib)));
  case ast::BinaryOp::FloorDiv:
    if (ib == 0) sp.error(loc, "division by zero in a constant expression");
    return exact(constIntFloorDiv(ia, ib));
  case ast::BinaryOp::Mod:
    if (ib == 0) sp.error(loc, "modulo by zero in a constant expression");
    return exact(constIntMod(ia, ib));
  case ast::BinaryOp::Pow:
    if (ib < 0) return SValue::constant(ConstexprValue::ofFloat(std::pow(double(ia), double(ib))));
    return exact(constIntPow(ia, ib));
  case ast::BinaryOp::LShift:
    if (ib < 0) sp.error(loc, "negative shift count in a constant expression");
    return exact(constIntShl(ia, ib));
  case ast::BinaryOp::RShift:
    if (ib < 0) sp.error(loc, "negative shift count in a constant expression");
    return SValue::constant(ConstexprValue::ofInt(constIntShr(ia, ib)));
  case ast::BinaryOp::BitAnd: return boolOr(ia & ib); // two's complement, as Python's ints
  case ast::BinaryOp::BitOr: return boolOr(ia | ib);
  case ast::BinaryOp::BitXor: return boolOr(ia ^ ib);
  default: break;
  }
  sp.error(loc, std::string("unsupported operator ") + ast::spelling(op) + " on constants");
}

static SValue foldBinary(const Specializer &sp, ast::BinaryOp op, const ConstexprValue &a, const ConstexprValue &b,
                         SourceLoc loc) {
  auto isNum = [](const ConstexprValue &c) { return c.kind == CK::Int || c.kind == CK::Bool || c.kind == CK::Float; };
  if (a.kind == CK::String && b.kind == CK::String && op == ast::BinaryOp::Add)
    return SValue::constant(ConstexprValue::ofString(a.stringValue + b.stringValue));
  if (!isNum(a) || !isNum(b))
    sp.error(loc, std::string("unsupported operand types for ") + ast::spelling(op) + ": " + a.str() + " and " + b.str());
  if (a.kind != CK::Float && b.kind != CK::Float) return foldIntBinary(sp, op, a, b, loc);
  double fa = a.kind == CK::Float ? a.floatValue : double(a.intValue);
  double fb = b.kind == CK::Float ? b.floatValue : double(b.intValue);
  auto F = [](double v) { return SValue::constant(ConstexprValue::ofFloat(v)); };
  switch (op) {
  case ast::BinaryOp::Add: return F(fa + fb);
  case ast::BinaryOp::Sub: return F(fa - fb);
  case ast::BinaryOp::Mul: return F(fa * fb);
  case ast::BinaryOp::Div:
    if (fb == 0) sp.error(loc, "division by zero in a constant expression");
    return F(fa / fb);
  case ast::BinaryOp::FloorDiv:
    if (fb == 0) sp.error(loc, "division by zero in a constant expression");
    return F(std::floor(fa / fb));
  case ast::BinaryOp::Mod:
    if (fb == 0) sp.error(loc, "modulo by zero in a constant expression");
    return F(fa - std::floor(fa / fb) * fb);
  case ast::BinaryOp::Pow: return F(std::pow(fa, fb));
  default: break;
  }
  sp.error(loc, std::string("unsupported operand types for ") + ast::spelling(op) + ": " + a.str() + " and " + b.str());
}

static ScalarType withSignedness(ScalarType t, bool isSignedType) {
  switch (bitWidth(t)) {
  case 8: return isSignedType ? ScalarType::I8 : ScalarType::U8;
  case 16: return isSignedType ? ScalarType::I16 : ScalarType::U16;
  case 32: return isSignedType ? ScalarType::I32 : ScalarType::U32;
  case 64: return isSignedType ? ScalarType::I64 : ScalarType::U64;
  default: return t;
  }
}

SValue Specializer::binary(ast::BinaryOp op, const SValue &lhs, const SValue &rhs, SourceLoc loc) {
  if (lhs.isConst() && rhs.isConst()) return foldBinary(*this, op, lhs.c, rhs.c, loc);
  if (lhs.kind == SValue::Kind::Tuple || rhs.kind == SValue::Kind::Tuple) {
    // Shapes are tuples: `shape + [4]` concatenates, `[2] * RANK` repeats (Python's list semantics).
    if (op == ast::BinaryOp::Add && lhs.kind == rhs.kind) {
      std::vector<SValue> elems = lhs.elems;
      elems.insert(elems.end(), rhs.elems.begin(), rhs.elems.end());
      return SValue::tuple(std::move(elems));
    }
    if (op == ast::BinaryOp::Mul && (lhs.isConst() || rhs.isConst())) {
      const SValue &tuple = lhs.kind == SValue::Kind::Tuple ? lhs : rhs;
      const SValue &count = lhs.kind == SValue::Kind::Tuple ? rhs : lhs;
      int64_t n = requireInt(count, loc, "a tuple's repeat count");
      if (n > 4096) error(loc, "a tuple repeated " + std::to_string(n) + " times is too long");
      std::vector<SValue> elems;
      for (int64_t i = 0; i < n; ++i) elems.insert(elems.end(), tuple.elems.begin(), tuple.elems.end());
      return SValue::tuple(std::move(elems));
    }
    error(loc, std::string("unsupported operand types for ") + ast::spelling(op) + ": " + describe(lhs) + " and " +
                   describe(rhs));
  }
  const char *text = ast::spelling(op);
  if (lhs.isNone() || rhs.isNone()) // e.g. a pointer argument passed as None (the constexpr None)
    error(loc, std::string("unsupported operand types for ") + text + ": " +
                   (lhs.isNone() ? "None" : describe(lhs)) + " and " + (rhs.isNone() ? "None" : describe(rhs)));
  if (op == ast::BinaryOp::Pow) error(loc, "'**' is only supported on constexprs; use tl.exp2/tl.math.pow for blocks");
  if (op == ast::BinaryOp::MatMul) error(loc, "'@' (matrix product) is not supported yet; use tl.dot");
  if (!(lhs.isIR() || lhs.isConst())) error(loc, std::string("unsupported operand for ") + text + ": " + describe(lhs));
  if (!(rhs.isIR() || rhs.isConst())) error(loc, std::string("unsupported operand for ") + text + ": " + describe(rhs));
  ir::Value *a = lhs.isIR() ? lhs.value : arithmeticOperand(lhs, loc, rhs.value->type);
  ir::Value *b = rhs.isIR() ? rhs.value : arithmeticOperand(rhs, loc, lhs.value->type);

  // Pointer arithmetic: ptr + int, int + ptr, ptr - int.
  if (a->type.pointer || b->type.pointer) {
    bool ok = (op == ast::BinaryOp::Add && (a->type.pointer != b->type.pointer)) ||
              (op == ast::BinaryOp::Sub && a->type.pointer && !b->type.pointer);
    ir::Value *ptr = a->type.pointer ? a : b, *off = a->type.pointer ? b : a;
    if (!ok || !off->type.isIntElement())
      error(loc, std::string("unsupported operand types for ") + text + ": " + a->type.element().str() + " and " +
                     b->type.element().str());
    auto shape = broadcastShapes(ptr->type, off->type, loc);
    ptr = broadcastTo(ptr, shape, loc);
    off = broadcastTo(off, shape, loc);
    if (op == ast::BinaryOp::Sub) off = b_.op(OpCode::Neg, {off}, off->type);
    return SValue::ir(b_.op(OpCode::AddPtr, {ptr, off}, ptr->type));
  }

  bool divOrMod = op == ast::BinaryOp::Div || op == ast::BinaryOp::FloorDiv || op == ast::BinaryOp::Mod;
  if (divOrMod && a->type.isIntElement() && b->type.isIntElement() && isSigned(a->type.scalar) != isSigned(b->type.scalar))
    error(loc, std::string("Cannot use ") + text + " with " + a->type.element().str() + " and " + b->type.element().str() +
                   " because they have different signedness; this is unlikely to result in a useful answer. Cast "
                   "them to the same signedness."); // Triton's words: its tests match them
  ir::Type elem = promote(a->type, b->type, text, loc);
  bool isIntOp = op == ast::BinaryOp::FloorDiv || op == ast::BinaryOp::LShift || op == ast::BinaryOp::RShift ||
                 op == ast::BinaryOp::BitAnd || op == ast::BinaryOp::BitOr || op == ast::BinaryOp::BitXor;
  if (isIntOp && !elem.isIntElement())
    // Triton's wording (IncompatibleTypeErrorImpl), which its tests match.
    error(loc, "invalid operands of type " + a->type.element().str() + " and " + b->type.element().str() +
                   " for operator " + text + " (it needs integers)");
  if (op == ast::BinaryOp::Div && elem.isIntElement()) elem = ir::Type(ScalarType::F32); // true division
  // Triton: / and % of 16-bit floats compute in f32 (PTX has no f16 division).
  if ((op == ast::BinaryOp::Div || op == ast::BinaryOp::Mod) && (elem.scalar == ScalarType::F16 || elem.scalar == ScalarType::BF16))
    elem = ir::Type(ScalarType::F32);
  // core.py __rshift__ / __rrshift__: the shift is arithmetic when the block
  // operand's own type is signed (the left one, or the right one after a
  // Python number), whatever the promoted type: int8 >> uint16 shifts the
  // sign-extended bits arithmetically. Shr follows its type, so it runs on
  // the same bits with that signedness.
  ScalarType shiftType = elem.scalar;
  if (op == ast::BinaryOp::RShift && elem.scalar != ScalarType::I1)
    shiftType = withSignedness(elem.scalar, isSigned((lhs.isIR() ? lhs.value : rhs.value)->type.scalar));
  auto shape = broadcastShapes(a->type, b->type, loc);
  a = broadcastTo(castElement(a, elem), shape, loc);
  b = broadcastTo(castElement(b, elem), shape, loc);
  OpCode code;
  switch (op) {
  case ast::BinaryOp::Add: code = OpCode::Add; break;
  case ast::BinaryOp::Sub: code = OpCode::Sub; break;
  case ast::BinaryOp::Mul: code = OpCode::Mul; break;
  case ast::BinaryOp::Div: code = OpCode::Div; break;
  case ast::BinaryOp::FloorDiv: code = OpCode::Div; break;
  case ast::BinaryOp::Mod: code = OpCode::Rem; break;
  case ast::BinaryOp::LShift: code = OpCode::Shl; break;
  case ast::BinaryOp::RShift: code = OpCode::Shr; break;
  case ast::BinaryOp::BitAnd: code = OpCode::And; break;
  case ast::BinaryOp::BitOr: code = OpCode::Or; break;
  case ast::BinaryOp::BitXor: code = OpCode::Xor; break;
  default: error(loc, std::string("unsupported operator ") + text);
  }
  if (shiftType != elem.scalar) {
    ir::Type bitsType = a->type.withElement(ir::Type(shiftType));
    ir::Value *shifted = b_.op(code, {b_.op(OpCode::Bitcast, {a}, bitsType), b_.op(OpCode::Bitcast, {b}, bitsType)}, bitsType);
    return SValue::ir(b_.op(OpCode::Bitcast, {shifted}, a->type));
  }
  // Triton's `/` of f32 (and of 16-bit floats, computed in f32) is the approximate div.full.f32.
  if (op == ast::BinaryOp::Div && elem.scalar == ScalarType::F32)
    return SValue::ir(b_.op(code, {a, b}, a->type, ir::fullRangeDivision()));
  return SValue::ir(b_.op(code, {a, b}, a->type));
}

// Python's tuple comparison: element by element, the first difference
// decides (a shorter prefix is smaller). Elements are constexprs or dtypes.
SValue Specializer::compareTuples(ast::CompareOp op, const SValue &lhs, const SValue &rhs, SourceLoc loc) {
  auto boolean = [](bool b) { return SValue::constant(ConstexprValue::ofBool(b)); };
  if (lhs.kind != rhs.kind) { // a tuple never equals a non-tuple
    if (op == ast::CompareOp::Eq) return boolean(false);
    if (op == ast::CompareOp::NotEq) return boolean(true);
    error(loc, "cannot order " + describe(lhs) + " and " + describe(rhs));
  }
  size_t n = std::min(lhs.elems.size(), rhs.elems.size());
  for (size_t i = 0; i < n; ++i) {
    SValue eq = compare(ast::CompareOp::Eq, lhs.elems[i], rhs.elems[i], loc);
    if (!eq.isConst())
      error(loc, "tuples are compared at compile time, but element " + std::to_string(i) + " is a runtime value");
    if (eq.c.intValue) continue;
    if (op == ast::CompareOp::Eq) return boolean(false);
    if (op == ast::CompareOp::NotEq) return boolean(true);
    return compare(op, lhs.elems[i], rhs.elems[i], loc);
  }
  size_t a = lhs.elems.size(), b = rhs.elems.size();
  switch (op) {
  case ast::CompareOp::Eq: return boolean(a == b);
  case ast::CompareOp::NotEq: return boolean(a != b);
  case ast::CompareOp::Lt: return boolean(a < b);
  case ast::CompareOp::LtE: return boolean(a <= b);
  case ast::CompareOp::Gt: return boolean(a > b);
  case ast::CompareOp::GtE: return boolean(a >= b);
  default: error(loc, std::string("unsupported comparison of tuples: ") + ast::spelling(op));
  }
}

SValue Specializer::compare(ast::CompareOp op, const SValue &lhs, const SValue &rhs, SourceLoc loc) {
  if (op == ast::CompareOp::Is || op == ast::CompareOp::IsNot) {
    bool same;
    if (lhs.isConst() && rhs.isConst()) same = lhs.c == rhs.c;
    else if (lhs.kind == SValue::Kind::DType && rhs.kind == SValue::Kind::DType) same = lhs.sameDType(rhs);
    else same = false; // a runtime value is never None
    return SValue::constant(ConstexprValue::ofBool(op == ast::CompareOp::Is ? same : !same));
  }
  if (op == ast::CompareOp::In || op == ast::CompareOp::NotIn) {
    if (rhs.kind != SValue::Kind::Tuple) error(loc, "'in' needs a tuple on the right");
    bool found = false;
    for (const SValue &x : rhs.elems) {
      if (lhs.isConst() && x.isConst() && lhs.c == x.c) found = true;
      if (lhs.sameDType(x)) found = true;
    }
    return SValue::constant(ConstexprValue::ofBool(op == ast::CompareOp::In ? found : !found));
  }
  if (lhs.kind == SValue::Kind::ConstexprType || rhs.kind == SValue::Kind::ConstexprType) {
    // constexpr_type.__eq__: another constexpr_type whose value equals this one's
    if (op != ast::CompareOp::Eq && op != ast::CompareOp::NotEq) error(loc, "constexpr types are not ordered");
    bool eq = lhs.kind == rhs.kind;
    if (eq) {
      SValue same = compare(ast::CompareOp::Eq, lhs.elems[0], rhs.elems[0], loc);
      eq = same.isConst() && truthy(same.c);
    }
    return SValue::constant(ConstexprValue::ofBool(op == ast::CompareOp::Eq ? eq : !eq));
  }
  if (lhs.kind == SValue::Kind::Tuple || rhs.kind == SValue::Kind::Tuple) return compareTuples(op, lhs, rhs, loc);
  if (lhs.kind == SValue::Kind::DType || rhs.kind == SValue::Kind::DType) {
    bool eq = lhs.sameDType(rhs); // a dtype equals only the same dtype (Triton's dtype.__eq__)
    if (op == ast::CompareOp::Eq) return SValue::constant(ConstexprValue::ofBool(eq));
    if (op == ast::CompareOp::NotEq) return SValue::constant(ConstexprValue::ofBool(!eq));
  }
  const char *pred = nullptr;
  switch (op) {
  case ast::CompareOp::Eq: pred = "eq"; break;
  case ast::CompareOp::NotEq: pred = "ne"; break;
  case ast::CompareOp::Lt: pred = "lt"; break;
  case ast::CompareOp::LtE: pred = "le"; break;
  case ast::CompareOp::Gt: pred = "gt"; break;
  case ast::CompareOp::GtE: pred = "ge"; break;
  default: break;
  }
  if (lhs.isConst() && rhs.isConst()) {
    const ConstexprValue &a = lhs.c, &b = rhs.c;
    if (a.kind == CK::String || b.kind == CK::String || a.kind == CK::None || b.kind == CK::None ||
        a.kind == CK::Enum || b.kind == CK::Enum) {
      if (op == ast::CompareOp::Eq) return SValue::constant(ConstexprValue::ofBool(a == b));
      if (op == ast::CompareOp::NotEq) return SValue::constant(ConstexprValue::ofBool(!(a == b)));
      error(loc, "cannot order " + a.str() + " and " + b.str());
    }
    auto order = [&](auto x, auto y) {
      std::string p = pred;
      return p == "eq" ? x == y : p == "ne" ? x != y : p == "lt" ? x < y : p == "le" ? x <= y : p == "gt" ? x > y : x >= y;
    };
    if (a.kind != CK::Float && b.kind != CK::Float) return SValue::constant(ConstexprValue::ofBool(order(a.intValue, b.intValue)));
    double fa = a.kind == CK::Float ? a.floatValue : double(a.intValue);
    double fb = b.kind == CK::Float ? b.floatValue : double(b.intValue);
    return SValue::constant(ConstexprValue::ofBool(order(fa, fb)));
  }
  if (!(lhs.isIR() || lhs.isConst()) || !(rhs.isIR() || rhs.isConst()))
    error(loc, "cannot compare " + describe(lhs) + " with " + describe(rhs));
  ir::Value *a = lhs.isIR() ? lhs.value : comparisonOperand(lhs, loc, rhs.value->type);
  ir::Value *b = rhs.isIR() ? rhs.value : comparisonOperand(rhs, loc, lhs.value->type);
  ir::Type elem = a->type.pointer && b->type.pointer ? a->type.element() : promote(a->type, b->type, "comparison", loc);
  auto shape = broadcastShapes(a->type, b->type, loc);
  a = broadcastTo(castElement(a, elem), shape, loc);
  b = broadcastTo(castElement(b, elem), shape, loc);
  return SValue::ir(b_.op(OpCode::Cmp, {a, b}, a->type.withElement(ir::Type(ScalarType::I1)),
                          {{"predicate", std::string(pred)}}));
}

SValue Specializer::unary(ast::UnaryOperator op, const SValue &v, SourceLoc loc) {
  if (v.isConst()) {
    const ConstexprValue &c = v.c;
    switch (op) {
    case ast::UnaryOperator::Not: return SValue::constant(ConstexprValue::ofBool(!truthy(c)));
    case ast::UnaryOperator::Pos: return v;
    case ast::UnaryOperator::Neg:
      if (c.kind == CK::Float) return SValue::constant(ConstexprValue::ofFloat(-c.floatValue));
      if (c.kind == CK::Int || c.kind == CK::Bool) {
        if (c.intValue == kConstIntMin) error(loc, "the constant -(" + c.str() + ") needs more than 128 bits");
        return SValue::constant(ConstexprValue::ofInt(-c.intValue));
      }
      break;
    case ast::UnaryOperator::Invert:
      if (c.kind == CK::Int || c.kind == CK::Bool) return SValue::constant(ConstexprValue::ofInt(~c.intValue));
      break;
    }
    error(loc, std::string("bad operand for unary ") + ast::spelling(op) + ": " + c.str());
  }
  if (!v.isIR()) error(loc, std::string("bad operand for unary ") + ast::spelling(op) + ": " + describe(v));
  ir::Value *x = v.value;
  switch (op) {
  case ast::UnaryOperator::Pos: return v;
  case ast::UnaryOperator::Neg:
    if (x->type.pointer) error(loc, "cannot negate a pointer");
    return SValue::ir(b_.op(OpCode::Neg, {x}, x->type));
  case ast::UnaryOperator::Not: {
    ir::Value *bv = toBool(x);
    return SValue::ir(b_.op(OpCode::Not, {bv}, bv->type));
  }
  case ast::UnaryOperator::Invert:
    if (!x->type.isIntElement()) error(loc, "operator ~ needs an integer operand, got " + x->type.element().str());
    return SValue::ir(b_.op(OpCode::Not, {x}, x->type));
  }
  error(loc, "unsupported unary operator");
}

} // namespace tessera::spec
