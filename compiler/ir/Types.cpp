#include "compiler/ir/Types.h"

#include <algorithm>
#include <cmath>

namespace tessera::ir {

unsigned bitWidth(ScalarType t) {
  switch (t) {
  case ScalarType::I1: return 1;
  case ScalarType::I8: case ScalarType::U8:
  case ScalarType::F8E4M3: case ScalarType::F8E5M2: case ScalarType::F8E4B15: return 8;
  case ScalarType::I16: case ScalarType::U16:
  case ScalarType::F16: case ScalarType::BF16: return 16;
  case ScalarType::I32: case ScalarType::U32: case ScalarType::F32: return 32;
  case ScalarType::I64: case ScalarType::U64: case ScalarType::F64: return 64;
  }
  return 0;
}

bool isFloat(ScalarType t) {
  switch (t) {
  case ScalarType::F16: case ScalarType::BF16: case ScalarType::F32: case ScalarType::F64:
  case ScalarType::F8E4M3: case ScalarType::F8E5M2: case ScalarType::F8E4B15: return true;
  default: return false;
  }
}

bool isInteger(ScalarType t) { return !isFloat(t); }

bool isSigned(ScalarType t) {
  switch (t) {
  case ScalarType::I8: case ScalarType::I16: case ScalarType::I32: case ScalarType::I64: return true;
  default: return false;
  }
}

const char *name(ScalarType t) {
  switch (t) {
  case ScalarType::I1: return "i1";
  case ScalarType::I8: return "i8";
  case ScalarType::I16: return "i16";
  case ScalarType::I32: return "i32";
  case ScalarType::I64: return "i64";
  case ScalarType::U8: return "u8";
  case ScalarType::U16: return "u16";
  case ScalarType::U32: return "u32";
  case ScalarType::U64: return "u64";
  case ScalarType::F16: return "f16";
  case ScalarType::BF16: return "bf16";
  case ScalarType::F32: return "f32";
  case ScalarType::F64: return "f64";
  case ScalarType::F8E4M3: return "fp8e4m3";
  case ScalarType::F8E5M2: return "fp8e5m2";
  case ScalarType::F8E4B15: return "fp8e4b15";
  }
  return "?";
}

double fp8E4B15Value(uint8_t bits) {
  // S.EEEE.MMM is the f16 S.0EEEE.MMM0000000 (the same exponent bias): 2^(E-15) * 1.MMM, or
  // 2^-14 * 0.MMM where E is 0.
  const int e = (bits >> 3) & 0xF, m = bits & 7;
  const double magnitude = e == 0 ? std::ldexp(double(m), -17) : std::ldexp(double(8 + m), e - 18);
  return bits & 0x80 ? -magnitude : magnitude;
}

uint8_t fp8E4B15Bits(double value) {
  const float f = static_cast<float>(value);
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  const double a = std::fabs(double(f));
  if (std::isnan(f) || a >= 1.75) return sign | 0x7E;
  // The f16 bits of a toward zero (a < 1.75, so an f16 exponent of at most 15).
  unsigned half = 0;
  if (a >= std::ldexp(1.0, -14)) {
    int e = 0;
    std::frexp(a, &e); // a = 0.1xxx * 2^e
    const int exponent = e - 1;
    const unsigned mantissa = static_cast<unsigned>(std::floor((std::ldexp(a, -exponent) - 1) * 1024));
    half = (unsigned(exponent + 15) << 10) | mantissa;
  } else {
    half = static_cast<unsigned>(std::floor(std::ldexp(a, 24)));
  }
  return sign | static_cast<uint8_t>((std::min(half, 0x3F00u) + 0x40) >> 7);
}

std::optional<ScalarType> parseScalarType(std::string_view s) {
  struct Entry { const char *names[4]; ScalarType type; };
  static const Entry table[] = {
      {{"i1", "int1", "bool", nullptr}, ScalarType::I1},
      {{"i8", "int8", nullptr, nullptr}, ScalarType::I8},
      {{"i16", "int16", nullptr, nullptr}, ScalarType::I16},
      {{"i32", "int32", nullptr, nullptr}, ScalarType::I32},
      {{"i64", "int64", nullptr, nullptr}, ScalarType::I64},
      {{"u8", "uint8", nullptr, nullptr}, ScalarType::U8},
      {{"u16", "uint16", nullptr, nullptr}, ScalarType::U16},
      {{"u32", "uint32", nullptr, nullptr}, ScalarType::U32},
      {{"u64", "uint64", nullptr, nullptr}, ScalarType::U64},
      {{"f16", "fp16", "float16", nullptr}, ScalarType::F16},
      {{"bf16", "bfloat16", nullptr, nullptr}, ScalarType::BF16},
      {{"f32", "fp32", "float32", nullptr}, ScalarType::F32},
      {{"f64", "fp64", "float64", nullptr}, ScalarType::F64},
      {{"fp8e4m3", "fp8e4nv", "float8_e4m3fn", "float8e4nv"}, ScalarType::F8E4M3},
      {{"fp8e5m2", "fp8e5", "float8_e5m2", "float8e5"}, ScalarType::F8E5M2},
      {{"fp8e4b15", "float8e4b15", nullptr, nullptr}, ScalarType::F8E4B15},
  };
  for (const Entry &e : table)
    for (const char *n : e.names)
      if (n && s == n)
        return e.type;
  return std::nullopt;
}

int64_t Type::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string Type::str() const {
  if (isTensorDesc()) {
    std::string out = "tensordesc<";
    for (int64_t d : descBlock)
      out += std::to_string(d) + "x";
    return out + name(scalar) + ">";
  }
  std::string elem = pointer ? std::string(constPointee ? "ptr<const " : "ptr<") + name(scalar) + ">" : name(scalar);
  if (shape.empty())
    return elem;
  std::string out = "<";
  for (int64_t d : shape)
    out += std::to_string(d) + "x";
  return out + elem + ">";
}

bool tmaCopiesBlock(ScalarType element, const std::vector<int64_t> &block) {
  const unsigned bits = bitWidth(element);
  if (block.empty() || bits < 8 || element == ScalarType::I1) return false;
  for (int64_t d : block)
    if (d < 1 || d > 256 || (d & (d - 1))) return false;
  return block.back() * (bits / 8) >= 16;
}

} // namespace tessera::ir
