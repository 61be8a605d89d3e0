// Internal to codegen: the block-IR -> LLVM IR lowering of one kernel.
// The member functions are defined by concern in LLVMLowering.cpp (driver,
// values, index math, control flow), Elementwise.cpp, Memory.cpp, Reduce.cpp
// and SharedMemory.cpp; the rest of triton.language in MathOps.cpp,
// ShapeOps.cpp, Scan.cpp, Sort.cpp, Gather.cpp, Histogram.cpp, InlineAsm.cpp,
// Dot.cpp, Atomics.cpp and DebugOps.cpp. See
// docs/codegen.md and docs/language.md.
#pragma once

#include "compiler/codegen/Codegen.h"
#include "compiler/ir/LayoutMath.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

namespace tessera::codegen {

// The layout math lives with the IR (the passes share it); codegen names it unqualified.
using ir::conversionRowPadding;
using ir::DimMap;
using ir::DistributedLayout;
using ir::kWarpSize;
using ir::lastDimVectorWidth;
using ir::linearIndex;
using ir::log2Exact;
using ir::mmaAFragmentRegisters;
using ir::registersSharingRuns;

// The registers of one thread for one value, in the layout's register order
// (a scalar has exactly one).
using Regs = llvm::SmallVector<llvm::Value *, 8>;

// "'load' at 12:5" (or "'load' (no source location)").
std::string describe(const ir::Operation &op);
[[noreturn]] void unsupported(const ir::Operation &op, const std::string &why);
// The user's kernel asks for something this target cannot do: an
// UnsupportedError, reported by the driver as a diagnostic at the op.
[[noreturn]] void notSupported(const ir::Operation &op, const std::string &why);

// fp8 (e4m3 / e5m2) bits of a value, rounded to nearest even and saturated
// to the largest finite value (what cvt.rn.satfinite does); for constants.
uint8_t encodeFp8(double v, bool e4m3);

class KernelLowering {
public:
  KernelLowering(ir::Function &fn, llvm::Module &module);
  void setArch(std::string arch) { arch_ = std::move(arch); } // fp8 needs sm_89+
  void setMaxRegisters(unsigned n) { maxRegisters_ = n; }      // .maxnreg; 0: none
  void setCompareRuns(bool on) { compareRuns_ = on; }          // CodegenOptions::compareRuns
  void setFp8RegisterA(bool on) { fp8RegisterA_ = on; }        // CodegenOptions::fp8RegisterA
  llvm::Function *run();
  unsigned sharedBytes() const { return sharedBytes_; }

private:
  ir::Function &fn_;
  llvm::Module &module_;
  llvm::LLVMContext &ctx_;
  llvm::IRBuilder<> b_;
  llvm::Function *kernel_ = nullptr;
  llvm::BasicBlock *entry_ = nullptr; // thread-index math, dominates everything
  llvm::Value *tid_ = nullptr, *lane_ = nullptr, *warp_ = nullptr;
  llvm::GlobalVariable *smem_ = nullptr;
  unsigned sharedBytes_ = 0;
  std::unordered_map<const ir::Value *, Regs> regs_;
  std::map<std::string, llvm::Value *> entryCache_; // per-layout thread offsets
  // Per block compare, runs of equal results along each dim (compiler/ir/AxisInfo.h),
  // computed on first use.
  std::optional<std::unordered_map<const ir::Operation *, std::vector<int64_t>>> compareConstancy_;
  std::optional<bool> manyGlobalStores_, manyGlobalLoads_; // computed on the first access
  // For each register of `op`'s result, the first register whose value it shares (itself
  // when none): registers in one run of a compare's constancy in every thread.
  std::vector<unsigned> sharedCompareRegisters(ir::Operation &op, unsigned numRegs);

  // ------------------------------------------------ values and types (LLVMLowering.cpp)
  const Regs &lookup(const ir::Value *v) const;
  void define(const ir::Value *v, Regs regs);
  llvm::Type *elementType(const ir::Type &t, const ir::Operation *op) const;
  llvm::Type *memoryType(const ir::Type &elem, const ir::Operation *op) const; // i1 -> i8
  DistributedLayout layoutOf(const ir::Value *v, const ir::Operation &op) const;
  unsigned numRegs(const ir::Value *v, const ir::Operation &op) const;
  llvm::Value *i32(int64_t v) { return b_.getInt32(static_cast<uint32_t>(v)); }

