// How the NVRTC back-end's printer spells LLVM types and values.
//
// Types: i1 bool; i8..i64 unsigned char/short/int/long long (signedness is
// per instruction, as in LLVM: sdiv, ashr, sext and signed compares cast);
// f16/bf16 are their bits (tsr_f16/tsr_bf16 = unsigned short), converted
// to f32 for arithmetic (exact for +, -, *, /: f32 has more than twice
// their precision); pointers are `unsigned char *` (generic: CUDA C++ has
// no address-space qualifiers on pointers; NVVM infers shared accesses);
// vectors are tsr_vec<T, N>. How values are kept in memory is
// CudaEmitterMemory.cpp.
#include "compiler/codegen/CudaEmitterInternal.h"

#include <cmath>
#include <cstdio>

namespace tessera::codegen::cuda {

using namespace llvm;

// ---------------------------------------------------------------- types

std::string Printer::cType(Type *t) {
  if (t->isIntegerTy()) {
    switch (intBits(t)) {
    case 1: return "bool";
    case 8: return "unsigned char";
    case 16: return "unsigned short";
    case 32: return "unsigned int";
    default: return "unsigned long long";
    }
  }
  if (t->isHalfTy()) { need("f16"); return "tsr_f16"; }
  if (t->isBFloatTy()) { need("f16"); return "tsr_bf16"; }
  if (t->isFloatTy()) return "float";
  if (t->isDoubleTy()) return "double";
  if (t->isPointerTy()) return "unsigned char *";
  if (auto *v = dyn_cast<FixedVectorType>(t)) {
    uint64_t bytes = dl_.getTypeAllocSize(t);
    if ((bytes & (bytes - 1)) || v->getElementType()->isPointerTy() || v->getElementType()->isIntegerTy(1))
      fail("LLVM vector type '" + printed(t) + "'");
    need("vec");
    return "tsr_vec<" + cType(v->getElementType()) + ", " + std::to_string(v->getNumElements()) + ">";
  }
  fail("LLVM type '" + printed(t) + "'");
}

std::string Printer::signedType(unsigned bits) const {
  switch (bits) {
  case 1: case 32: return "int";
  case 8: return "signed char";
  case 16: return "short";
  case 64: return "long long";
  }
  fail("integer width " + std::to_string(bits));
}

unsigned Printer::intBits(Type *t) {
  if (!t->isIntegerTy() || (t->getIntegerBitWidth() != 1 && t->getIntegerBitWidth() != 8 &&
                            t->getIntegerBitWidth() != 16 && t->getIntegerBitWidth() != 32 &&
                            t->getIntegerBitWidth() != 64))
    fail("LLVM type '" + printed(t) + "'");
  return t->getIntegerBitWidth();
}

// ---------------------------------------------------------------- values

std::string Printer::intLiteral(uint64_t value, Type *t) {
  unsigned bits = intBits(t);
  if (bits == 1) return value & 1 ? "true" : "false";
  if (bits < 64) value &= (uint64_t{1} << bits) - 1;
  std::string digits = value < 65536 ? std::to_string(value) : hex(value);
  if (bits == 64) return digits + "ull";
  if (bits == 32) return digits + "u";
  return "(" + cType(t) + ")" + digits;
}

std::string Printer::floatLiteral(const ConstantFP &c) {
  Type *t = c.getType();
  uint64_t bits = c.getValueAPF().bitcastToAPInt().getZExtValue();
  if (isHalfLike(t)) return "(" + cType(t) + ")" + hex(bits);
  char buf[64];
  if (t->isFloatTy()) {
    float v = c.getValueAPF().convertToFloat();
    if (!std::isfinite(v)) return "__uint_as_float(" + hex(bits) + "u)";
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s + "f";
  }
  if (t->isDoubleTy()) {
    double v = c.getValueAPF().convertToDouble();
    if (!std::isfinite(v)) return "__longlong_as_double(" + hex(bits) + "ll)";
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
  }
  fail("LLVM constant '" + printed(&c) + "'");
}

std::string Printer::zero(Type *t) {
  if (t->isIntegerTy()) return intLiteral(0, t);
  if (t->isFloatTy()) return "0.0f";
  if (t->isDoubleTy()) return "0.0";
  if (isHalfLike(t)) return "(" + cType(t) + ")0";
  if (t->isPointerTy()) return "(unsigned char *)0";
  if (t->isVectorTy()) return cType(t) + "{}";
  fail("LLVM type '" + printed(t) + "'");
}

std::string Printer::expr(const Value *v) {
  if (auto it = names_.find(v); it != names_.end()) return it->second;
  if (auto *c = dyn_cast<ConstantInt>(v)) return intLiteral(c->getZExtValue(), c->getType());
  if (auto *c = dyn_cast<ConstantFP>(v)) return floatLiteral(*c);
  if (isa<ConstantPointerNull>(v)) return "(unsigned char *)0";
  if (isa<UndefValue>(v) || isa<ConstantAggregateZero>(v)) return zero(v->getType());
  if (auto *c = dyn_cast<ConstantDataVector>(v)) {
    std::string list;
    for (unsigned i = 0; i < c->getNumElements(); ++i)
      list += (i ? ", " : "") + expr(c->getElementAsConstant(i));
    return cType(c->getType()) + "{{" + list + "}}";
  }
  if (auto *c = dyn_cast<ConstantVector>(v)) {
    std::string list;
    for (unsigned i = 0; i < c->getNumOperands(); ++i) list += (i ? ", " : "") + expr(c->getOperand(i));
    return cType(c->getType()) + "{{" + list + "}}";
  }
  if (auto *g = dyn_cast<GlobalVariable>(v)) return "(unsigned char *)" + globalName(*g);
  if (auto *c = dyn_cast<ConstantExpr>(v)) {
    Instruction *inst = c->getAsInstruction();
    std::string text;
    try {
      text = "(" + rhs(*inst) + ")";
    } catch (...) {
      inst->deleteValue();
      throw;
    }
    inst->deleteValue();
    return text;
  }
  fail("LLVM value '" + printed(v) + "'");
}

std::string Printer::toF32(const Value *v) {
  Type *t = v->getType();
  if (t->isHalfTy()) { need("f16_f32"); return "tsr_f16_to_f32(" + expr(v) + ")"; }
  if (t->isBFloatTy()) { need("bf16_f32"); return "tsr_bf16_to_f32(" + expr(v) + ")"; }
  return expr(v);
}

std::string Printer::fromF32(const std::string &e, Type *t) {
  if (t->isHalfTy()) { need("f32_f16"); return "tsr_f32_to_f16(" + e + ")"; }
  if (t->isBFloatTy()) { need("f32_bf16"); return "tsr_f32_to_bf16(" + e + ")"; }
  return e;
}

std::string Printer::index(const Value *v) {
  if (auto *c = dyn_cast<ConstantInt>(v)) return std::to_string(c->getZExtValue());
  return expr(v);
}

} // namespace tessera::codegen::cuda
