// Hopper tensor-core dot (docs/tensor-cores.md): dot(a <MxK>, b <KxN>,
// acc <MxN>) whose result has #mma<version=3, wpc=[W, 1]> (set by
// compiler/passes/AccelerateDot.cpp on sm_90a), f16/bf16 -> f32.
//
// Warpgroup g (warps 4g .. 4g+3) computes the 64-row slabs g, g + W/4, ...
// of the block with wgmma.mma_async m64nNk16, both operands read by the
// tensor cores from shared memory through matrix descriptors:
//   * A, K-major: the pipeline's buffer or scratch in the wgmma tile layout
//     (compiler/ir/Layout.h, Shared with blockCols), rows in mma order; or
//     M-major (a transposed tile of the pipeline, [K][M], "transpose A");
//   * B, N-major ([K][N] rows, the instruction's "transpose B") or K-major
//     (a transposed tile, [N][K]).
// The accumulator registers are the instruction's D fragments, which with
// A's rows in mma order is register-for-register the version-2 layout
// (Layout.h), so everything downstream of the dot is shared with mma.sync.
//
// Per dot: wgmma.fence; per (slab, column chunk, k-step) one wgmma (with a
// zero accumulator the first of a chunk has scale-d = 0 and no inputs);
// commit_group; wait_group 0. The wait passes the accumulator registers
// through an asm that "writes" them, so nothing reads them before the
// tensor cores are done. A dot the pipeline pass marked `async` (its
// accumulator carried by the loop and read only by the next iteration's
// dot) waits with wait_group 1 instead: this iteration's wgmmas run on
// while the next stage is waited for, and the dot_wait after the loop
// collects the accumulator. Waits that wait for nothing are left out: after
// a wait_group 0 with no commit since (straight-line code), a dot_wait only
// passes its registers through and an async dot skips its wait_group 1
// (attention's key step: one WARPGROUP.DEPBAR instead of three). A dot
// marked `deferred` (compiler/passes/DeferWgmmaWaits.h) does not wait: the
// dot_wait {pending = k} before its first reader does.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/InlineAsm.h>

#include <optional>