  // ------------------------------------------------ index math (LLVMLowering.cpp)
  llvm::Value *inEntry(const std::string &key, const std::function<llvm::Value *(llvm::IRBuilder<> &)> &make);
  llvm::Value *laneIndex(const DimMap &m);
  llvm::Value *warpIndex(const DimMap &m);
  // warpIndex read from lane 0 with shfl.sync.idx, so that ptxas treats it (and the
  // wgmma descriptors made from it) as warp-uniform.
  llvm::Value *uniformWarp(); // the warp number, known to ptxas as warp-uniform
  llvm::Value *uniformWarpIndex(const DimMap &m);
  llvm::Value *threadOffset(const DimMap &m);
  // Value coordinates (i32) of register `reg` of this thread.
  std::vector<llvm::Value *> coordinates(const DistributedLayout &layout, unsigned reg);
  llvm::Value *linearIndex(const std::vector<llvm::Value *> &coords,
                           const std::vector<int64_t> &shape);
  // i1 "this thread holds the canonical copy of register `reg`"; null = always.
  llvm::Value *ownerPredicate(const DistributedLayout &layout, unsigned reg);
  llvm::Value *andPredicates(llvm::Value *a, llvm::Value *b);

  // ------------------------------------------------ ops
  void lowerBlock(ir::Block &block);
  void lowerOp(ir::Operation &op);
  void lowerFor(ir::Operation &op);
  void lowerIf(ir::Operation &op);
  void lowerWhile(ir::Operation &op);
  // The registers of the values a region's terminator passes on.
  std::vector<Regs> terminatorValues(ir::Block &region, unsigned firstOperand);
  std::vector<Regs> makePhis(const std::vector<Regs> &incoming, llvm::BasicBlock *from);
  void addIncoming(std::vector<Regs> &phis, const std::vector<Regs> &values,
                   llvm::BasicBlock *from, const ir::Operation &op);
  void lowerConstant(ir::Operation &op);
  void lowerSpecialRegister(ir::Operation &op);
  void lowerSmIdOrGlobalTimer(ir::Operation &op); // %smid, %globaltimer (tl.extra.cuda)
  void lowerMakeRange(ir::Operation &op);
  void lowerRegisterMapping(ir::Operation &op); // broadcast, expand_dims

  // Elementwise.cpp
  void lowerElementwise(ir::Operation &op);
  llvm::Value *elementwise(ir::Operation &op, llvm::ArrayRef<llvm::Value *> x);
  llvm::Value *fullRangeDivide(llvm::Value *x, llvm::Value *y);
  llvm::Value *castElement(ir::Operation &op, llvm::Value *x, const ir::Type &from,
                           const ir::Type &to);
  llvm::Value *mathElement(ir::Operation &op, llvm::Value *x, const ir::Type &t);
  llvm::Value *combine(ir::Operation &op, const std::string &kind, const ir::Type &elem,
                       llvm::Value *a, llvm::Value *b); // reduce kinds; also max/min

  // Memory.cpp: `vec` consecutive elements per access (1, or 32/64/128 bits)
  void lowerLoad(ir::Operation &op);
  void lowerStore(ir::Operation &op);
  unsigned vectorWidth(const ir::Operation &op, const DistributedLayout &layout, unsigned elemBits,
                       bool masked) const;
  llvm::Value *cachePolicy(const std::string &eviction); // createpolicy, once per kernel
  Regs loadVector(ir::Operation &op, llvm::Type *memTy, unsigned vec, llvm::Value *ptr,
                  llvm::Value *pred, llvm::ArrayRef<llvm::Value *> others);
  void storeVector(ir::Operation &op, llvm::Type *memTy, llvm::Value *ptr,
                   llvm::ArrayRef<llvm::Value *> values, llvm::Value *pred);
  bool manyGlobalStores(); // stores a thread issues, over the kernel, above kMaxPlainStores
  bool manyGlobalLoads();  // the same for loads (kMaxPlainLoads)
  unsigned globalAccessCount(ir::OpCode code) const;

