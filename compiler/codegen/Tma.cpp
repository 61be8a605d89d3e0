// desc_load / desc_store: one block read or written through the TMA unit (Hopper, sm_90+). The
// descriptor is a 128-byte CUtensorMap kernel parameter (__grid_constant__:
// the TMA unit reads it where the launch put it) that the runtime encodes on
// the host (runtime/TensorMap.cpp), in boxes of at most 128 bytes per row,
// swizzled like wgmma's operand tiles (Layout::sharedWgmmaOperand), so a
// block wider than 128 bytes arrives as several boxes side by side.
//
// Without the pipeline pass, each desc_load stands alone:
//   barrier                                  -- the scratch is free
//   thread 0: mbarrier.init 1; fence.mbarrier_init; fence.proxy.async
//   barrier                                  -- everyone sees the barrier
//   thread 0: arrive.expect_tx(bytes); one cp.async.bulk.tensor per box
//   everyone: try_wait.parity 0 until the bytes have landed
//   every thread reads its elements of the swizzled tile
//   barrier; thread 0: mbarrier.inval        -- reusable by the next op
//
// In a pipelined loop (compiler/passes/SoftwarePipeline.cpp) the blocks go
// straight into the stages of a local_alloc ring that wgmma reads:
//   mbarrier_alloc   one mbarrier per stage (stack space like local_alloc),
//                    initialised by thread 0 between two barriers;
//                    local_dealloc invalidates them between two barriers
//   async_tma_copy   thread 0, where pred holds: arrive.expect_tx(bytes) on
//                    the stage's mbarrier and the block's boxes into the stage
//   mbarrier_wait    every thread: try_wait.parity(phase) on the stage's mbarrier
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/InlineAsm.h>

namespace tessera::codegen {

using namespace llvm;

namespace {

// "cp.async.bulk.tensor.2d..." for a rank-2 block: coordinates innermost first.
std::string tmaLoadAsm(size_t rank) {
  std::string coords;
  for (size_t i = 0; i < rank; ++i)
    coords += (i ? ", $" : "$") + std::to_string(2 + i);
  return "cp.async.bulk.tensor." + std::to_string(rank) +
         "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {" + coords + "}], [$" +
         std::to_string(2 + rank) + "];";
}

// The store the other way: [$0, {coordinates innermost first}], [tile]; with `reduce` ("min",
// "max", ...) the TMA unit combines the tile with the tensor instead (the element type is the map's).
std::string tmaStoreAsm(size_t rank, const std::string &reduce = "") {
  std::string coords;
  for (size_t i = 0; i < rank; ++i)
    coords += (i ? ", $" : "$") + std::to_string(1 + i);
  const std::string what = reduce.empty() ? "cp.async.bulk.tensor." + std::to_string(rank) + "d.global.shared::cta"
                                          : "cp.reduce.async.bulk.tensor." + std::to_string(rank) +
                                                "d.global.shared::cta." + reduce + ".tile";
  return what + ".bulk_group [$0, {" + coords + "}], [$" + std::to_string(1 + rank) + "];";
}

// "r,l,r,r,...": `count` 32-bit operands after the descriptor (and `first` before it).
std::string tmaConstraints(const std::string &first, size_t count) {
  std::string c = first;
  for (size_t i = 0; i < count; ++i) c += ",r";
  return c;
}

} // namespace

Value *KernelLowering::sharedAddress32(Value *ptr) {
  return b_.CreateTrunc(b_.CreatePtrToInt(ptr, b_.getInt64Ty()), b_.getInt32Ty());
}

CallInst *KernelLowering::asmCall(const std::string &text, const std::string &constraints, ArrayRef<Value *> args) {
  std::vector<Type *> types;
  for (Value *a : args) types.push_back(a->getType());
  InlineAsm *statement = InlineAsm::get(FunctionType::get(b_.getVoidTy(), types, false), text,
                                        constraints + (constraints.empty() ? "" : ",") + "~{memory}", true);
  return b_.CreateCall(statement, args);
}

void KernelLowering::convergentAsm(const std::string &text, const std::string &constraints, ArrayRef<Value *> args) {
  asmCall(text, constraints, args)->setConvergent();
}

void KernelLowering::onlyWhere(Value *cond, const std::function<void()> &body, const char *name) {
  BasicBlock *then = BasicBlock::Create(ctx_, name, kernel_);
  BasicBlock *after = BasicBlock::Create(ctx_, std::string(name) + ".after", kernel_);
  b_.CreateCondBr(cond, then, after);
  b_.SetInsertPoint(then);
  body();
  b_.CreateBr(after);
  b_.SetInsertPoint(after);
}

void KernelLowering::onLeaderThread(const std::function<void()> &body, Value *also) {
  Value *first = b_.CreateICmpEQ(tid_, i32(leaderThread_));
  onlyWhere(also ? b_.CreateAnd(first, also) : first, body, "tma.leader");
}

void KernelLowering::waitMbarrier(Value *bar, Value *parity) {
  BasicBlock *loop = BasicBlock::Create(ctx_, "mbarrier.wait", kernel_);
  BasicBlock *done = BasicBlock::Create(ctx_, "mbarrier.done", kernel_);
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  InlineAsm *tryWait = InlineAsm::get(
      FunctionType::get(b_.getInt32Ty(), {b_.getInt32Ty(), b_.getInt32Ty()}, false),
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\nselp.u32 $0, 1, 0, p;\n}",
      "=r,r,r,~{memory}", true);
  Value *arrived = b_.CreateCall(tryWait, {bar, parity});
  b_.CreateCondBr(b_.CreateICmpNE(arrived, i32(0)), done, loop);
  b_.SetInsertPoint(done);
}