namespace tessera::codegen {

using namespace llvm;

namespace {

// The descriptor's constant part: leading/stride byte offsets and the
// swizzle mode (1 = 128-byte, 2 = 64-byte, 3 = 32-byte lines).
uint64_t descriptorBits(uint64_t leadingBytes, uint64_t strideBytes, uint64_t lineBytes) {
  const uint64_t mode = lineBytes == 128 ? 1 : lineBytes == 64 ? 2 : 3;
  return ((leadingBytes >> 4) & 0x3FFF) << 16 | ((strideBytes >> 4) & 0x3FFF) << 32 | mode << 62;
}

} // namespace

void KernelLowering::lowerWgmmaDot(ir::Operation &op) {
  ir::Value *a = op.operand(0), *b = op.operand(1), *acc = op.operand(2), *result = op.result();
  const int64_t M = a->type.shape[0], K = a->type.shape[1], N = b->type.shape[1];
  const ir::ScalarType in = a->type.element().scalar, inB = b->type.element().scalar;
  auto isFp8 = [](ir::ScalarType t) { return t == ir::ScalarType::F8E4M3 || t == ir::ScalarType::F8E5M2; };
  // fp8: e4m3 / e5m2 in any pair (Hopper takes mixed operands), k = 32 per instruction.
  const bool fp8 = isFp8(in) && isFp8(inB);
  if ((!fp8 && ((in != ir::ScalarType::F16 && in != ir::ScalarType::BF16) || inB != in)) ||
      result->type.element().scalar != ir::ScalarType::F32)
    unsupported(op, "wgmma lowering takes f16/bf16 or fp8 operands into f32");
  const int64_t kStep = fp8 ? 32 : 16;
  if (!sameLayout(acc->layout, result->layout))
    unsupported(op, "the accumulator must have the result's layout");
  // Warps [rowWarps, colWarps]: warpgroups along M, each computing 64-row slabs; with
  // colWarps > 1 (Layout.h) warpgroup column c computes the N / colWarps columns that its
  // B tile stores contiguously from c * N / colWarps (the tile's columnGroups).
  const unsigned rowWarps = result->layout->warpsPerCTA[0], colWarps = result->layout->warpsPerCTA[1];
  const unsigned groups = rowWarps / 4;
  if (rowWarps % 4 || M % (64 * groups) || N % (8 * colWarps) || K % kStep)
    unsupported(op, "block shape does not fit wgmma with these warps");
  DistributedLayout out = layoutOf(result, op);
  const int64_t slabs = M / (64 * groups), groupN = N / colWarps;
  // The widest instruction (at most 256 columns) that tiles a warpgroup's columns.
  int64_t chunk = std::min<int64_t>(groupN, 256);
  while (groupN % chunk) chunk -= 8;
  const unsigned elemBytes = fp8 ? 1 : 2;

  // A straight from registers: a 16-bit value in an #mma layout with this
  // dot's warps (attention's P, the cast result of a dot): the register A
  // fragment of wgmma is mma.sync's m16n8k16 A fragment per warp, which
  // LayoutMath's mmaAFragmentRegisters picks out of the C fragments.
  // fp8 (TESSERA_WGMMA_FP8_REGISTER_A, on by default): the 8-bit fragments, whose columns lanes
  // exchange (fp8AFragmentFromRegisters).
  const ir::Layout *aRegLayout =
      colWarps > 1 || (fp8 && !fp8RegisterA_) ? nullptr : registerOperandA(a, *result->layout);
  Value *aBase, *bBase;
  ir::LayoutRef tileA, tileB;
  bool staged;
  dotOperandTiles(op, aBase, tileA, bBase, tileB, staged, /*stageA=*/!aRegLayout);
  if ((!aRegLayout && !tileA->blockCols) || !tileB->blockCols)
    unsupported(op, "operand tiles are not in the wgmma layout");
  // A M-major (a transposed tile, [K][M]: A read along its dim 0, fla's k tile), the
  // instruction's "transpose A"; its 64-row slabs must start on a line block.
  const bool aMMajor = !aRegLayout && tileA->transposed;
  if (aMMajor && 64 % tileA->blockCols)
    unsupported(op, "an M-major A needs line blocks that divide 64 rows");
  const bool bKMajor = tileB->transposed;
  const uint64_t lineA = tileA->blockCols * elemBytes, lineB = tileB->blockCols * elemBytes;
  if (!bKMajor && chunk % tileB->blockCols && chunk != N)
    unsupported(op, "column chunks must start on a swizzle line of B");
  if (colWarps > 1 && (tileB->columnGroups != colWarps || (!bKMajor && groupN % tileB->blockCols)))
    unsupported(op, "B's tile does not store each warpgroup's columns together");
  if (fp8 && !bKMajor) unsupported(op, "fp8 wgmma reads B K-major only (a transposed tile)");

  Type *i32Ty = b_.getInt32Ty(), *i64Ty = b_.getInt64Ty(), *f32Ty = b_.getFloatTy();
  // An operand's base descriptor is built in 32-bit halves joined by one mov.b64 (an asm LLVM
  // cannot widen back into 64-bit shifts and masks): the low word is the start address field
  // (address >> 4, bits 0-13; shared addresses are below 2^18, so it needs no mask and adding a
  // byte offset >> 4 to it never carries into the leading byte offset of bits 16-29), the high
  // word is constant. Each wgmma's descriptor is then the base plus a constant, added in 64
  // bits: ptxas keeps the pair in uniform registers and issues one UIADD3.64 per wgmma
  // (joining the halves for every wgmma cost a ULEA.HI and two UMOVs each).
  InlineAsm *joinHalves =
      InlineAsm::get(FunctionType::get(i64Ty, {i32Ty, i32Ty}, false), "mov.b64 $0, {$1, $2};", "=l,r,r", false);
  auto baseDescriptor = [&](Value *field, uint64_t bits) {
    Value *lo = b_.CreateAdd(field, i32(static_cast<int64_t>(bits & 0xFFFFFFFFu)));
    return b_.CreateCall(joinHalves, {lo, i32(static_cast<int64_t>(bits >> 32))});
  };
  auto descriptor = [&](Value *base, int64_t offsetBytes) -> Value * {
    return offsetBytes ? b_.CreateAdd(base, ConstantInt::get(i64Ty, offsetBytes >> 4)) : base;
  };
  // Leading byte offset: between line blocks (K-major: of M rows each; M-major: of K rows
  // each); stride byte offset: between 8-row groups.
  const uint64_t bitsA = aMMajor ? descriptorBits(K * lineA, 8 * lineA, lineA) : descriptorBits(M * lineA, 8 * lineA, lineA);
  const uint64_t bitsB = bKMajor ? descriptorBits(N * lineB, 8 * lineB, lineB) : descriptorBits(K * lineB, 8 * lineB, lineB);
  Value *fieldA = aRegLayout ? nullptr : b_.CreateLShr(sharedAddress32(aBase), 4);
  Value *fieldB = b_.CreateLShr(sharedAddress32(bBase), 4);
  if (colWarps > 1) { // this warpgroup's columns: rows of a K-major tile, whole line blocks of an N-major one
    const int64_t groupBytes = bKMajor ? groupN * lineB : groupN / tileB->blockCols * K * lineB;
    fieldB = b_.CreateAdd(fieldB, b_.CreateMul(uniformWarpIndex(out.dim(1)), i32(groupBytes / 16)));
  }
  Value *descB = baseDescriptor(fieldB, bitsB);
  // The warpgroup's first slab row, uniform over its 4 warps (and known so to ptxas, which
  // then keeps A's descriptors in uniform registers).
  Value *group = b_.CreateLShr(uniformWarpIndex(out.dim(0)), 2);

  // Operands: the D registers ($0..), A (a descriptor, or 4 registers),
  // B's descriptor, scale-d, then the accumulator inputs tied to D.
  auto fp8Name = [](ir::ScalarType t) { return t == ir::ScalarType::F8E4M3 ? "e4m3" : "e5m2"; };
  const std::string typeNames = fp8 ? std::string(fp8Name(in)) + "." + fp8Name(inB)
                                    : in == ir::ScalarType::F16 ? "f16.f16" : "bf16.bf16";
  const unsigned regsPerInstr = static_cast<unsigned>(chunk / 2), aOperands = aRegLayout ? 4 : 1;
  const unsigned firstIn = regsPerInstr;
  std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(firstIn + aOperands + 1) + ", 0;\n" +
                     "wgmma.mma_async.sync.aligned.m64n" + std::to_string(chunk) + "k" + std::to_string(kStep) +
                     ".f32." + typeNames + " {";
  std::string cons;
  for (unsigned i = 0; i < regsPerInstr; ++i) {
    text += (i ? ",$" : "$") + std::to_string(i);
    cons += "=f,";
  }
  std::vector<Type *> argTys;
  if (aRegLayout) {
    text += "}, {$" + std::to_string(firstIn) + ",$" + std::to_string(firstIn + 1) + ",$" + std::to_string(firstIn + 2) +
            ",$" + std::to_string(firstIn + 3) + "}";
    cons += "r,r,r,r,";
    argTys.assign(4, i32Ty);
  } else {
    text += "}, $" + std::to_string(firstIn);
    cons += "l,";
    argTys.push_back(i64Ty);
  }
  // scale-d, scale-a, scale-b, [transpose-a,] transpose-b (fp8: no transpose operands)
  text += ", $" + std::to_string(firstIn + aOperands) + ", p, 1, 1" +
          (fp8 ? "" : std::string(", ") + (aRegLayout ? "" : aMMajor ? "1, " : "0, ") + (bKMajor ? "0" : "1")) + ";\n}";
  cons += "l,r";
  // A dot of a zero accumulator starts each chunk with scale-d = 0 and no accumulator
  // inputs (Triton's useC = false): tied inputs would be zeros moved into the registers
  // first, and where another dot's wgmmas are still running (two dots issued before
  // either is read, DeferWgmmaWaits) ptxas waits for those before such moves (C7517).
  // scale-d is the immediate 0 there (a predicate made from a register costs ptxas a uniform
  // move in attention's key loop).
  const std::string prefix = text.substr(0, text.find("wgmma.mma_async"));
  std::string textFresh = text.substr(prefix.size(), text.size() - prefix.size() - 2); // without "\n}"
  textFresh.replace(textFresh.find(", p, 1, 1"), 9, ", 0, 1, 1");
  const std::string consFresh = cons.substr(0, cons.size() - 2); // without scale-d's ",r"
  std::vector<Type *> argTysFresh = argTys;
  argTysFresh.push_back(i64Ty);
  for (unsigned i = 0; i < regsPerInstr; ++i) cons += "," + std::to_string(i);
  argTys.push_back(i64Ty);
  argTys.push_back(i32Ty);
  argTys.insert(argTys.end(), regsPerInstr, f32Ty);
  Type *dTy = StructType::get(ctx_, std::vector<Type *>(regsPerInstr, f32Ty));
  InlineAsm *wgmma = InlineAsm::get(FunctionType::get(dTy, argTys, false), text, cons, /*hasSideEffects=*/true);
  InlineAsm *wgmmaFresh =
      InlineAsm::get(FunctionType::get(dTy, argTysFresh, false), textFresh, consFresh, /*hasSideEffects=*/true);

  // D fragment register c of 8-column tile j in slab s (the v2 numbering:
  // rows 2g + c / 2 of the warp's 16-row tile s, columns 2t + c % 2).
  auto regOf = [&](int64_t s, int64_t j, unsigned c) {
    return out.regNumber({static_cast<unsigned>(2 * s + c / 2), static_cast<unsigned>(2 * j + c % 2)});
  };
  std::optional<DistributedLayout> aRegs;
  if (aRegLayout) aRegs.emplace(*aRegLayout, a->type.shape);
  Regs accRegs = lookup(acc);
  // A's register fragments are packed before the fence: instructions that
  // write wgmma input registers between the wgmmas make ptxas insert extra
  // warpgroup arrives (C7519), which stalls each wgmma on the one before.
  std::vector<std::vector<Value *>> aFragments;
  if (aRegs)
    for (int64_t s = 0; s < slabs; ++s)
      for (int64_t ks = 0; ks < K / kStep; ++ks)
        aFragments.push_back(fp8 ? fp8AFragmentFromRegisters(a, *aRegs, s, ks) : aFragmentFromRegisters(a, *aRegs, s, ks));
  // max_num_imprecise_acc (fp8, Triton's semantics): Hopper's fp8 wgmma adds
  // its products in reduced precision, so at most that many K elements of
  // them go into a partial accumulator (started at zero: scale-d = 0) before
  // it is waited for and added into the f32 accumulator with add.f32; Triton
  // applies it where it is <= the dot's K. Absent (Triton's sm_90 default,
  // 2^30): the wgmmas accumulate straight into the accumulator.
  const int64_t imprecise = op.hasAttr("max_num_imprecise_acc") ? op.intAttr("max_num_imprecise_acc") : -1;
  const bool partial = fp8 && imprecise >= 0 && imprecise <= K;
  const bool zeroAcc = !partial && ir::isZeroConstant(acc);
  emitAsm("wgmma.fence.sync.aligned;");
  for (int64_t s = 0; s < slabs; ++s) {
    // Stored row of the slab's first row, times the line length.
    Value *slabRow = b_.CreateMul(b_.CreateAdd(group, i32(s * groups)), i32(64));
    // lineA and the constant part are multiples of 16 bytes.
    // K-major: the slab's first stored row; M-major: the line block holding its first column.
    Value *slabStart = aMMajor ? b_.CreateMul(b_.CreateUDiv(slabRow, i32(tileA->blockCols)), i32(K * lineA / 16))
                               : b_.CreateMul(slabRow, i32(lineA / 16));
    Value *descA = aRegs ? nullptr : baseDescriptor(b_.CreateAdd(fieldA, slabStart), bitsA);
    for (int64_t n0 = 0; n0 < groupN; n0 += chunk) {
      Regs partialRegs; // this chunk's partial accumulator (`partial` only)
      int64_t sincePromotion = 0;
      for (int64_t ks = 0; ks < K / kStep; ++ks) {
        const int64_t k0 = kStep * ks;
        std::vector<Value *> args;
        if (aRegs) {
          args = aFragments[s * (K / kStep) + ks];
        } else if (aMMajor) {
          args.push_back(descriptor(descA, k0 * lineA)); // stored row k0 of the block
        } else {
          const int64_t kBlock = k0 / tileA->blockCols, kWithin = k0 % tileA->blockCols;
          args.push_back(descriptor(descA, kBlock * M * lineA + kWithin * elemBytes));
        }
        int64_t bOffset;
        if (bKMajor)
          bOffset = (k0 / tileB->blockCols) * N * lineB + n0 * lineB + (k0 % tileB->blockCols) * elemBytes;
        else
          bOffset = (n0 / tileB->blockCols) * K * lineB + k0 * lineB;
        args.push_back(descriptor(descB, bOffset));
        const bool fresh = partial && partialRegs.empty();
        const bool fromZero = zeroAcc && ks == 0; // scale-d = 0, no inputs
        if (!fromZero) args.push_back(i32(fresh ? 0 : 1));
        unsigned i = 0;
        for (int64_t j = n0 / 8; !fromZero && j < (n0 + chunk) / 8; ++j)
          for (unsigned c = 0; c < 4; ++c, ++i)
            args.push_back(!partial ? accRegs[regOf(s, j, c)]
                           : fresh  ? static_cast<Value *>(ConstantFP::get(f32Ty, 0.0))
                                    : partialRegs[i]);
        Value *d = b_.CreateCall(fromZero ? wgmmaFresh : wgmma, args);
        if (!partial) {
          i = 0;
          for (int64_t j = n0 / 8; j < (n0 + chunk) / 8; ++j)
            for (unsigned c = 0; c < 4; ++c) accRegs[regOf(s, j, c)] = b_.CreateExtractValue(d, i++);
          continue;
        }
        partialRegs.clear();
        for (unsigned r = 0; r < regsPerInstr; ++r) partialRegs.push_back(b_.CreateExtractValue(d, r));
        sincePromotion += kStep;
        if (sincePromotion < imprecise && ks + 1 < K / kStep) continue;
        // Promote: wait for the partial sums, add them into the f32 accumulator.
        emitAsm("wgmma.commit_group.sync.aligned;");
        wgmmaWait(partialRegs, 0);
        i = 0;
        for (int64_t j = n0 / 8; j < (n0 + chunk) / 8; ++j)
          for (unsigned c = 0; c < 4; ++c, ++i)
            accRegs[regOf(s, j, c)] = b_.CreateFAdd(accRegs[regOf(s, j, c)], partialRegs[i]);
        partialRegs.clear();
        sincePromotion = 0;
        if (ks + 1 < K / kStep || n0 + chunk < groupN || s + 1 < slabs)
          emitAsm("wgmma.fence.sync.aligned;"); // the registers were touched outside the wgmmas
      }
    }
  }
  if (partial) { // every group was waited for and added
    wgmmaAllWaited_ = true;
    if (staged) barrier(); // the scratch may be reused right after
    define(result, std::move(accRegs));
    return;
  }
  const bool onlyThisGroupPending = wgmmaAllWaited_; // nothing was outstanding before this commit
  emitAsm("wgmma.commit_group.sync.aligned;");

  if (op.hasAttr("deferred") && op.intAttr("deferred") && !staged) {
    wgmmaAllWaited_ = false; // a dot_wait {pending} before the first reader (DeferWgmmaWaits.h)
  } else if (op.hasAttr("async") && op.intAttr("async") && !staged) {
    // The previous iteration's group is done; this one runs on. (Attention's
    // P @ V follows S = Q K^T's wait_group 0: nothing older is left to wait for.)
    if (!onlyThisGroupPending) emitAsm("wgmma.wait_group.sync.aligned 1;");
    wgmmaAllWaited_ = false;
  } else {
    wgmmaWait(accRegs, 0);
    wgmmaAllWaited_ = true;
  }
  if (staged)
    barrier(); // the scratch may be reused right after
  define(result, std::move(accRegs));
}

} // namespace tessera::codegen

