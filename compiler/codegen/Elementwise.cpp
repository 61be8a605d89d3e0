// Elementwise ops: one LLVM instruction (or short sequence) per register.
// Integer semantics follow the element type's signedness; math on 16-bit
// floats runs in f32 (as Triton does); f32 exp/log use the approximate
// ex2/lg2 instructions; f64 math calls libdevice (linked in NVPTXTarget.cpp).
// f32 -> f16/bf16 casts convert register pairs with one instruction.
#include "compiler/codegen/Lowering.h"
#include "compiler/ir/AxisInfo.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <cstdlib>
#include <numbers>
#include <string>

namespace tessera::codegen {

using namespace llvm;
using ir::OpCode;

static bool narrowsF32To16Bits(const ir::Operation &op) {
  const ir::Type from = op.operand(0)->type.element(), to = op.result()->type.element();
  return !from.pointer && !to.pointer && from.scalar == ir::ScalarType::F32 &&
         (to.scalar == ir::ScalarType::F16 || to.scalar == ir::ScalarType::BF16);
}

void KernelLowering::lowerElementwise(ir::Operation &op) {
  switch (op.code) {
  case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Rem:
  case OpCode::And: case OpCode::Or: case OpCode::Xor: case OpCode::Shl: case OpCode::Shr:
  case OpCode::Max: case OpCode::Min: case OpCode::Neg: case OpCode::Not: case OpCode::Cmp:
  case OpCode::Select: case OpCode::AddPtr: case OpCode::Exp: case OpCode::Exp2:
  case OpCode::Log: case OpCode::Log2: case OpCode::Sqrt: case OpCode::Abs: case OpCode::Cast:
  case OpCode::Bitcast:
    break;
  default:
    unsupported(op, "no lowering for this operation");
  }
  if (op.results.size() != 1)
    unsupported(op, "expected one result");
  auto isFp8 = [](const ir::Type &t) {
    return !t.pointer && (t.scalar == ir::ScalarType::F8E4M3 || t.scalar == ir::ScalarType::F8E5M2 ||
                          t.scalar == ir::ScalarType::F8E4B15);
  };
  if (op.code != OpCode::Cast && op.code != OpCode::Bitcast && op.code != OpCode::Select && !op.operands.empty() &&
      isFp8(op.operand(op.code == OpCode::Select ? 1 : 0)->type))
    notSupported(op, "arithmetic on fp8 is not supported; convert to float16 or float32 first");
  unsigned n = numRegs(op.result(), op);
  std::vector<const Regs *> operands;
  for (ir::Value *v : op.operands) {
    operands.push_back(&lookup(v));
    if (operands.back()->size() != n)
      unsupported(op, "operand " + v->type.str() + " has a different layout than the result");
  }
  Regs out;
  if (op.code == OpCode::Cast && narrowsF32To16Bits(op)) {
    // Two registers per cvt.rn.{f16,bf16}x2.f32 (sm_80+), which rounds its
    // first source into the high half: element 1.
    const bool bf16 = op.result()->type.element().scalar == ir::ScalarType::BF16;
    const Intrinsic::ID pairCvt = bf16 ? Intrinsic::nvvm_ff2bf16x2_rn : Intrinsic::nvvm_ff2f16x2_rn;
    const Regs &in = *operands[0];
    for (unsigned r = 0; r + 1 < n; r += 2) {
      Value *pair = b_.CreateIntrinsic(pairCvt, {}, {in[r + 1], in[r]});
      out.push_back(b_.CreateExtractElement(pair, uint64_t{0}));
      out.push_back(b_.CreateExtractElement(pair, uint64_t{1}));
    }
    if (n % 2) out.push_back(elementwise(op, {in[n - 1]}));
    define(op.result(), std::move(out));
    return;
  }
  const ir::Type &castTo = op.result()->type.element();
  if (op.code == OpCode::Cast && isFp8(castTo) && !op.operand(0)->type.element().pointer &&
      op.operand(0)->type.element().scalar == ir::ScalarType::F32 &&
      (arch_ == "sm_90" || arch_ == "sm_90a")) {
    // f32 -> fp8: two registers per cvt.rn.satfinite.{e4m3,e5m2}x2.f32 (e.g. attention's P).
    const Regs &in = *operands[0];
    for (unsigned r = 0; r + 1 < n; r += 2) {
      Value *pair = narrowPairToFp8(in[r], in[r + 1], castTo.scalar);
      out.push_back(b_.CreateTrunc(pair, b_.getInt8Ty()));
      out.push_back(b_.CreateTrunc(b_.CreateLShr(pair, 8), b_.getInt8Ty()));
    }
    if (n % 2) out.push_back(elementwise(op, {in[n - 1]}));
    define(op.result(), std::move(out));
    return;
  }
  std::vector<unsigned> first;
  if (op.code == OpCode::Cmp) first = sharedCompareRegisters(op, n);
  SmallVector<Value *, 3> x(operands.size());
  for (unsigned r = 0; r < n; ++r) {
    if (!first.empty() && first[r] != r) {
      out.push_back(out[first[r]]);
      continue;
    }
    for (size_t i = 0; i < operands.size(); ++i)
      x[i] = (*operands[i])[r];
    out.push_back(elementwise(op, x));
  }
  define(op.result(), std::move(out));
}

// A compare whose result is constant over runs of C elements along a dim (the axis
// analysis: `offs_n < N` with offs_n starting at a multiple of 16 and N divisible by 16
// gives runs of 16) is evaluated once per run where every thread's registers fall into
// runs the same way (LayoutMath's registersSharingRuns).
std::vector<unsigned> KernelLowering::sharedCompareRegisters(ir::Operation &op, unsigned numRegs) {
  if (!op.result()->type.isBlock() || !op.result()->layout) return {};
  // A/B switch for benchmarks only (not part of the kernel-cache key: use TESSERA_CACHE=off).
  if (!compareRuns_) return {};
  if (!compareConstancy_) compareConstancy_ = ir::compareConstancy(fn_);
  auto it = compareConstancy_->find(&op);
  if (it == compareConstancy_->end()) return {};
  DistributedLayout layout = layoutOf(op.result(), op);
  if (layout.numRegs() != numRegs) return {};
  return registersSharingRuns(layout, it->second);
}

static CmpInst::Predicate comparison(const ir::Operation &op, const ir::Type &t) {
  const std::string &p = op.stringAttr("predicate");
  if (t.isFloatElement()) {
    if (p == "eq") return CmpInst::FCMP_OEQ;
    if (p == "ne") return CmpInst::FCMP_UNE; // NaN != x is true, as in C
    if (p == "lt") return CmpInst::FCMP_OLT;
    if (p == "le") return CmpInst::FCMP_OLE;
    if (p == "gt") return CmpInst::FCMP_OGT;
    if (p == "ge") return CmpInst::FCMP_OGE;
  } else {
    bool s = !t.pointer && ir::isSigned(t.scalar);
    if (p == "eq") return CmpInst::ICMP_EQ;
    if (p == "ne") return CmpInst::ICMP_NE;
    if (p == "lt") return s ? CmpInst::ICMP_SLT : CmpInst::ICMP_ULT;
    if (p == "le") return s ? CmpInst::ICMP_SLE : CmpInst::ICMP_ULE;
    if (p == "gt") return s ? CmpInst::ICMP_SGT : CmpInst::ICMP_UGT;
    if (p == "ge") return s ? CmpInst::ICMP_SGE : CmpInst::ICMP_UGE;
  }
  unsupported(op, "unknown predicate '" + p + "'");
}

// Triton's `/` of f32: div.full.f32 (at most 2 ulp, no slow path), as inline PTX since LLVM has no
// intrinsic for it. A power-of-two divisor is an exact multiplication (what any division gives).
Value *KernelLowering::fullRangeDivide(Value *x, Value *y) {
  if (auto *c = dyn_cast<ConstantFP>(y)) {
    APFloat reciprocal(1.0f);
    if (c->getValueAPF().isFinite() && !c->isZero() &&
        reciprocal.divide(c->getValueAPF(), APFloat::rmNearestTiesToEven) == APFloat::opOK)
      return b_.CreateFMul(x, ConstantFP::get(x->getType(), reciprocal));
  }
  Type *f32 = b_.getFloatTy();
  auto *fnType = FunctionType::get(f32, {f32, f32}, false);
  return b_.CreateCall(InlineAsm::get(fnType, "div.full.f32 $0, $1, $2;", "=f,f,f", false), {x, y});
}

Value *KernelLowering::elementwise(ir::Operation &op, ArrayRef<Value *> x) {
  const ir::Type t = op.operand(0)->type.element();
  const bool isFloat = t.isFloatElement();
  const bool isSigned = !t.pointer && ir::isSigned(t.scalar);
  auto needInt = [&] {
    if (isFloat || t.pointer)
      unsupported(op, "needs integer operands, got " + t.str());
  };
  switch (op.code) {
  case OpCode::Add: return isFloat ? b_.CreateFAdd(x[0], x[1]) : b_.CreateAdd(x[0], x[1]);
  case OpCode::Sub: return isFloat ? b_.CreateFSub(x[0], x[1]) : b_.CreateSub(x[0], x[1]);
  case OpCode::Mul: return isFloat ? b_.CreateFMul(x[0], x[1]) : b_.CreateMul(x[0], x[1]);
  case OpCode::Div:
    if (isFloat && ir::isFullRangeDivision(op) && x[0]->getType()->isFloatTy()) return fullRangeDivide(x[0], x[1]);
    if (isFloat) return b_.CreateFDiv(x[0], x[1]);
    return isSigned ? b_.CreateSDiv(x[0], x[1]) : b_.CreateUDiv(x[0], x[1]);
  case OpCode::Rem:
    if (isFloat) return b_.CreateFRem(x[0], x[1]);
    return isSigned ? b_.CreateSRem(x[0], x[1]) : b_.CreateURem(x[0], x[1]);
  case OpCode::And: needInt(); return b_.CreateAnd(x[0], x[1]);
  case OpCode::Or: needInt(); return b_.CreateOr(x[0], x[1]);
  case OpCode::Xor: needInt(); return b_.CreateXor(x[0], x[1]);
  case OpCode::Shl: needInt(); return b_.CreateShl(x[0], x[1]);
  case OpCode::Shr:
    needInt();
    return isSigned ? b_.CreateAShr(x[0], x[1]) : b_.CreateLShr(x[0], x[1]);
  case OpCode::Max: return combine(op, "max", t, x[0], x[1]);
  case OpCode::Min: return combine(op, "min", t, x[0], x[1]);
  case OpCode::Neg: return isFloat ? b_.CreateFNeg(x[0]) : b_.CreateNeg(x[0]);
  case OpCode::Not: needInt(); return b_.CreateNot(x[0]);
  case OpCode::Cmp:
    if (isFloat)
      return b_.CreateFCmp(comparison(op, t), x[0], x[1]);
    return b_.CreateICmp(comparison(op, t), x[0], x[1]);
  case OpCode::Select: return b_.CreateSelect(x[0], x[1], x[2]);
  case OpCode::AddPtr: {
    const ir::Type pointee(t.scalar);
    const ir::Type offsetType = op.operand(1)->type.element();
    Value *offset = x[1];
    if (!ir::isSigned(offsetType.scalar)) // GEP indices are signed
      offset = b_.CreateZExt(offset, b_.getInt64Ty());
    return b_.CreateGEP(memoryType(pointee, &op), x[0], offset);
  }
  case OpCode::Exp: case OpCode::Exp2: case OpCode::Log: case OpCode::Log2:
  case OpCode::Sqrt: case OpCode::Abs:
    return mathElement(op, x[0], t);
  case OpCode::Cast:
    return castElement(op, x[0], t, op.result()->type.element());
  case OpCode::Bitcast: {
    Type *to = elementType(op.result()->type.element(), &op);
    if (x[0]->getType()->isPointerTy() && !to->isPointerTy())
      return b_.CreatePtrToInt(x[0], to);
    if (!x[0]->getType()->isPointerTy() && to->isPointerTy())
      return b_.CreateIntToPtr(x[0], to);
    if (x[0]->getType()->getPrimitiveSizeInBits() != to->getPrimitiveSizeInBits() &&
        !to->isPointerTy())
      unsupported(op, "bitcast between types of different widths");
    return b_.CreateBitCast(x[0], to);
  }
  default:
    unsupported(op, "no elementwise lowering");
  }
}

Value *KernelLowering::combine(ir::Operation &op, const std::string &kind, const ir::Type &t,
                               Value *a, Value *b) {
  const bool isFloat = t.isFloatElement();
  const bool isSigned = !t.pointer && ir::isSigned(t.scalar);
  if (kind == "sum")
    return isFloat ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b);
  if (t.pointer)
    unsupported(op, kind + " of pointers");
  // propagate_nan (tl.PropagateNan.ALL): llvm.maximum / minimum, PTX max.NaN / min.NaN.
  const bool propagateNan = op.hasAttr("propagate_nan") && op.intAttr("propagate_nan");
  if (kind == "max") {
    if (isFloat) return propagateNan ? b_.CreateMaximum(a, b) : b_.CreateMaxNum(a, b);
    return b_.CreateBinaryIntrinsic(isSigned ? Intrinsic::smax : Intrinsic::umax, a, b);
  }
  if (kind == "min") {
    if (isFloat) return propagateNan ? b_.CreateMinimum(a, b) : b_.CreateMinNum(a, b);
    return b_.CreateBinaryIntrinsic(isSigned ? Intrinsic::smin : Intrinsic::umin, a, b);
  }
  unsupported(op, "unknown reduction kind '" + kind + "'");
}

