// Elementwise ops with the GPU's semantics (compiler/codegen/Elementwise.cpp):
// integer ops wrap to the element width and follow its signedness, float
// results are rounded to the element type after every op, casts follow
// LLVM/PTX (see Interpreter.h for the list).
#include "compiler/interp/Executor.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tessera::interp {

using ir::OpCode;
using ir::ScalarType;

namespace {

// Element i of an operand: scalars (0-d) repeat, so a scalar operand of a
// block op (never produced by the specialiser, harmless to allow) works.
inline const Scalar &at(const HostValue &v, size_t i) { return v.data.size() == 1 ? v.data[0] : v.data[i]; }
inline int32_t originAt(const HostValue &v, size_t i) {
  return v.origin.empty() ? -1 : v.origin.size() == 1 ? v.origin[0] : v.origin[i];
}

template <typename F> void mapFloat(HostValue &out, const HostValue &a, const HostValue &b, F f) {
  const ScalarType t = out.type.scalar;
  for (size_t i = 0; i < out.size(); ++i) out.data[i].f = roundFloat(f(at(a, i).f, at(b, i).f), t);
}
template <typename F> void mapInt(HostValue &out, const HostValue &a, const HostValue &b, F f) {
  const ScalarType t = out.type.scalar;
  for (size_t i = 0; i < out.size(); ++i) out.data[i].i = wrapInt(f(at(a, i), at(b, i)), t);
}
template <typename F> void mapFloat1(HostValue &out, const HostValue &a, F f) {
  const ScalarType t = out.type.scalar;
  for (size_t i = 0; i < out.size(); ++i) out.data[i].f = roundFloat(f(at(a, i).f), t);
}
template <typename F> void mapInt1(HostValue &out, const HostValue &a, F f) {
  const ScalarType t = out.type.scalar;
  for (size_t i = 0; i < out.size(); ++i) out.data[i].i = wrapInt(f(at(a, i)), t);
}

uint64_t signedDiv(int64_t a, int64_t b) {
  if (b == 0) return ~uint64_t(0); // unspecified on the GPU
  if (a == std::numeric_limits<int64_t>::min() && b == -1) return static_cast<uint64_t>(a);
  return static_cast<uint64_t>(a / b);
}
uint64_t signedRem(int64_t a, int64_t b) {
  if (b == 0) return static_cast<uint64_t>(a);
  if (b == -1) return 0;
  return static_cast<uint64_t>(a % b);
}

bool compareFloat(const std::string &p, double a, double b) {
  if (p == "eq") return a == b;
  if (p == "ne") return !(a == b); // unordered: NaN != x
  if (p == "lt") return a < b;
  if (p == "le") return a <= b;
  if (p == "gt") return a > b;
  return a >= b; // "ge"
}

template <typename T> bool compareInt(const std::string &p, T a, T b) {
  if (p == "eq") return a == b;
  if (p == "ne") return a != b;
  if (p == "lt") return a < b;
  if (p == "le") return a <= b;
  if (p == "gt") return a > b;
  return a >= b;
}

// float -> int as PTX's cvt.rzi does: truncate, saturate, NaN -> 0.
int64_t floatToInt(double v, ScalarType to) {
  if (std::isnan(v)) return 0;
  const double t = std::trunc(v);
  const unsigned w = ir::bitWidth(to);
  if (ir::isSigned(to)) {
    const double limit = std::ldexp(1.0, static_cast<int>(w) - 1);
    if (t < -limit) return wrapInt(uint64_t(1) << (w - 1), to); // the minimum
    if (t >= limit) return w >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (w - 1)) - 1;
    return static_cast<int64_t>(t);
  }
  if (t <= 0) return 0;
  const double limit = std::ldexp(1.0, static_cast<int>(w));
  if (t >= limit) return static_cast<int64_t>(w >= 64 ? ~uint64_t(0) : (uint64_t(1) << w) - 1);
  return static_cast<int64_t>(static_cast<uint64_t>(t));
}

// int -> float with the source's signedness, rounded once.
double intToFloat(Scalar s, ScalarType from, ScalarType to) {
  const bool isSigned = ir::isSigned(from);
  if (to == ScalarType::F32 && ir::bitWidth(from) == 64) // a double would round twice
    return isSigned ? double(static_cast<float>(s.i)) : double(static_cast<float>(s.u));
  return roundFloat(isSigned ? static_cast<double>(s.i) : static_cast<double>(s.u), to);
}

} // namespace

