// Shared memory: one dynamic `extern .shared` byte array. The buffers of
// the pipeline pass (local_alloc) are stacked at its bottom while they live;
// every op needing scratch space reuses the rest from there on (ops run one
// after another, each ending with a barrier), so the kernel needs the
// largest sum of live buffers and scratch. convert_layout and reshape go through it: every thread stores its
// elements at their row-major index (rows padded against bank conflicts,
// runs along the last dim as vectors), a barrier, every thread loads the
// elements its new layout wants, and a barrier before the space is reused.
#include "compiler/codegen/Lowering.h"
#include "compiler/ir/ShapeOpLayouts.h"

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
  Value *base = reservedShared_ ? b_.CreateConstGEP1_64(b_.getInt8Ty(), smem_, reservedShared_) : smem_;
  if (group_) groupPeak_ = std::max(groupPeak_, reservedShared_ + bytes);
  return groupShared(base, reservedShared_);
}

// Two warpgroups take turns (FlashAttention-3's warp scheduler barriers): named barrier
// 1 + w is warpgroup w's turn, synced by its 128 threads and arrived at by the other
// warpgroup's 128 (256 in all). Barrier 0 stays __syncthreads'. The ids are immediates
// under a predicate (a register id makes ptxas reserve all 16 barriers). Nothing to
// order unless the program is exactly two warpgroups.
void KernelLowering::pingpong(const std::string &kind) {
  if (fn_.numWarps != 8 && !group_) return;
  // warp-uniform: this is warpgroup 1 (with consumer groups: group 1)
  Value *second = group_ ? b_.CreateICmpNE(group_, i32(0)) : b_.CreateICmpUGE(tid_, i32(128));
  const auto predicated = [&](const std::string &ifFirst, const std::string &ifSecond) {
    std::string text = "{ .reg .pred p; setp.ne.b32 p, $0, 0;";
    if (!ifFirst.empty()) text += " @!p " + ifFirst;
    if (!ifSecond.empty()) text += " @p " + ifSecond;
    convergentAsm(text + " }", "r", {b_.CreateZExt(second, b_.getInt32Ty())});
  };
  if (kind == "wait") predicated("bar.sync 1, 256;", "bar.sync 2, 256;");
  else if (kind == "pass") predicated("bar.arrive 2, 256;", "bar.arrive 1, 256;");
  else if (kind == "start") predicated("", "bar.arrive 1, 256;"); // warpgroup 0 goes first
  else if (kind == "end") predicated("bar.sync 1, 256;", "");     // takes back the last pass
}

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
  // Every thread already holds the elements it wants (a row that both layouts keep whole in each
  // thread, in another register order): a choice of registers.
  if (op.code == ir::OpCode::ConvertLayout)
    if (auto picks = ir::registersInThread(op, 0, {from}, to)) {
      Regs out;
      for (auto [operand, reg] : *picks) out.push_back(in[reg]);
      define(dst, std::move(out));
      return;
    }
  const ir::Type elem = src->type.element();
  Type *memTy = memoryType(elem, &op);
  const unsigned elemBytes = memTy->isPointerTy() ? 8 : memTy->getPrimitiveSizeInBits() / 8;
  // Runs of a thread's registers along the last dim move as one vector (up
  // to 16 bytes): fewer instructions, and no lone 16-bit stores of wgmma
  // accumulators, after which ptxas serialises the wgmmas (C7514).
  const unsigned maxElems = memTy->isPointerTy() ? 1 : std::max(1u, 16 / elemBytes);
  const unsigned storeVec = lastDimVectorWidth(from, maxElems), loadVec = lastDimVectorWidth(to, maxElems);
  // Padded rows keep both sides clear of bank conflicts (a reshape's two
  // sides index different shapes, so its rows stay dense).
  const int64_t rowPad = src->type.shape == dst->type.shape
                             ? conversionRowPadding(from, to, src->type.shape, elemBytes, storeVec, loadVec)
                             : 0;
  const int64_t rows = src->type.shape.empty() ? 1 : src->type.numElements() / src->type.shape.back();
  Value *base = sharedScratch(static_cast<uint64_t>(src->type.numElements() + rows * rowPad) * elemBytes, op);
  auto address = [&](const DistributedLayout &layout, unsigned reg, const std::vector<int64_t> &shape) {
    std::vector<Value *> coords = coordinates(layout, reg);
    if (!rowPad)
      return b_.CreateGEP(memTy, base, linearIndex(coords, shape));
    // The row's start, then the column (this form keeps sm_80 attention's
    // epilogue, at 255 registers, free of spills).
    std::vector<Value *> rowCoords(coords.begin(), coords.end() - 1);
    std::vector<int64_t> rowShape(shape.begin(), shape.end() - 1);
    Value *row = b_.CreateGEP(memTy, base, b_.CreateMul(linearIndex(rowCoords, rowShape), i32(shape.back() + rowPad)));
    return b_.CreateGEP(memTy, row, coords.back());
  };

  for (unsigned r = 0; r < from.numRegs(); r += storeVec) {
    if (from.isDuplicateRegister(r))
      continue; // copies in other threads write the same value
    Value *ptr = address(from, r, src->type.shape);
    if (storeVec == 1) {
      b_.CreateStore(toMemory(in[r], elem), ptr);
      continue;
    }
    Value *vec = PoisonValue::get(FixedVectorType::get(memTy, storeVec));
    for (unsigned i = 0; i < storeVec; ++i) vec = b_.CreateInsertElement(vec, toMemory(in[r + i], elem), i);
    b_.CreateAlignedStore(vec, ptr, Align(storeVec * elemBytes));
  }
  barrier();
  Regs out;
  for (unsigned r = 0; r < to.numRegs(); r += loadVec) {
    Value *ptr = address(to, r, dst->type.shape);
    if (loadVec == 1) {
      out.push_back(fromMemory(b_.CreateLoad(memTy, ptr), elem));
      continue;
    }
    Value *vec = b_.CreateAlignedLoad(FixedVectorType::get(memTy, loadVec), ptr, Align(loadVec * elemBytes));
    for (unsigned i = 0; i < loadVec; ++i) out.push_back(fromMemory(b_.CreateExtractElement(vec, i), elem));
  }
  barrier();
  define(dst, std::move(out));
}

} // namespace tessera::codegen
