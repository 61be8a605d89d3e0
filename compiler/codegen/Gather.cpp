// gather (tl.gather): src goes to shared memory at its row-major index, a
// barrier, each result register (laid out as its index) loads src at its own
// coordinates with the axis coordinate replaced by its index value, a barrier.
// An index outside [0, n) reads src at index mod n (Triton leaves it
// undefined; the mask keeps the read inside the scratch space). The
// interpreter reports such an index.
#include "compiler/codegen/Lowering.h"

namespace tessera::codegen {

using namespace llvm;

void KernelLowering::lowerGather(ir::Operation &op) {
  ir::Value *src = op.operand(0), *index = op.operand(1), *result = op.result();
  const ir::Type elem = src->type.element();
  const std::vector<int64_t> &srcShape = src->type.shape;
  const unsigned axis = static_cast<unsigned>(op.intAttr("axis"));
  Type *memTy = memoryType(elem, &op);
  const uint64_t elemBytes = memTy->isPointerTy() ? 8 : memTy->getPrimitiveSizeInBits() / 8;
  Value *base = sharedScratch(static_cast<uint64_t>(src->type.numElements()) * elemBytes, op);

  DistributedLayout srcLayout = layoutOf(src, op);
  const Regs &srcRegs = lookup(src);
  for (unsigned r = 0; r < srcRegs.size(); ++r) {
    if (srcLayout.isDuplicateRegister(r))
      continue; // copies in other threads write the same value
    Value *at = linearIndex(coordinates(srcLayout, r), srcShape);
    b_.CreateStore(toMemory(srcRegs[r], elem), b_.CreateGEP(memTy, base, at));
  }
  barrier();

  if (!sameLayout(result->layout, index->layout))
    unsupported(op, "the result must have its index's layout");
  DistributedLayout layout = layoutOf(result, op);
  const Regs &indices = lookup(index);
  Regs out;
  for (unsigned r = 0; r < layout.numRegs(); ++r) {
    std::vector<Value *> c = coordinates(layout, r);
    Value *i = b_.CreateZExtOrTrunc(indices[r], b_.getInt32Ty()); // only the bits below n (a power of two) count
    c[axis] = b_.CreateAnd(i, i32(srcShape[axis] - 1));
    out.push_back(fromMemory(b_.CreateLoad(memTy, b_.CreateGEP(memTy, base, linearIndex(c, srcShape))), elem));
  }
  define(result, std::move(out));
  barrier(); // the scratch may be reused right after
}

} // namespace tessera::codegen
