// Math of the rest of triton.language: sin, cos, rsqrt, erf, floor, ceil,
// fma, umulhi and libdevice calls, one per register; and fp8 conversions.
// f16/bf16 compute in f32 and round back (as Triton does). Accurate libdevice
// functions (__nv_sinf, __nv_erff, ...) where PTX has no accurate instruction
// (erf of f16/bf16: shorter polynomials giving the same 16-bit results, halfPrecisionErf);
// rsqrt uses rsqrt.approx (as Triton's __nv_rsqrtf does). fp8 values travel as
// their bits (i8); conversions use cvt.*.e4m3x2 / e5m2x2 (sm_90 with PTX 8.0); before sm_90
// fp8 is widened from its bits and narrowing is an error.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <cmath>

namespace tessera::codegen {

using namespace llvm;
using ir::OpCode;

uint8_t encodeFp8(double v, bool e4m3) {
  const int manBits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const uint8_t maxCode = e4m3 ? 0x7E : 0x7B; // 448 and 57344
  const double maxValue = e4m3 ? 448.0 : 57344.0;
  uint8_t sign = std::signbit(v) ? 0x80 : 0;
  if (std::isnan(v)) return sign | 0x7F;
  double a = std::fabs(v);
  if (a >= maxValue) return sign | maxCode;
  if (a == 0) return sign;
  int e = static_cast<int>(std::floor(std::log2(a)));
  int code;
  if (e < 1 - bias) { // subnormal: multiples of 2^(1 - bias - manBits)
    code = static_cast<int>(std::nearbyint(std::ldexp(a, bias - 1 + manBits)));
  } else {
    double mantissa = std::nearbyint((std::ldexp(a, -e) - 1) * (1 << manBits));
    if (mantissa >= (1 << manBits)) {
      mantissa = 0;
      ++e;
    }
    code = ((e + bias) << manBits) | static_cast<int>(mantissa);
  }
  return sign | static_cast<uint8_t>(std::min<int>(code, maxCode));
}

static bool isFp8(const ir::Type &t) {
  return !t.pointer && (t.scalar == ir::ScalarType::F8E4M3 || t.scalar == ir::ScalarType::F8E5M2);
}

// fp8 -> f16/f32 without cvt.*.e4m3x2, from the bits (exact: every fp8 value is an f16).
// e5m2 is the high byte of an f16. e4m3 (bias 7, no infinities, S.1111.111 is NaN): a normal
// number's exponent and mantissa shifted into an f32 with the bias raised by 120; a subnormal
// m * 2^-9 from the integer m (no f32 subnormal, so flush-to-zero cannot touch it).
Value *KernelLowering::widenFp8Bits(Value *x, const ir::Type &from) {
  if (from.scalar == ir::ScalarType::F8E5M2)
    return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(x, b_.getInt16Ty()), 8), b_.getHalfTy());
  Type *i32 = b_.getInt32Ty(), *f32 = b_.getFloatTy();
  Value *bits = b_.CreateZExt(x, i32);
  Value *magnitude = b_.CreateAnd(bits, 0x7F);
  Value *normal = b_.CreateBitCast(b_.CreateAdd(b_.CreateShl(magnitude, 20), b_.getInt32(120 << 23)), f32);
  Value *subnormal = b_.CreateFMul(b_.CreateUIToFP(magnitude, f32), ConstantFP::get(f32, 0x1p-9));
  Value *value = b_.CreateSelect(b_.CreateICmpULT(magnitude, b_.getInt32(8)), subnormal, normal);
  value = b_.CreateSelect(b_.CreateICmpEQ(magnitude, b_.getInt32(0x7F)), ConstantFP::getNaN(f32), value);
  Value *sign = b_.CreateShl(b_.CreateAnd(bits, 0x80), 24);
  return b_.CreateBitCast(b_.CreateOr(b_.CreateBitCast(value, i32), sign), f32);
}

Value *KernelLowering::castFp8(ir::Operation &op, Value *x, const ir::Type &from, const ir::Type &to) {
  if (from == to) return x;
  const bool nativeCvt = arch_ == "sm_90" || arch_ == "sm_90a";
  if (isFp8(from) && !isFp8(to) && !nativeCvt) {
    const ir::Type wide(from.scalar == ir::ScalarType::F8E5M2 ? ir::ScalarType::F16 : ir::ScalarType::F32);
    return castElement(op, widenFp8Bits(x, from), wide, to);
  }
  // cvt.*.e4m3x2 needs sm_89 with PTX 8.1, or sm_90; tessera emits PTX 8.0.
  if (!nativeCvt)
    notSupported(op, "conversions to fp8 need sm_90 (this is " + arch_ + ")");
  const ir::Type f16(ir::ScalarType::F16), f32(ir::ScalarType::F32);
  if (isFp8(from) && isFp8(to)) return castFp8(op, castFp8(op, x, from, f16), f16, to);
  if (isFp8(from)) {
    // cvt.rn.f16x2.e4m3x2 widens two fp8 in a b16 into two f16; ours is the low one.
    std::string type = from.scalar == ir::ScalarType::F8E4M3 ? "e4m3x2" : "e5m2x2";
    std::string text = "{\n\t.reg .b32 pair;\n\t.reg .b16 high;\n\tcvt.rn.f16x2." + type +
                       " pair, $1;\n\tmov.b32 {$0, high}, pair;\n\t}";
    auto *fnType = FunctionType::get(b_.getInt16Ty(), {b_.getInt16Ty()}, false);
    Value *bits = b_.CreateCall(InlineAsm::get(fnType, text, "=h,h", false), {b_.CreateZExt(x, b_.getInt16Ty())});
    Value *half = b_.CreateBitCast(bits, b_.getHalfTy());
    return castElement(op, half, f16, to);
  }
  // To fp8: through f32, as the low byte of a pair whose high one is zero (lowerElementwise
  // converts pairs of registers with one cvt where it can).
  Value *wide = castElement(op, x, from, f32);
  return b_.CreateTrunc(narrowPairToFp8(wide, ConstantFP::get(b_.getFloatTy(), 0.0), to.scalar), b_.getInt8Ty());
}