Value *KernelLowering::mathElement(ir::Operation &op, Value *x, const ir::Type &t) {
  if (op.code == OpCode::Abs && t.isIntElement()) {
    if (!ir::isSigned(t.scalar))
      return x;
    return b_.CreateBinaryIntrinsic(Intrinsic::abs, x, b_.getFalse());
  }
  if (!t.isFloatElement())
    unsupported(op, "needs a float operand, got " + t.str());
  if (op.code == OpCode::Abs)
    return b_.CreateUnaryIntrinsic(Intrinsic::fabs, x);

  Type *f32 = b_.getFloatTy();
  if (t.scalar == ir::ScalarType::F64) {
    if (op.code == OpCode::Sqrt)
      return b_.CreateUnaryIntrinsic(Intrinsic::sqrt, x); // sqrt.rn.f64
    const char *name = op.code == OpCode::Exp ? "__nv_exp"
                       : op.code == OpCode::Exp2 ? "__nv_exp2"
                       : op.code == OpCode::Log ? "__nv_log" : "__nv_log2";
    FunctionCallee callee = module_.getOrInsertFunction(name, x->getType(), x->getType());
    return b_.CreateCall(callee, {x});
  }

  // f16/bf16 compute in f32 and round back.
  Value *v = x->getType() == f32 ? x : b_.CreateFPExt(x, f32);
  switch (op.code) {
  case OpCode::Exp:
    v = b_.CreateFMul(v, ConstantFP::get(f32, std::numbers::log2e));
    [[fallthrough]];
  case OpCode::Exp2:
    // ftz: a result below 2^-126 is 0 either way for softmax-style uses, and
    // the non-ftz form costs a range check and two multiplies per element.
    v = b_.CreateIntrinsic(Intrinsic::nvvm_ex2_approx_ftz_f, {}, {v});
    break;
  case OpCode::Log:
  case OpCode::Log2:
    v = b_.CreateIntrinsic(Intrinsic::nvvm_lg2_approx_f, {}, {v});
    if (op.code == OpCode::Log)
      v = b_.CreateFMul(v, ConstantFP::get(f32, std::numbers::ln2));
    break;
  case OpCode::Sqrt:
    v = b_.CreateUnaryIntrinsic(Intrinsic::sqrt, v);
    break;
  default:
    unsupported(op, "unknown math op");
  }
  return x->getType() == f32 ? v : b_.CreateFPTrunc(v, x->getType());
}

