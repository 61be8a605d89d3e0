#include "dsl/ConstInt.h"

#include <algorithm>

namespace tessera {

std::string constIntToString(ConstInt v) {
  if (v == 0) return "0";
  bool negative = v < 0;
  // The magnitude of kConstIntMin does not fit the signed type; unsigned does.
  unsigned __int128 m = negative ? -(unsigned __int128)v : (unsigned __int128)v;
  std::string digits;
  for (; m; m /= 10) digits += char('0' + int(m % 10));
  if (negative) digits += '-';
  std::reverse(digits.begin(), digits.end());
  return digits;
}

std::optional<ConstInt> parseConstInt(std::string_view text) {
  bool negative = !text.empty() && text[0] == '-';
  if (negative) text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  unsigned __int128 m = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const unsigned __int128 limit = (unsigned __int128)kConstIntMax + 1, digit = unsigned(c - '0');
    if (m > (limit - digit) / 10) return std::nullopt;
    m = m * 10 + digit;
  }
  if (!negative && m > (unsigned __int128)kConstIntMax) return std::nullopt;
  return negative ? (ConstInt)(-m) : (ConstInt)m;
}

std::optional<ConstInt> constIntAdd(ConstInt a, ConstInt b) {
  ConstInt r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<ConstInt> constIntSub(ConstInt a, ConstInt b) {
  ConstInt r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<ConstInt> constIntMul(ConstInt a, ConstInt b) {
  ConstInt r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<ConstInt> constIntFloorDiv(ConstInt a, ConstInt b) {
  if (a == kConstIntMin && b == -1) return std::nullopt;
  ConstInt q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

ConstInt constIntMod(ConstInt a, ConstInt b) {
  if (b == -1) return 0; // also kConstIntMin % -1, which traps in C++
  ConstInt r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

std::optional<ConstInt> constIntPow(ConstInt base, ConstInt exponent) {
  ConstInt result = 1;
  for (; exponent > 0; exponent >>= 1) {
    if (exponent & 1) {
      auto r = constIntMul(result, base);
      if (!r) return std::nullopt;
      result = *r;
    }
    if (exponent > 1) {
      auto sq = constIntMul(base, base);
      if (!sq) return std::nullopt;
      base = *sq;
    }
  }
  return result;
}

std::optional<ConstInt> constIntShl(ConstInt a, ConstInt bits) {
  if (a == 0) return 0;
  if (bits >= 127) return std::nullopt;
  ConstInt r = (ConstInt)((unsigned __int128)a << int(bits));
  if ((r >> int(bits)) != a) return std::nullopt;
  return r;
}

ConstInt constIntShr(ConstInt a, ConstInt bits) {
  if (bits >= 127) return a < 0 ? -1 : 0;
  return a >> int(bits); // arithmetic: floors, as Python does
}

} // namespace tessera