  // Reduce.cpp: reduce (sum/max/min) and reduce_combine share the three steps.
  using Combiner = std::function<std::vector<llvm::Value *>(llvm::ArrayRef<llvm::Value *>, llvm::ArrayRef<llvm::Value *>)>;
  void lowerReduce(ir::Operation &op);
  void lowerReduceCombine(ir::Operation &op);
  void lowerLaneReduce(ir::Operation &op);
  // withinThreads: step 1 only (a `partial` sum, compiler/passes/DeferLaneReductions.h).
  std::vector<Regs> reduceAlongAxis(ir::Operation &op, const std::vector<ir::Value *> &inputs,
                                    const Combiner &combine, bool commutative, bool withinThreads = false);
  // Runs a reduce_combine/scan region on scalars a, b; returns its yields.
  std::vector<llvm::Value *> applyCombineRegion(ir::Operation &op, llvm::ArrayRef<llvm::Value *> a,
                                                llvm::ArrayRef<llvm::Value *> b);
  llvm::Value *shuffleXor(llvm::Value *v, unsigned laneMask);
  enum class ShuffleMode { Xor, Up, Down, Idx };
  // shfl.sync of any scalar type; laneArg: the lane mask, delta or source lane (i32).
  llvm::Value *shuffleSync(ShuffleMode mode, llvm::Value *v, llvm::Value *laneArg);

