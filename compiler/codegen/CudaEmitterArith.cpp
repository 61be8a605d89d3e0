// Arithmetic, compares and casts in the NVRTC back-end's printer. Integers
// are unsigned locals, so signed operations (sdiv, srem, ashr, sext, signed
// compares) cast to the signed type of their width; narrow results are cast
// back to their width. f16/bf16 compute in f32 and round once.
#include "compiler/codegen/CudaEmitterInternal.h"

namespace tessera::codegen::cuda {

using namespace llvm;

std::string Printer::binary(const BinaryOperator &inst) {
  Type *t = inst.getType();
  const Value *a = inst.getOperand(0), *b = inst.getOperand(1);
  if (t->isVectorTy()) failInstruction(inst);
  if (t->isFloatingPointTy()) {
    const char *op = nullptr;
    switch (inst.getOpcode()) {
    case Instruction::FAdd: op = " + "; break;
    case Instruction::FSub: op = " - "; break;
    case Instruction::FMul: op = " * "; break;
    case Instruction::FDiv: op = " / "; break;
    case Instruction::FRem:
      if (t->isDoubleTy()) return "fmod(" + expr(a) + ", " + expr(b) + ")";
      return fromF32("fmodf(" + toF32(a) + ", " + toF32(b) + ")", t);
    default: failInstruction(inst);
    }
    if (isHalfLike(t)) return fromF32(toF32(a) + op + toF32(b), t);
    return expr(a) + op + expr(b);
  }
  const unsigned bits = intBits(t);
  const std::string type = cType(t);
  auto u = [&](const Value *v) { return bits < 32 ? "(unsigned int)" + expr(v) : expr(v); };
  auto s = [&](const Value *v) { return bits == 1 ? "-(int)" + expr(v) : "(" + signedType(bits) + ")" + expr(v); };
  auto narrow = [&](const std::string &e) {
    if (bits == 1) return "(bool)((" + e + ") & 1)";
    if (bits < 32) return "(" + type + ")(" + e + ")";
    return e;
  };
  switch (inst.getOpcode()) {
  case Instruction::Add: return narrow(u(a) + " + " + u(b));
  case Instruction::Sub: return narrow(u(a) + " - " + u(b));
  case Instruction::Mul: return narrow(u(a) + " * " + u(b));
  case Instruction::And: return narrow(u(a) + " & " + u(b));
  case Instruction::Or: return narrow(u(a) + " | " + u(b));
  case Instruction::Xor: return narrow(u(a) + " ^ " + u(b));
  case Instruction::Shl: return narrow(u(a) + " << " + expr(b));
  case Instruction::LShr: return narrow(u(a) + " >> " + expr(b));
  case Instruction::AShr: return "(" + type + ")(" + s(a) + " >> " + expr(b) + ")";
  case Instruction::UDiv: return narrow(u(a) + " / " + u(b));
  case Instruction::URem: return narrow(u(a) + " % " + u(b));
  case Instruction::SDiv: return "(" + type + ")(" + s(a) + " / " + s(b) + ")";
  case Instruction::SRem: return "(" + type + ")(" + s(a) + " % " + s(b) + ")";
  default: failInstruction(inst);
  }
}

std::string Printer::compare(const CmpInst &inst) {
  const Value *a = inst.getOperand(0), *b = inst.getOperand(1);
  if (a->getType()->isVectorTy()) failInstruction(inst);
  if (auto *f = dyn_cast<FCmpInst>(&inst)) {
    std::string x = toF32(a), y = toF32(b);
    switch (f->getPredicate()) {
    case CmpInst::FCMP_FALSE: return "false";
    case CmpInst::FCMP_TRUE: return "true";
    case CmpInst::FCMP_OEQ: return x + " == " + y;
    case CmpInst::FCMP_OGT: return x + " > " + y;
    case CmpInst::FCMP_OGE: return x + " >= " + y;
    case CmpInst::FCMP_OLT: return x + " < " + y;
    case CmpInst::FCMP_OLE: return x + " <= " + y;
    case CmpInst::FCMP_ONE: return "(" + x + " < " + y + " || " + x + " > " + y + ")";
    case CmpInst::FCMP_ORD: return "(" + x + " == " + x + " && " + y + " == " + y + ")";
    case CmpInst::FCMP_UNO: return "(" + x + " != " + x + " || " + y + " != " + y + ")";
    case CmpInst::FCMP_UEQ: return "!(" + x + " < " + y + " || " + x + " > " + y + ")";
    case CmpInst::FCMP_UGT: return "!(" + x + " <= " + y + ")";
    case CmpInst::FCMP_UGE: return "!(" + x + " < " + y + ")";
    case CmpInst::FCMP_ULT: return "!(" + x + " >= " + y + ")";
    case CmpInst::FCMP_ULE: return "!(" + x + " > " + y + ")";
    case CmpInst::FCMP_UNE: return x + " != " + y;
    default: failInstruction(inst);
    }
  }
  const bool pointers = a->getType()->isPointerTy();
  const unsigned bits = pointers ? 64 : intBits(a->getType());
  const bool isSigned = cast<ICmpInst>(inst).isSigned();
  auto operand = [&](const Value *v) {
    if (pointers) return "(unsigned long long)" + expr(v);
    if (isSigned && bits == 1) return "-(int)" + expr(v); // a signed i1 is 0 or -1
    if (isSigned) return "(" + signedType(bits) + ")" + expr(v);
    return expr(v);
  };
  const char *op = nullptr;
  switch (inst.getPredicate()) {
  case CmpInst::ICMP_EQ: op = " == "; break;
  case CmpInst::ICMP_NE: op = " != "; break;
  case CmpInst::ICMP_UGT: case CmpInst::ICMP_SGT: op = " > "; break;
  case CmpInst::ICMP_UGE: case CmpInst::ICMP_SGE: op = " >= "; break;
  case CmpInst::ICMP_ULT: case CmpInst::ICMP_SLT: op = " < "; break;
  case CmpInst::ICMP_ULE: case CmpInst::ICMP_SLE: op = " <= "; break;
  default: failInstruction(inst);
  }
  return operand(a) + op + operand(b);
}

std::string Printer::castExpr(const CastInst &inst) {
  const Value *x = inst.getOperand(0);
  Type *from = x->getType(), *to = inst.getType();
  if (from->isVectorTy() || to->isVectorTy()) {
    if (inst.getOpcode() != Instruction::BitCast) failInstruction(inst);
    need("bitcast");
    return "tsr_bitcast<" + cType(to) + ">(" + expr(x) + ")";
  }
  const std::string toType = cType(to);
  switch (inst.getOpcode()) {
  case Instruction::Trunc:
    if (to->isIntegerTy(1)) return "(bool)(" + expr(x) + " & 1)";
    return "(" + toType + ")" + expr(x);
  case Instruction::ZExt:
    return "(" + toType + ")" + expr(x);
  case Instruction::SExt:
    if (from->isIntegerTy(1)) return "(" + toType + ")-(" + signedType(intBits(to)) + ")" + expr(x);
    return "(" + toType + ")(" + signedType(intBits(to)) + ")(" + signedType(intBits(from)) + ")" + expr(x);
  case Instruction::FPTrunc:
  case Instruction::FPExt: {
    if (from->isDoubleTy() && to->isHalfTy()) { need("f64_f16"); return "tsr_f64_to_f16(" + expr(x) + ")"; }
    if (from->isDoubleTy() && to->isBFloatTy()) { need("f64_bf16"); return "tsr_f64_to_bf16(" + expr(x) + ")"; }
    if (isHalfLike(from) && isHalfLike(to)) return fromF32(toF32(x), to);
    if (isHalfLike(from)) return to->isDoubleTy() ? "(double)" + toF32(x) : toF32(x);
    if (isHalfLike(to)) return fromF32(expr(x), to);
    return "(" + toType + ")" + expr(x);
  }
  case Instruction::FPToSI:
  case Instruction::FPToUI: {
    std::string value = isHalfLike(from) ? toF32(x) : expr(x);
    if (to->isIntegerTy(1)) return value + " != 0";
    if (inst.getOpcode() == Instruction::FPToSI)
      return "(" + toType + ")(" + signedType(intBits(to)) + ")" + value;
    return "(" + toType + ")" + value;
  }
  case Instruction::SIToFP:
  case Instruction::UIToFP: {
    const bool isSigned = inst.getOpcode() == Instruction::SIToFP;
    const unsigned bits = intBits(from);
    std::string value = isSigned ? (bits == 1 ? "-(int)" : "(" + signedType(bits) + ")") + expr(x) : expr(x);
    if (!isHalfLike(to)) return "(" + toType + ")" + value;
    if (bits <= 16) return fromF32("(float)" + value, to); // exact in f32, then one rounding
    if (to->isHalfTy()) {
      // One rounding straight from the integer.
      const std::string type = bits == 64 ? (isSigned ? "s64" : "u64") : (isSigned ? "s32" : "u32");
      const std::string name = "tsr_" + type + "_to_f16";
      if (!declared_.count(name)) {
        declared_.insert(name);
        const std::string ctype = bits == 64 ? (isSigned ? "long long" : "unsigned long long")
                                             : (isSigned ? "int" : "unsigned int");
        externs_.push_back("__device__ __forceinline__ tsr_f16 " + name + "(" + ctype + " x) {\n  tsr_f16 h;\n  asm(\"cvt.rn.f16." +
                           type + " %0, %1;\" : \"=h\"(h) : \"" + (bits == 64 ? "l" : "r") + "\"(x));\n  return h;\n}\n");
      }
      need("f16");
      return name + "(" + value + ")";
    }
    if (bits == 32) { need("f64_bf16"); return "tsr_f64_to_bf16((double)" + value + ")"; } // exact in f64
    fail("conversion of a 64-bit integer to bfloat16");
  }
  case Instruction::PtrToInt: {
    std::string address = from->getPointerAddressSpace() == 3
                              ? "(unsigned long long)__cvta_generic_to_shared(" + expr(x) + ")"
                              : "(unsigned long long)" + expr(x);
    return to->isIntegerTy(64) ? address : "(" + toType + ")" + address;
  }
  case Instruction::IntToPtr:
    if (to->getPointerAddressSpace() == 3)
      return "(unsigned char *)__cvta_shared_to_generic((unsigned long long)" + expr(x) + ")";
    return "(unsigned char *)(unsigned long long)" + expr(x);
  case Instruction::AddrSpaceCast:
    return expr(x); // every pointer is generic in CUDA C++
  case Instruction::BitCast:
    if (from == to || (from->getPrimitiveSizeInBits() == 16 && to->getPrimitiveSizeInBits() == 16) ||
        (from->isPointerTy() && to->isPointerTy()))
      return expr(x); // f16/bf16/i16 share their representation
    if (from->isFloatTy() && to->isIntegerTy(32)) return "__float_as_uint(" + expr(x) + ")";
    if (from->isIntegerTy(32) && to->isFloatTy()) return "__uint_as_float(" + expr(x) + ")";
    if (from->isDoubleTy() && to->isIntegerTy(64)) return "(unsigned long long)__double_as_longlong(" + expr(x) + ")";
    if (from->isIntegerTy(64) && to->isDoubleTy()) return "__longlong_as_double((long long)" + expr(x) + ")";
    need("bitcast");
    return "tsr_bitcast<" + toType + ">(" + expr(x) + ")";
  default:
    failInstruction(inst);
  }
}

} // namespace tessera::codegen::cuda
