// dot(a <[B]xMxK>, b <[B]xKxN>, acc <[B]xMxN>) (2-D, or batched 3-D): a and b
// go to shared memory (row-major),
// then each thread runs a loop over k for the result elements it holds:
// acc[m, n] += a[m, k] * b[k, n], an FMA per step in the accumulation type
// (f32 for 16-bit and f32 inputs, f64 for f64, i32 for ints), converted to
// the result type at the end. Correct for any layouts; tensor cores are a
// separate lowering. input_precision="tf32" is computed in full f32 here.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/Intrinsics.h>

#include <map>

namespace tessera::codegen {

using namespace llvm;

void KernelLowering::lowerDot(ir::Operation &op) {
  if (op.result()->layout && op.result()->layout->kind == ir::Layout::Kind::Mma)
    return lowerMmaDot(op);
  ir::Value *a = op.operand(0), *b = op.operand(1), *acc = op.operand(2), *result = op.result();
  const size_t rank = a->type.rank(); // 2, or 3 with a leading batch dim
  const int64_t M = a->type.shape[rank - 2], K = a->type.shape[rank - 1], N = b->type.shape[rank - 1];
  const int64_t batches = rank == 3 ? a->type.shape[0] : 1;
  const ir::Type inElem = a->type.element(), outElem = result->type.element();
  const bool floats = inElem.isFloatElement();
  const ir::Type accElem = !floats ? ir::Type(ir::ScalarType::I32)
                           : (inElem.scalar == ir::ScalarType::F64 || outElem.scalar == ir::ScalarType::F64)
                               ? ir::Type(ir::ScalarType::F64) : ir::Type(ir::ScalarType::F32);
  if (floats != outElem.isFloatElement())
    unsupported(op, "float inputs need a float accumulator and int inputs an int one");
  DistributedLayout out = layoutOf(result, op);
  if (!sameLayout(acc->layout, result->layout))
    unsupported(op, "the accumulator must have the result's layout");

  Type *memTy = memoryType(inElem, &op);
  const uint64_t elemBytes = memTy->getPrimitiveSizeInBits() / 8;
  const uint64_t bOffset = (static_cast<uint64_t>(batches * M * K) * elemBytes + 15) / 16 * 16;
  Value *base = sharedScratch(bOffset + static_cast<uint64_t>(batches * K * N) * elemBytes, op);
  Value *aBase = base;
  Value *bBase = b_.CreateConstGEP1_64(b_.getInt8Ty(), base, bOffset);
  for (auto [v, dst] : {std::pair{a, aBase}, std::pair{b, bBase}}) {
    DistributedLayout layout = layoutOf(v, op);
    const Regs &regs = lookup(v);
    for (unsigned r = 0; r < layout.numRegs(); ++r) {
      if (layout.isDuplicateRegister(r))
        continue;
      Value *index = linearIndex(coordinates(layout, r), v->type.shape);
      b_.CreateStore(regs[r], b_.CreateGEP(memTy, dst, index));
    }
  }
  barrier();

  // Rows of a and columns of b a thread needs: one per register index along
  // the result's (batch and) row/column dims (registers sharing one share the loads).
  const unsigned rowDim = out.valueDims()[rank - 2], colDim = out.valueDims()[rank - 1];
  using Key = std::pair<unsigned, unsigned>; // (register index along the batch dim, along row/col)
  std::map<Key, Value *> rowStart, colStart;
  std::vector<Key> rowOf(out.numRegs()), colOf(out.numRegs());
  for (unsigned r = 0; r < out.numRegs(); ++r) {
    std::vector<unsigned> index = out.regIndex(r);
    const unsigned batchIndex = rank == 3 ? index[out.valueDims()[0]] : 0;
    rowOf[r] = {batchIndex, index[rowDim]};
    colOf[r] = {batchIndex, index[colDim]};
    std::vector<Value *> c = coordinates(out, r);
    Value *batch = rank == 3 ? c[0] : i32(0);
    Value *m = c[rank - 2], *n = c[rank - 1];
    if (!rowStart.count(rowOf[r])) // a[batch, m, 0]
      rowStart[rowOf[r]] = b_.CreateMul(b_.CreateAdd(b_.CreateMul(batch, i32(M)), m), i32(K));
    if (!colStart.count(colOf[r])) // b[batch, 0, n]
      colStart[colOf[r]] = b_.CreateAdd(b_.CreateMul(batch, i32(K * N)), n);
  }

  Type *accTy = elementType(accElem, &op);
  Regs init; // in the accumulation type, before the loop
  for (Value *v : lookup(acc))
    init.push_back(castElement(op, v, outElem, accElem));
  BasicBlock *pre = b_.GetInsertBlock();
  BasicBlock *loop = BasicBlock::Create(ctx_, "dot.k", kernel_);
  BasicBlock *done = BasicBlock::Create(ctx_, "dot.done", kernel_);
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  PHINode *k = b_.CreatePHI(b_.getInt32Ty(), 2, "k");
  k->addIncoming(i32(0), pre);
  std::vector<PHINode *> sums;
  for (unsigned r = 0; r < out.numRegs(); ++r) {
    PHINode *phi = b_.CreatePHI(accTy, 2);
    phi->addIncoming(init[r], pre);
    sums.push_back(phi);
  }
  // The loads and conversions are emitted in `loop` but need `pre` values only.
  std::map<Key, Value *> aValue, bValue;
  for (auto &[row, start] : rowStart) {
    Value *v = b_.CreateLoad(memTy, b_.CreateGEP(memTy, aBase, b_.CreateAdd(start, k)));
    aValue[row] = castElement(op, v, inElem, accElem);
  }
  for (auto &[col, start] : colStart) {
    Value *v = b_.CreateLoad(memTy, b_.CreateGEP(memTy, bBase, b_.CreateAdd(b_.CreateMul(k, i32(N)), start)));
    bValue[col] = castElement(op, v, inElem, accElem);
  }
  std::vector<Value *> next;
  for (unsigned r = 0; r < out.numRegs(); ++r) {
    Value *x = aValue[rowOf[r]], *y = bValue[colOf[r]];
    next.push_back(floats ? b_.CreateIntrinsic(Intrinsic::fma, {accTy}, {x, y, sums[r]})
                          : b_.CreateAdd(b_.CreateMul(x, y), sums[r]));
  }
  Value *kNext = b_.CreateAdd(k, i32(1));
  BasicBlock *latch = b_.GetInsertBlock();
  k->addIncoming(kNext, latch);
  for (unsigned r = 0; r < out.numRegs(); ++r)
    sums[r]->addIncoming(next[r], latch);
  b_.CreateCondBr(b_.CreateICmpULT(kNext, i32(K)), loop, done);

  b_.SetInsertPoint(done);
  Regs values;
  for (unsigned r = 0; r < out.numRegs(); ++r)
    values.push_back(castElement(op, next[r], accElem, outElem));
  barrier(); // the scratch may be reused right after
  define(result, std::move(values));
}

} // namespace tessera::codegen
