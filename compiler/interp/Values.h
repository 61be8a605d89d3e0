// Host block values for the interpreter (compiler/interp/Interpreter.h).
//
// A HostValue is a dense row-major array holding one IR value: its type
// (element + shape; a scalar has an empty shape and one element) and one
// 8-byte Scalar per element in a canonical form:
//   * integers: the value wrapped to the element's width, sign-extended for
//     signed types, zero-extended for unsigned ones and i1 (0 or 1), so `.i`
//     of a signed and `.u` of an unsigned element is its exact value;
//   * floats (f16, bf16, f32, f64, fp8): `.f`, a double that is exactly
//     representable in the element type (every result is rounded to it);
//   * pointers: `.u`, the host address; `origin` says, per element, which
//     kernel argument the pointer was derived from (-1: unknown), so that
//     loads and stores are checked against that argument's buffer.
// Memory holds elements in their real encoding (f16 bits, bools as bytes):
// loadElement/storeElement convert.
#pragma once

#include "compiler/ir/Types.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::interp {

union Scalar {
  int64_t i;
  uint64_t u;
  double f;
};

struct HostValue {
  ir::Type type;
  std::vector<Scalar> data;
  std::vector<int32_t> origin; // pointers only: one per element

  HostValue() = default;
  // Zero-filled, with `origin` sized (to -1) for pointer types.
  explicit HostValue(ir::Type t);

  size_t size() const { return data.size(); }
  bool isPointer() const { return type.pointer; }
};

// ---- element encodings

// Bytes one element takes in memory (i1: 1 byte, pointers: 8).
unsigned memoryBytes(const ir::Type &element);

// Wraps a 64-bit integer to the width of `t`, sign- or zero-extending it
// (i1 keeps the low bit, as LLVM's trunc does).
int64_t wrapInt(uint64_t bits, ir::ScalarType t);
// Rounds to the nearest value of float type `t` (ties to even). f16/bf16/
// f32 round directly from the double (no double rounding); fp8 types
// saturate to their largest finite value (PTX's .satfinite), NaN stays NaN.
double roundFloat(double v, ir::ScalarType t);

// The memory encoding of a canonical element (low memoryBytes() bytes) and back.
uint64_t encodeElement(Scalar s, const ir::Type &element);
Scalar decodeElement(uint64_t bits, const ir::Type &element);

// 16-bit and 8-bit float formats.
uint16_t doubleToHalf(double v);
double halfToDouble(uint16_t bits);
uint16_t doubleToBFloat16(double v);
double bfloat16ToDouble(uint16_t bits);
uint8_t doubleToFp8E4M3(double v);
double fp8E4M3ToDouble(uint8_t bits);
uint8_t doubleToFp8E5M2(double v);
double fp8E5M2ToDouble(uint8_t bits);

// A canonical element of `element` from an int / a double (wrapped or rounded).
Scalar makeInt(int64_t v, const ir::Type &element);
Scalar makeFloat(double v, const ir::Type &element);

// Row-major index ↔ coordinates.
std::vector<int64_t> coordinatesOf(int64_t index, const std::vector<int64_t> &shape);
// "(3, 5)" for a 2-D block, "3" for a 1-D one.
std::string coordinateText(int64_t index, const std::vector<int64_t> &shape);
// An element's value as text (for messages): "-3", "1.5", "nan", "0x7f001000".
std::string elementText(Scalar s, const ir::Type &element);

} // namespace tessera::interp
