// sort (tl.sort): a bitonic sorting network along the last dim, through
// shared memory. Every element is stored at its row-major index; for each
// merge size k = 2, 4, ... n and distance j = k/2 ... 1, every element reads
// itself and its partner (position ^ j; the row-major index ^ j, the last dim
// being a power of two), keeps the smaller or the larger of the two (by `>`,
// as Triton's compare-and-swap), a barrier, the writes, a barrier.
// log2(n)(log2(n)+1)/2 steps for any layout; copies held by several threads
// write identical values. The interpreter runs the same network.
#include "compiler/codegen/Lowering.h"

namespace tessera::codegen {

using namespace llvm;

// a > b on elements of `t` (floats ordered: NaN is never greater).
Value *KernelLowering::greaterThan(Value *a, Value *b, const ir::Type &t) {
  if (t.isFloatElement()) {
    if (a->getType()->getPrimitiveSizeInBits() < 32) { // f16/bf16 compare exactly in f32
      a = b_.CreateFPExt(a, b_.getFloatTy());
      b = b_.CreateFPExt(b, b_.getFloatTy());
    }
    return b_.CreateFCmpOGT(a, b);
  }
  return ir::isSigned(t.scalar) && t.scalar != ir::ScalarType::I1 ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b);
}

void KernelLowering::lowerSort(ir::Operation &op) {
  ir::Value *x = op.operand(0);
  const ir::Type elem = x->type.element();
  if (elem.scalar == ir::ScalarType::F8E4M3 || elem.scalar == ir::ScalarType::F8E5M2)
    notSupported(op, "sorting fp8 values (convert them first)");
  DistributedLayout layout = layoutOf(x, op);
  const std::vector<int64_t> &shape = x->type.shape;
  const int64_t n = shape.back();
  const bool descending = op.intAttr("descending") != 0;
  Type *memTy = memoryType(elem, &op);
  const uint64_t elemBytes = memTy->getPrimitiveSizeInBits() / 8;
  Value *base = sharedScratch(static_cast<uint64_t>(x->type.numElements()) * elemBytes, op);
  auto address = [&](Value *index) { return b_.CreateGEP(memTy, base, index); };
  auto loadAt = [&](Value *index) { return fromMemory(b_.CreateLoad(memTy, address(index)), elem); };

  const unsigned regs = layout.numRegs();
  std::vector<Value *> index(regs), position(regs);
  for (unsigned r = 0; r < regs; ++r) {
    std::vector<Value *> c = coordinates(layout, r);
    index[r] = linearIndex(c, shape);
    position[r] = c.back();
  }
  auto storeAll = [&](const std::vector<Value *> &values) {
    for (unsigned r = 0; r < regs; ++r)
      if (!layout.isDuplicateRegister(r))
        b_.CreateStore(toMemory(values[r], elem), address(index[r]));
  };

  storeAll(std::vector<Value *>(lookup(x).begin(), lookup(x).end()));
  barrier();
  for (int64_t k = 2; k <= n; k *= 2)
    for (int64_t j = k / 2; j >= 1; j /= 2) {
      std::vector<Value *> next(regs);
      for (unsigned r = 0; r < regs; ++r) {
        if (layout.isDuplicateRegister(r))
          continue;
        Value *mine = loadAt(index[r]);
        Value *theirs = loadAt(b_.CreateXor(index[r], i32(j)));
        // Runs of k elements alternate ascending / descending; the last merge (k = n) is one run.
        Value *ascending = b_.CreateICmpEQ(b_.CreateAnd(position[r], i32(k)), i32(0));
        if (descending)
          ascending = b_.CreateNot(ascending);
        Value *lower = b_.CreateICmpEQ(b_.CreateAnd(position[r], i32(j)), i32(0));
        Value *keepSmaller = b_.CreateICmpEQ(ascending, lower);
        Value *mineGreater = greaterThan(mine, theirs, elem);
        Value *smaller = b_.CreateSelect(mineGreater, theirs, mine);
        Value *larger = b_.CreateSelect(mineGreater, mine, theirs);
        next[r] = b_.CreateSelect(keepSmaller, smaller, larger);
      }
      barrier(); // every read of this step before any write
      storeAll(next);
      barrier();
    }
  Regs out;
  for (unsigned r = 0; r < regs; ++r)
    out.push_back(loadAt(index[r]));
  define(op.result(), std::move(out));
  barrier(); // the scratch may be reused right after
}

} // namespace tessera::codegen
