// Compile-time integers. Python's ints are unbounded and Triton folds
// constexpr arithmetic with them, failing only when a value is turned into
// a typed IR constant. tessera folds in 128 bits: every result that fits is
// exact, and one that does not is a compile error, never a wrapped value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera {

using ConstInt = __int128;

constexpr ConstInt kConstIntMax = ConstInt((unsigned __int128)(-1) >> 1);
constexpr ConstInt kConstIntMin = -kConstIntMax - 1;

inline bool fitsInt64(ConstInt v) { return v >= INT64_MIN && v <= INT64_MAX; }

// Python's str(int), and its inverse for an optional '-' and decimal digits.
std::string constIntToString(ConstInt v);
std::optional<ConstInt> parseConstInt(std::string_view text);

// Python's operators; nullopt where the exact result needs more than 128 bits.
// Division and modulo by zero are the caller's to reject.
std::optional<ConstInt> constIntAdd(ConstInt a, ConstInt b);
std::optional<ConstInt> constIntSub(ConstInt a, ConstInt b);
std::optional<ConstInt> constIntMul(ConstInt a, ConstInt b);
std::optional<ConstInt> constIntFloorDiv(ConstInt a, ConstInt b);
ConstInt constIntMod(ConstInt a, ConstInt b);
std::optional<ConstInt> constIntPow(ConstInt base, ConstInt exponent); // exponent >= 0
std::optional<ConstInt> constIntShl(ConstInt a, ConstInt bits);         // bits >= 0
ConstInt constIntShr(ConstInt a, ConstInt bits);                        // bits >= 0, floors

} // namespace tessera
