// The rest of triton.language (the second half of Ops.def): math functions
// (sin ... libdevice), data movement (trans, join, split, cat, flip),
// reductions and scans with a combine region, map_elementwise, the special
// registers (smid, globaltimer), dot, and the debugging ops
// (print, assert, assume, barrier). Atomics are in Memory.cpp.
#include "compiler/interp/Executor.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>

namespace tessera::interp {

using ir::OpCode;
using ir::ScalarType;

namespace {

inline const Scalar &at(const HostValue &v, size_t i) { return v.data.size() == 1 ? v.data[0] : v.data[i]; }

// ------------------------------------------------------------------ math

// erf^-1 by Newton's method on erf (to double precision).
double erfinv(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return NAN;
  if (y == 1) return INFINITY;
  if (y == -1) return -INFINITY;
  // Giles' single-precision approximation as the starting point.
  double w = -std::log((1.0 - y) * (1.0 + y)), x;
  if (w < 5) {
    w -= 2.5;
    x = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941})
      x = c + x * w;
  } else {
    w = std::sqrt(w) - 3;
    x = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682})
      x = c + x * w;
  }
  x *= y;
  for (int i = 0; i < 4; ++i) {
    double err = std::erf(x) - y;
    x -= err / (2 / std::sqrt(std::numbers::pi) * std::exp(-x * x));
  }
  return x;
}

double erfcx(double x) {
  if (x < 25) return std::exp(x * x) * std::erfc(x);
  double x2 = x * x; // asymptotic series, exact to double precision here
  return 1 / (x * std::sqrt(std::numbers::pi)) * (1 - 1 / (2 * x2) + 3 / (4 * x2 * x2) - 15 / (8 * x2 * x2 * x2));
}

// Arithmetic with a named rounding (add_rd, sqrt_rz, fma_ru, ...): the result rounded to nearest in
// the operands' type, then moved one step where the exact result lies on the other side of it (an
// error-free transformation gives that side: TwoSum, fma's remainder; fma via a wider product).
template <class T> T stepToward(T nearest, int side, char mode) {
  // side: the sign of (exact - nearest)
  if (side == 0 || std::isnan(nearest)) return nearest;
  const T inf = std::numeric_limits<T>::infinity();
  if (mode == 'd' && side < 0) return std::nextafter(nearest, -inf);
  if (mode == 'u' && side > 0) return std::nextafter(nearest, inf);
  if (mode == 'z' && ((side < 0 && nearest > 0) || (side > 0 && nearest < 0))) return std::nextafter(nearest, T(0));
  return nearest;
}

template <class T> int signOf(T v) { return v > 0 ? 1 : v < 0 ? -1 : 0; }

template <class T, class Wide> bool directed(const std::string &op, char mode, const double *x, double &r) {
  const T a = static_cast<T>(x[0]), b = static_cast<T>(x[1]), c = static_cast<T>(x[2]);
  T nearest;
  int side = 0;
  if (op == "add" || op == "sub") {
    const T y = op == "add" ? b : -b;
    nearest = a + y;
    const T bv = nearest - a;
    side = signOf((a - (nearest - bv)) + (y - bv));
  } else if (op == "mul") {
    nearest = a * b;
    side = signOf(std::fma(a, b, -nearest));
  } else if (op == "div" || op == "rcp") {
    const T n = op == "div" ? a : T(1), d = op == "div" ? b : a;
    nearest = n / d;
    side = signOf(std::fma(-nearest, d, n)) * signOf(d);
  } else if (op == "sqrt") {
    nearest = std::sqrt(a);
    side = signOf(std::fma(-nearest, nearest, a));
  } else if (op == "fma") {
    const Wide exact = static_cast<Wide>(a) * static_cast<Wide>(b) + static_cast<Wide>(c);
    nearest = std::fma(a, b, c);
    side = exact > static_cast<Wide>(nearest) ? 1 : exact < static_cast<Wide>(nearest) ? -1 : 0;
  } else {
    return false;
  }
  // A finite exact result that rounded to an infinity lies inside the finite range.
  bool finiteOperands = std::isfinite(a) && (op == "sqrt" || op == "rcp" || std::isfinite(b)) &&
                        (op != "fma" || std::isfinite(c));
  if (std::isinf(nearest) && finiteOperands && !(op == "div" && b == 0) && !(op == "rcp" && a == 0))
    side = nearest > 0 ? -1 : 1;
  r = static_cast<double>(stepToward(nearest, side, mode));
  return true;
}

