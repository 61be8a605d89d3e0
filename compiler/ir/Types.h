// Types of the block IR: scalars, pointers to scalars, and blocks (tensors)
// of either. A Type is a small value (no interning); compare with ==.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::ir {

enum class ScalarType : uint8_t {
  I1, I8, I16, I32, I64, U8, U16, U32, U64,
  F16, BF16, F32, F64, F8E4M3, F8E5M2,
  // Triton's fp8e4b15: e4m3 with exponent bias 15 and no inf or NaN (0x7f is 1.875). No
  // hardware converts it: the front-end converts its bits (SpecializerExpr.cpp, castFp8E4B15).
  F8E4B15,
};

unsigned bitWidth(ScalarType t);
bool isFloat(ScalarType t);
bool isInteger(ScalarType t); // includes I1
bool isSigned(ScalarType t);  // signed integers (I1 counts as unsigned)
// "i32", "f16", "bf16", "fp8e4m3", ...
const char *name(ScalarType t);
// fp8e4b15 (no hardware has it, so the compiler and the interpreter both convert its bits): the
// value of a byte, and the byte Triton's conversion gives a value (rounded to f32, then to f16 toward
// zero, then to 3 mantissa bits half away from zero, the magnitude clamped to 1.75; NaN gives 1.75).
double fp8E4B15Value(uint8_t bits);
uint8_t fp8E4B15Bits(double value);
// Accepts our names and Triton's ("fp32", "float32", "int32", "uint8", "i1", ...).
std::optional<ScalarType> parseScalarType(std::string_view text);

struct Type {
  ScalarType scalar = ScalarType::I32; // the element; for pointers, the pointee
  bool pointer = false;
  // A pointer the kernel only reads through (a `tl.const` parameter and the
  // pointers computed from it): stores and atomics through it are errors, and
  // it is a different type from the plain pointer, as in Triton.
  bool constPointee = false;
  std::vector<int64_t> shape; // empty: not a block
  // Non-empty: a TMA tensor descriptor of `scalar` elements whose load reads
  // blocks of this shape (a kernel argument; docs/tma.md).
  std::vector<int64_t> descBlock;

  Type() = default;
  explicit Type(ScalarType s) : scalar(s) {}
  static Type ptr(ScalarType pointee) { Type t(pointee); t.pointer = true; return t; }
  static Type tensorDesc(ScalarType element, std::vector<int64_t> block) {
    Type t(element);
    t.descBlock = std::move(block);
    return t;
  }
  bool isTensorDesc() const { return !descBlock.empty(); }

  bool isBlock() const { return !shape.empty(); }
  bool isPointerElement() const { return pointer; }
  bool isFloatElement() const { return !pointer && isFloat(scalar); }
  bool isIntElement() const { return !pointer && isInteger(scalar); }
  bool isBoolElement() const { return !pointer && scalar == ScalarType::I1; }
  int64_t numElements() const;
  size_t rank() const { return shape.size(); }

  Type element() const { Type t = *this; t.shape.clear(); return t; }
  Type withShape(std::vector<int64_t> s) const { Type t = *this; t.shape = std::move(s); return t; }
  Type withElement(const Type &elem) const { Type t = elem; t.shape = shape; return t; }

  // "f32", "ptr<f16>", "<64x32xf32>", "<1024xptr<f32>>", "tensordesc<128x64xbf16>"
  std::string str() const;
  bool operator==(const Type &o) const = default;
};

// Whether the TMA unit copies a tensor descriptor's block of `element`s as one encoded
// CUtensorMap (runtime/TensorMap.cpp's rules that do not depend on the tensor): elements of
// 8 to 64 bits, every block dimension a power of two of at most 256, at least 16 bytes in the
// innermost. A descriptor argument's other blocks are read through pointers, and the
// launchers leave their map unencoded.
bool tmaCopiesBlock(ScalarType element, const std::vector<int64_t> &block);

} // namespace tessera::ir
