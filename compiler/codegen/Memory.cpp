// Global loads and stores, one per register for now (vectorisation later).
// Masked accesses use predicated PTX (`@p ld.global`) through inline asm,
// as Triton does, so there is no branch per element; unmasked ones are
// ordinary LLVM loads/stores the optimiser can see through. A store is done
// only by the thread that owns the element (replicated layouts).
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/InlineAsm.h>

#include <optional>

namespace tessera::codegen {

using namespace llvm;

namespace {

// The PTX register class and width used to move `bits` bits through asm.
struct AsmWidth {
  const char *constraint; // "h", "r", "l"
  const char *ptxType;    // for ld/st
  const char *movType;
  unsigned regBits;
};

AsmWidth asmWidth(unsigned bits) {
  switch (bits) {
  case 8: return {"h", "u8", "b16", 16}; // bytes travel in 16-bit registers
  case 16: return {"h", "b16", "b16", 16};
  case 32: return {"r", "b32", "b32", 32};
  default: return {"l", "b64", "b64", 64};
  }
}

} // namespace

Value *KernelLowering::predicatedLoad(ir::Operation &op, Type *memTy, Value *ptr, Value *pred,
                                      Value *other) {
  unsigned bits = memTy->isPointerTy() ? 64 : memTy->getPrimitiveSizeInBits();
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
    unsupported(op, "masked load of a " + std::to_string(bits) + "-bit element");
  AsmWidth w = asmWidth(bits);
  Type *regTy = b_.getIntNTy(w.regBits);
  Type *bitsTy = b_.getIntNTy(bits);
  // `other` as the raw bits of the register.
  Value *fallback = other ? other : Constant::getNullValue(memTy);
  if (fallback->getType()->isPointerTy())
    fallback = b_.CreatePtrToInt(fallback, bitsTy);
  else if (!fallback->getType()->isIntegerTy())
    fallback = b_.CreateBitCast(fallback, bitsTy);
  fallback = b_.CreateZExt(fallback, regTy);

  std::string text = std::string("mov.") + w.movType + " $0, $3;\n\t@$2 ld.global." + w.ptxType +
                     " $0, [$1];";
  std::string constraints = std::string("=") + w.constraint + ",l,b," + w.constraint;
  auto *asmType = FunctionType::get(regTy, {ptr->getType(), b_.getInt1Ty(), regTy}, false);
  InlineAsm *ld = InlineAsm::get(asmType, text, constraints, /*hasSideEffects=*/false);
  CallInst *call = b_.CreateCall(ld, {ptr, pred, fallback});
  // It only reads memory: may be CSE'd, never moved across stores.
  call->setOnlyReadsMemory();
  call->setDoesNotThrow();

  Value *v = b_.CreateTrunc(call, bitsTy);
  if (memTy->isPointerTy())
    return b_.CreateIntToPtr(v, memTy);
  return v->getType() == memTy ? v : b_.CreateBitCast(v, memTy);
}

void KernelLowering::predicatedStore(ir::Operation &op, Value *ptr, Value *value, Value *pred) {
  Type *memTy = value->getType();
  unsigned bits = memTy->isPointerTy() ? 64 : memTy->getPrimitiveSizeInBits();
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
    unsupported(op, "masked store of a " + std::to_string(bits) + "-bit element");
  AsmWidth w = asmWidth(bits);
  Type *regTy = b_.getIntNTy(w.regBits);
  Value *raw = value;
  if (memTy->isPointerTy())
    raw = b_.CreatePtrToInt(raw, b_.getInt64Ty());
  else if (!memTy->isIntegerTy())
    raw = b_.CreateBitCast(raw, b_.getIntNTy(bits));
  raw = b_.CreateZExt(raw, regTy);
  std::string text = std::string("@$2 st.global.") + (bits == 8 ? "u8" : w.ptxType) + " [$0], $1;";
  std::string constraints = std::string("l,") + w.constraint + ",b,~{memory}";
  auto *asmType = FunctionType::get(b_.getVoidTy(), {ptr->getType(), regTy, b_.getInt1Ty()}, false);
  InlineAsm *st = InlineAsm::get(asmType, text, constraints, /*hasSideEffects=*/true);
  b_.CreateCall(st, {ptr, raw, pred})->setDoesNotThrow();
}

void KernelLowering::lowerLoad(ir::Operation &op) {
  const ir::Type elem = op.result()->type.element();
  Type *memTy = memoryType(elem, &op);
  const bool isBool = !elem.pointer && elem.scalar == ir::ScalarType::I1;
  const Align align(memTy->isPointerTy() ? 8 : std::max<uint64_t>(1, memTy->getPrimitiveSizeInBits() / 8));
  unsigned n = numRegs(op.result(), op);
  const Regs &ptrs = lookup(op.operand(0));
  const Regs *masks = op.loadMask() ? &lookup(op.loadMask()) : nullptr;
  const Regs *others = op.loadOther() ? &lookup(op.loadOther()) : nullptr;
  if (ptrs.size() != n || (masks && masks->size() != n) || (others && others->size() != n))
    unsupported(op, "pointer, mask and other must share the result's layout");

  Regs out;
  for (unsigned r = 0; r < n; ++r) {
    Value *v;
    if (masks) {
      Value *other = others ? (*others)[r] : nullptr;
      if (other && isBool)
        other = b_.CreateZExt(other, memTy);
      v = predicatedLoad(op, memTy, ptrs[r], (*masks)[r], other);
    } else {
      v = b_.CreateAlignedLoad(memTy, ptrs[r], align);
    }
    if (isBool)
      v = b_.CreateICmpNE(v, ConstantInt::get(memTy, 0));
    out.push_back(v);
  }
  define(op.result(), std::move(out));
}

void KernelLowering::lowerStore(ir::Operation &op) {
  ir::Value *ptrValue = op.operand(0);
  const ir::Type elem = op.operand(1)->type.element();
  Type *memTy = memoryType(elem, &op);
  const Align align(memTy->isPointerTy() ? 8 : std::max<uint64_t>(1, memTy->getPrimitiveSizeInBits() / 8));
  const Regs &ptrs = lookup(ptrValue);
  const Regs &values = lookup(op.operand(1));
  const Regs *masks = op.storeMask() ? &lookup(op.storeMask()) : nullptr;
  if (values.size() != ptrs.size() || (masks && masks->size() != ptrs.size()))
    unsupported(op, "pointer, value and mask must share one layout");

  std::optional<DistributedLayout> layout;
  if (ptrValue->type.isBlock())
    layout.emplace(layoutOf(ptrValue, op));
  for (unsigned r = 0; r < ptrs.size(); ++r) {
    Value *pred;
    if (layout) {
      if (layout->isDuplicateRegister(r))
        continue; // this register is a copy in every thread
      pred = ownerPredicate(*layout, r);
    } else {
      pred = b_.CreateICmpEQ(tid_, i32(0)); // a scalar store: thread 0 only
    }
    if (masks)
      pred = andPredicates(pred, (*masks)[r]);
    Value *v = values[r];
    if (memTy != v->getType())
      v = b_.CreateZExt(v, memTy); // i1 -> i8
    if (pred)
      predicatedStore(op, ptrs[r], v, pred);
    else
      b_.CreateAlignedStore(v, ptrs[r], align);
  }
}

} // namespace tessera::codegen