// A libdevice function by name (tl.math / libdevice); `single`: computed in
// f32 on the GPU (matters for nextafter only).
bool libdevice(const std::string &fn, const double *x, size_t n, bool single, double &r) {
  const double a = x[0], b = n > 1 ? x[1] : 0;
  std::string f = fn;
  if (f.size() > 3 && f[f.size() - 3] == '_' && f[f.size() - 2] == 'r' && f.back() != 'n') {
    const std::string op = f.substr(0, f.size() - 3);
    const char mode = f.back();
    if (single ? directed<float, double>(op, mode, x, r) : directed<double, __float128>(op, mode, x, r)) return true;
  }
  if (f == "rsqrt_rn") {
    r = double(float(1 / std::sqrt(double(float(a))))); // double's 1/sqrt is within 2^-52: one rounding to f32
    return true;
  }
  if (f == "saturatef") f = "saturate";
  if (n == 3 && (f == "norm3d" || f == "rnorm3d")) {
    const double s = std::sqrt(a * a + b * b + x[2] * x[2]);
    r = f == "norm3d" ? s : 1 / s;
    return true;
  }
  if (n == 4 && (f == "norm4d" || f == "rnorm4d")) {
    const double s = std::sqrt(a * a + b * b + x[2] * x[2] + x[3] * x[3]);
    r = f == "norm4d" ? s : 1 / s;
    return true;
  }
  if (f.rfind("fast_", 0) == 0) { // fast_expf, fast_dividef, ...: the accurate value
    f = f.substr(5);
    if (!f.empty() && f.back() == 'f') f.pop_back();
    if (f == "divide") f = "fdiv";
  }
  if (n == 1) {
    if (f == "tanh") r = std::tanh(a);
    else if (f == "sinh") r = std::sinh(a);
    else if (f == "cosh") r = std::cosh(a);
    else if (f == "tan") r = std::tan(a);
    else if (f == "sin") r = std::sin(a);
    else if (f == "cos") r = std::cos(a);
    else if (f == "asin") r = std::asin(a);
    else if (f == "acos") r = std::acos(a);
    else if (f == "atan") r = std::atan(a);
    else if (f == "asinh") r = std::asinh(a);
    else if (f == "acosh") r = std::acosh(a);
    else if (f == "atanh") r = std::atanh(a);
    else if (f == "exp") r = std::exp(a);
    else if (f == "exp2") r = std::exp2(a);
    else if (f == "exp10") r = std::pow(10.0, a);
    else if (f == "expm1") r = std::expm1(a);
    else if (f == "log") r = std::log(a);
    else if (f == "log2") r = std::log2(a);
    else if (f == "log10") r = std::log10(a);
    else if (f == "log1p") r = std::log1p(a);
    else if (f == "sqrt") r = std::sqrt(a);
    else if (f == "rsqrt") r = 1 / std::sqrt(a);
    else if (f == "cbrt") r = std::cbrt(a);
    else if (f == "rcbrt") r = 1 / std::cbrt(a);
    else if (f == "erf") r = std::erf(a);
    else if (f == "erfc") r = std::erfc(a);
    else if (f == "erfinv") r = erfinv(a);
    else if (f == "erfcinv") r = erfinv(1 - a);
    else if (f == "erfcx") r = erfcx(a);
    else if (f == "lgamma") r = std::lgamma(a);
    else if (f == "tgamma") r = std::tgamma(a);
    else if (f == "trunc") r = std::trunc(a);
    else if (f == "round") r = std::round(a); // halfway cases away from zero
    else if (f == "rint" || f == "nearbyint") r = std::nearbyint(a);
    else if (f == "floor") r = std::floor(a);
    else if (f == "ceil") r = std::ceil(a);
    else if (f == "fabs" || f == "abs") r = std::fabs(a);
    else if (f == "j0") r = ::j0(a);
    else if (f == "j1") r = ::j1(a);
    else if (f == "y0") r = ::y0(a);
    else if (f == "y1") r = ::y1(a);
    else if (f == "cyl_bessel_i0") r = std::cyl_bessel_i(0.0, std::fabs(a)); // even
    else if (f == "cyl_bessel_i1") r = std::copysign(std::cyl_bessel_i(1.0, std::fabs(a)), a); // odd
    else if (f == "normcdf") r = 0.5 * std::erfc(-a / std::numbers::sqrt2);
    else if (f == "normcdfinv") r = -std::numbers::sqrt2 * erfinv(1 - 2 * a);
    else if (f == "sinpi") r = std::sin(std::numbers::pi * a);
    else if (f == "cospi") r = std::cos(std::numbers::pi * a);
    else if (f == "logb") r = std::logb(a);
    else if (f == "saturate") r = std::isnan(a) ? 0.0 : std::fmin(std::fmax(a, 0.0), 1.0);
    else return false;
    return true;
  }
  if (n == 2) {
    if (f == "pow") r = std::pow(a, b);
    else if (f == "atan2") r = std::atan2(a, b);
    else if (f == "fmod") r = std::fmod(a, b);
    else if (f == "hypot") r = std::hypot(a, b);
    else if (f == "fmin") r = std::fmin(a, b);
    else if (f == "fmax") r = std::fmax(a, b);
    else if (f == "copysign") r = std::copysign(a, b);
    else if (f == "nextafter") r = single ? double(std::nextafter(float(a), float(b))) : std::nextafter(a, b);
    else if (f == "fdim") r = std::fdim(a, b);
    else if (f == "remainder") r = std::remainder(a, b);
    else if (f == "fdiv" || f == "div_rn") r = a / b;
    else return false;
    return true;
  }
  if (n == 3 && f == "fma") {
    r = std::fma(a, b, x[2]);
    return true;
  }
  return false;
}

