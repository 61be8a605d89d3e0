// warp_specialize: the producer warpgroup (compiler/passes/SoftwarePipelineProducer.cpp,
// buildProducer; docs/tma.md). The kernel is launched with fn.numWarps consumer warps and
// `producer_warps` more after them, so the consumers' thread ids, and every layout assigned
// for them, stay as they are:
//
//   if (tid >= consumer threads) {           -- the producer warpgroup
//     setmaxnreg.dec 40                      -- (two consumer warpgroups) registers to the consumers
//     if (its first warp) region             -- lane 0 issues the copies, the warp waits
//     bar.arrive 4, all threads              -- done with the mbarriers (joinProducer)
//     return
//   }
//   setmaxnreg.inc 232
//   ... the consumers: CTA barriers become bar.sync 3, consumer threads ...
//
// Named barriers: 0 every thread (before the split), 1 and 2 tl.pingpong_*, 3 the consumers,
// 4 consumers and producer once the loop is over (the barrier before the mbarriers are
// invalidated). setmaxnreg needs the register count at entry fixed: .reqntid and
// .minnctapersm 1 (LLVMLowering.cpp) make it 65536 / 384 = 168 for 12 warps, and
// 4 x 40 + 8 x 232 = 12 x 168, so the consumers' increase is always granted.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace tessera::codegen {

using namespace llvm;

namespace {

constexpr unsigned kProducerRegisters = 40, kConsumerRegisters = 232;
constexpr unsigned kConsumerBarrier = 3, kJoinBarrier = 4;

} // namespace

// Register rebalancing pays (and fits the arithmetic above) with two consumer warpgroups
// and no register limit of the user's.
bool KernelLowering::rebalancesRegisters() const {
  return ir::producerWarps(fn_) == 4 && fn_.numWarps == 8 && maxRegisters_ == 0;
}

void KernelLowering::lowerWarpSpecialize(ir::Operation &op) {
  if (arch_ != "sm_90a")
    notSupported(op, "warp_specialize (a producer warpgroup, setmaxnreg) needs sm_90a, not " + arch_);
  const unsigned consumers = kWarpSize * fn_.numWarps;
  const unsigned all = consumers + kWarpSize * static_cast<unsigned>(op.intAttr("producer_warps"));
  BasicBlock *producer = BasicBlock::Create(ctx_, "producer", kernel_);
  BasicBlock *consumer = BasicBlock::Create(ctx_, "consumer", kernel_);
  b_.CreateCondBr(b_.CreateICmpUGE(tid_, i32(consumers)), producer, consumer);

  b_.SetInsertPoint(producer);
  if (rebalancesRegisters()) convergentAsm("setmaxnreg.dec.sync.aligned.u32 " + std::to_string(kProducerRegisters) + ";");
  // One warp runs the program (warp-uniform branches); its lane 0 issues the copies.
  leaderThread_ = consumers;
  onlyWhere(b_.CreateICmpEQ(uniformWarp(), i32(fn_.numWarps)), [&] { lowerBlock(*op.region(0)); }, "producer.warp");
  leaderThread_ = 0;
  convergentAsm("bar.arrive " + std::to_string(kJoinBarrier) + ", " + std::to_string(all) + ";");
  b_.CreateRetVoid();

  b_.SetInsertPoint(consumer);
  if (rebalancesRegisters()) convergentAsm("setmaxnreg.inc.sync.aligned.u32 " + std::to_string(kConsumerRegisters) + ";");
  consumerThreads_ = consumers;
  joinThreads_ = all;
}

void KernelLowering::joinProducer() {
  if (!joinThreads_) return barrier(); // no producer: an ordinary barrier
  convergentAsm("bar.sync " + std::to_string(kJoinBarrier) + ", " + std::to_string(joinThreads_) + ";");
}

void KernelLowering::barrier() {
  if (!consumerThreads_) {
    b_.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {});
    return;
  }
  convergentAsm("bar.sync " + std::to_string(kConsumerBarrier) + ", " + std::to_string(consumerThreads_) + ";");
}

} // namespace tessera::codegen
