// Software-pipeline (runs after accelerate-dot). A loop
//
//   for iv in [lb, ub) step s  (s a positive constant), iter_args(...):
//     ptr, mask = f(iv, loop-invariant values, pointer/offset iter args p += c)
//     x = load(ptr, mask [, other = 0])       -- 2-D f16/bf16/f32/i8
//     y = convert_layout(x) -> #dot_op<opIdx>
//     ... dot(y, ...) with an #mma result ...
//
// becomes, with S = numStages:
//
//   buf = local_alloc <S x rows x cols> #shared<opIdx, swizzle>
//   for d in 0 .. S-2:                          -- prologue
//     async_copy(f(lb + d*s), buf, d, lb + d*s < ub); async_commit
//   for iv ... iter_args(..., stage = 0):
//     async_wait pending=S-2; barrier           -- stage `stage` has arrived and
//                                               -- everyone is done with the one before
//     async_copy(f(iv + (S-1)*s), buf, stage - 1 mod S, iv + (S-1)*s < ub); async_commit
//     y = local_load(buf, stage)
//     ... dot(y, ...) ...
//     yield ..., stage + 1 mod S
//   async_wait pending=0; barrier; local_dealloc buf
//
// A GEMM whose one wgmma dot is async (below) and reads every staged block
// issues the copies after that dot instead, behind a second barrier, and
// S-1 stages ahead (as Triton does): the dot's wait_group 1 has retired the
// group that read last iteration's stage in every warp once all are past the
// barrier, so that stage takes the copies and S-1 blocks are in flight while
// the tensor cores work, not S-2 (the tutorial GEMM 128x256x64 / 3 stages).
//
// f is re-evaluated at the shifted iteration by cloning the pure ops that
// compute ptr and mask; an iter arg p updated by `p + c` (c loop-invariant,
// the tutorial's `a_ptrs += BLOCK_K * stride_ak`) is, d iterations ahead,
// p + d*c. A load among those ops (the block table of a paged KV cache) is
// cloned too, masked off past the loop's end, when nothing in the loop
// writes global memory (the page numbers are then read an iteration or more
// early, as Triton's pipeliner reads them). Copies past the end (pred
// false) and masked-off elements write zeros, which is what `other=0` asked
// for. Loads that do not fit stay as they are (the dot then stages them
// itself).
//
// Operands of wgmma dots (#mma version 3) get the wgmma tile layout
// (Layout::sharedWgmmaOperand) and a fence_async_shared before each barrier
// that publishes a stage: cp.async and local_store write through the generic
// proxy, wgmma reads through the async one. Such a dot whose accumulator
// the loop carries (and only the next iteration's dot reads; nothing before
// the body's first wgmma dot reads the carried value) is marked
// `async`: it leaves its wgmmas running into the next iteration (codegen
// waits for the previous group only), so the copies go one stage less far
// ahead (stage + S - 2: the stage the running group reads is not
// overwritten), and a dot_wait after the loop collects the accumulator.
//
// Blocks read through a tensor descriptor (desc_load, docs/tma.md) that
// feed wgmma dots are staged by the TMA unit instead, into a ring in the
// wgmma tile layout with one mbarrier per stage:
//
//   buf = local_alloc; bars = mbarrier_alloc <S> (arrivals: one per block)
//   for d in 0 .. A-1: async_tma_copy(desc, offsets(lb + d*s), buf, d, bars, lb + d*s < ub)
//   for iv ... iter_args(..., stage = 0, phase = 0):
//     mbarrier_wait(bars, stage, phase)          -- stage `stage` has landed
//     x = dot(local_load(buf, stage), ...)       -- the body's first dot
//     barrier                                    -- every warp is past the dots that
//                                                -- read stage + A mod S
//     async_tma_copy(..., iv + A*s, buf, stage + A mod S, bars, pred)
//     ... wait for x, the rest of the body ...
//     yield ..., stage + 1 mod S, phase ^ (stage + 1 == S)
//   barrier; local_dealloc bars (invalidated); local_dealloc buf
//
// A = S-1 (the stage read last iteration) where every dot that reads the
// ring has been waited for by then; A = S-2 where a later async dot reads
// it (attention's P V, running on into the next iteration). With more than
// one warpgroup the barrier becomes a second ring of "empty" mbarriers
// (arrivals: every thread), so that no warpgroup waits for the slowest each
// iteration; each thread arrives as soon as it is done with a stage, a step
// before the copying warp needs it (attention, A = S-2):
//     x = dot(...)
//     mbarrier_wait(empty, stage + A mod S, parity of iteration iv - (S-A),
//                   iv >= lb + (S-A)*s) {leader = 1}   -- the copying warp only
//     async_tma_copy(...)
//     ... the rest of the body ...
//     mbarrier_arrive(empty, stage - 1 mod S, iv != lb)   -- every thread
// (a GEMM, whose async first dot finishes last iteration's reads only when
// issued, arrives right before the wait instead).
//
// Blocks that only a later dot of the body reads (attention's V, read by
// P V after the softmax) get a second ring (formRings): own mbarriers, waited
// for just before that dot, and a stage fewer where that fits one more
// program on an SM (the 64 x 64 / 4-warp attention forward: 4 instead of 3).
//
// One thread issues the copies; nothing is copied past the end (no
// iteration waits for it), and the TMA unit fills what lies outside the
// tensor with zeros. A
// block that reaches the dot through trans (attention's K for S = Q K^T) is
// staged too: the TMA unit writes its rows as they are, which is the K-major
// tile wgmma reads the transposed B from (the buffer holds [cols x rows]).
//
// tl.range(..., warp_specialize=True) on a loop of TMA rings at the kernel's top level (or
// directly in one top-level loop, a persistent kernel's tile loop) moves every copy to a
// producer warpgroup instead (buildProducer, docs/tma.md): a warp_specialize region at the
// kernel's start, with the buffers and mbarriers hoisted before it, walks the loop (and the
// loop around it) waiting on each stage's empty mbarrier; the consumers' loop keeps its
// full waits and releases, and the ring outlives an enclosing tile loop.
//
// Small loads that feed a dot through other work (not as its operand) are
// read one iteration ahead into registers (SoftwarePipelinePrefetch.cpp).
//
// A wgmma B operand computed in the body of a loop with a cp.async ring is
// stored into its own one-stage buffer right after it is computed, with one
// barrier before the first dot that reads such buffers
// (SoftwarePipelineOperandBuffers.cpp), instead of each dot staging it.
//
// A dot operand computed before the loop (FlashAttention's Q tile) is
// stored into a one-stage buffer once before the loop (local_store,
// barrier) and read there with local_load, instead of being staged by the
// dot in every iteration; with num_stages=1 (no ring) too, as Triton keeps
// such an operand in shared memory whatever the stage count. A later loop of
// the same block reading the same value reuses that buffer (stageInvariants).
//
// A 16-bit block that several wgmma dots read, as it is and through trans
// (the attention backward's Q^T and dO), is one candidate with one ring:
// each further reader loads the stage too, transposed where its route and the
// first reader's differ by a trans (local_load {transpose = 1}; wgmma reads a
// tile either way round), instead of every dot staging its operand itself.
#include "compiler/passes/SoftwarePipeline.h"