HostValue evalMath(Executor &ex, const ir::Operation &op) {
  HostValue out(op.result()->type);
  const ir::Type t = out.type.element();
  std::vector<const HostValue *> xs;
  for (const ir::Value *v : op.operands) xs.push_back(&ex.get(v));
  if (op.code == OpCode::UMulHi) {
    if (!t.isIntElement()) ex.error(op, "umulhi needs integers, got " + t.str());
    const unsigned w = ir::bitWidth(t.scalar);
    const uint64_t mask = w >= 64 ? ~uint64_t(0) : (uint64_t(1) << w) - 1;
    for (size_t i = 0; i < out.size(); ++i) {
      unsigned __int128 p = (unsigned __int128)(at(*xs[0], i).u & mask) * (at(*xs[1], i).u & mask);
      out.data[i].i = wrapInt(static_cast<uint64_t>(p >> w), t.scalar);
    }
    return out;
  }
  if (!t.isFloatElement()) ex.error(op, std::string("'") + ir::mnemonic(op.code) + "' needs floats, got " + t.str());
  const bool single = t.scalar != ScalarType::F64;
  const std::string fn = op.code == OpCode::Libdevice ? op.stringAttr("fn") : "";
  double x[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < out.size(); ++i) {
    for (size_t k = 0; k < xs.size() && k < 4; ++k) x[k] = at(*xs[k], i).f;
    double r = 0;
    switch (op.code) {
    case OpCode::Sin: r = std::sin(x[0]); break;
    case OpCode::Cos: r = std::cos(x[0]); break;
    case OpCode::Rsqrt: r = 1 / std::sqrt(x[0]); break;
    case OpCode::Erf: r = std::erf(x[0]); break;
    case OpCode::Floor: r = std::floor(x[0]); break;
    case OpCode::Ceil: r = std::ceil(x[0]); break;
    case OpCode::Fma: r = std::fma(x[0], x[1], x[2]); break;
    case OpCode::Libdevice:
      if (!libdevice(fn, x, xs.size(), single, r))
        ex.error(op, "the interpreter does not know the libdevice function '" + fn + "' with " +
                         std::to_string(xs.size()) + " operand(s)");
      break;
    default: ex.error(op, "not a math op");
    }
    out.data[i].f = roundFloat(r, t.scalar);
  }
  return out;
}

// --------------------------------------------------------- data movement

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