void KernelLowering::checkTmaBlock(ir::Operation &op, const ir::Type &t) {
  if (arch_ != "sm_90" && arch_ != "sm_90a")
    notSupported(op, "tensor descriptors (TMA) need sm_90 or newer, not " + arch_);
  // A block of rank 3 to 5 is copied as one box of its rank (the descriptor's box is the whole block in
  // its leading dims): in shared memory it is the 2-D tile of its stacked rows (tmaStackedRows).
  if (t.rank() < 2 || t.rank() > 5)
    notSupported(op, "tensor descriptor blocks have 2 to 5 dimensions so far, not " + std::to_string(t.rank()));
  const unsigned elemBytes = ir::bitWidth(t.scalar) / 8;
  if (t.shape.back() * elemBytes < 32)
    notSupported(op, "a descriptor block's rows must span at least 32 bytes (" + std::to_string(t.shape.back()) +
                         " x " + std::to_string(elemBytes) + " bytes)");
}

// A block's rows stacked over its leading dims (rank 3 to 5: [L..., rows, cols] lands in shared memory
// as L x rows consecutive rows of each 128-byte box).
static int64_t tmaStackedRows(const ir::Type &t) {
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < t.rank(); ++i) rows *= t.shape[i];
  return rows;
}

// The stacked row of an element at `at` (its coordinates in the block) for tmaStackedRows' tile.
Value *KernelLowering::tmaStackedRow(const ir::Type &t, const std::vector<Value *> &at) {
  Value *row = at[0];
  for (size_t i = 1; i + 1 < t.rank(); ++i) row = b_.CreateAdd(b_.CreateMul(row, i32(t.shape[i])), at[i]);
  return row;
}

