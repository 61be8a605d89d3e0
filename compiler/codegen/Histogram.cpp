// histogram (tl.histogram): num_bins i32 counters in shared memory. Every
// thread zeroes the bins its result registers hold, a barrier, the thread
// owning each element (one copy of it, where the mask holds) adds 1 to its
// bin with red.shared.add when the value is in [0, num_bins) (others count
// nowhere), a barrier, each result register reads its bin, a barrier.
#include "compiler/codegen/Lowering.h"

namespace tessera::codegen {

using namespace llvm;

void KernelLowering::lowerHistogram(ir::Operation &op) {
  ir::Value *x = op.operand(0), *result = op.result();
  const bool masked = op.operands.size() > 1;
  const int64_t bins = op.intAttr("num_bins");
  Value *base = sharedScratch(static_cast<uint64_t>(bins) * 4, op);
  DistributedLayout binLayout = layoutOf(result, op);
  std::vector<Value *> binIndex;
  for (unsigned r = 0; r < binLayout.numRegs(); ++r) {
    binIndex.push_back(coordinates(binLayout, r)[0]);
    if (!binLayout.isDuplicateRegister(r))
      b_.CreateStore(i32(0), b_.CreateGEP(b_.getInt32Ty(), base, binIndex.back()));
  }
  barrier();

  DistributedLayout layout = layoutOf(x, op);
  const Regs &values = lookup(x);
  for (unsigned r = 0; r < values.size(); ++r) {
    if (layout.isDuplicateRegister(r))
      continue;
    // In 64 bits, compared unsigned: a negative value is far out of range (and num_bins may not fit x's type).
    const ir::Type &t = x->type;
    Value *v = ir::isSigned(t.scalar) ? b_.CreateSExt(values[r], b_.getInt64Ty()) : b_.CreateZExt(values[r], b_.getInt64Ty());
    Value *count = b_.CreateICmpULT(v, b_.getInt64(static_cast<uint64_t>(bins)));
    if (masked)
      count = b_.CreateAnd(count, lookup(op.operand(1))[r]);
    count = andPredicates(count, ownerPredicate(layout, r));
    Value *bin = b_.CreateGEP(b_.getInt32Ty(), base, b_.CreateZExtOrTrunc(v, b_.getInt32Ty()));
    asmCall("{ .reg .pred p; setp.ne.b32 p, $1, 0; @p red.shared.add.u32 [$0], 1; }", "r,r",
            {sharedAddress32(bin), b_.CreateZExt(count, b_.getInt32Ty())});
  }
  barrier();

  Regs out;
  for (unsigned r = 0; r < binLayout.numRegs(); ++r)
    out.push_back(b_.CreateLoad(b_.getInt32Ty(), b_.CreateGEP(b_.getInt32Ty(), base, binIndex[r])));
  define(result, std::move(out));
  barrier(); // the scratch may be reused right after
}

} // namespace tessera::codegen
