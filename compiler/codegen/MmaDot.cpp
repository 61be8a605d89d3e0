// Tensor-core dot (docs/tensor-cores.md): dot(a <MxK>, b <KxN>, acc <MxN>)
// whose result has an #mma<version=2, wpc=[wm, wn]> layout (set by
// compiler/passes/AccelerateDot.cpp): mma.sync m16n8k16 (f16/bf16; f16 also into f16), m16n8k8
// (tf32) or m16n8k32 (int8; fp8 e4m3/e5m2 on sm_89+, PTX 8.4).
//
//  1. the operand tiles: straight from the pipeline's shared buffers
//     (local_load), else stored here from registers into scratch with the
//     same swizzled layout (compiler/ir/Layout.h, Shared; AsyncCopy.cpp).
//     A 16-bit A operand held in an #mma<wpc=[wm, 1]> layout by a dot with
//     this dot's warps (attention's P) is not stored: its registers are
//     the A fragments (FlashAttention-2's register reuse).
//  2. per k-step, per warp: one ldmatrix.x4 per 16-row m-tile of A (the 4
//     .b32 A registers of every shape), B by ldmatrix.x4.trans (16-bit),
//     plain ldmatrix (transposed tiles) or gathered words (tf32/int8), then
//     one mma.sync per (m-tile, n-tile).
//  3. the accumulator registers are the mma C/D fragments; the Mma layout
//     puts the instruction's rows g and g+8 at rows 2g and 2g+1 of the
//     16-row tile (A's rows are stored in that order), which makes it
//     register-for-register #blocked<spt=[2,2], tpw=[8,4], wpc, order=[1,0]>.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <optional>


