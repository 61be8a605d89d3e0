// Shared memory: one dynamic `extern .shared` byte array. The buffers of
// the pipeline pass (local_alloc) are stacked at its bottom while they live;
// every op needing scratch space reuses the rest from there on (ops run one
// after another, each ending with a barrier), so the kernel needs the
// largest sum of live buffers and scratch. convert_layout and reshape go through it: every thread stores its
// elements at their row-major index, a barrier, every thread loads the
// elements its new layout wants, and a barrier before the space is reused.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

namespace tessera::codegen {

using namespace llvm;

Value *KernelLowering::sharedScratch(uint64_t bytes, const ir::Operation &op) {
  if (reservedShared_ + bytes > UINT32_MAX)
    unsupported(op, "needs more than 4 GiB of shared memory");
  sharedBytes_ = std::max(sharedBytes_, static_cast<unsigned>(reservedShared_ + bytes));
  if (!smem_) {
    smem_ = new GlobalVariable(module_, ArrayType::get(b_.getInt8Ty(), 0), /*isConstant=*/false,
                               GlobalValue::ExternalLinkage, nullptr, "global_smem", nullptr,
                               GlobalValue::NotThreadLocal, /*AddressSpace=*/3);
    smem_->setAlignment(Align(1024)); // wgmma's swizzle atoms (AsyncCopy.cpp)
  }
  // Above the buffers the pipeline pass keeps alive (AsyncCopy.cpp).
  return reservedShared_ ? b_.CreateConstGEP1_64(b_.getInt8Ty(), smem_, reservedShared_) : smem_;
}

void KernelLowering::barrier() { b_.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {}); }

void KernelLowering::emitAsm(const std::string &text) { asmCall(text, "", {}); }

void KernelLowering::fenceProxyAsync() { emitAsm("fence.proxy.async.shared::cta;"); }

Value *KernelLowering::toMemory(Value *v, const ir::Type &elem) {
  if (!elem.pointer && elem.scalar == ir::ScalarType::I1)
    return b_.CreateZExt(v, b_.getInt8Ty());
  return v;
}

Value *KernelLowering::fromMemory(Value *v, const ir::Type &elem) {
  if (!elem.pointer && elem.scalar == ir::ScalarType::I1)
    return b_.CreateICmpNE(v, b_.getInt8(0));
  return v;
}

void KernelLowering::lowerThroughSharedMemory(ir::Operation &op) {
  ir::Value *src = op.operand(0), *dst = op.result();
  if (!src->type.isBlock() || !dst->type.isBlock())
    unsupported(op, "operand and result must be blocks");
  if (src->type.numElements() != dst->type.numElements())
    unsupported(op, "operand and result have different element counts");
  const Regs &in = lookup(src);
  if (dst->layout && dst->layout->kind == ir::Layout::Kind::DotOperand) {
    // The dot stages these registers itself (Dot.cpp): only remember their layout.
    auto it = dotOperandSource_.find(src);
    dotOperandSource_[dst] = it != dotOperandSource_.end() ? it->second : src->layout;
    define(dst, in);
    return;
  }
  if (src->type.shape == dst->type.shape && sameLayout(src->layout, dst->layout)) {
    define(dst, in); // nothing moves
    return;
  }
  DistributedLayout from = layoutOf(src, op), to = layoutOf(dst, op);
  const ir::Type elem = src->type.element();
  Type *memTy = memoryType(elem, &op);
  uint64_t elemBytes = memTy->isPointerTy() ? 8 : memTy->getPrimitiveSizeInBits() / 8;
  Value *base = sharedScratch(static_cast<uint64_t>(src->type.numElements()) * elemBytes, op);

  for (unsigned r = 0; r < from.numRegs(); ++r) {
    if (from.isDuplicateRegister(r))
      continue; // copies in other threads write the same value
    Value *index = linearIndex(coordinates(from, r), src->type.shape);
    b_.CreateStore(toMemory(in[r], elem), b_.CreateGEP(memTy, base, index));
  }
  barrier();
  Regs out;
  for (unsigned r = 0; r < to.numRegs(); ++r) {
    Value *index = linearIndex(coordinates(to, r), dst->type.shape);
    out.push_back(fromMemory(b_.CreateLoad(memTy, b_.CreateGEP(memTy, base, index)), elem));
  }
  barrier();
  define(dst, std::move(out));
}

} // namespace tessera::codegen