void copyElement(HostValue &out, size_t i, const HostValue &in, size_t j) {
  out.data[i] = in.data[j];
  if (out.type.pointer) out.origin[i] = in.origin.empty() ? -1 : in.origin[j];
}

void evalMove(Executor &ex, const ir::Operation &op) {
  const HostValue &a = ex.get(op.operand(0));
  switch (op.code) {
  case OpCode::Trans: {
    HostValue out(op.result()->type);
    const std::vector<int64_t> &order = op.arrayAttr("order");
    std::vector<int64_t> inStride = stridesOf(a.type.shape);
    for (size_t i = 0; i < out.size(); ++i) {
      std::vector<int64_t> c = coordinatesOf(static_cast<int64_t>(i), out.type.shape);
      int64_t src = 0;
      for (size_t d = 0; d < c.size(); ++d) src += c[d] * inStride[order[d]];
      copyElement(out, i, a, static_cast<size_t>(src));
    }
    ex.set(op.result(), std::move(out));
    return;
  }
  case OpCode::Join: {
    const HostValue &b = ex.get(op.operand(1));
    HostValue out(op.result()->type);
    for (size_t i = 0; i < a.size(); ++i) {
      copyElement(out, 2 * i, a, i);
      copyElement(out, 2 * i + 1, b, i);
    }
    ex.set(op.result(), std::move(out));
    return;
  }
  case OpCode::Split: {
    HostValue lo(op.result(0)->type), hi(op.result(1)->type);
    for (size_t i = 0; i < lo.size(); ++i) {
      copyElement(lo, i, a, 2 * i);
      copyElement(hi, i, a, 2 * i + 1);
    }
    ex.set(op.result(0), std::move(lo));
    ex.set(op.result(1), std::move(hi));
    return;
  }
  case OpCode::Cat: {
    const HostValue &b = ex.get(op.operand(1));
    HostValue out(op.result()->type);
    for (size_t i = 0; i < a.size(); ++i) copyElement(out, i, a, i);
    for (size_t i = 0; i < b.size(); ++i) copyElement(out, a.size() + i, b, i);
    ex.set(op.result(), std::move(out));
    return;
  }
  case OpCode::Flip: {
    HostValue out(op.result()->type);
    const size_t axis = static_cast<size_t>(op.intAttr("axis"));
    const std::vector<int64_t> &shape = a.type.shape;
    const std::vector<int64_t> stride = stridesOf(shape);
    for (size_t i = 0; i < out.size(); ++i) {
      int64_t c = (static_cast<int64_t>(i) / stride[axis]) % shape[axis];
      int64_t src = static_cast<int64_t>(i) + (shape[axis] - 1 - 2 * c) * stride[axis];
      copyElement(out, i, a, static_cast<size_t>(src));
    }
    ex.set(op.result(), std::move(out));
    return;
  }
  default: ex.error(op, "not a data movement op");
  }
}

// ------------------------------------------------- reduce_combine and scan

// Runs the combine region on two tuples of scalars: (a0..an-1) and (b0..bn-1).
std::vector<Scalar> combine(Executor &ex, const ir::Operation &op, const std::vector<Scalar> &a,
                            const std::vector<Scalar> &b) {
  const ir::Block &body = *op.region(0);
  const size_t n = a.size();
  std::vector<HostValue> args;
  args.reserve(2 * n);
  for (size_t k = 0; k < 2 * n; ++k) {
    HostValue v(body.args[k]->type);
    v.data[0] = k < n ? a[k] : b[k - n];
    args.push_back(std::move(v));
  }
  std::vector<HostValue> out = ex.runRegion(body, std::move(args));
  std::vector<Scalar> r(n);
  for (size_t k = 0; k < n; ++k) r[k] = out.at(k).data.at(0);
  return r;
}