Value *KernelLowering::narrowPairToFp8(Value *lo, Value *hi, ir::ScalarType to) {
  // cvt.rn.satfinite packs cvt(a) high and cvt(b) low.
  std::string type = to == ir::ScalarType::F8E4M3 ? "e4m3x2" : "e5m2x2";
  std::string text = "cvt.rn.satfinite." + type + ".f32 $0, $1, $2;";
  auto *fnType = FunctionType::get(b_.getInt16Ty(), {b_.getFloatTy(), b_.getFloatTy()}, false);
  return b_.CreateCall(InlineAsm::get(fnType, text, "=h,f,f", false), {hi, lo});
}

void KernelLowering::lowerMathOp(ir::Operation &op) {
  unsigned n = numRegs(op.result(), op);
  std::vector<const Regs *> operands;
  for (ir::Value *v : op.operands) {
    operands.push_back(&lookup(v));
    if (operands.back()->size() != n)
      unsupported(op, "operand " + v->type.str() + " has a different layout than the result");
  }
  const ir::Type t = op.result()->type.element();
  Regs out;
  SmallVector<Value *, 3> x(operands.size());
  for (unsigned r = 0; r < n; ++r) {
    for (size_t i = 0; i < operands.size(); ++i)
      x[i] = (*operands[i])[r];
    out.push_back(mathOpElement(op, x, t));
  }
  define(op.result(), std::move(out));
}

// The libdevice symbol for a function and a type; f32-only ones have no f64 form.
static std::string libdeviceName(const std::string &fn, bool isDouble, bool &exists) {
  exists = true;
  if (fn.rfind("fast_", 0) == 0) {
    exists = !isDouble;
    return fn == "fast_dividef" ? "__nv_fast_fdividef" : "__nv_" + fn;
  }
  if (fn == "saturate" || fn == "saturatef") {
    exists = !isDouble;
    return "__nv_saturatef";
  }
  if (fn == "rsqrt_rn") {
    exists = !isDouble;
    return "__nv_frsqrt_rn";
  }
  // Arithmetic with a named rounding: __nv_fadd_rd / __nv_dadd_rd, __nv_fmaf_rz / __nv_fma_rz, ...
  const std::string op = fn.substr(0, fn.find('_'));
  if (fn.size() > 3 && fn[fn.size() - 3] == '_' &&
      (op == "add" || op == "sub" || op == "mul" || op == "div" || op == "rcp" || op == "sqrt"))
    return std::string("__nv_") + (isDouble ? "d" : "f") + fn;
  if (op == "fma" && fn.size() > 3 && fn[fn.size() - 3] == '_')
    return std::string("__nv_fma") + (isDouble ? "" : "f") + fn.substr(3);
  return "__nv_" + fn + (isDouble ? "" : "f");
}

