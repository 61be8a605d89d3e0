// scan (tl.associative_scan, cumsum, cumprod): an inclusive scan along one
// axis with the op's combine region. The left operand of the combine is
// always the earlier element (the later one for reverse: a reverse scan is a
// flipped forward scan).
//
// lowerScan follows the layout, as Triton's scan lowering does. Along the
// axis a thread holds runs of sizePerThread consecutive elements, one run per
// "chunk" (a tile of sizePerThread * lanes * warps elements); inside a chunk
// the order is warp, lane, register. Per chunk:
//  1. each thread scans its run sequentially;
//  2. the lanes along the axis scan the runs' totals with shfl.up (Kogge-
//     Stone), and each run takes the exclusive prefix of the lanes before it;
//  3. chunks and warps: with one warp along the axis, the chunk totals
//     (broadcast from the last lane) are carried from chunk to chunk in
//     registers; with several, the last lane of each warp writes its warp's
//     chunk total to shared memory and, after one barrier, every thread
//     combines the totals of the chunks and warps before it.
// So a scan costs at most two barriers, where the shared-memory form
// (lowerScanThroughShared, kept for interleaved layouts and runs longer
// than the axis) costs two per log2(n) step.
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
  const unsigned baseDim = layout.valueDims().at(axis);
  const DimMap &m = layout.dim(baseDim);
  const unsigned run = m.sizePerThread;
  if (m.interleaved || run > m.extent)
    return lowerScanThroughShared(op);

  std::vector<const Regs *> x;
  std::vector<ir::Type> elems;
  for (ir::Value *v : op.operands) {
    if (!sameLayout(v->layout, first->layout))
      unsupported(op, "all operands must share one layout");
    x.push_back(&lookup(v));
    elems.push_back(v->type.element());
  }
  using Element = std::vector<Value *>; // one value per operand
  auto combineInOrder = [&](const Element &earlier, const Element &later) {
    return applyCombineRegion(op, earlier, later);
  };
  auto selectElement = [&](Value *cond, const Element &a, const Element &b) {
    Element out;
    for (size_t i = 0; i < n; ++i)
      out.push_back(b_.CreateSelect(cond, a[i], b[i]));
    return out;
  };
  auto shuffleElement = [&](ShuffleMode mode, const Element &e, Value *laneArg) {
    Element out;
    for (Value *v : e)
      out.push_back(shuffleSync(mode, v, laneArg));
    return out;
  };

  // Positions along the axis in scan order (mirrored for a reverse scan).
  const unsigned lanes = m.distinctLanes(), warps = m.distinctWarps();
  const unsigned chunks = m.numRegs / run;
  Value *lane = lanes > 1 ? b_.CreateAnd(laneIndex(m), i32(lanes - 1)) : i32(0);
  Value *lanePos = reverse ? b_.CreateSub(i32(lanes - 1), lane) : lane;
  Value *warp = warps > 1 ? b_.CreateAnd(warpIndex(m), i32(warps - 1)) : i32(0);
  Value *warpPos = reverse ? b_.CreateSub(i32(warps - 1), warp) : warp;
  const ShuffleMode fromEarlier = reverse ? ShuffleMode::Down : ShuffleMode::Up;

  // The registers of one line along the axis: line[chunk][k], k in scan order.
  const unsigned regs = layout.numRegs();
  std::vector<unsigned> leaders; // first register of each line
  for (unsigned r = 0; r < regs; ++r)
    if (layout.regIndex(r)[baseDim] == 0)
      leaders.push_back(r);
  auto lineRegister = [&](unsigned leader, unsigned chunk, unsigned k) {
    std::vector<unsigned> index = layout.regIndex(leader);
    unsigned c = reverse ? chunks - 1 - chunk : chunk;
    unsigned j = reverse ? run - 1 - k : k;
    index[baseDim] = c * run + j;
    return layout.regNumber(index);
  };

  std::vector<Element> value(regs, Element(n));
  for (unsigned r = 0; r < regs; ++r)
    for (size_t i = 0; i < n; ++i)
      value[r][i] = (*x[i])[r];
  // totals[line][chunk]: the chunk's total over this warp's lanes (in the last lane of the scan order).
  std::vector<std::vector<Element>> totals(leaders.size(), std::vector<Element>(chunks));
  for (size_t l = 0; l < leaders.size(); ++l) {
    for (unsigned c = 0; c < chunks; ++c) {
      // 1. the thread's run.
      for (unsigned k = 1; k < run; ++k) {
        unsigned r = lineRegister(leaders[l], c, k), prev = lineRegister(leaders[l], c, k - 1);
        value[r] = combineInOrder(value[prev], value[r]);
      }
      Element inclusive = value[lineRegister(leaders[l], c, run - 1)];
      // 2. the lanes: inclusive scan of the run totals, then each run takes the lanes before it.
      for (unsigned offset = 1; offset < lanes; offset *= 2) {
        Element before = shuffleElement(fromEarlier, inclusive, i32(offset * m.laneStride));
        Value *valid = b_.CreateICmpUGE(lanePos, i32(offset));
        inclusive = selectElement(valid, combineInOrder(before, inclusive), inclusive);
      }
      if (lanes > 1) {
        if (run > 1) {
          Element before = shuffleElement(fromEarlier, inclusive, i32(m.laneStride));
          Value *valid = b_.CreateICmpUGE(lanePos, i32(1));
          for (unsigned k = 0; k + 1 < run; ++k) {
            unsigned r = lineRegister(leaders[l], c, k);
            value[r] = selectElement(valid, combineInOrder(before, value[r]), value[r]);
          }
        }
        value[lineRegister(leaders[l], c, run - 1)] = inclusive;
      }
      totals[l][c] = inclusive;
    }
  }

  auto addPrefix = [&](size_t l, unsigned c, const Element &prefix, Value *hasPrefix) {
    for (unsigned k = 0; k < run; ++k) {
      unsigned r = lineRegister(leaders[l], c, k);
      Element combined = combineInOrder(prefix, value[r]);
      value[r] = hasPrefix ? selectElement(hasPrefix, combined, value[r]) : combined;
    }
  };

  if (warps == 1) {
    // 3a. one warp along the axis: carry each chunk's total (the last lane's) to the next chunks.
    if (chunks > 1) {
      Value *lastLane = nullptr;
      if (lanes > 1) { // this lane's id with its axis index replaced by the last one in scan order
        Value *lastIndex = i32(reverse ? 0 : lanes - 1);
        Value *delta = b_.CreateMul(b_.CreateSub(lastIndex, lane), i32(m.laneStride));
        lastLane = b_.CreateAdd(lane_, delta);
      }
      for (size_t l = 0; l < leaders.size(); ++l) {
        Element carry;
        for (unsigned c = 0; c < chunks; ++c) {
          if (!carry.empty())
            addPrefix(l, c, carry, nullptr);
          if (c + 1 == chunks)
            break;
          Element total = lastLane ? shuffleElement(ShuffleMode::Idx, totals[l][c], lastLane) : totals[l][c];
          carry = carry.empty() ? total : combineInOrder(carry, total);
        }
      }
    }
  } else {
    // 3b. several warps: the last lane of each warp publishes its chunk totals.
    std::vector<Type *> memTys;
    std::vector<uint64_t> offsets;
    uint64_t bytes = 0;
    std::vector<int64_t> lineShape; // the shape without the axis: one slot row per line
    for (unsigned d = 0; d < shape.size(); ++d)
      if (d != axis)
        lineShape.push_back(shape[d]);
    int64_t lineCount = 1;
    for (int64_t e : lineShape)
      lineCount *= e;
    for (size_t i = 0; i < n; ++i) {
      Type *memTy = memoryType(elems[i], &op);
      uint64_t elemBytes = memTy->isPointerTy() ? 8 : memTy->getPrimitiveSizeInBits() / 8;
      memTys.push_back(memTy);
      offsets.push_back(bytes);
      bytes = (bytes + static_cast<uint64_t>(lineCount) * chunks * warps * elemBytes + 15) / 16 * 16;
    }
    Value *base = sharedScratch(bytes, op);
    auto address = [&](size_t i, Value *slot) {
      Value *segment = b_.CreateConstGEP1_64(b_.getInt8Ty(), base, offsets[i]);
      return b_.CreateGEP(memTys[i], segment, slot);
    };
    std::vector<Value *> lineSlot; // slot of (line, chunk 0, warp 0)
    for (unsigned leader : leaders) {
      std::vector<Value *> c = coordinates(layout, leader), rest;
      for (unsigned d = 0; d < c.size(); ++d)
        if (d != axis)
          rest.push_back(c[d]);
      lineSlot.push_back(b_.CreateMul(linearIndex(rest, lineShape), i32(int64_t{chunks} * warps)));
    }
    auto slotOf = [&](size_t l, unsigned c, Value *w) {
      return b_.CreateAdd(lineSlot[l], b_.CreateAdd(i32(int64_t{c} * warps), w));
    };

    BasicBlock *write = BasicBlock::Create(ctx_, "scan.write", kernel_);
    BasicBlock *written = BasicBlock::Create(ctx_, "scan.written", kernel_);
    Value *isLast = b_.CreateICmpEQ(lanePos, i32(lanes - 1));
    b_.CreateCondBr(isLast, write, written);
    b_.SetInsertPoint(write);
    for (size_t l = 0; l < leaders.size(); ++l) {
      if (layout.isDuplicateRegister(leaders[l]))
        continue;
      for (unsigned c = 0; c < chunks; ++c)
        for (size_t i = 0; i < n; ++i)
          b_.CreateStore(toMemory(totals[l][c][i], elems[i]), address(i, slotOf(l, c, warp)));
    }
    b_.CreateBr(written);
    b_.SetInsertPoint(written);
    barrier();
    for (size_t l = 0; l < leaders.size(); ++l) {
      Element carry; // the totals of the chunks before
      for (unsigned c = 0; c < chunks; ++c) {
        // prefix[p]: carry and the totals of warps 0..p-1 in scan order; the thread takes its warp's.
        Element prefix = carry, chosen;
        for (unsigned p = 0; p < warps; ++p) {
          if (p > 0 || !carry.empty()) {
            Value *isMine = b_.CreateICmpEQ(warpPos, i32(p));
            chosen = chosen.empty() ? prefix : selectElement(isMine, prefix, chosen);
          }
          Value *w = i32(reverse ? warps - 1 - p : p);
          Element total;
          for (size_t i = 0; i < n; ++i)
            total.push_back(fromMemory(b_.CreateLoad(memTys[i], address(i, slotOf(l, c, w))), elems[i]));
          prefix = prefix.empty() ? total : combineInOrder(prefix, total);
        }
        // chosen is valid unless this is the first warp of the first chunk.
        Value *hasPrefix = carry.empty() ? b_.CreateICmpUGT(warpPos, i32(0)) : nullptr;
        addPrefix(l, c, chosen, hasPrefix);
        carry = prefix;
      }
    }
    barrier(); // the scratch may be reused right after
  }
  for (size_t i = 0; i < n; ++i) {
    Regs out;
    for (unsigned r = 0; r < regs; ++r)
      out.push_back(value[r][i]);
    define(op.result(static_cast<unsigned>(i)), std::move(out));
  }
}

// Hillis-Steele through shared memory: every element is stored at its
// row-major index, then for offset = 1, 2, 4, ... < n each element combines
// with the one `offset` before it along the axis (after it for a reverse
// scan), with barriers between the reads and the writes. log2(n) steps for
// any layout; copies held by several threads write identical values.
void KernelLowering::lowerScanThroughShared(ir::Operation &op) {
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