void evalCombine(Executor &ex, const ir::Operation &op) {
  const size_t n = op.operands.size();
  std::vector<const HostValue *> xs;
  for (const ir::Value *v : op.operands) xs.push_back(&ex.get(v));
  const std::vector<int64_t> &shape = xs[0]->type.shape;
  const size_t axis = static_cast<size_t>(op.intAttr("axis"));
  size_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= static_cast<size_t>(shape[d]);
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= static_cast<size_t>(shape[d]);
  const size_t len = static_cast<size_t>(shape[axis]);
  std::vector<HostValue> results;
  for (size_t k = 0; k < n; ++k) results.emplace_back(op.result(static_cast<unsigned>(k))->type);
  const bool reverse = op.code == OpCode::Scan && op.hasAttr("reverse") && op.intAttr("reverse");

  std::vector<std::vector<Scalar>> line(len, std::vector<Scalar>(n));
  for (size_t o = 0; o < outer; ++o)
    for (size_t in = 0; in < inner; ++in) {
      auto index = [&](size_t j) { return (o * len + j) * inner + in; };
      for (size_t j = 0; j < len; ++j)
        for (size_t k = 0; k < n; ++k) line[j][k] = xs[k]->data[index(j)];
      if (op.code == OpCode::Scan) {
        // Inclusive; a reverse scan runs from the last element (Triton: flip, scan, flip).
        std::vector<Scalar> acc;
        for (size_t step = 0; step < len; ++step) {
          size_t j = reverse ? len - 1 - step : step;
          acc = step == 0 ? line[j] : combine(ex, op, acc, line[j]);
          for (size_t k = 0; k < n; ++k) results[k].data[index(j)] = acc[k];
        }
        continue;
      }
      // Pairwise, neighbours first, the lower index always on the left.
      for (size_t m = len; m > 1; m = (m + 1) / 2) {
        for (size_t j = 0; j + 1 < m; j += 2) line[j / 2] = combine(ex, op, line[j], line[j + 1]);
        if (m % 2) line[m / 2] = line[m - 1];
      }
      for (size_t k = 0; k < n; ++k) results[k].data[o * inner + in] = line[0][k];
    }
  for (size_t k = 0; k < n; ++k) ex.set(op.result(static_cast<unsigned>(k)), std::move(results[k]));
}

// ------------------------------------------------------- map_elementwise

// Runs the region once per group of `pack` consecutive elements (row-major; the last group
// repeats the last element when the count is not a multiple of pack, as a thread holding fewer
// registers does on the GPU), each region argument holding one scalar.
void evalMapElementwise(Executor &ex, const ir::Operation &op) {
  const ir::Block &body = *op.region(0);
  const size_t pack = static_cast<size_t>(op.intAttr("pack"));
  std::vector<const HostValue *> xs;
  for (const ir::Value *v : op.operands) xs.push_back(&ex.get(v));
  std::vector<HostValue> results;
  for (const auto &r : op.results) results.emplace_back(r->type);
  const size_t n = results[0].size();
  for (size_t group = 0; group < n; group += pack) {
    std::vector<HostValue> args;
    args.reserve(body.args.size());
    for (size_t k = 0; k < xs.size(); ++k)
      for (size_t j = 0; j < pack; ++j) {
        const size_t i = std::min(group + j, n - 1);
        HostValue v(body.args[k * pack + j]->type);
        v.data[0] = at(*xs[k], i);
        if (v.isPointer() && !xs[k]->origin.empty()) v.origin[0] = xs[k]->origin[xs[k]->origin.size() == 1 ? 0 : i];
        args.push_back(std::move(v));
      }
    std::vector<HostValue> out = ex.runRegion(body, std::move(args));
    for (size_t m = 0; m < results.size(); ++m)
      for (size_t j = 0; j < pack && group + j < n; ++j) {
        const HostValue &o = out.at(m * pack + j);
        results[m].data[group + j] = o.data.at(0);
        if (results[m].isPointer() && !o.origin.empty()) results[m].origin[group + j] = o.origin[0];
      }
  }
  for (size_t m = 0; m < results.size(); ++m) ex.set(op.result(static_cast<unsigned>(m)), std::move(results[m]));
}

// ------------------------------------------------------ special registers

// The interpreter runs every program on the host: all of them are on "SM 0", and the timer is
// the host's monotonic clock in nanoseconds (it only ever goes forward, as %globaltimer does).
HostValue evalSpecialRegister(const ir::Operation &op) {
  HostValue out(op.result()->type);
  const ir::Type elem = out.type.element();
  int64_t v = 0;
  if (op.code == OpCode::GlobalTimer) {
    using namespace std::chrono;
    v = duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
  }
  out.data[0] = makeInt(v, elem);
  return out;
}

