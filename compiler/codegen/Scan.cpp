// scan (tl.associative_scan, cumsum, cumprod): an inclusive scan along one
// axis with the op's combine region, through shared memory (Hillis-Steele):
// every element is stored at its row-major index, then for offset = 1, 2, 4,
// ... < n each element combines with the one `offset` before it along the
// axis (after it for a reverse scan), with barriers between the reads and the
// writes. log2(n) steps for any layout; copies held by several threads write
// identical values. The left operand of the combine is always the earlier
// element (the later one for reverse: a reverse scan is a flipped forward scan).
#include "compiler/codegen/Lowering.h"

namespace tessera::codegen {

using namespace llvm;

void KernelLowering::lowerScan(ir::Operation &op) {
  const size_t n = op.operands.size();
  ir::Value *first = op.operand(0);
  DistributedLayout layout = layoutOf(first, op);
  const std::vector<int64_t> &shape = first->type.shape;
  const unsigned axis = static_cast<unsigned>(op.intAttr("axis"));
  const bool reverse = op.hasAttr("reverse") && op.intAttr("reverse");
  const int64_t extent = shape.at(axis);
  int64_t stride = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d)
    stride *= shape[d];
  const int64_t numElements = first->type.numElements();

  std::vector<const Regs *> x;
  std::vector<ir::Type> elems;
  std::vector<Type *> memTys;
  std::vector<uint64_t> offsets;
  uint64_t bytes = 0;
  for (ir::Value *v : op.operands) {
    if (!sameLayout(v->layout, first->layout))
      unsupported(op, "all operands must share one layout");
    x.push_back(&lookup(v));
    elems.push_back(v->type.element());
    Type *memTy = memoryType(elems.back(), &op);
    memTys.push_back(memTy);
    offsets.push_back(bytes);
    uint64_t elemBytes = memTy->isPointerTy() ? 8 : memTy->getPrimitiveSizeInBits() / 8;
    bytes = (bytes + static_cast<uint64_t>(numElements) * elemBytes + 15) / 16 * 16;
  }
  Value *base = sharedScratch(bytes, op);
  auto address = [&](size_t i, Value *index) {
    Value *segment = b_.CreateConstGEP1_64(b_.getInt8Ty(), base, offsets[i]);
    return b_.CreateGEP(memTys[i], segment, index);
  };

  const unsigned regs = layout.numRegs();
  std::vector<Value *> index(regs), position(regs);
  for (unsigned r = 0; r < regs; ++r) {
    std::vector<Value *> c = coordinates(layout, r);
    index[r] = linearIndex(c, shape);
    position[r] = c[axis];
  }
  auto storeAll = [&](const std::vector<std::vector<Value *>> &values) {
    for (unsigned r = 0; r < regs; ++r) {
      if (layout.isDuplicateRegister(r))
        continue;
      for (size_t i = 0; i < n; ++i)
        b_.CreateStore(toMemory(values[r][i], elems[i]), address(i, index[r]));
    }
  };
  auto loadAt = [&](size_t i, Value *at) { return fromMemory(b_.CreateLoad(memTys[i], address(i, at)), elems[i]); };

  std::vector<std::vector<Value *>> current(regs, std::vector<Value *>(n));
  for (unsigned r = 0; r < regs; ++r)
    for (size_t i = 0; i < n; ++i)
      current[r][i] = (*x[i])[r];
  storeAll(current);
  barrier();
  for (int64_t offset = 1; offset < extent; offset *= 2) {
    std::vector<std::vector<Value *>> next(regs);
    for (unsigned r = 0; r < regs; ++r) {
      if (layout.isDuplicateRegister(r))
        continue;
      // The partner `offset` away along the axis, if inside the block.
      Value *valid = reverse ? b_.CreateICmpSLT(position[r], i32(extent - offset))
                             : b_.CreateICmpSGE(position[r], i32(offset));
      Value *delta = i32(offset * stride);
      Value *partner = reverse ? b_.CreateAdd(index[r], delta) : b_.CreateSub(index[r], delta);
      partner = b_.CreateSelect(valid, partner, index[r]);
      std::vector<Value *> mine, theirs;
      for (size_t i = 0; i < n; ++i) {
        mine.push_back(loadAt(i, index[r]));
        theirs.push_back(loadAt(i, partner));
      }
      std::vector<Value *> combined = applyCombineRegion(op, theirs, mine);
      for (size_t i = 0; i < n; ++i)
        combined[i] = b_.CreateSelect(valid, combined[i], mine[i]);
      next[r] = combined;
    }
    barrier(); // every read of this step before any write
    storeAll(next);
    barrier();
  }
  for (size_t i = 0; i < n; ++i) {
    Regs out;
    for (unsigned r = 0; r < regs; ++r)
      out.push_back(loadAt(i, index[r]));
    define(op.result(static_cast<unsigned>(i)), std::move(out));
  }
  barrier(); // the scratch may be reused right after
}

} // namespace tessera::codegen