namespace tessera::codegen {

using namespace llvm;

void KernelLowering::stageToShared(ir::Operation &op, ir::Value *v, Value *base, const ir::Layout &tile) {
  auto it = dotOperandSource_.find(v);
  ir::LayoutRef src = it != dotOperandSource_.end() ? it->second : v->layout;
  if (!src || src->kind == ir::Layout::Kind::DotOperand)
    unsupported(op, "dot operand without a register layout");
  DistributedLayout layout = [&] {
    try {
      return DistributedLayout(*src, v->type.shape);
    } catch (const std::invalid_argument &e) {
      unsupported(op, e.what());
    }
  }();
  const Regs &regs = lookup(v);
  Type *memTy = memoryType(v->type.element(), &op);
  const unsigned elemBytes = bitWidth(v->type.element().scalar) / 8;
  // Groups of `vec` consecutive registers along dim 1 go out as one vector
  // store (inside one 16-byte chunk of the swizzled tile).
  const DimMap &fast = layout.dim(1);
  unsigned vec = 1; // (a transposed tile: one element at a time)
  if (!tile.transposed && layout.order()[0] == 1 && layout.valueDims()[1] == 1 && fast.extent >= fast.sizePerThread)
    vec = std::min(fast.contiguousPerThread(), tile.vec);
  for (unsigned r = 0; r < layout.numRegs(); ++r) {
    if (layout.isDuplicateRegister(r))
      continue;
    std::vector<unsigned> idx = layout.regIndex(r);
    if (idx[1] % vec != 0)
      continue; // part of the group its first register stores
    std::vector<Value *> c = coordinates(layout, r);
    // A transposed tile holds [cols][rows] of the block.
    Value *offset = tile.transposed
                        ? sharedElementOffset(tile, v->type.shape[1], v->type.shape[0], elemBytes, c[1], c[0])
                        : sharedElementOffset(tile, v->type.shape[0], v->type.shape[1], elemBytes, c[0], c[1]);
    Value *ptr = b_.CreateGEP(b_.getInt8Ty(), base, offset);
    if (vec == 1) {
      b_.CreateStore(regs[r], ptr);
      continue;
    }
    Value *packed = PoisonValue::get(FixedVectorType::get(memTy, vec));
    for (unsigned e = 0; e < vec; ++e) {
      std::vector<unsigned> at = idx;
      at[1] += e;
      packed = b_.CreateInsertElement(packed, regs[layout.regNumber(at)], e);
    }
    b_.CreateAlignedStore(packed, ptr, Align(vec * elemBytes));
  }
}

void KernelLowering::dotOperandTiles(ir::Operation &op, Value *&aBase, ir::LayoutRef &tileA, Value *&bBase,
                                     ir::LayoutRef &tileB, bool &staged, bool stageA) {
  ir::Value *a = op.operand(0), *b = op.operand(1);
  const int64_t M = a->type.shape[0], K = a->type.shape[1], N = b->type.shape[1];
  const unsigned elemBits = bitWidth(a->type.element().scalar), elemBytes = elemBits / 8;
  const unsigned version = op.result()->layout->mmaVersion;
  const bool wgmma = version == 3;
  // fp8 wgmma reads B K-major only: staged transposed ([N][K]), rows of K bytes.
  const bool fp8 = elemBits == 8 && a->type.element().isFloatElement();
  const bool bKMajor = wgmma && fp8;
  tileA = ir::Layout::sharedOperandTile(version, 0, K, elemBits);
  tileB = ir::Layout::sharedOperandTile(version, 1, bKMajor ? K : N, elemBits, bKMajor,
                                        wgmma ? op.result()->layout->warpsPerCTA[1] : 1);
  aBase = bBase = nullptr;
  if (auto it = sharedOperands_.find(a); it != sharedOperands_.end()) aBase = it->second.base, tileA = it->second.tile;
  if (auto it = sharedOperands_.find(b); it != sharedOperands_.end()) bBase = it->second.base, tileB = it->second.tile;
  staged = (!aBase && stageA) || !bBase;
  if (!staged) return;
  // wgmma reads 1024-byte swizzle atoms, which must start aligned.
  const uint64_t align = wgmma ? 1024 : 16;
  auto roundUp = [&](uint64_t v) { return (v + align - 1) / align * align; };
  const uint64_t aBytes = aBase || !stageA ? 0 : roundUp(static_cast<uint64_t>(M * K) * elemBytes);
  const uint64_t bBytes = bBase ? 0 : static_cast<uint64_t>(K * N) * elemBytes;
  const uint64_t pad = roundUp(reservedShared_) - reservedShared_;
  Value *scratch = b_.CreateConstGEP1_64(b_.getInt8Ty(), sharedScratch(pad + aBytes + bBytes, op), pad);
  if (!aBase && stageA) stageToShared(op, a, aBase = scratch, *tileA);
  if (!bBase) stageToShared(op, b, bBase = b_.CreateConstGEP1_64(b_.getInt8Ty(), scratch, aBytes), *tileB);
  if (wgmma) fenceProxyAsync(); // ordinary stores, read next by the tensor cores' async proxy
  barrier();
}

const ir::Layout *KernelLowering::registerOperandA(ir::Value *a, const ir::Layout &result) {
  if (sharedOperands_.count(a)) return nullptr;
  auto it = dotOperandSource_.find(a);
  const ir::Layout *src = it != dotOperandSource_.end() ? it->second.get() : nullptr;
  return src && src->kind == ir::Layout::Kind::Mma && src->warpsPerCTA == result.warpsPerCTA ? src : nullptr;
}

std::vector<Value *> KernelLowering::aFragmentFromRegisters(ir::Value *a, const DistributedLayout &layout, int64_t mi,
                                                            int64_t ks) {
  const Regs &p = lookup(a);
  auto half = [&](unsigned reg) {
    return b_.CreateZExt(b_.CreateBitCast(p[reg], b_.getInt16Ty()), b_.getInt32Ty());
  };
  // Halves that one paired conversion made (Elementwise.cpp) are its word already.
  auto element = [](Value *v, uint64_t index) -> Value * {
    auto *e = dyn_cast<ExtractElementInst>(v);
    auto *at = e ? dyn_cast<ConstantInt>(e->getIndexOperand()) : nullptr;
    return at && at->getZExtValue() == index ? e->getVectorOperand() : nullptr;
  };
  std::vector<Value *> frag;
  for (const auto &[lo, hi] : mmaAFragmentRegisters(layout, mi, ks)) {
    Value *pair = element(p[lo], 0);
    if (pair && pair == element(p[hi], 1))
      frag.push_back(b_.CreateBitCast(pair, b_.getInt32Ty()));
    else
      frag.push_back(b_.CreateOr(half(lo), b_.CreateShl(half(hi), 16)));
  }
  return frag;
}

std::vector<Value *> KernelLowering::fp8AFragmentFromRegisters(ir::Value *a, const DistributedLayout &layout,
                                                               int64_t mi, int64_t ks) {
  // The C layout gives lane t (= lane % 4) of a quad columns 2t, 2t + 1 of each 8-column tile
  // (rows g and g + 8); the 8-bit A fragment of k = 32 wants columns 4t .. 4t + 3 of tiles 0-1
  // (registers a0-a3: row g, a4-a7: row g + 8) and of tiles 2-3 (a8-a11, a12-a15). So lane t
  // needs tile 2kb + t / 2 of quad lanes 2t % 4 (columns 4t, 4t + 1) and 2t % 4 + 1. Each lane
  // packs a tile as one word (row g's pair, then row g + 8's) and offers tile 2kb in its first
  // word if even, tile 2kb + 1 if odd (the second word the other); lane t reads the first word
  // of lane 2t % 4 + t / 2 and the second of lane 2t % 4 + 1 - t / 2: two shuffles make both
  // rows' registers, and prmt orders the pairs (Triton's and CUTLASS's exchange).
  const Regs &p = lookup(a);
  Type *i32Ty = b_.getInt32Ty();
  auto byte = [&](unsigned row, unsigned col) { return b_.CreateZExt(p[layout.regNumber({row, col})], i32Ty); };
  const unsigned rowG = static_cast<unsigned>(2 * mi); // register row index 2mi + h: row g + 8h
  // Two bytes that one paired conversion made (Elementwise.cpp: trunc(pair), trunc(pair >> 8))
  // are that pair's 16 bits already.
  auto pairedConversion = [](Value *lo, Value *hi) -> Value * {
    auto *tlo = dyn_cast<TruncInst>(lo), *thi = dyn_cast<TruncInst>(hi);
    auto *shr = thi ? dyn_cast<BinaryOperator>(thi->getOperand(0)) : nullptr;
    if (!tlo || !shr || shr->getOpcode() != Instruction::LShr || shr->getOperand(0) != tlo->getOperand(0))
      return nullptr;
    auto *amount = dyn_cast<ConstantInt>(shr->getOperand(1));
    return amount && amount->getZExtValue() == 8 && tlo->getOperand(0)->getType()->isIntegerTy(16)
               ? tlo->getOperand(0)
               : nullptr;
  };
  auto rowPair = [&](unsigned row, unsigned tile) -> Value * { // register column index 2n + j: 8n + 2t + j
    Value *lo = p[layout.regNumber({row, 2 * tile})], *hi = p[layout.regNumber({row, 2 * tile + 1})];
    if (Value *pair = pairedConversion(lo, hi)) return b_.CreateZExt(pair, i32Ty);
    return b_.CreateOr(byte(row, 2 * tile), b_.CreateShl(byte(row, 2 * tile + 1), 8));
  };
  auto tileWord = [&](unsigned tile) {
    return b_.CreateOr(rowPair(rowG, tile), b_.CreateShl(rowPair(rowG + 1, tile), 16));
  };
  Value *t = b_.CreateAnd(lane_, b_.getInt32(3));
  Value *quad = b_.CreateAnd(lane_, b_.getInt32(~3u));
  Value *high = b_.CreateLShr(t, 1);                     // t / 2: this lane wants the odd tile
  Value *odd = b_.CreateICmpNE(b_.CreateAnd(lane_, b_.getInt32(1)), b_.getInt32(0));
  Value *even = b_.CreateOr(quad, b_.CreateAnd(b_.CreateShl(t, 1), b_.getInt32(3)));
  Value *srcFirst = b_.CreateOr(even, high);
  Value *srcSecond = b_.CreateOr(even, b_.CreateXor(high, b_.getInt32(1)));
  Value *lowFirst = b_.CreateICmpEQ(high, b_.getInt32(0)); // the first word holds columns 4t, 4t + 1
  Value *selRowG = b_.CreateSelect(lowFirst, b_.getInt32(0x5410), b_.getInt32(0x1054));
  Value *selRowG8 = b_.CreateSelect(lowFirst, b_.getInt32(0x7632), b_.getInt32(0x3276));
  InlineAsm *prmt = InlineAsm::get(FunctionType::get(i32Ty, {i32Ty, i32Ty, i32Ty}, false),
                                   "prmt.b32 $0, $1, $2, $3;", "=r,r,r,r", false);
  auto shfl = [&](Value *v, Value *lane) {
    return b_.CreateIntrinsic(Intrinsic::nvvm_shfl_sync_idx_i32, {}, {b_.getInt32(-1), v, lane, b_.getInt32(31)});
  };
  std::vector<Value *> frag;
  for (unsigned kb = 0; kb < 2; ++kb) {
    const unsigned tile = static_cast<unsigned>(4 * ks) + 2 * kb;
    Value *t0 = tileWord(tile), *t1 = tileWord(tile + 1);
    Value *first = shfl(b_.CreateSelect(odd, t1, t0), srcFirst);
    Value *second = shfl(b_.CreateSelect(odd, t0, t1), srcSecond);
    frag.push_back(b_.CreateCall(prmt, {first, second, selRowG}));  // a0-a3 / a8-a11: row g
    frag.push_back(b_.CreateCall(prmt, {first, second, selRowG8})); // a4-a7 / a12-a15: row g + 8
  }
  return frag;
}

void KernelLowering::lowerMmaDot(ir::Operation &op) {
  if (op.result()->layout->mmaVersion == 3)
    return lowerWgmmaDot(op);
  ir::Value *a = op.operand(0), *b = op.operand(1), *acc = op.operand(2), *result = op.result();
  const int64_t M = a->type.shape[0], K = a->type.shape[1], N = b->type.shape[1];
  const ir::ScalarType in = a->type.element().scalar, outType = result->type.element().scalar;
  const std::string precision = op.hasAttr("input_precision") ? op.stringAttr("input_precision") : "tf32";
  const ir::ScalarType inB = b->type.element().scalar;
  auto isFp8 = [](ir::ScalarType t) { return t == ir::ScalarType::F8E4M3 || t == ir::ScalarType::F8E5M2; };
  // fp8 (sm_89+, accelerate-dot): m16n8k32 e4m3/e5m2 in any pair, the int8 fragments.
  const bool fp8 = isFp8(in) && isFp8(inB) && outType == ir::ScalarType::F32;
  const int64_t kStep = fp8 ? 32 : ir::mmaKStep(in, outType, precision);
  if (kStep == 0 || (!fp8 && inB != in))
    unsupported(op, "no mma.sync instruction for a " + a->type.element().str() + " dot into " +
                        result->type.element().str());
  if (!sameLayout(acc->layout, result->layout))
    unsupported(op, "the accumulator must have the result's layout");
  DistributedLayout out = layoutOf(result, op);
  const unsigned wm = result->layout->warpsPerCTA[0], wn = result->layout->warpsPerCTA[1];
  // More warps than 16 x 8 tiles along a dim (a 16 x 16 block on 4 warps, as Triton's [2, 2]):
  // the extra warps repeat the tiles of the first ones (the layout wraps there, Layout.h).
  auto fitsWith = [](int64_t extent, int64_t tile, int64_t warps) {
    return extent % tile == 0 && (extent % (tile * warps) == 0 || (tile * warps) % extent == 0);
  };
  if (!fitsWith(M, 16, wm) || !fitsWith(N, 8, wn) || K % kStep)
    unsupported(op, "block shape does not fit mma.sync with these warps");
  const int64_t mTiles = std::max<int64_t>(1, M / (16 * wm)), nTiles = std::max<int64_t>(1, N / (8 * wn));
  const unsigned elemBits = bitWidth(in), elemBytes = elemBits / 8;
  const bool tf32 = in == ir::ScalarType::F32, int8 = in == ir::ScalarType::I8 || fp8; // int8: byte fragments

  // A straight from registers: a 16-bit value in an #mma<wpc=[wm, 1]> layout
  // (the result of a dot with this dot's warps, cast: attention's P). The C
  // fragments of n-tiles 2ks and 2ks+1 of that dot are, packed in pairs, the
  // A fragment of k-step ks (see aFromRegisters below): no shared memory.
  const ir::Layout *aRegLayout =
      kStep == 16 && !tf32 && !int8 && wn == 1 ? registerOperandA(a, *result->layout) : nullptr;
  // The operand tiles: straight from the pipeline's buffers (local_load), or
  // staged here from registers into scratch laid out the same way.
  Value *aBase, *bBase;
  ir::LayoutRef tileA, tileB;
  bool staged;
  dotOperandTiles(op, aBase, tileA, bBase, tileB, staged, /*stageA=*/!aRegLayout);

  // Per-lane ldmatrix row addresses (lane l supplies row l % 8 of matrix l / 8).
  Value *warpM = warpIndex(out.dim(0)), *warpN = warpIndex(out.dim(1));
  if (M < 16 * int64_t{wm}) warpM = b_.CreateAnd(warpM, i32(M / 16 - 1)); // repeating warps
  if (N < 8 * int64_t{wn}) warpN = b_.CreateAnd(warpN, i32(N / 8 - 1));
  Value *l7 = b_.CreateAnd(lane_, 7), *bit3 = b_.CreateAnd(b_.CreateLShr(lane_, 3), 1);
  Value *bit4 = b_.CreateLShr(lane_, 4);
  Value *g = b_.CreateLShr(lane_, 2), *t = b_.CreateAnd(lane_, 3); // the fragment's (group, thread in group)
  // A: matrix (h, kb) = (bit3, bit4) covers mma rows g + 8h and the kb-th
  // 16-byte half of the k-step; its rows are stored consecutively
  // (sharedStoredRow). Row of m-tile mi:
  auto aRow = [&](int64_t mi) {
    return b_.CreateAdd(b_.CreateMul(b_.CreateAdd(warpM, i32(mi * wm)), i32(16)),
                        b_.CreateAdd(b_.CreateShl(bit3, 3), l7));
  };
  // B (k rows, n contiguous): matrix (kb, n-tile of the pair) = (bit3, bit4).
  Value *bK = b_.CreateAdd(b_.CreateShl(bit3, 3), l7);
  auto bChunk = [&](int64_t ni, bool pair) { // 8 columns = one chunk
    Value *tile = pair ? b_.CreateAdd(bit4, i32(ni)) : i32(ni);
    return b_.CreateAdd(warpN, b_.CreateMul(tile, i32(wn)));
  };

  Type *i32Ty = b_.getInt32Ty(), *f32Ty = b_.getFloatTy();
  // Inline PTX (the LLVM intrinsics' declarations are not usable here).
  auto ldmatrix = [&](bool trans, Value *base, Value *byteOffset, unsigned n) {
    Value *ptr = b_.CreatePtrToInt(b_.CreateGEP(b_.getInt8Ty(), base, byteOffset), b_.getInt64Ty());
    std::vector<Type *> outs(n, i32Ty);
    std::string text = std::string("ldmatrix.sync.aligned.m8n8.x") + std::to_string(n) + (trans ? ".trans" : "") +
                       ".shared.b16 {", cons;
    for (unsigned i = 0; i < n; ++i) {
      text += (i ? ",$" : "$") + std::to_string(i);
      cons += "=r,";
    }
    text += "}, [$" + std::to_string(n) + "];";
    cons += "l";
    InlineAsm *ld = InlineAsm::get(FunctionType::get(StructType::get(ctx_, outs), {b_.getInt64Ty()}, false), text, cons,
                                   /*hasSideEffects=*/true);
    Value *res = b_.CreateCall(ld, {ptr});
    std::vector<Value *> regs;
    for (unsigned i = 0; i < n; ++i)
      regs.push_back(b_.CreateExtractValue(res, i));
    return regs;
  };
  // tf32 operands: fp32 bits rounded to tf32 (cvt.rna), as cuBLAS does.
  auto toTf32 = [&](Value *word) {
    InlineAsm *cvt = InlineAsm::get(FunctionType::get(i32Ty, {i32Ty}, false), "cvt.rna.tf32.f32 $0, $1;", "=r,r",
                                    /*hasSideEffects=*/false);
    return b_.CreateCall(cvt, {word});
  };
  // One element of B at (k, n) as a raw integer of elemBits.
  auto loadB = [&](Value *k, Value *n) {
    Value *at = b_.CreateGEP(b_.getInt8Ty(), bBase, sharedElementOffset(*tileB, K, N, elemBytes, k, n));
    return b_.CreateAlignedLoad(b_.getIntNTy(elemBits), at, Align(elemBytes));
  };

  // The instruction: m16n8k16 f16/bf16, m16n8k8 tf32, m16n8k32 s8; A is 4
  // .b32 registers and B 2 in each, C/D 4 f32 or s32, or for an f16
  // accumulator (out_dtype=tl.float16) 2 .b32 holding f16 pairs (c0 c1, c2 c3).
  const bool f16Acc = outType == ir::ScalarType::F16;
  std::string shape = "m16n8k" + std::to_string(kStep), types;
  if (tf32) types = "f32.tf32.tf32.f32";
  else if (fp8)
    types = std::string("f32.") + (in == ir::ScalarType::F8E4M3 ? "e4m3." : "e5m2.") +
            (inB == ir::ScalarType::F8E4M3 ? "e4m3" : "e5m2") + ".f32";
  else if (int8) types = "s32.s8.s8.s32";
  else if (f16Acc) types = "f16.f16.f16.f16";
  else types = std::string("f32.") + (in == ir::ScalarType::F16 ? "f16.f16" : "bf16.bf16") + ".f32";
  const bool intAcc = int8 && !fp8;
  Type *accTy = intAcc || f16Acc ? i32Ty : f32Ty;
  const unsigned accWords = f16Acc ? 2 : 4;
  std::vector<Type *> accTys(accWords, accTy);
  std::vector<Type *> argTys(6, i32Ty);
  argTys.insert(argTys.end(), accWords, accTy);
  std::string text = "mma.sync.aligned." + shape + ".row.col." + types + " {", cons;
  for (unsigned i = 0; i < accWords; ++i) {
    text += (i ? ",$" : "$") + std::to_string(i);
    cons += std::string(accTy == f32Ty ? "=f" : "=r") + ",";
  }
  const unsigned a0 = accWords;
  text += "}, {$" + std::to_string(a0) + ",$" + std::to_string(a0 + 1) + ",$" + std::to_string(a0 + 2) + ",$" +
          std::to_string(a0 + 3) + "}, {$" + std::to_string(a0 + 4) + ",$" + std::to_string(a0 + 5) + "}, {";
  cons += "r,r,r,r,r,r";
  for (unsigned i = 0; i < accWords; ++i) {
    text += (i ? ",$" : "$") + std::to_string(a0 + 6 + i);
    cons += "," + std::to_string(i);
  }
  text += "};";
  InlineAsm *mma = InlineAsm::get(FunctionType::get(StructType::get(ctx_, accTys), argTys, false), text, cons,
                                  /*hasSideEffects=*/false);
  // f16 accumulator registers <-> the instruction's f16x2 words.
  Type *halfPairTy = FixedVectorType::get(b_.getHalfTy(), 2);
  auto packHalves = [&](Value *lo, Value *hi) {
    Value *v = b_.CreateInsertElement(PoisonValue::get(halfPairTy), lo, uint64_t{0});
    return b_.CreateBitCast(b_.CreateInsertElement(v, hi, uint64_t{1}), i32Ty);
  };

  // C fragment register c (h = c / 2, j = c % 2) of tile (mi, ni).
  auto regOf = [&](int64_t mi, int64_t ni, unsigned c) {
    return out.regNumber({static_cast<unsigned>(2 * mi + c / 2), static_cast<unsigned>(2 * ni + c % 2)});
  };
  std::optional<DistributedLayout> aRegs;
  if (aRegLayout) aRegs.emplace(*aRegLayout, a->type.shape);
  Regs accRegs = lookup(acc);
  for (int64_t ks = 0; ks < K / kStep; ++ks) {
    std::vector<std::vector<Value *>> aFrag(mTiles), bFrag(nTiles);
    // A: a k-step is 32 bytes of a row for every instruction shape: chunks
    // 2ks and 2ks + 1, and ldmatrix hands out the fragment as it is.
    Value *aChunk = b_.CreateAdd(bit4, i32(2 * ks));
    for (int64_t mi = 0; mi < mTiles; ++mi) {
      if (aRegs) {
        aFrag[mi] = aFragmentFromRegisters(a, *aRegs, mi, ks);
        continue;
      }
      aFrag[mi] = ldmatrix(false, aBase, sharedChunkOffset(*tileA, K * elemBytes, aRow(mi), aChunk), 4);
      if (tf32)
        for (Value *&w : aFrag[mi]) w = toTf32(w);
    }
    if (tileB->transposed) {
      // B stored [N][K] (k contiguous): plain ldmatrix hands lane (g, t) the
      // 32-bit word t of row n = g, which is its B register for every type.
      // Matrix (kb, n-tile of the pair) = (bit3, bit4), rows n.
      for (int64_t ni = 0; ni < nTiles; ni += 2) {
        const bool pair = ni + 1 < nTiles;
        Value *n = b_.CreateAdd(b_.CreateMul(bChunk(ni, pair), i32(8)), l7);
        Value *chunk = b_.CreateAdd(bit3, i32(2 * ks));
        std::vector<Value *> r = ldmatrix(false, bBase, sharedChunkOffset(*tileB, K * elemBytes, n, chunk), pair ? 4 : 2);
        if (tf32)
          for (Value *&w : r) w = toTf32(w);
        bFrag[ni] = {r[0], r[1]};
        if (pair) bFrag[ni + 1] = {r[2], r[3]};
      }
    } else if (!tf32 && !int8) {
      // B 16-bit: ldmatrix.trans gives each lane its k pairs.
      Value *bRow = b_.CreateAdd(bK, i32(16 * ks));
      for (int64_t ni = 0; ni < nTiles; ni += 2) {
        if (ni + 1 < nTiles) {
          std::vector<Value *> r = ldmatrix(true, bBase, sharedChunkOffset(*tileB, N * 2, bRow, bChunk(ni, true)), 4);
          bFrag[ni] = {r[0], r[1]};
          bFrag[ni + 1] = {r[2], r[3]};
        } else {
          bFrag[ni] = ldmatrix(true, bBase, sharedChunkOffset(*tileB, N * 2, bRow, bChunk(ni, false)), 2);
        }
      }
    } else {
      // B 32- or 8-bit (no transposing ldmatrix): register j of lane (g, t)
      // holds k = ks*kStep + j*kStep/2 + t*per .. +per-1 (per = 32 / elemBits
      // elements packed low to high) at column n = g of the n-tile.
      const unsigned per = 32 / elemBits;
      for (int64_t ni = 0; ni < nTiles; ++ni) {
        Value *n = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(warpN, i32(ni * wn)), i32(8)), g);
        for (unsigned j = 0; j < 2; ++j) {
          Value *k0 = b_.CreateAdd(b_.CreateMul(t, i32(per)), i32(ks * kStep + j * kStep / 2));
          Value *word = nullptr;
          for (unsigned e = 0; e < per; ++e) {
            Value *v = b_.CreateZExt(loadB(b_.CreateAdd(k0, i32(e)), n), i32Ty);
            word = e == 0 ? v : b_.CreateOr(word, b_.CreateShl(v, 8 * e));
          }
          bFrag[ni].push_back(tf32 ? toTf32(word) : word);
        }
      }
    }
    for (int64_t mi = 0; mi < mTiles; ++mi)
      for (int64_t ni = 0; ni < nTiles; ++ni) {
        std::vector<Value *> args(aFrag[mi].begin(), aFrag[mi].end());
        args.insert(args.end(), bFrag[ni].begin(), bFrag[ni].end());
        if (f16Acc) {
          for (unsigned c = 0; c < 4; c += 2)
            args.push_back(packHalves(accRegs[regOf(mi, ni, c)], accRegs[regOf(mi, ni, c + 1)]));
          Value *d = b_.CreateCall(mma, args);
          for (unsigned c = 0; c < 4; c += 2) {
            Value *pair = b_.CreateBitCast(b_.CreateExtractValue(d, c / 2), halfPairTy);
            accRegs[regOf(mi, ni, c)] = b_.CreateExtractElement(pair, uint64_t{0});
            accRegs[regOf(mi, ni, c + 1)] = b_.CreateExtractElement(pair, uint64_t{1});
          }
          continue;
        }
        for (unsigned c = 0; c < 4; ++c)
          args.push_back(accRegs[regOf(mi, ni, c)]);
        Value *d = b_.CreateCall(mma, args);
        for (unsigned c = 0; c < 4; ++c)
          accRegs[regOf(mi, ni, c)] = b_.CreateExtractValue(d, c);
      }
  }
  if (staged)
    barrier(); // the scratch may be reused right after
  define(result, std::move(accRegs));
}

} // namespace tessera::codegen
