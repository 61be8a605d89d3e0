// reduce(x, axis, kind) in three steps (docs/codegen.md):
//  1. in each thread, over its registers along the axis;
//  2. across the lanes along the axis with butterfly shuffles, so every
//     lane ends up with its group's value;
//  3. across the warps along the axis through shared memory.
// Copies created by wrap-around are skipped at each step: registers whose
// offset is past the extent, lane bits and warps beyond the distinct ones.
// Every thread ends up holding the values of the result's layout (the
// operand's layout sliced along the axis; a scalar for a 1-D operand).
// reduce_combine runs the same steps on several operands at once, combining
// with its region (the inlined @jit combine function).
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace tessera::codegen {

using namespace llvm;

Value *KernelLowering::shuffleXor(Value *v, unsigned laneMask) {
  return shuffleSync(ShuffleMode::Xor, v, i32(laneMask));
}

// shfl.sync of a value of any type: 32-bit values as they are, 64-bit ones
// (and pointers) as two halves, narrower ones widened to 32 bits.
Value *KernelLowering::shuffleSync(ShuffleMode mode, Value *v, Value *laneArg) {
  Type *type = v->getType();
  auto shuffle32 = [&](Value *x) -> Value * {
    bool isFloat = x->getType()->isFloatTy();
    Intrinsic::ID id;
    switch (mode) {
    case ShuffleMode::Xor: id = isFloat ? Intrinsic::nvvm_shfl_sync_bfly_f32 : Intrinsic::nvvm_shfl_sync_bfly_i32; break;
    case ShuffleMode::Up: id = isFloat ? Intrinsic::nvvm_shfl_sync_up_f32 : Intrinsic::nvvm_shfl_sync_up_i32; break;
    case ShuffleMode::Down: id = isFloat ? Intrinsic::nvvm_shfl_sync_down_f32 : Intrinsic::nvvm_shfl_sync_down_i32; break;
    default: id = isFloat ? Intrinsic::nvvm_shfl_sync_idx_f32 : Intrinsic::nvvm_shfl_sync_idx_i32; break;
    }
    // c: the lowest source lane for shfl.up, the highest for the others (one 32-lane segment).
    Value *clamp = i32(mode == ShuffleMode::Up ? 0 : kWarpSize - 1);
    return b_.CreateIntrinsic(id, {}, {i32(-1), x, laneArg, clamp});
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
  const std::string &kind = op.stringAttr("kind");
  if (kind != "sum" && kind != "max" && kind != "min")
    unsupported(op, "unknown reduction kind '" + kind + "'");
  const ir::Type elem = op.operand(0)->type.element();
  const bool partial = op.hasAttr("partial") && op.intAttr("partial");
  if (partial && kind != "sum") unsupported(op, "only a sum can be partial");
  std::vector<Regs> out = reduceAlongAxis(
      op, {op.operand(0)},
      [&](ArrayRef<Value *> a, ArrayRef<Value *> b) {
        return std::vector<Value *>{combine(op, kind, elem, a[0], b[0])};
      },
      /*commutative=*/true, /*withinThreads=*/partial);
  define(op.result(), std::move(out[0]));
}

// The lanes' partial sums of a `partial` reduce (compiler/passes/DeferLaneReductions.h),
// added up by the same butterfly as step 2 below.
void KernelLowering::lowerLaneReduce(ir::Operation &op) {
  if (op.stringAttr("kind") != "sum") unsupported(op, "lane_reduce only sums");
  const ir::Type elem = op.operand(0)->type.element();
  Regs regs = lookup(op.operand(0));
  for (int64_t mask : op.arrayAttr("lane_masks")) {
    if (mask <= 0 || mask >= static_cast<int64_t>(kWarpSize)) unsupported(op, "lane mask out of range");
    for (Value *&v : regs) v = combine(op, "sum", elem, v, shuffleXor(v, static_cast<unsigned>(mask)));
  }
  define(op.result(), std::move(regs));
}

void KernelLowering::lowerReduceCombine(ir::Operation &op) {
  std::vector<ir::Value *> inputs(op.operands.begin(), op.operands.end());
  std::vector<Regs> out = reduceAlongAxis(
      op, inputs, [&](ArrayRef<Value *> a, ArrayRef<Value *> b) { return applyCombineRegion(op, a, b); },
      /*commutative=*/false);
  for (size_t i = 0; i < out.size(); ++i)
    define(op.result(static_cast<unsigned>(i)), std::move(out[i]));
}

std::vector<Value *> KernelLowering::applyCombineRegion(ir::Operation &op, ArrayRef<Value *> a,
                                                        ArrayRef<Value *> b) {
  ir::Block &region = *op.region(0);
  const size_t n = a.size();
  for (size_t i = 0; i < n; ++i) {
    define(region.args.at(i).get(), {a[i]});
    define(region.args.at(n + i).get(), {b[i]});
  }
  lowerBlock(region);
  std::vector<Value *> out;
  for (const Regs &r : terminatorValues(region, 0))
    out.push_back(r[0]);
  if (out.size() != n)
    unsupported(op, "the combine region yields " + std::to_string(out.size()) + " values, expected " +
                        std::to_string(n));
  return out;
}

// The three steps for n operands of one layout, combined together (n > 1:
// argmax's values and indices). A non-commutative combine gets its operands
// in element order across lanes, so every copy of a result agrees.
std::vector<Regs> KernelLowering::reduceAlongAxis(ir::Operation &op, const std::vector<ir::Value *> &inputs,
                                                  const Combiner &combineFn, bool commutative,
                                                  bool withinThreads) {
  const size_t n = inputs.size();
  DistributedLayout in = layoutOf(inputs[0], op);
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
  std::vector<const Regs *> x;
  std::vector<ir::Type> elems;
  for (ir::Value *v : inputs) {
    if (v->type.isBlock() && !sameLayout(v->layout, inputs[0]->layout))
      unsupported(op, "all operands must share one layout");
    x.push_back(&lookup(v));
    elems.push_back(v->type.element());
  }
  auto combineAll = [&](std::vector<Value *> &acc, const std::vector<Value *> &e) {
    if (acc.empty()) {
      acc = e;
      return;
    }
    acc = combineFn(acc, e);
  };

  // 1. Within the thread: registers along the axis that hold distinct elements.
  std::vector<std::vector<Value *>> acc(out.numRegs()); // [register][operand]
  for (unsigned r = 0; r < out.numRegs(); ++r) {
    std::vector<unsigned> index = out.regIndex(r); // index[baseDim] == 0
    for (unsigned k = 0; k < m.numRegs; ++k) {
      if (m.regOffset(k) >= m.extent)
        continue;
      index[baseDim] = k;
      std::vector<Value *> e;
      for (size_t i = 0; i < n; ++i)
        e.push_back((*x[i])[in.regNumber(index)]);
      combineAll(acc[r], e);
    }
  }

  // A partial sum stops here: each lane keeps its own (a lane_reduce adds them later).
  if (withinThreads && m.distinctWarps() > 1) unsupported(op, "a partial sum cannot cross warps");
  const unsigned lanes = withinThreads ? 1 : m.distinctLanes();

  // 2. Across lanes: butterfly over the lane bits that address distinct data.
  for (unsigned bit = 1; bit < lanes; bit *= 2) {
    Value *isLow = nullptr; // this lane holds the earlier elements of the pair
    if (!commutative)
      isLow = b_.CreateICmpEQ(b_.CreateAnd(laneIndex(m), i32(bit)), i32(0));
    for (auto &v : acc) {
      std::vector<Value *> other;
      for (Value *e : v)
        other.push_back(shuffleXor(e, bit * m.laneStride));
      if (commutative) {
        v = combineFn(v, other);
        continue;
      }
      std::vector<Value *> first, second;
      for (size_t i = 0; i < n; ++i) {
        first.push_back(b_.CreateSelect(isLow, v[i], other[i]));
        second.push_back(b_.CreateSelect(isLow, other[i], v[i]));
      }
      v = combineFn(first, second);
    }
  }

  // 3. Across warps: partials to shared memory, then every thread combines
  // the distinct warps' partials for the elements it holds.
  const unsigned warps = m.distinctWarps();
  if (warps > 1) {
    std::vector<int64_t> outShape = op.result()->type.shape; // empty for a scalar
    int64_t outElems = 1;
    for (int64_t d : outShape)
      outElems *= d;
    std::vector<Type *> memTys;
    std::vector<uint64_t> offsets;
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; ++i) {
      Type *memTy = memoryType(elems[i], &op);
      uint64_t elemBytes = memTy->isPointerTy() ? 8 : memTy->getPrimitiveSizeInBits() / 8;
      memTys.push_back(memTy);
      offsets.push_back(bytes);
      bytes = (bytes + static_cast<uint64_t>(outElems) * m.warpsPerCTA * elemBytes + 15) / 16 * 16;
    }
    Value *base = sharedScratch(bytes, op);
    auto segment = [&](size_t i) { return b_.CreateConstGEP1_64(b_.getInt8Ty(), base, offsets[i]); };
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
      for (size_t i = 0; i < n; ++i) {
        Value *addr = b_.CreateGEP(memTys[i], segment(i), b_.CreateAdd(slots[r], warpIdx));
        b_.CreateStore(toMemory(acc[r][i], elems[i]), addr);
      }
    }
    b_.CreateBr(written);
    b_.SetInsertPoint(written);
    barrier();
    for (unsigned r = 0; r < out.numRegs(); ++r) {
      std::vector<Value *> v;
      for (unsigned w = 0; w < warps; ++w) { // same order in every thread
        std::vector<Value *> e;
        for (size_t i = 0; i < n; ++i) {
          Value *addr = b_.CreateGEP(memTys[i], segment(i), b_.CreateAdd(slots[r], i32(w)));
          e.push_back(fromMemory(b_.CreateLoad(memTys[i], addr), elems[i]));
        }
        combineAll(v, e);
      }
      acc[r] = v;
    }
    barrier(); // the scratch may be reused right after
  }
  std::vector<Regs> results(n);
  for (auto &v : acc)
    for (size_t i = 0; i < n; ++i)
      results[i].push_back(v[i]);
  return results;
}

} // namespace tessera::codegen