  // The rest of triton.language (docs/language.md)
  std::string arch_ = "sm_90a";
  bool compareRuns_ = true;
  bool fp8RegisterA_ = true;
  unsigned maxRegisters_ = 0;
  bool valueIsUsed(const ir::Value *v);
  // MathOps.cpp: sin ... libdevice, fp8 conversions
  void lowerMathOp(ir::Operation &op);
  llvm::Value *mathOpElement(ir::Operation &op, llvm::ArrayRef<llvm::Value *> x, const ir::Type &t);
  llvm::Value *halfPrecisionErf(llvm::Value *x);
  llvm::Value *castFp8(ir::Operation &op, llvm::Value *x, const ir::Type &from, const ir::Type &to);
  // Two f32 registers to fp8 with one cvt.rn.satfinite (sm_90): {low byte = lo, high = hi} as i16.
  llvm::Value *narrowPairToFp8(llvm::Value *lo, llvm::Value *hi, ir::ScalarType to);
  llvm::Value *widenFp8Bits(llvm::Value *x, const ir::Type &from); // f16 (e5m2) or f32 (e4m3)
  // ShapeOps.cpp: trans, join, split, cat, flip (element moves through shared memory)
  void lowerShapeOp(ir::Operation &op);
  bool pickRegisters(ir::Operation &op); // a shape op that moves no data: true when done
  // Scan.cpp
  void lowerScan(ir::Operation &op);
  void lowerScanThroughShared(ir::Operation &op); // any layout: log2(n) steps through shared memory
  // Sort.cpp, Gather.cpp, Histogram.cpp: data-dependent moves through shared memory
  void lowerSort(ir::Operation &op);
  llvm::Value *greaterThan(llvm::Value *a, llvm::Value *b, const ir::Type &t); // ordered for floats
  void lowerGather(ir::Operation &op);
  void lowerHistogram(ir::Operation &op);
  // InlineAsm.cpp: tl.inline_asm_elementwise
  void lowerInlineAsm(ir::Operation &op);
  // MapElementwise.cpp: tl.map_elementwise (the region per pack of registers)
  void lowerMapElementwise(ir::Operation &op);
  llvm::Value *resizeBits(llvm::Value *v, llvm::Type *to); // same bits, zero-extended or truncated
  // Dot.cpp
  void lowerDot(ir::Operation &op);
  void lowerMmaDot(ir::Operation &op); // tensor cores: result in an Mma layout
  void lowerWgmmaDot(ir::Operation &op); // WgmmaDot.cpp: Mma version 3 (sm_90a)
  void lowerDotWait(ir::Operation &op);
  // wgmma.wait_group `pending` (none when negative: the registers are complete
  // already), passing `regs` through so nothing reads them before.
  void wgmmaWait(Regs &regs, int pending);
  // A dot_wait's anchor operands as one volatile shared load before it (WgmmaDot.cpp).
  void loadWaitAnchors(ir::Operation &op);
  llvm::Value *anchorWord(llvm::Value *r);
  // True from a wgmma.wait_group 0 until the next commit_group in straight-line
  // code (reset at every loop and branch): no wgmma group is outstanding then,
  // so a dot_wait has nothing to wait for and an async dot's wait_group 1 after
  // its own commit neither (WgmmaDot.cpp).
  bool wgmmaAllWaited_ = false;
  // Operand A of a tensor-core dot kept in registers: the #mma layout its
  // value has when it is the (cast) result of a dot with the same warps
  // (attention's P), else null; and the A fragment (4 x .b32) of m-tile mi,
  // k-step ks from those registers (LayoutMath's mmaAFragmentRegisters).
  const ir::Layout *registerOperandA(ir::Value *a, const ir::Layout &result);
  std::vector<llvm::Value *> aFragmentFromRegisters(ir::Value *a, const DistributedLayout &layout, int64_t mi,
                                                    int64_t ks);
  // The 8-bit A fragments (k = 32) of wgmma from an fp8 tile in the #mma C layout: lanes swap
  // column pairs (MmaDot.cpp).
  std::vector<llvm::Value *> fp8AFragmentFromRegisters(ir::Value *a, const DistributedLayout &layout, int64_t mi,
                                                       int64_t ks);
  // The shared tiles of a tensor-core dot's operands: the pipeline's buffers
  // (local_load), or `v` staged here into scratch laid out as `tileA/B` say.
  void dotOperandTiles(ir::Operation &op, llvm::Value *&aBase, ir::LayoutRef &tileA, llvm::Value *&bBase,
                       ir::LayoutRef &tileB, bool &staged, bool stageA = true);
  // Values in a dot-operand layout keep the registers of the converted value;
  // this is that value's layout (convert_layout to #dot_op moves nothing).
  std::unordered_map<const ir::Value *, ir::LayoutRef> dotOperandSource_;
  // Stores a register value into a swizzled operand tile (layout `tile`) at `base`.
  void stageToShared(ir::Operation &op, ir::Value *v, llvm::Value *base, const ir::Layout &tile);
  // AsyncCopy.cpp: local_alloc/dealloc, async_copy/commit/wait, local_load
  struct SharedBuffer {
    llvm::Value *base;
    uint64_t offset;
  };
  struct SharedOperand { // a local_load result: where its tile is
    llvm::Value *base;
    ir::LayoutRef tile;
  };
  std::unordered_map<const ir::Value *, SharedBuffer> buffers_;
  std::unordered_map<const ir::Value *, SharedOperand> sharedOperands_;
  uint64_t reservedShared_ = 0; // bytes held by live local_allocs; scratch starts above
  void lowerLocalAlloc(ir::Operation &op);
  SharedBuffer reserveShared(ir::Operation &op, uint64_t bytes, uint64_t align); // on the local_alloc stack
  void lowerLocalDealloc(ir::Operation &op);
  void lowerAsyncCopy(ir::Operation &op);
  void lowerAsyncGroup(ir::Operation &op); // async_commit, async_wait
  void lowerLocalLoad(ir::Operation &op);
  void lowerLocalStore(ir::Operation &op);
  llvm::Value *stageBase(ir::Operation &op, ir::Value *buffer, ir::Value *stage);
  // Swizzled tiles (compiler/ir/Layout.h, Shared), i32 byte offsets from the tile's start.
  llvm::Value *sharedStoredRow(const ir::Layout &tile, llvm::Value *row);
  llvm::Value *sharedChunkOffset(const ir::Layout &tile, int64_t rowBytes, llvm::Value *storedRow, llvm::Value *chunk);
  // (row, col) of a stored rows x cols tile.
  llvm::Value *sharedElementOffset(const ir::Layout &tile, int64_t rows, int64_t cols, unsigned elemBytes,
                                   llvm::Value *row, llvm::Value *col);
  // Tma.cpp: desc_load through the TMA unit, mbarriers
  // desc_load/desc_store's swizzled tile in scratch shared memory, `extraBytes` after it.
  llvm::Value *tmaScratchTile(ir::Operation &op, uint64_t tileBytes, uint64_t extraBytes);
  void lowerDescLoad(ir::Operation &op);
  void lowerDescStore(ir::Operation &op);
  void lowerMbarrierAlloc(ir::Operation &op);
  void lowerAsyncTmaCopy(ir::Operation &op);
  void lowerMbarrierWait(ir::Operation &op);
  void lowerMbarrierArrive(ir::Operation &op);
  void lowerMbarrierDealloc(ir::Operation &dealloc); // local_dealloc of mbarrier_alloc
  void checkTmaBlock(ir::Operation &op, const ir::Type &block);
  llvm::Value *tmaStackedRow(const ir::Type &block, const std::vector<llvm::Value *> &at);
  // (Thread 0) expect the block's bytes on `bar`, then copy the block at (outer..., row0, col0) into `tile`;
  // `outer`: the offsets of a block's leading dims (none for a 2-D block), outermost first.
  void startTmaCopy(const ir::Type &block, llvm::Value *desc, const std::vector<llvm::Value *> &outer,
                    llvm::Value *row0, llvm::Value *col0, llvm::Value *tile, llvm::Value *bar);
  // Thread 0 initialises (fenced for the async proxy) / invalidates `count`
  // mbarriers at `first` (a shared i8 pointer), 8 bytes apart.
  void initMbarriers(llvm::Value *first, int64_t count, int64_t arrivals);
  void invalidateMbarriers(llvm::Value *first, int64_t count);
  llvm::Value *mbarrierAddress(ir::Operation &op, ir::Value *mbarriers, ir::Value *stage); // 32-bit
  llvm::Value *sharedAddress32(llvm::Value *ptr); // a shared-memory pointer as PTX's 32-bit address
  // One PTX statement with operands (`constraints` without the memory clobber).
  llvm::CallInst *asmCall(const std::string &text, const std::string &constraints, llvm::ArrayRef<llvm::Value *> args);
  // The same for a statement every thread of a warp must reach together (bar.sync, setmaxnreg:
  // .aligned): convergent, so that LLVM does not copy it into paths the warp may split across
  // (tail duplication put a barrier on both sides of a thread-0 branch, and the warp hung).
  void convergentAsm(const std::string &text, const std::string &constraints = "",
                     llvm::ArrayRef<llvm::Value *> args = {});
  // body runs in thread leaderThread_ (0) only (and only where `also`, an i1, holds)
  void onLeaderThread(const std::function<void()> &body, llvm::Value *also = nullptr);
  void onlyWhere(llvm::Value *cond, const std::function<void()> &body, const char *name); // if (cond) body
  // WarpSpecialize.cpp: the producer warpgroup. Once it has branched off, CTA barriers are
  // the consumers' named barrier; inside its program, its first thread issues the copies.
  unsigned consumerThreads_ = 0; // nonzero after the split
  unsigned joinThreads_ = 0;     // consumers and producer, for joinProducer
  unsigned leaderThread_ = 0;    // the thread onLeaderThread runs in
  // Ping-pong (consumer_groups = 2): after the split tid_ is the thread's index in its group,
  // group_ the group (warp-uniform), and scratch shared memory above groupBase_ (the ring's
  // end) is the group's own: group 1's lies groupStride_ bytes above group 0's, a placeholder
  // until every op is lowered (finishGroups).
  llvm::Value *group_ = nullptr, *fullTid_ = nullptr;
  llvm::Instruction *groupStride_ = nullptr;
  llvm::GlobalVariable *groupStrideSlot_ = nullptr;
  uint64_t groupBase_ = 0, groupPeak_ = 0;
  llvm::Value *groupShared(llvm::Value *base, uint64_t offset); // base, moved to this group's copy above groupBase_
  void finishGroups();
  void lowerConsumerGroup(ir::Operation &op);
  void lowerWarpSpecialize(ir::Operation &op);
  void joinProducer(); // a barrier of the consumers and the exiting producer
  bool rebalancesRegisters() const; // setmaxnreg between producer and consumers
  void waitMbarrier(llvm::Value *bar, llvm::Value *parity); // spins on try_wait.parity
  // Atomics.cpp
  void lowerAtomic(ir::Operation &op);
  bool lowerVectorAtomicAdd(ir::Operation &op, const DistributedLayout &layout, const Regs &ptrs, const Regs &vals,
                            const Regs *masks);
  // DebugOps.cpp: print, assert, assume, barrier
  void lowerDebugOp(ir::Operation &op);
  llvm::Value *formatString(const std::string &text);

  // SharedMemory.cpp
  llvm::Value *sharedScratch(uint64_t bytes, const ir::Operation &op); // base pointer
  void barrier();
  void pingpong(const std::string &kind); // tl.pingpong_*: two warpgroups taking turns
  void fenceProxyAsync(); // fence.proxy.async.shared::cta (generic-proxy writes -> wgmma reads)
  void emitAsm(const std::string &text); // one PTX statement without operands, ordered like memory accesses
  void lowerThroughSharedMemory(ir::Operation &op); // convert_layout, reshape
  llvm::Value *toMemory(llvm::Value *v, const ir::Type &elem);
  llvm::Value *fromMemory(llvm::Value *v, const ir::Type &elem);
};

} // namespace tessera::codegen