void KernelLowering::startTmaCopy(const ir::Type &t, Value *desc, const std::vector<Value *> &outer, Value *row0,
                                  Value *col0, Value *tile, Value *bar) {
  const unsigned elemBytes = ir::bitWidth(t.scalar) / 8;
  const int64_t rows = tmaStackedRows(t), cols = t.shape.back();
  asmCall("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r", {bar, i32(rows * cols * elemBytes)});
  const int64_t boxCols = std::min<int64_t>(cols, 128 / elemBytes);
  for (int64_t c = 0; c < cols; c += boxCols) {
    Value *dst = sharedAddress32(b_.CreateConstGEP1_64(b_.getInt8Ty(), tile, c * rows * elemBytes));
    std::vector<Value *> args = {dst, desc, b_.CreateAdd(col0, i32(c)), row0};
    args.insert(args.end(), outer.rbegin(), outer.rend()); // coordinates innermost first
    args.push_back(bar);
    asmCall(tmaLoadAsm(2 + outer.size()), tmaConstraints("r,l", 3 + outer.size()), args);
  }
}

void KernelLowering::initMbarriers(Value *first, int64_t count, int64_t arrivals) {
  onLeaderThread([&] {
    for (int64_t i = 0; i < count; ++i)
      asmCall("mbarrier.init.shared::cta.b64 [$0], " + std::to_string(arrivals) + ";", "r",
              {sharedAddress32(b_.CreateConstGEP1_64(b_.getInt8Ty(), first, 8 * i))});
    emitAsm("fence.mbarrier_init.release.cluster;");
    fenceProxyAsync(); // the space's last generic accesses come before the TMA's writes
  });
}

void KernelLowering::invalidateMbarriers(Value *first, int64_t count) {
  onLeaderThread([&] {
    for (int64_t i = 0; i < count; ++i)
      asmCall("mbarrier.inval.shared::cta.b64 [$0];", "r",
              {sharedAddress32(b_.CreateConstGEP1_64(b_.getInt8Ty(), first, 8 * i))});
  });
}

Value *KernelLowering::tmaScratchTile(ir::Operation &op, uint64_t tileBytes, uint64_t extraBytes) {
  // A 1024-byte boundary: the 128-byte swizzle repeats every 8 x 128 bytes.
  const uint64_t pad = (1024 - reservedShared_ % 1024) % 1024;
  return b_.CreateConstGEP1_64(b_.getInt8Ty(), sharedScratch(pad + tileBytes + extraBytes, op), pad);
}

// The offsets of a desc_load / desc_store (operands 1..rank): the leading dims' (outermost first), then row, col.
static void splitTmaOffsets(const std::vector<Value *> &offsets, std::vector<Value *> &outer, Value *&row0,
                            Value *&col0) {
  outer.assign(offsets.begin(), offsets.end() - 2);
  row0 = offsets[offsets.size() - 2];
  col0 = offsets.back();
}

void KernelLowering::lowerDescLoad(ir::Operation &op) {
  const ir::Type &t = op.result()->type;
  checkTmaBlock(op, t);
  const unsigned elemBits = ir::bitWidth(t.scalar), elemBytes = elemBits / 8;
  const size_t rank = t.rank();
  const int64_t rows = tmaStackedRows(t), cols = t.shape[rank - 1];
  const ir::LayoutRef tile = ir::Layout::sharedWgmmaOperand(1, cols, elemBits);
  const uint64_t tileBytes = static_cast<uint64_t>(rows * cols * elemBytes);

  Value *base = tmaScratchTile(op, tileBytes, 8); // its mbarrier after it
  Value *barSlot = b_.CreateConstGEP1_64(b_.getInt8Ty(), base, tileBytes);
  Value *bar = sharedAddress32(barSlot);
  Value *desc = lookup(op.operand(0))[0];

  barrier();
  initMbarriers(barSlot, 1, 1);
  barrier();
  std::vector<Value *> offsets, outer;
  for (size_t i = 1; i <= rank; ++i) offsets.push_back(lookup(op.operand(i))[0]);
  Value *row0 = nullptr, *col0 = nullptr;
  splitTmaOffsets(offsets, outer, row0, col0);
  onLeaderThread([&] { startTmaCopy(t, desc, outer, row0, col0, base, bar); });
  waitMbarrier(bar, i32(0));

  DistributedLayout layout = layoutOf(op.result(), op);
  Type *memTy = memoryType(t.element(), &op);
  Regs out;
  for (unsigned r = 0; r < layout.numRegs(); ++r) {
    std::vector<Value *> at = coordinates(layout, r);
    Value *offset = sharedElementOffset(*tile, rows, cols, elemBytes, tmaStackedRow(t, at), at[rank - 1]);
    out.push_back(b_.CreateLoad(memTy, b_.CreateGEP(b_.getInt8Ty(), base, offset)));
  }
  barrier();
  invalidateMbarriers(barSlot, 1);
  define(op.result(), std::move(out));
}