namespace tessera::codegen {

void KernelLowering::wgmmaWait(Regs &regs, int pending) {
  Type *f32Ty = b_.getFloatTy();
  std::string cons;
  for (size_t i = 0; i < regs.size(); ++i) cons += "=f,";
  for (size_t i = 0; i < regs.size(); ++i) cons += (i ? "," : "") + std::to_string(i);
  std::vector<Type *> types(regs.size(), f32Ty);
  InlineAsm *wait = InlineAsm::get(FunctionType::get(StructType::get(ctx_, types), types, false),
                                   pending < 0 ? std::string("// wgmma group complete already")
                                               : "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";",
                                   cons + ",~{memory}", /*hasSideEffects=*/true);
  Value *waited = b_.CreateCall(wait, std::vector<Value *>(regs.begin(), regs.end()));
  for (size_t i = 0; i < regs.size(); ++i) regs[i] = b_.CreateExtractValue(waited, static_cast<unsigned>(i));
}

// One register of an anchor as 32 bits: 16-bit halves and 8-bit values widened, addresses truncated
// (hoist-epilogue-loads' loads, HoistEpilogueLoads.h, are any element type).
Value *KernelLowering::anchorWord(Value *r) {
  Type *i32Ty = b_.getInt32Ty(), *t = r->getType();
  if (t->isPointerTy()) return b_.CreateTrunc(b_.CreatePtrToInt(r, b_.getInt64Ty()), i32Ty);
  unsigned bits = static_cast<unsigned>(t->getPrimitiveSizeInBits());
  Value *asInt = t->isIntegerTy() ? r : b_.CreateBitCast(r, b_.getIntNTy(bits));
  if (bits == 32) return asInt;
  return bits < 32 ? b_.CreateZExt(asInt, i32Ty) : b_.CreateTrunc(asInt, i32Ty);
}

// A dot_wait's operands after the accumulator (DeferWgmmaWaits.cpp): a
// volatile shared load at an address computed from their registers (within
// the first 16 bytes of shared memory; the value is not used) goes right
// before the wait. ptxas keeps a wgmma.wait_group after a shared load, and
// the load after the work that computes its address; without it the wait,
// which has no inputs, is moved up to right after the wgmmas (and the
// registers the wgmmas read are then reused at once).
void KernelLowering::loadWaitAnchors(ir::Operation &op) {
  Value *mix = nullptr;
  for (size_t i = 1; i < op.operands.size(); ++i) {
    // A loaded block (hoist-epilogue-loads): one register per vector load is enough, the load
    // completes as a whole (lowerLoad's registers r, r + vec, ... start its vectors).
    ir::Value *anchor = op.operand(static_cast<unsigned>(i));
    unsigned step = 1;
    if (anchor->definingOp && anchor->definingOp->code == ir::OpCode::Load && anchor->type.isBlock()) {
      ir::Operation &load = *anchor->definingOp;
      Type *memTy = memoryType(anchor->type.element(), &load);
      unsigned bits = memTy->isPointerTy() ? 64 : static_cast<unsigned>(memTy->getPrimitiveSizeInBits());
      step = vectorWidth(load, layoutOf(anchor, load), bits, load.loadMask() != nullptr);
    }
    const Regs &regs = lookup(anchor);
    for (size_t k = 0; k < regs.size(); k += step) {
      Value *r = regs[k];
      Value *word = anchorWord(r);
      mix = mix ? b_.CreateXor(mix, word) : word;
    }
  }
  if (!mix) return;
  sharedScratch(0, op); // creates the array
  sharedBytes_ = std::max(sharedBytes_, 16u);
  Value *address = b_.CreateAdd(sharedAddress32(smem_), b_.CreateAnd(mix, i32(12)));
  InlineAsm *load = InlineAsm::get(FunctionType::get(b_.getInt32Ty(), {b_.getInt32Ty()}, false),
                                   "ld.volatile.shared.b32 $0, [$1];", "=r,r,~{memory}", /*hasSideEffects=*/true);
  b_.CreateCall(load, {address});
}

void KernelLowering::lowerDotWait(ir::Operation &op) {
  Regs regs = lookup(op.operand(0));
  for (Value *r : regs)
    if (!r->getType()->isFloatTy()) unsupported(op, "dot_wait takes an f32 wgmma accumulator");
  // After a wait_group 0 with no commit since, the group is complete: the
  // registers only pass through (an asm with side effects, so it stays after
  // that wait and nothing reads them earlier). A deferred dot's wait leaves
  // the `pending` groups committed after it running.
  const int pending = op.hasAttr("pending") ? static_cast<int>(op.intAttr("pending")) : 0;
  if (!wgmmaAllWaited_) loadWaitAnchors(op);
  wgmmaWait(regs, wgmmaAllWaited_ ? -1 : pending);
  wgmmaAllWaited_ = wgmmaAllWaited_ || pending == 0;
  define(op.result(), std::move(regs));
}

} // namespace tessera::codegen