HostValue evalElementwise(Executor &ex, const ir::Operation &op) {
  HostValue out(op.result()->type);
  const ir::Type t = op.operand(0)->type.element();
  const bool isFloat = t.isFloatElement();
  const bool isSigned = !t.pointer && ir::isSigned(t.scalar);
  const HostValue &a = ex.get(op.operand(0));
  const HostValue *bp = op.operands.size() > 1 ? &ex.get(op.operand(1)) : nullptr;
  auto b = [&]() -> const HostValue & { return *bp; };
  const unsigned width = t.pointer ? 64 : ir::bitWidth(t.scalar);

  switch (op.code) {
  case OpCode::Add:
    if (isFloat) mapFloat(out, a, b(), [](double x, double y) { return x + y; });
    else mapInt(out, a, b(), [](Scalar x, Scalar y) { return x.u + y.u; });
    break;
  case OpCode::Sub:
    if (isFloat) mapFloat(out, a, b(), [](double x, double y) { return x - y; });
    else mapInt(out, a, b(), [](Scalar x, Scalar y) { return x.u - y.u; });
    break;
  case OpCode::Mul:
    if (isFloat) mapFloat(out, a, b(), [](double x, double y) { return x * y; });
    else mapInt(out, a, b(), [](Scalar x, Scalar y) { return x.u * y.u; });
    break;
  case OpCode::Div:
    if (isFloat) mapFloat(out, a, b(), [](double x, double y) { return x / y; });
    else if (isSigned) mapInt(out, a, b(), [](Scalar x, Scalar y) { return signedDiv(x.i, y.i); });
    else mapInt(out, a, b(), [](Scalar x, Scalar y) { return y.u == 0 ? ~uint64_t(0) : x.u / y.u; });
    break;
  case OpCode::Rem:
    if (isFloat) mapFloat(out, a, b(), [](double x, double y) { return std::fmod(x, y); });
    else if (isSigned) mapInt(out, a, b(), [](Scalar x, Scalar y) { return signedRem(x.i, y.i); });
    else mapInt(out, a, b(), [](Scalar x, Scalar y) { return y.u == 0 ? x.u : x.u % y.u; });
    break;
  case OpCode::And: mapInt(out, a, b(), [](Scalar x, Scalar y) { return x.u & y.u; }); break;
  case OpCode::Or: mapInt(out, a, b(), [](Scalar x, Scalar y) { return x.u | y.u; }); break;
  case OpCode::Xor: mapInt(out, a, b(), [](Scalar x, Scalar y) { return x.u ^ y.u; }); break;
  case OpCode::Shl:
    mapInt(out, a, b(), [width](Scalar x, Scalar y) { return y.u >= width ? 0 : x.u << y.u; });
    break;
  case OpCode::Shr:
    if (isSigned)
      mapInt(out, a, b(), [width](Scalar x, Scalar y) {
        return static_cast<uint64_t>(y.u >= width ? (x.i < 0 ? -1 : 0) : x.i >> y.u);
      });
    else
      mapInt(out, a, b(), [width](Scalar x, Scalar y) { return y.u >= width ? 0 : x.u >> y.u; });
    break;
  case OpCode::Max:
  case OpCode::Min: {
    const bool max = op.code == OpCode::Max;
    const bool propagateNan = op.hasAttr("propagate_nan") && op.intAttr("propagate_nan"); // tl.PropagateNan.ALL
    if (isFloat)
      mapFloat(out, a, b(), [max, propagateNan](double x, double y) {
        if (propagateNan && (std::isnan(x) || std::isnan(y))) return std::isnan(x) ? x : y;
        return max ? std::fmax(x, y) : std::fmin(x, y);
      });
    else if (isSigned)
      mapInt(out, a, b(), [max](Scalar x, Scalar y) { return (max ? x.i >= y.i : x.i <= y.i) ? x.u : y.u; });
    else
      mapInt(out, a, b(), [max](Scalar x, Scalar y) { return (max ? x.u >= y.u : x.u <= y.u) ? x.u : y.u; });
    break;
  }
  case OpCode::Neg:
    if (isFloat) mapFloat1(out, a, [](double x) { return -x; });
    else mapInt1(out, a, [](Scalar x) { return uint64_t(0) - x.u; });
    break;
  case OpCode::Not:
    if (isFloat || t.pointer) ex.error(op, "'not' needs integer operands, got " + t.str());
    mapInt1(out, a, [](Scalar x) { return ~x.u; });
    break;
  case OpCode::Abs:
    if (isFloat) mapFloat1(out, a, [](double x) { return std::fabs(x); });
    else if (isSigned) mapInt1(out, a, [](Scalar x) { return x.i < 0 ? uint64_t(0) - x.u : x.u; });
    else mapInt1(out, a, [](Scalar x) { return x.u; });
    break;
  case OpCode::Exp: case OpCode::Exp2: case OpCode::Log: case OpCode::Log2: case OpCode::Sqrt: {
    if (!isFloat) ex.error(op, std::string("'") + ir::mnemonic(op.code) + "' needs a float operand, got " + t.str());
    double (*fn)(double) = op.code == OpCode::Exp ? static_cast<double (*)(double)>(std::exp)
                           : op.code == OpCode::Exp2 ? static_cast<double (*)(double)>(std::exp2)
                           : op.code == OpCode::Log ? static_cast<double (*)(double)>(std::log)
                           : op.code == OpCode::Log2 ? static_cast<double (*)(double)>(std::log2)
                                                     : static_cast<double (*)(double)>(std::sqrt);
    mapFloat1(out, a, fn);
    break;
  }
  case OpCode::Cmp: {
    const std::string &p = op.stringAttr("predicate");
    if (p != "eq" && p != "ne" && p != "lt" && p != "le" && p != "gt" && p != "ge")
      ex.error(op, "unknown comparison predicate '" + p + "'");
    for (size_t i = 0; i < out.size(); ++i) {
      const Scalar x = at(a, i), y = at(b(), i);
      bool r = isFloat ? compareFloat(p, x.f, y.f) : isSigned ? compareInt(p, x.i, y.i) : compareInt(p, x.u, y.u);
      out.data[i].u = r;
    }
    break;
  }
  case OpCode::Select: {
    const HostValue &x = b(), &y = ex.get(op.operand(2));
    for (size_t i = 0; i < out.size(); ++i) {
      const bool c = at(a, i).u != 0;
      out.data[i] = c ? at(x, i) : at(y, i);
      if (out.type.pointer) out.origin[i] = c ? originAt(x, i) : originAt(y, i);
    }
    break;
  }
  case OpCode::AddPtr: {
    const ir::Type offsetType = op.operand(1)->type.element();
    const bool signedOffset = ir::isSigned(offsetType.scalar); // GEP indices: unsigned ones are zero-extended
    const uint64_t size = memoryBytes(ir::Type(t.scalar));
    for (size_t i = 0; i < out.size(); ++i) {
      const Scalar off = at(b(), i);
      out.data[i].u = at(a, i).u + (signedOffset ? static_cast<uint64_t>(off.i) : off.u) * size;
      out.origin[i] = originAt(a, i);
    }
    break;
  }
  default:
    ex.error(op, std::string("no elementwise semantics for '") + ir::mnemonic(op.code) + "'");
  }
  return out;
}