// desc_store: every thread writes its elements into a swizzled tile in shared
// memory (the layout desc_load reads), then one thread hands the tile to the TMA
// unit, box by box, and waits until it has been read before the space is
// reused. The TMA unit skips the elements outside the tensor.
//   barrier                                  -- the scratch is free
//   every thread: its elements into the tile; fence.proxy.async
//   barrier                                  -- the whole tile is written
//   thread 0: one cp.async.bulk.tensor store per box; commit; wait_group.read 0
//   barrier                                  -- the tile has been read
void KernelLowering::lowerDescStore(ir::Operation &op) {
  ir::Value *descArg = op.operand(0), *valueArg = op.operands.back();
  const ir::Type &t = valueArg->type;
  checkTmaBlock(op, t);
  const unsigned elemBits = ir::bitWidth(t.scalar), elemBytes = elemBits / 8;
  const size_t rank = t.rank();
  const int64_t rows = tmaStackedRows(t), cols = t.shape[rank - 1];
  const ir::LayoutRef tile = ir::Layout::sharedWgmmaOperand(1, cols, elemBits);
  const uint64_t tileBytes = static_cast<uint64_t>(rows * cols * elemBytes);
  Value *base = tmaScratchTile(op, tileBytes, 0);

  barrier();
  DistributedLayout layout = layoutOf(valueArg, op);
  const Regs &values = lookup(valueArg);
  for (unsigned r = 0; r < layout.numRegs(); ++r) { // replicated copies write the same value
    std::vector<Value *> at = coordinates(layout, r);
    Value *offset = sharedElementOffset(*tile, rows, cols, elemBytes, tmaStackedRow(t, at), at[rank - 1]);
    b_.CreateStore(toMemory(values[r], t.element()), b_.CreateGEP(b_.getInt8Ty(), base, offset));
  }
  fenceProxyAsync(); // generic writes, read by the TMA unit (the async proxy)
  barrier();
  std::vector<Value *> offsets, outer;
  for (size_t i = 1; i <= rank; ++i) offsets.push_back(lookup(op.operand(i))[0]);
  Value *desc = lookup(descArg)[0], *row0 = nullptr, *col0 = nullptr;
  splitTmaOffsets(offsets, outer, row0, col0);
  onLeaderThread([&] {
    const int64_t boxCols = std::min<int64_t>(cols, 128 / elemBytes);
    for (int64_t c = 0; c < cols; c += boxCols) {
      Value *src = sharedAddress32(b_.CreateConstGEP1_64(b_.getInt8Ty(), base, c * rows * elemBytes));
      std::vector<Value *> args = {desc, b_.CreateAdd(col0, i32(c)), row0};
      args.insert(args.end(), outer.rbegin(), outer.rend()); // coordinates innermost first
      args.push_back(src);
      asmCall(tmaStoreAsm(rank, op.hasAttr("reduce") ? op.stringAttr("reduce") : ""), tmaConstraints("l", rank + 1),
              args);
    }
    emitAsm("cp.async.bulk.commit_group;");
    emitAsm("cp.async.bulk.wait_group.read 0;");
  });
  barrier();
}

// ------------------------------------------------- the pipeline's TMA ops

