#include "compiler/interp/Values.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace tessera::interp {

using ir::ScalarType;

HostValue::HostValue(ir::Type t) : type(std::move(t)) {
  data.assign(static_cast<size_t>(type.numElements()), Scalar{0});
  if (type.pointer) origin.assign(data.size(), -1);
}

unsigned memoryBytes(const ir::Type &element) {
  if (element.pointer) return 8;
  unsigned bits = ir::bitWidth(element.scalar);
  return bits < 8 ? 1 : bits / 8;
}

int64_t wrapInt(uint64_t bits, ScalarType t) {
  unsigned w = ir::bitWidth(t);
  if (w >= 64) return static_cast<int64_t>(bits);
  uint64_t mask = (uint64_t(1) << w) - 1;
  uint64_t u = bits & mask;
  if (ir::isSigned(t) && ((u >> (w - 1)) & 1)) return static_cast<int64_t>(u | ~mask);
  return static_cast<int64_t>(u);
}

// ------------------------------------------------------------ small floats

namespace {

// A binary floating-point format with `exp` exponent and `man` mantissa bits.
// ieee: the all-ones exponent encodes inf/NaN (f16, bf16, e5m2); otherwise
// (e4m3fn) only S.1111.111 is NaN and there is no inf. saturate: values
// beyond the largest finite one become it (PTX's .satfinite) instead of inf.
struct Format {
  int exp, man;
  bool ieee, saturate;
};

constexpr Format kHalf{5, 10, true, false};
constexpr Format kBFloat16{8, 7, true, false};
constexpr Format kE4M3{4, 3, false, true};
constexpr Format kE5M2{5, 2, true, true};

int bias(const Format &f) { return (1 << (f.exp - 1)) - 1; }

double maxFinite(const Format &f) {
  int expMax = (1 << f.exp) - 1;
  if (f.ieee) return std::ldexp(2.0 - std::ldexp(1.0, -f.man), expMax - 1 - bias(f));
  return std::ldexp(2.0 - std::ldexp(1.0, 1 - f.man), expMax - bias(f));
}

uint32_t encode(double v, const Format &f) {
  const uint32_t sign = std::signbit(v) ? uint32_t(1) << (f.exp + f.man) : 0;
  const uint32_t expMax = (uint32_t(1) << f.exp) - 1;
  const uint32_t manMask = (uint32_t(1) << f.man) - 1;
  const uint32_t infBits = expMax << f.man;
  const uint32_t nanBits = f.ieee ? infBits | (uint32_t(1) << (f.man - 1)) : infBits | manMask;
  if (std::isnan(v)) {
    if (!f.ieee) return sign | nanBits;
    // Keep the payload's top bits, as hardware conversions do (and as decode() put them).
    uint64_t d;
    std::memcpy(&d, &v, 8);
    uint32_t payload = static_cast<uint32_t>((d >> (52 - f.man)) & manMask);
    return sign | infBits | (payload ? payload : uint32_t(1) << (f.man - 1));
  }
  const double top = maxFinite(f);
  const int b = bias(f);
  auto encodeFinite = [&](double r) -> uint32_t { // r: a representable magnitude
    if (r == 0) return sign;
    int e = 0;
    std::frexp(r, &e);
    int exponent = e - 1;
    if (exponent < 1 - b) // subnormal
      return sign | static_cast<uint32_t>(std::ldexp(r, f.man - (1 - b)));
    uint32_t mantissa = static_cast<uint32_t>(std::ldexp(r, f.man - exponent)) - (uint32_t(1) << f.man);
    return sign | (static_cast<uint32_t>(exponent + b) << f.man) | mantissa;
  };
  auto overflow = [&]() -> uint32_t {
    if (f.saturate) return encodeFinite(top);
    return f.ieee ? sign | infBits : sign | nanBits;
  };
  double a = std::fabs(v);
  if (std::isinf(a)) return overflow();
  if (a == 0) return sign;
  int e = 0;
  std::frexp(a, &e);
  int exponent = std::max(e - 1, 1 - b);
  double quantum = std::ldexp(1.0, exponent - f.man);
  double r = std::nearbyint(a / quantum) * quantum; // ties to even (the default rounding mode)
  if (r > top) return overflow();
  return encodeFinite(r);
}

double decode(uint32_t bits, const Format &f) {
  const uint32_t expMax = (uint32_t(1) << f.exp) - 1;
  const uint32_t manMask = (uint32_t(1) << f.man) - 1;
  const bool negative = (bits >> (f.exp + f.man)) & 1;
  const uint32_t exponent = (bits >> f.man) & expMax;
  const uint32_t mantissa = bits & manMask;
  double r;
  if (f.ieee && exponent == expMax && mantissa) { // NaN: the payload goes to the top of the double's
    uint64_t d = (uint64_t(negative) << 63) | (uint64_t(0x7ff) << 52) | (uint64_t(mantissa) << (52 - f.man));
    std::memcpy(&r, &d, 8);
    return r;
  }
  if (f.ieee && exponent == expMax)
    r = std::numeric_limits<double>::infinity();
  else if (!f.ieee && exponent == expMax && mantissa == manMask)
    r = std::numeric_limits<double>::quiet_NaN();
  else if (exponent == 0)
    r = std::ldexp(double(mantissa), 1 - bias(f) - f.man);
  else
    r = std::ldexp(double(mantissa | (uint32_t(1) << f.man)), int(exponent) - bias(f) - f.man);
  return negative ? -r : r;
}

} // namespace