#include "compiler/passes/CommonSubexpressionElimination.h"
#include "compiler/passes/DeadCodeElimination.h"
#include "compiler/passes/SoftwarePipelineLoop.h"

#include <vector>

namespace tessera::passes {

using namespace ir;

namespace software_pipeline {

bool LoopPipeliner::run() {
  std::vector<Candidate> invariants = findInvariantOperands();
  // With one stage nothing is copied ahead, but a loop-invariant operand is still staged once.
  const bool step = stages_ >= 2 && constantStep();
  std::vector<Candidate> candidates = step ? findCandidates() : std::vector<Candidate>{};
  std::vector<Candidate> tma = step ? findTmaCandidates() : std::vector<Candidate>{};
  if (candidates.empty() && tma.empty() && invariants.empty()) return false;
  specialize_ = wantsProducer() && candidates.empty() && !tma.empty() && producerCanCompute(tma);
  // Decided on the body as written (the copies added below store to shared memory only).
  std::vector<Operation *> prefetched =
      step && !specialize_ && !(candidates.empty() && tma.empty()) ? findPrefetchLoads(candidates) : std::vector<Operation *>{};
  stageInvariants(invariants);
  std::vector<Operation *> asyncDots;
  if (stages_ >= 3 && !(candidates.empty() && tma.empty())) asyncDots = findAsyncDots();
  copiesAfter_ = tma.empty() ? lateCopyDot(candidates, asyncDots) : nullptr;
  if (!asyncDots.empty() && !copiesAfter_) ahead_ = stages_ - 2;
  Value *stage = nullptr;
  if (!candidates.empty()) {
    allocateBuffers(candidates, stages_);
    emitPrologue(candidates, ahead_, &LoopPipeliner::emitCopies);
  }
  std::vector<Candidate> others = invariants;
  others.insert(others.end(), candidates.begin(), candidates.end());
  std::vector<TmaRing> rings = formRings(tma, others);
  for (TmaRing &r : rings) {
    allocateBuffers(r.cs, r.stages);
    allocateMbarriers(r);
    if (!specialize_) emitPrologue(r.cs, r.ahead, &LoopPipeliner::emitTmaCopies);
  }
  // The cp.async copies and the first ring share one stage counter (same stage count).
  if (!candidates.empty() || !rings.empty()) stage = addStageCounter(stages_);
  for (TmaRing &r : rings) {
    r.stage = &r == &rings.front() ? stage : addStageCounter(r.stages);
    r.phase = addPhaseCounter(r.stage, r.stages);
  }
  if (!candidates.empty()) emitLoopHead(candidates, stage);
  for (Candidate &c : candidates) readFromBuffer(c, stage);
  for (TmaRing &r : rings)
    for (Candidate &c : r.cs) readFromBuffer(c, r.stage);
  for (TmaRing &r : rings) waitForRing(r, &r == &rings.front());
  if (specialize_) {
    releaseStages(rings);
  } else {
    refillRings(rings);
  }
  prefetchIntoRegisters(prefetched);
  if (!candidates.empty() && rings.empty() && !specialize_) bufferRegisterOperands();
  emitEpilogue(!candidates.empty());
  for (Operation *dot : asyncDots) waitAfterLoop(*dot);
  if (specialize_ && outer_) carryRingsAcrossOuterLoop(rings);
  if (specialize_) buildProducer(rings);
  if (specialize_ && pingpong_) alternateTiles();
  return true;
}

} // namespace software_pipeline

void softwarePipeline(Function &fn, unsigned numStages) {
  if (numStages < 1) return;
  std::vector<Operation *> loops;
  walk(fn.body, [&](Operation &op) {
    if (op.code == OpCode::For) loops.push_back(&op);
  });
  bool changed = false;
  for (Operation *loop : loops) changed |= software_pipeline::LoopPipeliner(fn, *loop, numStages).run();
  if (!changed) return;
  eliminateCommonSubexpressions(fn); // the clones recompute loop-invariant values
  eliminateDeadCode(fn);             // the loads and the address math only they used
}

} // namespace tessera::passes
