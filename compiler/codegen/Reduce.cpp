// reduce(x, axis, kind) in three steps (docs/codegen.md):
//  1. in each thread, over its registers along the axis;
//  2. across the lanes along the axis with butterfly shuffles, so every
//     lane ends up with its group's value;
//  3. across the warps along the axis through shared memory.
// Copies created by wrap-around are skipped at each step: registers whose
// offset is past the extent, lane bits and warps beyond the distinct ones.
// Every thread ends up holding the values of the result's layout (the
// operand's layout sliced along the axis; a scalar for a 1-D operand).
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace tessera::codegen {

using namespace llvm;

Value *KernelLowering::shuffleXor(Value *v, unsigned laneMask) {
  Type *type = v->getType();
  auto shuffle32 = [&](Value *x) -> Value * {
    bool isFloat = x->getType()->isFloatTy();
    Intrinsic::ID id = isFloat ? Intrinsic::nvvm_shfl_sync_bfly_f32 : Intrinsic::nvvm_shfl_sync_bfly_i32;
    return b_.CreateIntrinsic(id, {}, {i32(-1), x, i32(laneMask), i32(kWarpSize - 1)});
  };
  if (type->isFloatTy() || type->isIntegerTy(32))
    return shuffle32(v);
  unsigned bits = type->isPointerTy() ? 64 : type->getPrimitiveSizeInBits();
  Type *bitsTy = b_.getIntNTy(bits);
  Value *raw = type->isPointerTy() ? b_.CreatePtrToInt(v, bitsTy)
               : type->isIntegerTy() ? v : b_.CreateBitCast(v, bitsTy);
  Value *result;
  if (bits == 64) {
    Value *lo = shuffle32(b_.CreateTrunc(raw, b_.getInt32Ty()));
    Value *hi = shuffle32(b_.CreateTrunc(b_.CreateLShr(raw, 32), b_.getInt32Ty()));
    result = b_.CreateOr(b_.CreateZExt(lo, bitsTy), b_.CreateShl(b_.CreateZExt(hi, bitsTy), 32));
  } else {
    result = b_.CreateTrunc(shuffle32(b_.CreateZExt(raw, b_.getInt32Ty())), bitsTy);
  }
  if (type->isPointerTy())
    return b_.CreateIntToPtr(result, type);
  return type->isIntegerTy() ? result : b_.CreateBitCast(result, type);
}

void KernelLowering::lowerReduce(ir::Operation &op) {
  ir::Value *input = op.operand(0);
  const ir::Type elem = input->type.element();
  const std::string &kind = op.stringAttr("kind");
  if (kind != "sum" && kind != "max" && kind != "min")
    unsupported(op, "unknown reduction kind '" + kind + "'");
  DistributedLayout in = layoutOf(input, op);
  int64_t axisAttr = op.intAttr("axis");
  if (axisAttr < 0 || axisAttr >= static_cast<int64_t>(in.rank()))
    unsupported(op, "axis out of range");
  const unsigned axis = static_cast<unsigned>(axisAttr);
  const unsigned baseDim = in.valueDims()[axis];
  const DimMap &m = in.dim(baseDim);
  DistributedLayout out = in.slicedAlong(axis);
  if (op.result()->type.isBlock()) {
    DistributedLayout declared = layoutOf(op.result(), op);
    if (declared.numRegs() != out.numRegs() || !(declared.base() == out.base()))
      unsupported(op, "result layout must be the operand's layout sliced along the axis");
  }
  const Regs &x = lookup(input);

  // 1. Within the thread: registers along the axis that hold distinct elements.
  Regs acc;
  for (unsigned r = 0; r < out.numRegs(); ++r) {
    std::vector<unsigned> index = out.regIndex(r); // index[baseDim] == 0
    Value *v = nullptr;
    for (unsigned k = 0; k < m.numRegs; ++k) {
      if (m.regOffset(k) >= m.extent)
        continue;
      index[baseDim] = k;
      Value *e = x[in.regNumber(index)];
      v = v ? combine(op, kind, elem, v, e) : e;
    }
    acc.push_back(v);
  }

  // 2. Across lanes: butterfly over the lane bits that address distinct data.
  for (unsigned bit = 1; bit < m.distinctLanes(); bit *= 2)
    for (Value *&v : acc)
      v = combine(op, kind, elem, v, shuffleXor(v, bit * m.laneStride));

  // 3. Across warps: partials to shared memory, then every thread combines
  // the distinct warps' partials for the elements it holds.
  const unsigned warps = m.distinctWarps();
  if (warps > 1) {
    Type *memTy = memoryType(elem, &op);
    uint64_t elemBytes = memTy->isPointerTy() ? 8 : memTy->getPrimitiveSizeInBits() / 8;
    std::vector<int64_t> outShape = op.result()->type.shape; // empty for a scalar
    int64_t outElems = 1;
    for (int64_t d : outShape)
      outElems *= d;
    Value *base = sharedScratch(static_cast<uint64_t>(outElems) * m.warpsPerCTA * elemBytes, op);
    Value *warpIdx = warpIndex(m);

    std::vector<Value *> slots; // index of (element, warp 0) for each result register
    for (unsigned r = 0; r < out.numRegs(); ++r)
      slots.push_back(b_.CreateMul(linearIndex(coordinates(out, r), outShape), i32(m.warpsPerCTA)));

    BasicBlock *write = BasicBlock::Create(ctx_, "reduce.write", kernel_);
    BasicBlock *written = BasicBlock::Create(ctx_, "reduce.written", kernel_);
    b_.CreateCondBr(b_.CreateICmpEQ(laneIndex(m), i32(0)), write, written);
    b_.SetInsertPoint(write);
    for (unsigned r = 0; r < out.numRegs(); ++r) {
      if (out.isDuplicateRegister(r))
        continue;
      Value *addr = b_.CreateGEP(memTy, base, b_.CreateAdd(slots[r], warpIdx));
      b_.CreateStore(toMemory(acc[r], elem), addr);
    }
    b_.CreateBr(written);
    b_.SetInsertPoint(written);
    barrier();
    for (unsigned r = 0; r < out.numRegs(); ++r) {
      Value *v = nullptr;
      for (unsigned w = 0; w < warps; ++w) { // same order in every thread
        Value *addr = b_.CreateGEP(memTy, base, b_.CreateAdd(slots[r], i32(w)));
        Value *e = fromMemory(b_.CreateLoad(memTy, addr), elem);
        v = v ? combine(op, kind, elem, v, e) : e;
      }
      acc[r] = v;
    }
    barrier(); // the scratch may be reused right after
  }
  define(op.result(), std::move(acc));
}

} // namespace tessera::codegen
