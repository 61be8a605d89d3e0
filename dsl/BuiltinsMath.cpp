// tl.* math: sin, cos, rsqrt, erf, floor, ceil, fma, fdiv, div_rn, sqrt_rn,
// umulhi, clamp, sigmoid, softmax, and the libdevice functions that
// tl.math / tl.extra.cuda.libdevice name (tanh, pow, log1p, atan2, ...).
// Integer operands of float functions are converted to f32 (as Triton's
// to_tensor does for Python ints); constexpr operands fold at compile time.
#include "dsl/BuiltinArgs.h"

#include <cmath>

namespace tessera::spec {

using ir::OpCode;
using ir::ScalarType;
using CK = ConstexprValue::Kind;

namespace {

struct UnaryMath {
  const char *name;
  OpCode code;
  double (*fold)(double);
};

const UnaryMath kUnary[] = {
    {"sin", OpCode::Sin, [](double x) { return std::sin(x); }},
    {"cos", OpCode::Cos, [](double x) { return std::cos(x); }},
    {"rsqrt", OpCode::Rsqrt, [](double x) { return 1 / std::sqrt(x); }},
    {"erf", OpCode::Erf, [](double x) { return std::erf(x); }},
    {"floor", OpCode::Floor, [](double x) { return std::floor(x); }},
    {"ceil", OpCode::Ceil, [](double x) { return std::ceil(x); }},
};

// libdevice functions of floats (f32: __nv_<name>f, f64: __nv_<name>), by arity.
const char *kLibdevice1[] = {"tanh", "sinh", "cosh", "tan", "asin", "acos", "atan", "asinh", "acosh",
                             "atanh", "log1p", "expm1", "log10", "exp10", "cbrt", "rcbrt", "erfc",
                             "erfinv", "erfcinv", "erfcx", "lgamma", "tgamma", "trunc", "round", "rint",
                             "nearbyint", "j0", "j1", "y0", "y1", "normcdf", "normcdfinv", "sinpi",
                             "cospi", "logb", "saturate", "fabs", "fast_expf", "fast_exp10f",
                             "fast_logf", "fast_log2f", "fast_log10f", "fast_sinf", "fast_cosf",
                             "fast_tanf", "fast_tanhf", "cyl_bessel_i0", "cyl_bessel_i1", "rcp_rd", "rcp_ru",
                             "rcp_rz", "sqrt_rd", "sqrt_ru", "sqrt_rz", "rsqrt_rn", "saturatef"};
const char *kLibdevice2[] = {"pow", "atan2", "fmod", "hypot", "fmin", "fmax", "copysign", "nextafter",
                             "fdim", "remainder", "rhypot", "fast_powf", "fast_dividef",
                             "add_rd", "add_ru", "add_rz", "sub_rd", "sub_ru", "sub_rz", "mul_rd", "mul_ru",
                             "mul_rz", "div_rd", "div_ru", "div_rz"};
const char *kLibdevice3[] = {"fma_rd", "fma_ru", "fma_rz", "norm3d", "rnorm3d"};
const char *kLibdevice4[] = {"norm4d", "rnorm4d"};
// Arithmetic with a named rounding (libdevice's __nv_fadd_rd, __nv_dsqrt_ru, ...): f32 and f64 only.
const char *kDirected[] = {"add_rd", "add_ru", "add_rz", "sub_rd", "sub_ru", "sub_rz", "mul_rd", "mul_ru",
                           "mul_rz", "div_rd", "div_ru", "div_rz", "fma_rd", "fma_ru", "fma_rz", "rcp_rd",
                           "rcp_ru", "rcp_rz", "sqrt_rd", "sqrt_ru", "sqrt_rz", "rsqrt_rn"};

// libdevice functions written in the language (dsl/LanguagePrelude.cpp): classification, bit
// reinterpretation, conversions with a named rounding, "_rn" arithmetic.
bool isPreludeLibdevice(const std::string &fn) {
  static const char *names[] = {"isnan", "isinf", "finitef", "isfinited", "signbit", "float_as_int",
                                "float_as_uint", "int_as_float", "uint_as_float", "double_as_longlong",
                                "longlong_as_double", "int2float_rn", "uint2float_rn", "ll2float_rn",
                                "ull2float_rn", "int2double_rn", "uint2double_rn", "ll2double_rn",
                                "ull2double_rn", "double2float_rn", "llrint", "llround", "ilogb", "ldexp", "scalbn",
                                "popc", "clz", "brev", "ffs", "mulhi", "hadd", "rhadd", "add_rn", "sub_rn",
                                "mul_rn", "fma_rn", "rcp_rn", "mul24", "sad", "byte_perm", "double2hiint",
                                "double2loint", "hiloint2double", "rcp64h"};
  for (const char *n : names)
    if (fn == n) return true;
  // float2int_rn, double2ull_rz, ...: (float|double)2(int|uint|ll|ull)_(rn|rz|rd|ru)
  for (const char *src : {"float2", "double2"})
    for (const char *dst : {"int_", "uint_", "ll_", "ull_"})
      for (const char *r : {"rn", "rz", "rd", "ru"})
        if (fn == std::string(src) + dst + r) return true;
  // int2float_rd, ull2double_rz, double2float_ru, ...: conversions with a directed rounding
  for (const char *conversion : {"int2float_", "uint2float_", "ll2float_", "ull2float_", "ll2double_", "ull2double_",
                                 "double2float_"})
    for (const char *r : {"rz", "rd", "ru"})
      if (fn == std::string(conversion) + r) return true;
  return false;
}

double foldLibdevice(const std::string &fn, const std::vector<double> &x, bool &ok) {
  ok = true;
  double a = x[0], b = x.size() > 1 ? x[1] : 0;
  if (fn == "tanh") return std::tanh(a);
  if (fn == "sinh") return std::sinh(a);
  if (fn == "cosh") return std::cosh(a);
  if (fn == "tan") return std::tan(a);
  if (fn == "asin") return std::asin(a);
  if (fn == "acos") return std::acos(a);
  if (fn == "atan") return std::atan(a);
  if (fn == "log1p") return std::log1p(a);
  if (fn == "expm1") return std::expm1(a);
  if (fn == "log10") return std::log10(a);
  if (fn == "cbrt") return std::cbrt(a);
  if (fn == "trunc") return std::trunc(a);
  if (fn == "round") return std::round(a);
  if (fn == "rint" || fn == "nearbyint") return std::nearbyint(a);
  if (fn == "fabs") return std::fabs(a);
  if (fn == "pow") return std::pow(a, b);
  if (fn == "atan2") return std::atan2(a, b);
  if (fn == "fmod") return std::fmod(a, b);
  if (fn == "hypot") return std::hypot(a, b);
  ok = false;
  return 0;
}

bool listed(const char *const *names, size_t n, const std::string &s) {
  for (size_t i = 0; i < n; ++i)
    if (s == names[i]) return true;
  return false;
}

double asDouble(const ConstexprValue &c) { return c.kind == CK::Float ? c.floatValue : double(c.intValue); }
bool isNumber(const SValue &v) {
  return v.isConst() && (v.c.kind == CK::Float || v.c.kind == CK::Int || v.c.kind == CK::Bool);
}

} // namespace

// Operands of a float (or int, for umulhi) elementwise function: literals take
// the type of the first runtime operand, then promotion and broadcasting.
enum class Want { Numbers, Floats, Ints };

static std::vector<ir::Value *> elementwiseOperands(Specializer &sp, const Bound &b, size_t n, const std::string &fname,
                                                    Want want, SourceLoc loc) {
  const ir::Type *peer = nullptr;
  for (size_t i = 0; i < n; ++i)
    if (b[i].isIR()) {
      peer = &b[i].value->type;
      break;
    }
  std::vector<ir::Value *> xs;
  for (size_t i = 0; i < n; ++i) {
    ir::Value *x = sp.toIR(b[i], b.locs[i], peer);
    if (x->type.pointer) sp.error(b.locs[i], fname + "() needs numbers, got pointers");
    xs.push_back(x);
  }
  ir::Type elem = xs[0]->type.element();
  for (size_t i = 1; i < n; ++i) elem = sp.promote(elem, xs[i]->type, fname.c_str(), loc);
  if (want == Want::Floats && elem.isIntElement()) elem = ir::Type(ScalarType::F32);
  if (want == Want::Ints && !elem.isIntElement()) sp.error(loc, fname + "() needs integers, got " + elem.str());
  std::vector<int64_t> shape = xs[0]->type.shape;
  for (size_t i = 1; i < n; ++i) shape = sp.broadcastShapes(xs[0]->type.withShape(shape), xs[i]->type, loc);
  for (size_t i = 0; i < n; ++i) xs[i] = sp.broadcastTo(sp.castElement(xs[i], elem), shape, b.locs[i]);
  return xs;
}

std::optional<SValue> Specializer::callMathBuiltin(const std::string &name, CallArgs &args) {
  if (name.rfind("lang.", 0) != 0) return std::nullopt;
  const std::string fn = name.substr(5);
  SourceLoc loc = args.loc;

  for (const UnaryMath &m : kUnary) {
    if (fn != m.name) continue;
    Bound b = bind(*this, args, "tl." + fn, {{"x", true}});
    if (isNumber(b[0])) return SValue::constant(ConstexprValue::ofFloat(m.fold(asDouble(b[0].c))));
    ir::Value *x = elementwiseOperands(*this, b, 1, fn, Want::Floats, loc)[0];
    return SValue::ir(b_.op(m.code, {x}, x->type));
  }
  if (fn == "sqrt_rn") { // tl.sqrt is already IEEE (sqrt.rn) in tessera
    Bound b = bind(*this, args, "tl.sqrt_rn", {{"x", true}});
    if (isNumber(b[0])) return SValue::constant(ConstexprValue::ofFloat(std::sqrt(asDouble(b[0].c))));
    ir::Value *x = elementwiseOperands(*this, b, 1, fn, Want::Floats, loc)[0];
    return SValue::ir(b_.op(OpCode::Sqrt, {x}, x->type));
  }
  if (fn == "fdiv" || fn == "div_rn") {
    // As Triton: div_rn and fdiv(ieee_rounding=True) round to nearest (div.rn); fdiv's default
    // is the approximate div.full.f32 of `/` (f32 only: f64 division is always div.rn).
    Bound b = fn == "fdiv" ? bind(*this, args, "tl.fdiv", {{"x", true}, {"y", true}, {"ieee_rounding", false}})
                           : bind(*this, args, "tl.div_rn", {{"x", true}, {"y", true}});
    if (isNumber(b[0]) && isNumber(b[1])) return SValue::constant(ConstexprValue::ofFloat(asDouble(b[0].c) / asDouble(b[1].c)));
    bool ieee = fn == "div_rn";
    if (fn == "fdiv" && b.has(2)) {
      if (!b[2].isConst()) error(b.locs[2], "tl.fdiv's ieee_rounding must be a constexpr, got " + describe(b[2]));
      ieee = truthy(b[2].c);
    }
    std::vector<ir::Value *> xs = elementwiseOperands(*this, b, 2, fn, Want::Floats, loc);
    if (!ieee && xs[0]->type.element().scalar == ir::ScalarType::F32)
      return SValue::ir(b_.op(OpCode::Div, {xs[0], xs[1]}, xs[0]->type, ir::fullRangeDivision()));
    return SValue::ir(b_.op(OpCode::Div, {xs[0], xs[1]}, xs[0]->type));
  }
  if (fn == "fma") {
    Bound b = bind(*this, args, "tl.fma", {{"x", true}, {"y", true}, {"z", true}});
    if (isNumber(b[0]) && isNumber(b[1]) && isNumber(b[2]))
      return SValue::constant(ConstexprValue::ofFloat(std::fma(asDouble(b[0].c), asDouble(b[1].c), asDouble(b[2].c))));
    std::vector<ir::Value *> xs = elementwiseOperands(*this, b, 3, fn, Want::Floats, loc);
    return SValue::ir(b_.op(OpCode::Fma, xs, xs[0]->type));
  }
  if (fn == "umulhi") {
    Bound b = bind(*this, args, "tl.umulhi", {{"x", true}, {"y", true}});
    if (!b[0].isIR() && !b[1].isIR()) error(loc, "tl.umulhi needs at least one runtime operand");
    std::vector<ir::Value *> xs = elementwiseOperands(*this, b, 2, fn, Want::Ints, loc);
    if (xs[0]->type.isBoolElement()) error(loc, "tl.umulhi needs integers wider than i1");
    return SValue::ir(b_.op(OpCode::UMulHi, xs, xs[0]->type));
  }
  if (fn == "clamp") {
    Bound b = bind(*this, args, "tl.clamp", {{"x", true}, {"min", true}, {"max", true}, {"propagate_nan", false}});
    if (!b[0].isIR()) error(b.locs[0], "tl.clamp needs a runtime value, got " + describe(b[0]));
    std::vector<ir::Value *> xs = elementwiseOperands(*this, b, 3, fn, Want::Numbers, loc);
    // Triton's clampf lowering: min(max(x, lo), hi), NaN-propagating for PropagateNan.ALL.
    auto attrs = propagateNanAttrs(*this, b[3], b.locs[3], xs[0]->type.element());
    ir::Value *lo = b_.op(OpCode::Max, {xs[0], xs[1]}, xs[0]->type, attrs);
    return SValue::ir(b_.op(OpCode::Min, {lo, xs[2]}, xs[0]->type, attrs));
  }
  if (fn == "sigmoid") {
    Bound b = bind(*this, args, "tl.sigmoid", {{"x", true}});
    if (!b[0].isIR()) error(b.locs[0], "tl.sigmoid needs a runtime value, got " + describe(b[0]));
    return callPrelude("sigmoid", args);
  }
  if (fn == "softmax") {
    // Over the last dim unless `dim` says otherwise (keep_dims only shapes the max/sum).
    Bound b = bind(*this, args, "tl.softmax", {{"x", true}, {"dim", false}, {"keep_dims", false}, {"ieee_rounding", false}});
    if (!b[0].isIR() || !b[0].value->type.isBlock()) error(b.locs[0], "tl.softmax needs a block, got " + describe(b[0]));
    ir::Value *x = b[0].value;
    if (!x->type.isFloatElement()) x = castElement(x, ir::Type(ScalarType::F32));
    int64_t rank = static_cast<int64_t>(x->type.rank());
    int64_t dim = b.has(1) ? requireInt(b[1], b.locs[1], "tl.softmax's dim") : rank - 1;
    if (dim < -rank || dim >= rank) error(b.locs[1], "tl.softmax's dim " + std::to_string(dim) + " is out of range");
    if (dim < 0) dim += rank;
    CallArgs call;
    call.loc = loc;
    call.args = {SValue::ir(x), SValue::constant(ConstexprValue::ofInt(dim)),
                 b.has(3) ? b[3] : SValue::constant(ConstexprValue::ofBool(false))};
    call.argLocs = {b.locs[0], loc, loc};
    return callPrelude("softmax", call);
  }
  if (fn == "swizzle2d") return callPrelude("swizzle2d", args);
  if (isPreludeLibdevice(fn)) return callPrelude(fn, args);

  size_t arity = listed(kLibdevice1, std::size(kLibdevice1), fn)   ? 1
                 : listed(kLibdevice2, std::size(kLibdevice2), fn) ? 2
                 : listed(kLibdevice3, std::size(kLibdevice3), fn) ? 3
                 : listed(kLibdevice4, std::size(kLibdevice4), fn) ? 4
                                                                   : 0;
  if (arity == 0) return std::nullopt;
  // libdevice's own parameter names (arg0, arg1, ...), as triton.language.extra.libdevice has them.
  static const char *argNames[] = {"arg0", "arg1", "arg2", "arg3"};
  std::vector<ParamSpec> params;
  for (size_t i = 0; i < arity; ++i) params.push_back({argNames[i], true});
  Bound b = spec::bind(*this, args, "tl.math." + fn, params);
  if (listed(kDirected, std::size(kDirected), fn)) {
    std::vector<ir::Value *> xs = elementwiseOperands(*this, b, arity, fn, Want::Floats, loc);
    ScalarType s = xs[0]->type.scalar;
    if (s != ScalarType::F32 && s != ScalarType::F64)
      error(loc, "tl.math." + fn + " needs float32 or float64 operands, got " + xs[0]->type.element().str());
    if (fn == "rsqrt_rn" && s == ScalarType::F64) error(loc, "tl.math.rsqrt_rn has no float64 version");
    return SValue::ir(b_.op(OpCode::Libdevice, xs, xs[0]->type, {{"fn", fn}}));
  }
  if (arity <= 2 && isNumber(b[0]) && (arity == 1 || isNumber(b[1]))) {
    std::vector<double> values = {asDouble(b[0].c)};
    if (arity == 2) values.push_back(asDouble(b[1].c));
    bool ok = false;
    double r = foldLibdevice(fn, values, ok);
    if (ok) return SValue::constant(ConstexprValue::ofFloat(r));
  }
  std::vector<ir::Value *> xs = elementwiseOperands(*this, b, arity, fn, Want::Floats, loc);
  if (fn.rfind("fast_", 0) == 0 && xs[0]->type.scalar == ScalarType::F64)
    error(loc, "tl.math." + fn + " has no float64 version");
  return SValue::ir(b_.op(OpCode::Libdevice, xs, xs[0]->type, {{"fn", fn}}));
}

} // namespace tessera::spec