Value *KernelLowering::mbarrierAddress(ir::Operation &op, ir::Value *mbarriers, ir::Value *stage) {
  auto it = buffers_.find(mbarriers);
  if (it == buffers_.end()) unsupported(op, "the mbarriers were not allocated");
  return sharedAddress32(b_.CreateGEP(b_.getInt8Ty(), it->second.base, b_.CreateMul(lookup(stage)[0], i32(8))));
}

void KernelLowering::lowerMbarrierAlloc(ir::Operation &op) {
  if (arch_ != "sm_90" && arch_ != "sm_90a") notSupported(op, "mbarriers with transaction counts need sm_90 or newer");
  const int64_t count = op.result()->type.shape[0];
  SharedBuffer space = reserveShared(op, static_cast<uint64_t>(count) * 8, 8);
  buffers_[op.result()] = space;
  barrier(); // the space may have been another op's scratch a moment ago
  initMbarriers(space.base, count, op.intAttr("arrivals"));
  barrier();
}

void KernelLowering::lowerMbarrierDealloc(ir::Operation &dealloc) {
  ir::Value *mbarriers = dealloc.operand(0);
  barrier(); // nobody waits on them any more
  invalidateMbarriers(buffers_.at(mbarriers).base, mbarriers->type.shape[0]);
  barrier(); // before the space is written as anything else
}

void KernelLowering::lowerAsyncTmaCopy(ir::Operation &op) {
  ir::Value *descArg = op.operand(0);
  const ir::Type block = ir::Type(descArg->type.scalar).withShape(descArg->type.descBlock);
  checkTmaBlock(op, block);
  if (block.rank() != 2) unsupported(op, "the pipeline stages 2-D descriptor blocks only");
  ir::Value *buffer = op.operand(3), *stage = op.operand(4), *mbarriers = op.operand(5);
  Value *tile = stageBase(op, buffer, stage);
  Value *bar = mbarrierAddress(op, mbarriers, stage);
  Value *desc = lookup(descArg)[0], *row0 = lookup(op.operand(1))[0], *col0 = lookup(op.operand(2))[0];
  onLeaderThread([&] { startTmaCopy(block, desc, {}, row0, col0, tile, bar); }, lookup(op.operand(6))[0]);
}

void KernelLowering::lowerMbarrierWait(ir::Operation &op) {
  Value *bar = mbarrierAddress(op, op.operand(0), op.operand(1)), *parity = lookup(op.operand(2))[0];
  if (!(op.hasAttr("leader") && op.intAttr("leader"))) {
    if (op.operands.size() < 4) return waitMbarrier(bar, parity);
    return onlyWhere(lookup(op.operand(3))[0], [&] { waitMbarrier(bar, parity); }, "mbarrier.when");
  }
  // The copying thread's whole warp waits: a branch the warp takes together keeps what
  // ptxas knows to be warp-uniform (the loop's stage, wgmma descriptors) in uniform registers.
  Value *warp0 = b_.CreateICmpEQ(uniformWarp(), i32(0));
  onlyWhere(b_.CreateAnd(warp0, lookup(op.operand(3))[0]), [&] { waitMbarrier(bar, parity); }, "mbarrier.leader");
}

void KernelLowering::lowerMbarrierArrive(ir::Operation &op) {
  // Every thread arrives (the barrier counts threads): no branch, so ptxas still sees the
  // loop's values as warp-uniform after it (a lane-0-only arrival made it move wgmma
  // descriptors through R2UR every step).
  Value *bar = mbarrierAddress(op, op.operand(0), op.operand(1));
  asmCall("{\n.reg .pred p;\nsetp.ne.b32 p, $1, 0;\n@p mbarrier.arrive.shared::cta.b64 _, [$0];\n}", "r,r",
          {bar, b_.CreateZExt(lookup(op.operand(2))[0], b_.getInt32Ty())});
}

} // namespace tessera::codegen
