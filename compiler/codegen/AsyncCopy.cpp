// Shared-memory buffers and cp.async, the ops of the pipeline pass
// (compiler/passes/SoftwarePipeline.cpp):
//
//   local_alloc    reserves [stages x rows x cols] at the bottom of the free
//                  shared memory (a stack: local_dealloc pops it); the
//                  scratch space of other ops starts above what is reserved.
//   async_copy     cp.async.{ca,cg}.shared.global of 4/8/16 bytes per group of
//                  consecutive registers along the row, src-size 0 where the
//                  predicate or mask is off (cp.async writes zeros then);
//                  where the row is not contiguous per thread, an ordinary
//                  predicated load and shared store per element.
//   async_commit   cp.async.commit_group
//   async_wait     cp.async.wait_group N
//   local_store    a register value into a stage (once, before a loop that
//                  reads it every iteration; MmaDot.cpp's stageToShared)
//   local_load     nothing moves: the dot reads its operand from the stage
//                  with ldmatrix (MmaDot.cpp).
//
// Tiles are stored swizzled (compiler/ir/Layout.h, Shared): sharedElementOffset
// is the one place that maps (row, col) of a tile to its byte offset.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/InlineAsm.h>

namespace tessera::codegen {

using namespace llvm;

namespace {

unsigned log2u(unsigned v) {
  unsigned l = 0;
  while ((1u << l) < v) ++l;
  return l;
}

} // namespace

Value *KernelLowering::sharedStoredRow(const ir::Layout &tile, Value *row) {
  if (tile.opIdx != 0 || tile.blockCols) return row;
  // Operand A of mma.sync: block row 16q + 2g + h is stored at 16q + 8h + g,
  // so the rows g = 0..7 that one ldmatrix matrix reads are consecutive
  // (wgmma tiles keep natural rows: the accumulator's order is the instruction's).
  Value *q = b_.CreateAnd(row, ~15u), *h = b_.CreateAnd(row, 1u), *g = b_.CreateAnd(b_.CreateLShr(row, 1u), 7u);
  return b_.CreateOr(q, b_.CreateOr(b_.CreateShl(h, 3u), g));
}

Value *KernelLowering::sharedChunkOffset(const ir::Layout &tile, int64_t rowBytes, Value *storedRow, Value *chunk) {
  Value *phase = b_.CreateAnd(b_.CreateLShr(storedRow, log2u(tile.perPhase)), tile.maxPhase - 1);
  Value *physical = b_.CreateXor(chunk, phase);
  return b_.CreateAdd(b_.CreateMul(storedRow, i32(rowBytes)), b_.CreateShl(physical, 4u));
}

Value *KernelLowering::sharedElementOffset(const ir::Layout &tile, int64_t rows, int64_t cols, unsigned elemBytes,
                                           Value *row, Value *col) {
  if (tile.columnGroups > 1) {
    // A B tile of a dot whose warpgroups split N (Layout.h): block column n goes to
    // ((n / 8) % G) * (N / G) + (n / (8 G)) * 8 + n % 8. N is the stored rows of a transposed tile.
    Value *&n = tile.transposed ? row : col;
    const int64_t extent = tile.transposed ? rows : cols, groups = tile.columnGroups;
    Value *group = b_.CreateAnd(b_.CreateLShr(n, 3u), static_cast<uint64_t>(groups - 1));
    Value *within = b_.CreateShl(b_.CreateLShr(n, 3u + log2u(static_cast<unsigned>(groups))), 3u);
    n = b_.CreateOr(b_.CreateOr(b_.CreateMul(group, i32(extent / groups)), within), b_.CreateAnd(n, 7u));
  }
  // wgmma tiles: line block `col / blockCols`, then the column within it.
  Value *blockStart = nullptr;
  if (tile.blockCols && cols > tile.blockCols) {
    blockStart = b_.CreateMul(b_.CreateLShr(col, log2u(tile.blockCols)), i32(rows * tile.blockCols * elemBytes));
    col = b_.CreateAnd(col, tile.blockCols - 1);
    cols = tile.blockCols;
  }
  const unsigned vecShift = log2u(tile.vec);
  Value *chunk = b_.CreateLShr(col, vecShift), *within = b_.CreateAnd(col, tile.vec - 1);
  Value *chunkStart = sharedChunkOffset(tile, cols * elemBytes, sharedStoredRow(tile, row), chunk);
  Value *offset = b_.CreateAdd(chunkStart, b_.CreateMul(within, i32(elemBytes)));
  return blockStart ? b_.CreateAdd(blockStart, offset) : offset;
}

void KernelLowering::lowerLocalAlloc(ir::Operation &op) {
  const ir::Type &t = op.result()->type;
  if (!op.result()->layout || op.result()->layout->kind != ir::Layout::Kind::Shared)
    unsupported(op, "a buffer needs a #shared layout");
  const uint64_t bytes = static_cast<uint64_t>(t.numElements()) * (bitWidth(t.scalar) / 8);
  // wgmma reads swizzled tiles in 1024-byte atoms: those start aligned.
  buffers_[op.result()] = reserveShared(op, bytes, op.result()->layout->blockCols ? 1024 : 128);
}

KernelLowering::SharedBuffer KernelLowering::reserveShared(ir::Operation &op, uint64_t bytes, uint64_t align) {
  const uint64_t offset = (reservedShared_ + align - 1) / align * align;
  if (offset + bytes > UINT32_MAX) unsupported(op, "needs more than 4 GiB of shared memory");
  sharedScratch(0, op); // creates the array
  reservedShared_ = offset + bytes;
  sharedBytes_ = static_cast<unsigned>(std::max<uint64_t>(sharedBytes_, reservedShared_));
  if (group_) groupPeak_ = std::max(groupPeak_, reservedShared_);
  return {groupShared(b_.CreateConstGEP1_64(b_.getInt8Ty(), smem_, offset), offset), offset};
}

void KernelLowering::lowerLocalDealloc(ir::Operation &op) {
  auto it = buffers_.find(op.operand(0));
  if (it == buffers_.end()) unsupported(op, "the buffer was not allocated");
  if (op.operand(0)->definingOp->code == ir::OpCode::MbarrierAlloc) lowerMbarrierDealloc(op);
  reservedShared_ = it->second.offset; // the pass frees in reverse order of allocation
}

Value *KernelLowering::stageBase(ir::Operation &op, ir::Value *buffer, ir::Value *stage) {
  auto it = buffers_.find(buffer);
  if (it == buffers_.end()) unsupported(op, "the buffer was not allocated");
  const ir::Type &t = buffer->type;
  const int64_t stageBytes = t.shape[1] * t.shape[2] * (bitWidth(t.scalar) / 8);
  return b_.CreateGEP(b_.getInt8Ty(), it->second.base, b_.CreateMul(lookup(stage)[0], i32(stageBytes)));
}

void KernelLowering::lowerAsyncCopy(ir::Operation &op) {
  ir::Value *ptr = op.operand(0), *buffer = op.operand(1);
  const bool masked = op.hasAttr("has_mask") && op.intAttr("has_mask");
  const ir::Layout &tile = *buffer->layout;
  const ir::Type elem = buffer->type.element();
  const unsigned elemBits = bitWidth(elem.scalar), elemBytes = elemBits / 8;
  const int64_t cols = buffer->type.shape[2];
  DistributedLayout layout = layoutOf(ptr, op);
  const Regs &ptrs = lookup(ptr);
  const Regs *mask = masked ? &lookup(op.operand(4)) : nullptr;
  Value *pred = lookup(op.operand(3))[0];
  Value *base = stageBase(op, buffer, op.operand(2));
  Type *memTy = memoryType(elem, &op);

  // Registers along the stored row (dim 1, or dim 0 for a transposed tile)
  // in groups of `vec` (at most one chunk). A transposed copy (a block that
  // reaches the dot through trans) has the stage's dims swapped in ptr.
  const bool swapped = op.hasAttr("transpose") && op.intAttr("transpose");
  const unsigned along = tile.transposed ? 0 : 1;
  const unsigned ptrAlong = swapped ? 1 - along : along;
  const int64_t rowLength = tile.transposed ? buffer->type.shape[1] : cols;
  unsigned vec = 1;
  if (layout.order()[0] == ptrAlong && !layout.dim(ptrAlong).sliced)
    vec = std::min(vectorWidth(op, layout, elemBits, masked), tile.vec);
  const unsigned bytes = vec * elemBytes;
  for (unsigned r = 0; r < layout.numRegs(); ++r) {
    if (layout.isDuplicateRegister(r)) continue;
    std::vector<unsigned> idx = layout.regIndex(r);
    if (idx[ptrAlong] % vec != 0) continue; // part of the group its first register copies
    std::vector<Value *> c = coordinates(layout, r);
    if (swapped) std::swap(c[0], c[1]); // the stage's (row, col)
    const int64_t storedRows = buffer->type.shape[tile.transposed ? 2 : 1];
    Value *offset = tile.transposed ? sharedElementOffset(tile, storedRows, rowLength, elemBytes, c[1], c[0])
                                    : sharedElementOffset(tile, storedRows, rowLength, elemBytes, c[0], c[1]);
    Value *dst = b_.CreateGEP(b_.getInt8Ty(), base, offset);
    Value *on = pred;
    if (mask) on = b_.CreateAnd(on, (*mask)[r]);
    if (Value *owner = ownerPredicate(layout, r)) on = b_.CreateAnd(on, owner);
    if (bytes >= 4) {
      // src-size 0 reads nothing and fills the destination with zeros.
      Value *srcSize = b_.CreateSelect(on, i32(bytes), i32(0));
      std::string text = std::string("cp.async.") + (bytes == 16 ? "cg" : "ca") + ".shared.global [$0], [$1], " +
                         std::to_string(bytes) + ", $2;";
      auto *type = FunctionType::get(b_.getVoidTy(), {b_.getInt64Ty(), ptrs[r]->getType(), b_.getInt32Ty()}, false);
      InlineAsm *copy = InlineAsm::get(type, text, "l,l,r,~{memory}", /*hasSideEffects=*/true);
      b_.CreateCall(copy, {b_.CreatePtrToInt(dst, b_.getInt64Ty()), ptrs[r], srcSize});
      continue;
    }
    // Too narrow for cp.async: load now (zero where off) and store to shared.
    Regs value = loadVector(op, memTy, 1, ptrs[r], on, {Constant::getNullValue(memTy)});
    b_.CreateAlignedStore(value[0], dst, Align(elemBytes));
  }
}

void KernelLowering::lowerAsyncGroup(ir::Operation &op) {
  emitAsm(op.code == ir::OpCode::AsyncCommit ? std::string("cp.async.commit_group;")
                                             : "cp.async.wait_group " + std::to_string(op.intAttr("pending")) + ";");
}

void KernelLowering::lowerLocalStore(ir::Operation &op) {
  stageToShared(op, op.operand(0), stageBase(op, op.operand(1), op.operand(2)), *op.operand(1)->layout);
}

void KernelLowering::lowerLocalLoad(ir::Operation &op) {
  ir::Value *result = op.result();
  if (!result->layout || result->layout->kind != ir::Layout::Kind::DotOperand)
    unsupported(op, "local_load feeds tensor-core dots only");
  ir::LayoutRef tile = op.operand(0)->layout;
  if (op.hasAttr("transpose") && op.intAttr("transpose")) {
    // The stage read transposed: a wgmma tile's bytes are the same N- or K-major (A: K- or
    // M-major), only the descriptor reads them the other way.
    if (!tile->blockCols) unsupported(op, "a transposed local_load needs a wgmma tile");
    auto view = std::make_shared<ir::Layout>(*tile);
    view->transposed = !tile->transposed;
    view->opIdx = result->layout->opIdx;
    tile = view;
  }
  sharedOperands_[result] = {stageBase(op, op.operand(0), op.operand(1)), tile};
  define(result, {});
}

} // namespace tessera::codegen