uint16_t doubleToHalf(double v) { return static_cast<uint16_t>(encode(v, kHalf)); }
double halfToDouble(uint16_t bits) { return decode(bits, kHalf); }
uint16_t doubleToBFloat16(double v) { return static_cast<uint16_t>(encode(v, kBFloat16)); }
double bfloat16ToDouble(uint16_t bits) { return decode(bits, kBFloat16); }
uint8_t doubleToFp8E4M3(double v) { return static_cast<uint8_t>(encode(v, kE4M3)); }
double fp8E4M3ToDouble(uint8_t bits) { return decode(bits, kE4M3); }
uint8_t doubleToFp8E5M2(double v) { return static_cast<uint8_t>(encode(v, kE5M2)); }
double fp8E5M2ToDouble(uint8_t bits) { return decode(bits, kE5M2); }

double roundFloat(double v, ScalarType t) {
  switch (t) {
  case ScalarType::F64: return v;
  case ScalarType::F32: return static_cast<double>(static_cast<float>(v));
  case ScalarType::F16: return halfToDouble(doubleToHalf(v));
  case ScalarType::BF16: return bfloat16ToDouble(doubleToBFloat16(v));
  case ScalarType::F8E4M3: return fp8E4M3ToDouble(doubleToFp8E4M3(v));
  case ScalarType::F8E5M2: return fp8E5M2ToDouble(doubleToFp8E5M2(v));
  case ScalarType::F8E4B15: return ir::fp8E4B15Value(ir::fp8E4B15Bits(v));
  default: return v;
  }
}

// ---------------------------------------------------------------- elements

Scalar makeInt(int64_t v, const ir::Type &element) {
  Scalar s;
  if (element.pointer) s.i = v;
  else if (ir::isFloat(element.scalar)) s.f = roundFloat(static_cast<double>(v), element.scalar);
  else s.i = wrapInt(static_cast<uint64_t>(v), element.scalar);
  return s;
}

Scalar makeFloat(double v, const ir::Type &element) {
  Scalar s;
  s.f = roundFloat(v, element.scalar);
  return s;
}

uint64_t encodeElement(Scalar s, const ir::Type &element) {
  if (element.pointer) return s.u;
  switch (element.scalar) {
  case ScalarType::I1: return s.u & 1;
  case ScalarType::F16: return doubleToHalf(s.f);
  case ScalarType::BF16: return doubleToBFloat16(s.f);
  case ScalarType::F8E4M3: return doubleToFp8E4M3(s.f);
  case ScalarType::F8E4B15: // a value of the type (a conversion never gives 1.875, the largest one)
    return std::fabs(s.f) == 1.875 ? (std::signbit(s.f) ? 0xFF : 0x7F) : ir::fp8E4B15Bits(s.f);
  case ScalarType::F8E5M2: // an element is representable: an infinity (loaded) is stored as one, not
                           // saturated as a conversion would (roundFloat already saturated those)
    if (std::isinf(s.f)) return s.f < 0 ? 0xFC : 0x7C;
    return doubleToFp8E5M2(s.f);
  case ScalarType::F32: {
    float f = static_cast<float>(s.f);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return bits;
  }
  case ScalarType::F64: return s.u;
  default: {
    unsigned w = ir::bitWidth(element.scalar);
    return w >= 64 ? s.u : s.u & ((uint64_t(1) << w) - 1);
  }
  }
}

Scalar decodeElement(uint64_t bits, const ir::Type &element) {
  Scalar s;
  if (element.pointer) {
    s.u = bits;
    return s;
  }
  switch (element.scalar) {
  case ScalarType::I1: s.u = (bits & 0xff) != 0; break; // bools are bytes in memory
  case ScalarType::F16: s.f = halfToDouble(static_cast<uint16_t>(bits)); break;
  case ScalarType::BF16: s.f = bfloat16ToDouble(static_cast<uint16_t>(bits)); break;
  case ScalarType::F8E4M3: s.f = fp8E4M3ToDouble(static_cast<uint8_t>(bits)); break;
  case ScalarType::F8E5M2: s.f = fp8E5M2ToDouble(static_cast<uint8_t>(bits)); break;
  case ScalarType::F8E4B15: s.f = ir::fp8E4B15Value(static_cast<uint8_t>(bits)); break;
  case ScalarType::F32: {
    uint32_t b32 = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b32, 4);
    s.f = f;
    break;
  }
  case ScalarType::F64: s.u = bits; break;
  default: s.i = wrapInt(bits, element.scalar); break;
  }
  return s;
}

std::vector<int64_t> coordinatesOf(int64_t index, const std::vector<int64_t> &shape) {
  std::vector<int64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = index % shape[d];
    index /= shape[d];
  }
  return c;
}

std::string coordinateText(int64_t index, const std::vector<int64_t> &shape) {
  if (shape.size() <= 1) return std::to_string(index);
  std::vector<int64_t> c = coordinatesOf(index, shape);
  std::string out = "(";
  for (size_t d = 0; d < c.size(); ++d) out += (d ? ", " : "") + std::to_string(c[d]);
  return out + ")";
}

std::string elementText(Scalar s, const ir::Type &element) {
  char buf[64];
  if (element.pointer) {
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(s.u));
  } else if (ir::isFloat(element.scalar)) {
    std::snprintf(buf, sizeof buf, "%.9g", s.f);
  } else if (ir::isSigned(element.scalar)) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(s.i));
  } else {
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(s.u));
  }
  return buf;
}

} // namespace tessera::interp