HostValue evalCast(Executor &ex, const ir::Operation &op) {
  HostValue out(op.result()->type);
  const HostValue &x = ex.get(op.operand(0));
  const ir::Type from = op.operand(0)->type.element(), to = op.result()->type.element();

  if (op.code == OpCode::Bitcast) {
    if (memoryBytes(from) != memoryBytes(to) || (from.scalar == ScalarType::I1) != (to.scalar == ScalarType::I1))
      ex.error(op, "bitcast between types of different widths (" + from.str() + " to " + to.str() + ")");
    for (size_t i = 0; i < out.size(); ++i) {
      out.data[i] = decodeElement(encodeElement(at(x, i), from), to);
      if (to.pointer) out.origin[i] = from.pointer ? originAt(x, i) : -1;
    }
    return out;
  }

  for (size_t i = 0; i < out.size(); ++i) {
    const Scalar s = at(x, i);
    Scalar r;
    if (from.pointer || to.pointer) {
      if (from.pointer && to.pointer) {
        r = s;
        out.origin[i] = originAt(x, i);
      } else if (from.pointer) {
        if (to.isFloatElement()) ex.error(op, "cannot cast a pointer to " + to.str());
        r.i = wrapInt(s.u, to.scalar);
      } else {
        if (from.isFloatElement()) ex.error(op, "cannot cast " + from.str() + " to a pointer");
        unsigned w = ir::bitWidth(from.scalar); // zero-extended, as LLVM's inttoptr path does
        r.u = w >= 64 ? s.u : s.u & ((uint64_t(1) << w) - 1);
      }
    } else if (!from.isFloatElement() && !to.isFloatElement()) {
      r.i = to.scalar == ScalarType::I1 ? int64_t(s.u != 0) : wrapInt(s.u, to.scalar);
    } else if (!from.isFloatElement()) {
      r.f = intToFloat(s, from.scalar, to.scalar);
    } else if (!to.isFloatElement()) {
      r.i = to.scalar == ScalarType::I1 ? int64_t(!(s.f == 0)) : floatToInt(s.f, to.scalar); // NaN -> true
    } else if (to.scalar == ScalarType::F16 && ir::bitWidth(from.scalar) > 16 && std::isnan(s.f)) {
      // The GPU's cvt gives the canonical NaN 0x7FFF, its sign dropped (a double whose payload's
      // top bits are all ones encodes to it).
      const uint64_t canonical = 0x7FFFFFFFFFFFFFFFull;
      std::memcpy(&r.f, &canonical, sizeof canonical);
    } else {
      r.f = roundFloat(s.f, to.scalar);
    }
    out.data[i] = r;
  }
  return out;
}

} // namespace tessera::interp