// erf of an f16 or bf16 value (widened to f32; the result is rounded back): one short
// formula instead of libdevice's __nv_erff, whose f32 accuracy the 16-bit result cannot show.
// erf(x) / (K x), K = 2/sqrt(pi), is even, positive and smooth, so its log2 is a polynomial in
// t = x^2 without a constant term: erf(x) = copysign(K a * 2^(t R(t)), x), a = min(|x|, 2.75)
// (erf(2.75) rounds to 1 in both types), R of degree 7 (least squares on Chebyshev nodes,
// reweighted towards the largest error: relative error 6.5e-7 in f32 on [0, 2.75]). K a is
// rounded before the product, so tiny inputs (where 2^(t R(t)) is 1) give libdevice's K a.
// About 14 instructions (clamp, square, 7 FMAs, a multiply, ex2.approx.ftz, two multiplies,
// the sign) where the two-branch form took 20 and libdevice 26: bias + GELU on 16-bit data is
// ALU-bound on erf. The result rounded to f16 or bf16 equals float32 erf rounded, for every
// input of both types but two f16 (+-0.2144, one ulp: its erf lies 2e-8 from a rounding
// midpoint; six with ex2.approx 2 ulps off; host sweep with exact f32 arithmetic,
// tests/gpu/test_fusion_epilogue_loads.py sweeps the GPU's). NaN propagates (the clamp is a
// select that keeps it); +-inf gives +-1; the sign of -0 is kept.
Value *KernelLowering::halfPrecisionErf(Value *x) {
  Type *f32 = b_.getFloatTy();
  Type *i32 = b_.getInt32Ty();
  auto c = [&](float v) { return ConstantFP::get(f32, v); };
  Value *a = b_.CreateUnaryIntrinsic(Intrinsic::fabs, x);
  a = b_.CreateSelect(b_.CreateFCmpOGT(a, c(2.75f)), c(2.75f), a);
  Value *t = b_.CreateFMul(a, a);
  const float coefficients[] = {-0x1.ec6e5ep-2f, 0x1.066c6ep-4f, -0x1.040594p-8f, -0x1.0a8100p-11f,
                                0x1.4387d2p-13f, -0x1.23d386p-16f, 0x1.0bee4cp-20f, -0x1.9c5f7ap-26f};
  Value *r = c(coefficients[7]);
  for (int i = 6; i >= 0; --i) r = b_.CreateIntrinsic(Intrinsic::fma, {f32}, {r, t, c(coefficients[i])});
  Value *scale = b_.CreateIntrinsic(Intrinsic::nvvm_ex2_approx_ftz_f, {}, {b_.CreateFMul(r, t)});
  Value *magnitude = b_.CreateFMul(b_.CreateFMul(a, c(0x1.20dd76p+0f)), scale);
  // The magnitude is >= 0 (or NaN), so the sign is one OR: one LOP3, where copysign takes two.
  Value *sign = b_.CreateAnd(b_.CreateBitCast(x, i32), b_.getInt32(0x80000000u));
  return b_.CreateBitCast(b_.CreateOr(b_.CreateBitCast(magnitude, i32), sign), f32);
}

Value *KernelLowering::mathOpElement(ir::Operation &op, ArrayRef<Value *> x, const ir::Type &t) {
  if (op.code == OpCode::UMulHi) {
    unsigned bits = ir::bitWidth(t.scalar);
    if (bits == 32) return b_.CreateIntrinsic(Intrinsic::nvvm_mulhi_ui, {}, {x[0], x[1]});
    if (bits == 64) return b_.CreateIntrinsic(Intrinsic::nvvm_mulhi_ull, {}, {x[0], x[1]});
    Type *wide = b_.getInt32Ty();
    Value *product = b_.CreateMul(b_.CreateZExt(x[0], wide), b_.CreateZExt(x[1], wide));
    return b_.CreateTrunc(b_.CreateLShr(product, bits), x[0]->getType());
  }
  if (!t.isFloatElement() || isFp8(t))
    unsupported(op, "needs float16, bfloat16, float32 or float64 operands, got " + t.str());
  Type *resultTy = x[0]->getType();
  const bool isDouble = t.scalar == ir::ScalarType::F64;
  Type *computeTy = isDouble ? b_.getDoubleTy() : b_.getFloatTy();
  SmallVector<Value *, 3> v;
  for (Value *e : x) v.push_back(e->getType() == computeTy ? e : b_.CreateFPExt(e, computeTy));
  auto libdevice = [&](const std::string &fn) -> Value * {
    bool exists = false;
    std::string name = libdeviceName(fn, isDouble, exists);
    if (!exists) notSupported(op, "libdevice has no float64 '" + fn + "'");
    SmallVector<Type *, 3> params(v.size(), computeTy);
    FunctionCallee callee = module_.getOrInsertFunction(name, FunctionType::get(computeTy, params, false));
    return b_.CreateCall(callee, v);
  };
  Value *r;
  switch (op.code) {
  case OpCode::Sin: r = libdevice("sin"); break;
  case OpCode::Cos: r = libdevice("cos"); break;
  case OpCode::Erf:
    r = t.scalar == ir::ScalarType::F16 || t.scalar == ir::ScalarType::BF16 ? halfPrecisionErf(v[0])
                                                                           : libdevice("erf");
    break;
  case OpCode::Rsqrt:
    r = isDouble ? libdevice("rsqrt") : b_.CreateIntrinsic(Intrinsic::nvvm_rsqrt_approx_f, {}, {v[0]});
    break;
  case OpCode::Floor: r = b_.CreateUnaryIntrinsic(Intrinsic::floor, v[0]); break;
  case OpCode::Ceil: r = b_.CreateUnaryIntrinsic(Intrinsic::ceil, v[0]); break;
  case OpCode::Fma: r = b_.CreateIntrinsic(Intrinsic::fma, {computeTy}, {v[0], v[1], v[2]}); break;
  case OpCode::Libdevice: r = libdevice(op.stringAttr("fn")); break;
  default: unsupported(op, "not a math op");
  }
  return resultTy == computeTy ? r : b_.CreateFPTrunc(r, resultTy);
}

} // namespace tessera::codegen