// ------------------------------------------------------------------- dot

HostValue evalDot(Executor &ex, const ir::Operation &op) {
  const HostValue &a = ex.get(op.operand(0)), &b = ex.get(op.operand(1)), &c = ex.get(op.operand(2));
  HostValue out(op.result()->type);
  const size_t rank = a.type.rank();
  const int64_t M = a.type.shape[rank - 2], K = a.type.shape[rank - 1], N = b.type.shape[rank - 1];
  const int64_t batches = rank == 3 ? a.type.shape[0] : 1;
  const ir::Type in = a.type.element(), acc = out.type.element();
  for (int64_t bi = 0; bi < batches; ++bi)
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const size_t o = static_cast<size_t>((bi * M + i) * N + j);
      const size_t aRow = static_cast<size_t>((bi * M + i) * K), bBatch = static_cast<size_t>(bi * K * N);
      if (in.isFloatElement() || acc.isFloatElement()) {
        // Products and their sum in double, rounded once to the accumulator's type (the
        // GPU accumulates in f32 in an unspecified order; tf32 inputs lose 13 mantissa bits).
        auto value = [&](const HostValue &v, size_t k) {
          const Scalar s = v.data[k];
          return in.isFloatElement() ? s.f : ir::isSigned(in.scalar) ? double(s.i) : double(s.u);
        };
        double sum = acc.isFloatElement() ? c.data[o].f : ir::isSigned(acc.scalar) ? double(c.data[o].i) : double(c.data[o].u);
        for (int64_t k = 0; k < K; ++k)
          sum += value(a, aRow + static_cast<size_t>(k)) * value(b, bBatch + static_cast<size_t>(k * N + j));
        out.data[o] = acc.isFloatElement() ? makeFloat(sum, acc) : makeInt(static_cast<int64_t>(sum), acc);
      } else {
        uint64_t sum = c.data[o].u; // sign-extended values multiply correctly modulo 2^64
        for (int64_t k = 0; k < K; ++k)
          sum += a.data[aRow + static_cast<size_t>(k)].u * b.data[bBatch + static_cast<size_t>(k * N + j)].u;
        out.data[o].i = wrapInt(sum, acc.scalar);
      }
    }
  return out;
}

// ------------------------------------------------------------- debugging

std::string printElement(Scalar s, const ir::Type &t, bool hex) {
  if (!hex) return elementText(s, t);
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, encodeElement(s, t));
  return buf;
}

void evalPrint(Executor &ex, const ir::Operation &op) {
  std::string prefix = op.hasAttr("prefix") ? op.stringAttr("prefix") : "";
  const bool hex = op.hasAttr("hex") && op.intAttr("hex");
  std::array<uint32_t, 3> pid = ex.programId();
  char head[64];
  std::snprintf(head, sizeof head, "pid (%u, %u, %u)", pid[0], pid[1], pid[2]);
  if (op.operands.empty()) {
    std::printf("%s %s\n", head, prefix.c_str());
  } else {
    const HostValue &v = ex.get(op.operand(0));
    const ir::Type t = v.type.element();
    std::string sep = prefix.empty() ? "" : (prefix.back() == ':' || prefix.back() == ' ' ? prefix : prefix + ": ");
    for (size_t i = 0; i < v.size(); ++i) {
      std::string idx;
      if (v.type.rank() == 1) idx = " idx (" + coordinateText(static_cast<int64_t>(i), v.type.shape) + ")";
      else if (v.type.rank() > 1) idx = " idx " + coordinateText(static_cast<int64_t>(i), v.type.shape);
      std::printf("%s%s %s%s\n", head, idx.c_str(), sep.c_str(), printElement(v.data[i], t, hex).c_str());
    }
  }
  std::fflush(stdout);
}

