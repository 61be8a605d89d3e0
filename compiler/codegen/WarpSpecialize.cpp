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
// invalidated), 5 and 6 consumer group 0's and 1's with ping-pong.
//
// Ping-pong (consumer_groups = 2, SoftwarePipelineProducer.cpp alternateTiles): the program
// was laid out for fn.numWarps = 4 warps, and two groups of 4 run it, warps 0-3 and 4-7 (the
// producer is warps 8-11). After the split a consumer's thread id is its index in its group
// (every layout's warp index is masked to 4 warps already), the group's CTA barriers are its
// own named barrier, and the scratch shared memory above the ring is one copy per group. setmaxnreg needs the register count at entry fixed: .reqntid and
// .minnctapersm 1 (LLVMLowering.cpp) make it 65536 / 384 = 168 for 12 warps, and
// 4 x 40 + 8 x 232 = 12 x 168, so the consumers' increase is always granted.
#include "compiler/codegen/Lowering.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace tessera::codegen {

using namespace llvm;

namespace {

constexpr unsigned kProducerRegisters = 40, kConsumerRegisters = 232;
constexpr unsigned kConsumerBarrier = 3, kJoinBarrier = 4, kGroupBarrier = 5;

} // namespace

// Register rebalancing pays (and fits the arithmetic above) with two consumer warpgroups
// and no register limit of the user's.
bool KernelLowering::rebalancesRegisters() const {
  return ir::producerWarps(fn_) == 4 && fn_.numWarps * ir::consumerGroups(fn_) == 8 && maxRegisters_ == 0;
}

void KernelLowering::lowerWarpSpecialize(ir::Operation &op) {
  if (arch_ != "sm_90a")
    notSupported(op, "warp_specialize (a producer warpgroup, setmaxnreg) needs sm_90a, not " + arch_);
  const unsigned groups = op.hasAttr("consumer_groups") ? static_cast<unsigned>(op.intAttr("consumer_groups")) : 1;
  const unsigned consumers = kWarpSize * fn_.numWarps * groups;
  const unsigned all = consumers + kWarpSize * static_cast<unsigned>(op.intAttr("producer_warps"));
  BasicBlock *producer = BasicBlock::Create(ctx_, "producer", kernel_);
  BasicBlock *consumer = BasicBlock::Create(ctx_, "consumer", kernel_);
  b_.CreateCondBr(b_.CreateICmpUGE(tid_, i32(consumers)), producer, consumer);

  b_.SetInsertPoint(producer);
  if (rebalancesRegisters()) convergentAsm("setmaxnreg.dec.sync.aligned.u32 " + std::to_string(kProducerRegisters) + ";");
  // One warp runs the program (warp-uniform branches); its lane 0 issues the copies.
  leaderThread_ = consumers;
  onlyWhere(b_.CreateICmpEQ(uniformWarp(), i32(fn_.numWarps * groups)), [&] { lowerBlock(*op.region(0)); },
            "producer.warp");
  leaderThread_ = 0;
  convergentAsm("bar.arrive " + std::to_string(kJoinBarrier) + ", " + std::to_string(all) + ";");
  b_.CreateRetVoid();

  b_.SetInsertPoint(consumer);
  if (rebalancesRegisters()) convergentAsm("setmaxnreg.inc.sync.aligned.u32 " + std::to_string(kConsumerRegisters) + ";");
  consumerThreads_ = consumers / groups;
  joinThreads_ = all;
  if (groups == 1) return;
  if (groups != 2 || fn_.numWarps != 4) notSupported(op, "consumer groups are two warpgroups");
  group_ = b_.CreateLShr(uniformWarp(), 2, "group");
  fullTid_ = tid_;
  tid_ = b_.CreateAnd(tid_, consumerThreads_ - 1, "tid.in.group");
  groupBase_ = groupPeak_ = reservedShared_;
  groupStrideSlot_ = new GlobalVariable(module_, b_.getInt64Ty(), /*isConstant=*/true, GlobalValue::ExternalLinkage,
                                        nullptr, "group_stride_placeholder");
  groupStride_ = b_.CreateLoad(b_.getInt64Ty(), groupStrideSlot_, "group.stride");
}

Value *KernelLowering::groupShared(Value *base, uint64_t offset) {
  if (!group_ || offset < groupBase_) return base;
  Value *skip = b_.CreateMul(b_.CreateZExt(group_, b_.getInt64Ty()), groupStride_);
  return b_.CreateGEP(b_.getInt8Ty(), base, skip);
}

// Group 1's scratch lies above all of group 0's (1024-byte aligned, as wgmma's swizzled tiles are).
void KernelLowering::finishGroups() {
  if (!groupStride_) return;
  const uint64_t stride = (groupPeak_ - groupBase_ + 1023) / 1024 * 1024;
  groupStride_->replaceAllUsesWith(b_.getInt64(stride));
  groupStride_->eraseFromParent();
  groupStrideSlot_->eraseFromParent();
  groupStride_ = nullptr;
  groupStrideSlot_ = nullptr;
  sharedBytes_ = static_cast<unsigned>(std::max<uint64_t>(sharedBytes_, groupPeak_ + stride));
}

void KernelLowering::lowerConsumerGroup(ir::Operation &op) { define(op.result(), {group_ ? group_ : i32(0)}); }

void KernelLowering::joinProducer() {
  if (!joinThreads_) return barrier(); // no producer: an ordinary barrier
  convergentAsm("bar.sync " + std::to_string(kJoinBarrier) + ", " + std::to_string(joinThreads_) + ";");
  if (!group_) return;
  // The groups are done: what follows (the mbarriers invalidated) is the CTA's once.
  tid_ = fullTid_;
  group_ = nullptr;
  consumerThreads_ *= 2;
}

void KernelLowering::barrier() {
  if (!consumerThreads_) {
    b_.CreateIntrinsic(Intrinsic::nvvm_barrier0, {}, {});
    return;
  }
  if (group_) { // the group's own barrier; immediate ids under a predicate (see pingpong)
    const std::string count = std::to_string(consumerThreads_);
    convergentAsm("{ .reg .pred p; setp.ne.b32 p, $0, 0; @!p bar.sync " + std::to_string(kGroupBarrier) + ", " + count +
                      "; @p bar.sync " + std::to_string(kGroupBarrier + 1) + ", " + count + "; }",
                  "r", {group_});
    return;
  }
  convergentAsm("bar.sync " + std::to_string(kConsumerBarrier) + ", " + std::to_string(consumerThreads_) + ";");
}

} // namespace tessera::codegen
