// The pipeline pass's TMA rings (SoftwarePipeline.cpp describes them): desc_loads feeding wgmma
// dots, copied into shared memory by the TMA unit, with mbarriers that say a stage has landed
// (full) or been read by every thread (empty).
#include "compiler/passes/SoftwarePipelineLoop.h"

#include <algorithm>

namespace tessera::passes::software_pipeline {

// desc_load -> convert_layout -> #dot_op of wgmma dots only, with a
// descriptor from outside the loop and offsets computable at another iteration.
// desc_load -> trans -> convert_layout -> B also (attention's K block for
// S = Q K^T): the TMA unit writes the block's rows as they are, which is
// the K-major tile wgmma reads B^T from (the layout cp.async gives a B read
// along its dim 0, allocateBuffers).
std::vector<Candidate> LoopPipeliner::findTmaCandidates() {
  std::vector<Candidate> found;
  for (auto &op : body_->ops) {
    Operation *trans = transposedBFeeding(*op);
    Operation *load = trans ? readOnceInBody(trans->operand(0), OpCode::DescLoad)
                            : loadFeedingDotOperand(*op, OpCode::DescLoad);
    if (!load) continue;
    Value *loaded = load->result();
    if (definedInBody(load->operand(0)) || loaded->type.rank() != 2 || feedsOnlyMmaDots(*op) != 3) continue;
    // The TMA unit writes a box's columns in order: not the grouped columns of a B tile whose
    // dot splits N over warpgroups (Layout.h); the dot stages that block itself.
    if (columnGroups({load, op.get(), op->result()->layout->opIdx, 3}) > 1) continue;
    bool clonable = true;
    for (size_t i = 1; i < load->operands.size(); ++i) clonable = clonable && canClone(load->operand(i));
    if (clonable) found.push_back({load, op.get(), op->result()->layout->opIdx, 3, nullptr, trans});
  }
  return found;
}

// The trans {order = [1, 0]} (read once, in the body) that `op`, a convert_layout to
// a #dot_op B operand, converts; else null.
Operation *LoopPipeliner::transposedBFeeding(Operation &op) {
  if (op.code != OpCode::ConvertLayout || !op.result()->layout ||
      op.result()->layout->kind != Layout::Kind::DotOperand || op.result()->layout->opIdx != 1)
    return nullptr;
  Operation *trans = readOnceInBody(op.operand(0), OpCode::Trans);
  return trans && trans->arrayAttr("order") == std::vector<int64_t>{1, 0} ? trans : nullptr;
}

void LoopPipeliner::allocateMbarriers(TmaRing &r) {
  Builder b(loop_.parent);
  b.setInsertionPoint(loop_.parent, positionOf(loop_));
  b.setLoc(loop_.loc);
  r.full = b.op(OpCode::MbarrierAlloc, {}, Type(ScalarType::I64).withShape({r.stages, 1, 1}),
                {{"arrivals", static_cast<int64_t>(r.cs.size())}});
  allocations_.push_back(r.full);
  for (Candidate &c : r.cs) c.mbarriers = r.full;
  // With several warpgroups, a stage is free again once every thread has arrived on its
  // "empty" mbarrier: only the copying warp waits for that, where a barrier would hold
  // every warpgroup to the slowest each step (D128 128 x 128 / 8 warps +1.5-2.5 %). One
  // warpgroup moves in step anyway (its wgmmas are collective), and there the barrier is
  // cheaper than the arrivals (D64 64 x 64 / 4 warps 1-5 % slower with them).
  if (!hasEmptyMbarriers()) return;
  r.empty = b.op(OpCode::MbarrierAlloc, {}, Type(ScalarType::I64).withShape({r.stages, 1, 1}),
                 {{"arrivals", static_cast<int64_t>(fn_.numWarps) * 32}});
  allocations_.push_back(r.empty);
}

// The TMA copies of iteration `shift.iv` into `stage`.
void LoopPipeliner::emitTmaCopies(const std::vector<Candidate> &cs, Builder &b, const Shift &shift, Value *stage) {
  std::map<const Value *, Value *> memo;
  Value *ub = shift.outside ? shift.outside(loop_.operand(1)) : loop_.operand(1);
  Value *pred = b.op(OpCode::Cmp, {shift.iv, ub}, Type(ScalarType::I1),
                     {{"predicate", std::string("lt")}});
  for (const Candidate &c : cs) {
    b.setLoc(c.load->loc);
    std::vector<Value *> operands = {c.load->operand(0)};
    for (size_t i = 1; i < c.load->operands.size(); ++i) operands.push_back(clone(c.load->operand(i), b, shift, memo));
    operands.insert(operands.end(), {c.buffer, stage, c.mbarriers, pred});
    b.create(OpCode::AsyncTmaCopy, operands, {});
  }
}

// The TMA candidates as rings. The blocks of the body's first staged dot
// (attention's K for S = Q K^T, both operands of a GEMM) form the first
// ring, waited for at the top of the body. Blocks that only a later dot
// reads (attention's V for P V, after the softmax) can form a second ring
// with its own mbarriers, waited for just before that dot, and a stage
// fewer: a block is copied in the step that reads it, after the first dot
// (refillRings), and has the part of the step before its dot to land in. That is done where it fits
// one more program on an SM: the 64 x 64 / 4-warp attention forward's Q
// tile and 3 stages of K and V fill the 56 KB a quarter of the SM leaves
// exactly, so its mbarriers cost a program (3 instead of 4).
// `others`: the candidates whose buffers are allocated already (invariant tiles, cp.async rings).
std::vector<TmaRing> LoopPipeliner::formRings(const std::vector<Candidate> &tma, const std::vector<Candidate> &others) {
  std::vector<TmaRing> rings;
  if (tma.empty()) return rings;
  // The first op of the body that reads a staged block (its convert) is the first dot.
  auto readsABlock = [&](auto &op) {
    return std::any_of(tma.begin(), tma.end(), [&](const Candidate &c) { return readsValue(*op, c.convert->result()); });
  };
  firstDot_ = std::find_if(body_->ops.begin(), body_->ops.end(), readsABlock)->get();
  TmaRing first{{}, stages_}, later{{}, stages_ - 1};
  for (const Candidate &c : tma) (readsValue(*firstDot_, c.convert->result()) ? first : later).cs.push_back(c);
  uint64_t fixed = 0;
  for (const Candidate &c : others) fixed += alignedBytes(c.buffer->type);
  const bool split = stages_ >= 3 && !later.cs.empty() &&
                     programsPerSm(fixed + ringBytes(first) + ringBytes(later)) >
                         programsPerSm(fixed + ringBytes(first) + ringBytes({later.cs, stages_}));
  if (!split) {
    first.cs.insert(first.cs.end(), later.cs.begin(), later.cs.end());
    later.cs.clear();
  }
  rings.push_back(std::move(first));
  if (!later.cs.empty()) rings.push_back(std::move(later));
  for (TmaRing &r : rings) r.ahead = r.stages - (doneAtFirstDot(r) ? 1 : 2);
  return rings;
}

// Every dot that reads r's blocks has been waited for, in every iteration before, once
// the first dot is issued: it waits within its own iteration (not async), or it is the
// first dot, whose wgmmas, async, wait for the group before them when issued.
bool LoopPipeliner::doneAtFirstDot(const TmaRing &r) const {
  bool done = true;
  for (const Candidate &c : r.cs)
    walk(fn_.body, [&](Operation &user) {
      if (readsValue(user, c.convert->result()))
        done = done && (&user == firstDot_ || !(user.hasAttr("async") && user.intAttr("async")));
    });
  return done;
}

// Shared memory of a buffer of type t, at 1024-byte alignment (128-byte swizzle).
uint64_t LoopPipeliner::alignedBytes(const Type &t) {
  uint64_t bytes = bitWidth(t.scalar) / 8;
  for (int64_t n : t.shape) bytes *= static_cast<uint64_t>(n);
  return (bytes + 1023) / 1024 * 1024;
}

uint64_t LoopPipeliner::ringBytes(const TmaRing &r) const {
  uint64_t bytes = 8ull * r.stages * (hasEmptyMbarriers() ? 2 : 1); // full (and empty) mbarriers
  for (const Candidate &c : r.cs) bytes += alignedBytes(ringType(c, r.stages));
  return bytes;
}

// Programs of this many bytes of shared memory an sm_90 SM holds (228 KB, 1 KB of
// each program's kept by the driver; at most 64 warps).
unsigned LoopPipeliner::programsPerSm(uint64_t bytes) const {
  const uint64_t bySharedMemory = 228 * 1024 / (bytes + 1024);
  const unsigned warps = fn_.numWarps * (specialize_ && pingpong_ ? 2 : 1) + (specialize_ ? kProducerWarps : 0);
  return static_cast<unsigned>(std::min<uint64_t>(bySharedMemory, 64 / std::max(1u, warps)));
}

// phase: the parity of the stage's completed phases, flipped each time the
// stage counter wraps.
Value *LoopPipeliner::addPhaseCounter(Value *stage, unsigned stages) {
  const Type i32(ScalarType::I32);
  Value *phase = addIterArg(i32, "phase");
  Operation *yield = body_->terminator();
  Builder b(body_);
  b.setInsertionPoint(body_, positionOf(*yield));
  b.setLoc(loop_.loc);
  Value *wrap = b.op(OpCode::Cmp, {stage, b.intConstant(stages - 1, i32)}, Type(ScalarType::I1),
                     {{"predicate", std::string("eq")}});
  Value *flip = b.op(OpCode::Cast, {wrap}, i32);
  yield->operands.push_back(b.op(OpCode::Xor, {phase, flip}, i32));
  return phase;
}

// Every thread waits for its stage to land: the first ring at the top of
// the body, a later one just before the body first reads its buffers.
void LoopPipeliner::waitForRing(const TmaRing &r, bool atTop) {
  Builder b(body_);
  auto at = body_->ops.begin();
  if (!atTop)
    at = std::find_if(body_->ops.begin(), body_->ops.end(), [&](auto &op) {
      return op->code == OpCode::LocalLoad && std::any_of(r.cs.begin(), r.cs.end(), [&](const Candidate &c) {
        return op->operand(0) == c.buffer;
      });
    });
  b.setInsertionPoint(body_, at);
  b.setLoc(loop_.loc);
  b.create(OpCode::MbarrierWait, {r.full, r.stage, r.phase}, {});
}

// The copies of iteration iv + ahead into the stage a ring read `stages - ahead`
// iterations ago, issued right after the first dot's wgmmas (before they are waited
// for), so that the copying warp works while the tensor cores do; issued at the end of
// the body they held that warp back, and its warpgroup waited for it at the next dot (a
// wgmma needs the whole warpgroup). The stage is one the ring read last iteration where
// its dots are done by then (doneAtFirstDot: attention's K, a GEMM's A and B), else two
// iterations ago (attention's V, whose P V runs on into the next step). One warpgroup:
// behind a barrier. Several: behind the stage's "empty" mbarrier, on which every thread
// arrives once done with it and only the copying warp waits. Dots issued right behind the
// first (only their blocks' local_loads and constants between: the block-scaled GEMM's two
// K blocks a step) go before the copies too: the copying warp may wait there for an empty
// stage, and its warpgroup's wgmmas would wait for it.
void LoopPipeliner::refillRings(const std::vector<TmaRing> &rings) {
  if (rings.empty()) return;
  auto at = std::next(positionOf(*firstDot_));
  auto between = [](const Operation &op) { return op.code == OpCode::LocalLoad || op.code == OpCode::Constant; };
  for (auto it = at; it != body_->ops.end() && (between(**it) || isWgmmaDot(**it)); ++it)
    if (isWgmmaDot(**it)) at = std::next(it);
  Builder b = bodyBuilder(at);
  Builder end = bodyBuilder(positionOf(*body_->terminator()));
  if (!rings.front().empty) b.create(OpCode::Barrier, {}, {});
  // The first ring is the one the first dot reads (formRings).
  for (const TmaRing &r : rings) {
    Value *target = stageAhead(b, r.stage, r.ahead, r.stages);
    if (r.empty) emitEmptyWait(r, b, end, target, isReadByAsyncFirstDot(r, rings));
    emitCopiesAhead(r.cs, b, target, r.ahead, &LoopPipeliner::emitTmaCopies);
  }
}

// Several warpgroups: each thread arrives on the empty mbarrier of a stage once its dots
// that read it are done, and the copying warp waits there for all of them before `b`'s
// copies into `target`, the stage read d = stages - ahead iterations ago. A ring an
// async first dot reads (readByAsyncFirstDot) is done with last iteration's stage once
// that dot is issued (its wait_group 1): arrive there, just before the wait. Otherwise at the end of the
// body (`end`), on this iteration's stage (d = 1) or the last one's (d = 2), a step before
// the copying warp needs it. Iterations before the first read neither arrive nor wait.
void LoopPipeliner::emitEmptyWait(const TmaRing &r, Builder &b, Builder &end, Value *target, bool readByAsyncFirstDot) {
  const Type i32(ScalarType::I32), i1(ScalarType::I1);
  const int64_t d = r.stages - r.ahead;
  Value *readBefore = ivAtLeast(b, d); // iteration iv - d exists
  emitRelease(r, b, end, target, readByAsyncFirstDot);
  // The parity of iteration iv - d: this one's phase, flipped where going back d wraps.
  Value *wraps = b.op(OpCode::Cmp, {r.stage, b.intConstant(d, i32)}, i1, {{"predicate", std::string("lt")}});
  Value *parity = b.op(OpCode::Xor, {r.phase, b.op(OpCode::Cast, {wraps}, i32)}, i32);
  b.create(OpCode::MbarrierWait, {r.empty, target, parity, readBefore}, {}, {{"leader", int64_t{1}}});
}

// A builder inserting into the body before `at`, at the loop's location.
Builder LoopPipeliner::bodyBuilder(std::list<std::unique_ptr<Operation>>::iterator at) {
  Builder b(body_);
  b.setInsertionPoint(body_, at);
  b.setLoc(loop_.loc);
  return b;
}

// Every thread arrives on the empty mbarrier of the stage it is done with (emitEmptyWait):
// right after the async first dot that read it last iteration (into `target`, the
// stage before this one), else at the end of the body (`end`), on this iteration's
// stage or, where a later async dot reads the ring, the last one's.
void LoopPipeliner::emitRelease(const TmaRing &r, Builder &b, Builder &end, Value *target, bool readByAsyncFirstDot) {
  const int64_t d = r.stages - r.ahead;
  if (readByAsyncFirstDot) {
    b.create(OpCode::MbarrierArrive, {r.empty, target, ivAtLeast(b, d)}, {});
  } else {
    Value *read = d == 1 ? r.stage : stageAhead(end, r.stage, r.stages - 1, r.stages);
    end.create(OpCode::MbarrierArrive, {r.empty, read, ivAtLeast(end, d - 1)}, {});
  }
}

// The ring the body's first dot reads (the first, formRings), where that dot is async.
bool LoopPipeliner::isReadByAsyncFirstDot(const TmaRing &r, const std::vector<TmaRing> &rings) const {
  return &r == &rings.front() && firstDot_->hasAttr("async") && firstDot_->intAttr("async");
}

// emitRelease releases the stage an iteration reads in the iteration after (an async dot
// reads it), not in its own.
bool LoopPipeliner::releasedTheStepAfter(const TmaRing &r, bool readByAsyncFirstDot) {
  return readByAsyncFirstDot || r.stages - r.ahead == 2;
}

// iv >= lb + iterations * step, at `at`.
Value *LoopPipeliner::ivAtLeast(Builder &at, int64_t iterations) {
  Value *bound = iterations == 0 ? loop_.operand(0)
                                 : at.op(OpCode::Add, {loop_.operand(0), at.intConstant(iterations * step_, ivType())}, ivType());
  return at.op(OpCode::Cmp, {body_->args[0].get(), bound}, Type(ScalarType::I1), {{"predicate", std::string("ge")}});
}

} // namespace tessera::passes::software_pipeline