void evalCheck(Executor &ex, const ir::Operation &op) {
  const HostValue &cond = ex.get(op.operand(0));
  size_t failed = 0, first = 0;
  for (size_t i = 0; i < cond.size(); ++i)
    if (cond.data[i].u == 0 && failed++ == 0) first = i;
  if (!failed) return;
  std::string where = cond.type.isBlock()
                          ? " at element " + coordinateText(static_cast<int64_t>(first), cond.type.shape) + " of the block" +
                                (failed > 1 ? " (and " + std::to_string(failed - 1) + " more)" : "")
                          : "";
  if (op.code == OpCode::Assume)
    ex.error(op, "tl.assume's condition is false" + where + " (program " + ex.programText() +
                     "); the GPU would compute garbage here");
  std::string message = op.hasAttr("message") ? op.stringAttr("message") : "";
  ex.error(op, "device assertion failed" + (message.empty() ? std::string() : ": " + message) + where +
                   " (program " + ex.programText() + ")");
}

} // namespace

bool evalLanguageOp(Executor &ex, const ir::Operation &op) {
  switch (op.code) {
  case OpCode::Sin: case OpCode::Cos: case OpCode::Rsqrt: case OpCode::Erf: case OpCode::Floor:
  case OpCode::Ceil: case OpCode::Fma: case OpCode::UMulHi: case OpCode::Libdevice:
    ex.set(op.result(), evalMath(ex, op));
    return true;
  case OpCode::Trans: case OpCode::Join: case OpCode::Split: case OpCode::Cat: case OpCode::Flip:
    evalMove(ex, op);
    return true;
  case OpCode::ReduceCombine: case OpCode::Scan:
    evalCombine(ex, op);
    return true;
  case OpCode::MapElementwise:
    evalMapElementwise(ex, op);
    return true;
  case OpCode::SmId: case OpCode::GlobalTimer:
    ex.set(op.result(), evalSpecialRegister(op));
    return true;
  case OpCode::Dot:
    ex.set(op.result(), evalDot(ex, op));
    return true;
  case OpCode::AtomicRMW: case OpCode::AtomicCAS:
    ex.set(op.result(), evalAtomic(ex, op));
    return true;
  case OpCode::Print: evalPrint(ex, op); return true;
  case OpCode::Assert: case OpCode::Assume: evalCheck(ex, op); return true;
  case OpCode::Barrier: return true; // programs run one at a time
  // Shared-memory buffers of the pipeline pass. A fresh buffer holds NaN
  // (all ones for ints) so that reading a stage no copy filled shows.
  case OpCode::LocalAlloc: {
    HostValue buffer(op.result()->type);
    const ir::Type elem = buffer.type.element();
    for (Scalar &s : buffer.data) s = elem.isFloatElement() ? makeFloat(NAN, elem) : makeInt(-1, elem);
    ex.set(op.result(), std::move(buffer));
    return true;
  }
  case OpCode::AsyncCopy: evalAsyncCopy(ex, op); return true;
  case OpCode::LocalDealloc: case OpCode::AsyncCommit: case OpCode::AsyncWait:
  case OpCode::FenceAsyncShared: return true;
  case OpCode::DotWait: ex.set(op.result(), ex.get(op.operand(0))); return true; // dots finish at once // copies finish at once
  case OpCode::LocalStore: {
    const HostValue &value = ex.get(op.operand(0));
    HostValue &buffer = ex.getMutable(op.operand(1));
    const size_t tile = static_cast<size_t>(op.operand(0)->type.numElements());
    const size_t start = stageStart(ex, op, buffer, op.operand(2));
    for (size_t i = 0; i < tile; ++i)
      buffer.data[start + i] = value.data.size() == 1 ? value.data[0] : value.data[i];
    return true;
  }
  case OpCode::LocalLoad: {
    const HostValue &buffer = ex.get(op.operand(0));
    HostValue out(op.result()->type);
    const size_t start = stageStart(ex, op, buffer, op.operand(1));
    if (op.hasAttr("transpose") && op.intAttr("transpose")) {
      // out[r][c] = stage[c][r]: the stage has out's columns as rows.
      const size_t rows = static_cast<size_t>(op.result()->type.shape[0]);
      const size_t cols = static_cast<size_t>(op.result()->type.shape[1]);
      for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) out.data[r * cols + c] = buffer.data[start + c * rows + r];
    } else {
      for (size_t i = 0; i < out.size(); ++i) out.data[i] = buffer.data[start + i];
    }
    ex.set(op.result(), std::move(out));
    return true;
  }
  default: return false;
  }
}

} // namespace tessera::interp