Value *KernelLowering::castElement(ir::Operation &op, Value *x, const ir::Type &from,
                                   const ir::Type &to) {
  Type *toType = elementType(to, &op);
  if (!from.pointer && !to.pointer &&
      (from.scalar == ir::ScalarType::F8E4M3 || from.scalar == ir::ScalarType::F8E5M2 ||
       to.scalar == ir::ScalarType::F8E4M3 || to.scalar == ir::ScalarType::F8E5M2))
    return castFp8(op, x, from, to); // MathOps.cpp
  if (from.pointer || to.pointer) {
    if (from.pointer && to.pointer)
      return x; // all global pointers share one LLVM type
    if (from.pointer)
      return b_.CreatePtrToInt(x, toType);
    return b_.CreateIntToPtr(b_.CreateZExtOrTrunc(x, b_.getInt64Ty()), toType);
  }
  if (!from.pointer && !to.pointer && (from.scalar == ir::ScalarType::F8E4B15 || to.scalar == ir::ScalarType::F8E4B15))
    unsupported(op, "a cast of fp8e4b15 reached codegen (the front-end converts its bits)");
  const bool fromFloat = from.isFloatElement(), toFloat = to.isFloatElement();
  const bool fromSigned = ir::isSigned(from.scalar), toSigned = ir::isSigned(to.scalar);
  if (!fromFloat && !toFloat) {
    if (to.scalar == ir::ScalarType::I1)
      return b_.CreateICmpNE(x, ConstantInt::get(x->getType(), 0));
    return fromSigned ? b_.CreateSExtOrTrunc(x, toType) : b_.CreateZExtOrTrunc(x, toType);
  }
  if (!fromFloat) // int -> float; i1 and unsigned are unsigned
    return fromSigned ? b_.CreateSIToFP(x, toType) : b_.CreateUIToFP(x, toType);
  if (!toFloat) {
    if (to.scalar == ir::ScalarType::I1)
      return b_.CreateFCmpUNE(x, ConstantFP::get(x->getType(), 0.0));
    return toSigned ? b_.CreateFPToSI(x, toType) : b_.CreateFPToUI(x, toType);
  }
  unsigned fromBits = ir::bitWidth(from.scalar), toBits = ir::bitWidth(to.scalar);
  if (x->getType() == toType)
    return x;
  if (fromBits == toBits) // f16 <-> bf16 through f32
    return b_.CreateFPTrunc(b_.CreateFPExt(x, b_.getFloatTy()), toType);
  return fromBits < toBits ? b_.CreateFPExt(x, toType) : b_.CreateFPTrunc(x, toType);
}

} // namespace tessera::codegen
