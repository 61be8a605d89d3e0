// Pipeline (runs after accelerate-dot). A loop
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
// f is re-evaluated at the shifted iteration by cloning the pure ops that
// compute ptr and mask; an iter arg p updated by `p + c` (c loop-invariant,
// the tutorial's `a_ptrs += BLOCK_K * stride_ak`) is, d iterations ahead,
// p + d*c. Copies past the end (pred false) and masked-off elements write
// zeros, which is what `other=0` asked for. Loads that do not fit stay as
// they are (the dot then stages them itself).
//
// Operands of wgmma dots (#mma version 3) get the wgmma tile layout
// (Layout::sharedWgmmaOperand) and a fence_async_shared before each barrier
// that publishes a stage: cp.async and local_store write through the generic
// proxy, wgmma reads through the async one. Such a dot whose accumulator
// the loop carries (and only the next iteration's dot reads) is marked
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
// A dot operand computed before the loop (FlashAttention's Q tile) is
// stored into a one-stage buffer once before the loop (local_store,
// barrier) and read there with local_load, instead of being staged by the
// dot in every iteration.
#include "compiler/passes/SoftwarePipeline.h"

#include "compiler/passes/CommonSubexpressionElimination.h"
#include "compiler/passes/DeadCodeElimination.h"

#include <algorithm>
#include <functional>
#include <map>
#include <vector>

namespace tessera::passes {

using namespace ir;

namespace {

// Cheap ops without side effects that address computations are made of.
bool isClonable(const Operation &op) {
  switch (op.code) {
  case OpCode::Constant: case OpCode::ProgramId: case OpCode::NumPrograms: case OpCode::MakeRange:
  case OpCode::Splat: case OpCode::Broadcast: case OpCode::ExpandDims: case OpCode::ConvertLayout:
  case OpCode::Hint: case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Rem:
  case OpCode::And: case OpCode::Or: case OpCode::Xor: case OpCode::Shl: case OpCode::Shr: case OpCode::Max:
  case OpCode::Min: case OpCode::Neg: case OpCode::Not: case OpCode::Cmp: case OpCode::Select:
  case OpCode::AddPtr: case OpCode::Cast: case OpCode::Bitcast:
    return op.regions.empty() && op.results.size() == 1;
  default:
    return false;
  }
}

// Warps of the producer warpgroup (buildProducer).
constexpr unsigned kProducerWarps = 4;

struct Candidate {
  Operation *load; // load, or desc_load (staged by the TMA unit)
  Operation *convert;
  unsigned opIdx;
  unsigned mmaVersion; // of the dots it feeds
  Value *buffer = nullptr;
  Operation *trans = nullptr; // desc_load -> trans -> B: the block's rows are B's columns
  Value *mbarriers = nullptr; // TMA: its ring's "full" mbarriers
};

// Blocks staged by the TMA unit with one stage counter, one phase and one
// set of mbarriers.
struct TmaRing {
  std::vector<Candidate> cs;
  unsigned stages;
  unsigned ahead = 0; // iterations its copies run ahead (refillRings)
  Value *full = nullptr, *empty = nullptr; // mbarriers: a stage has landed / been read by every warp
  Value *stage = nullptr, *phase = nullptr;
};


class LoopPipeliner {
public:
  LoopPipeliner(Function &fn, Operation &loop, unsigned stages)
      : fn_(fn), loop_(loop), body_(loop.region(0)), stages_(stages) {}

  bool run() {
    std::vector<Candidate> invariants = findInvariantOperands();
    const bool step = constantStep();
    std::vector<Candidate> candidates = step ? findCandidates() : std::vector<Candidate>{};
    std::vector<Candidate> tma = step ? findTmaCandidates() : std::vector<Candidate>{};
    if (candidates.empty() && tma.empty() && invariants.empty()) return false;
    specialize_ = wantsProducer() && candidates.empty() && !tma.empty() && producerCanCompute(tma);
    stageInvariants(invariants);
    std::vector<Operation *> asyncDots;
    if (stages_ >= 3 && !(candidates.empty() && tma.empty())) asyncDots = findAsyncDots();
    if (!asyncDots.empty()) ahead_ = stages_ - 2;
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
    emitEpilogue(!candidates.empty());
    for (Operation *dot : asyncDots) waitAfterLoop(*dot);
    if (specialize_ && outer_) carryRingsAcrossOuterLoop(rings);
    if (specialize_) buildProducer(rings);
    return true;
  }

private:
  // Where cloned address computations take the loop variable and iter args from.
  struct Shift {
    Value *iv;
    std::function<Value *(Value *arg)> iterArg;
    std::function<Value *(Value *v)> outside; // values from before the loop (null: as they are)
  };

  Function &fn_;
  Operation &loop_;
  Block *body_;
  unsigned stages_;
  unsigned ahead_ = stages_ - 1; // iterations the copies run ahead
  int64_t step_ = 0;
  std::vector<Value *> allocations_; // buffers and mbarriers, in the order allocated
  Operation *firstDot_ = nullptr;    // the body's first dot that reads a TMA-staged block
  bool specialize_ = false;          // a producer warpgroup issues the TMA copies (buildProducer)
  Operation *outer_ = nullptr;       // with a producer: the loop around this one, if any
  Operation *loopBeingBuilt_ = nullptr; // buildProducerLoop's loop (outside values go before it)
  std::map<const Value *, bool> clonable_, invariant_;

  Type ivType() const { return loop_.operand(0)->type; }

  bool constantStep() {
    const Operation *d = loop_.operand(2)->definingOp;
    if (!d || d->code != OpCode::Constant || d->isFloatConstant()) return false;
    step_ = d->intAttr("value");
    return step_ > 0;
  }

  bool definedInBody(const Value *v) const {
    return v->ownerBlock == body_ || (v->definingOp && v->definingOp->parent == body_);
  }

  // The yield's `arg + c` / `addptr(arg, c)` for iter arg `arg`, else null.
  Operation *advanceOf(const Value *arg) const {
    if (arg->ownerBlock != body_ || arg->index == 0) return nullptr;
    Value *next = body_->terminator()->operand(arg->index - 1);
    Operation *d = next->definingOp;
    if (!d || d->parent != body_ || (d->code != OpCode::AddPtr && d->code != OpCode::Add)) return nullptr;
    return d->operand(0) == arg ? d : nullptr;
  }

  bool isInvariant(const Value *v) {
    if (!definedInBody(v)) return true;
    if (v->ownerBlock) return false;
    auto [it, fresh] = invariant_.try_emplace(v, false);
    if (!fresh) return it->second;
    bool ok = isClonable(*v->definingOp);
    for (const Value *o : v->definingOp->operands) ok = ok && isInvariant(o);
    return invariant_[v] = ok;
  }

  // v can be computed at another iteration from the loop variable,
  // invariants and advancing iter args.
  bool canClone(const Value *v) {
    if (!definedInBody(v)) return true;
    if (v == body_->args[0].get()) return true;
    if (v->ownerBlock) {
      const Operation *inc = advanceOf(v);
      return inc && isInvariant(inc->operand(1));
    }
    auto [it, fresh] = clonable_.try_emplace(v, false);
    if (!fresh) return it->second;
    bool ok = isClonable(*v->definingOp);
    for (const Value *o : v->definingOp->operands) ok = ok && canClone(o);
    return clonable_[v] = ok;
  }

  // convert_layout(x) -> #dot_op read only by mma dots of one version at
  // that operand: that version, else 0.
  unsigned feedsOnlyMmaDots(Operation &convert) {
    if (convert.code != OpCode::ConvertLayout || !convert.result()->layout ||
        convert.result()->layout->kind != Layout::Kind::DotOperand)
      return 0;
    const unsigned opIdx = convert.result()->layout->opIdx;
    bool only = true;
    unsigned version = 0;
    walk(fn_.body, [&](Operation &user) {
      for (size_t i = 0; i < user.operands.size(); ++i)
        if (user.operands[i] == convert.result()) {
          const LayoutRef &l = user.result()->layout;
          only = only && user.code == OpCode::Dot && i == opIdx && l && l->kind == Layout::Kind::Mma &&
                 (version == 0 || version == l->mmaVersion);
          if (only) version = l->mmaVersion;
        }
    });
    return only ? version : 0;
  }

  static bool anyWgmma(const std::vector<Candidate> &cs) {
    for (const Candidate &c : cs)
      if (c.mmaVersion == 3) return true;
    return false;
  }

  static bool stageableType(const Type &t) {
    return t.rank() == 2 && !t.pointer &&
           (t.scalar == ScalarType::F16 || t.scalar == ScalarType::BF16 || t.scalar == ScalarType::F32 ||
            t.scalar == ScalarType::I8);
  }

  // Operands computed before the loop (FlashAttention's Q tile): staged into
  // shared memory once, instead of by the dot in every iteration.
  std::vector<Candidate> findInvariantOperands() {
    std::vector<Candidate> found;
    for (auto &op : body_->ops)
      if (op->code == OpCode::ConvertLayout && !definedInBody(op->operand(0)) &&
          op->operand(0)->type.isBlock() && op->operand(0)->layout &&
          op->operand(0)->layout->kind == Layout::Kind::Blocked && stageableType(op->operand(0)->type))
        if (unsigned version = feedsOnlyMmaDots(*op))
          found.push_back({nullptr, op.get(), op->result()->layout->opIdx, version});
    return found;
  }

  void stageInvariants(std::vector<Candidate> &cs) {
    if (cs.empty()) return;
    Builder b(loop_.parent);
    b.setInsertionPoint(loop_.parent, positionOf(loop_));
    b.setLoc(loop_.loc);
    Value *zero = b.intConstant(0, Type(ScalarType::I32));
    for (Candidate &c : cs) {
      Value *x = c.convert->operand(0);
      const Type &t = x->type;
      c.buffer = b.op(OpCode::LocalAlloc, {}, t.withShape({1, t.shape[0], t.shape[1]}));
      c.buffer->layout = Layout::sharedOperandTile(c.mmaVersion, c.opIdx, t.shape[1], bitWidth(t.scalar), false);
      allocations_.push_back(c.buffer);
      b.create(OpCode::LocalStore, {x, c.buffer, zero}, {});
    }
    if (anyWgmma(cs)) b.create(OpCode::FenceAsyncShared, {}, {});
    b.create(OpCode::Barrier, {}, {});
    for (Candidate &c : cs) readFromBuffer(c, zero);
  }

  // wgmma dots of the body whose result the yield passes back as iter arg X
  // (its only reader): the dot runs on past the loop's back edge. When X has
  // readers in the body other than the dot itself (attention's rescaling
  // acc * alpha before acc += dot(p, v)), X = dot_wait(X) goes before the
  // first of them, after the next iteration's earlier dots have been issued.
  std::vector<Operation *> findAsyncDots() {
    std::vector<Operation *> found;
    Operation *yield = body_->terminator();
    for (auto &op : body_->ops) {
      if (!isWgmmaDot(*op) || countUses(fn_.body, op->result()) != 1)
        continue;
      auto slot = std::find(yield->operands.begin(), yield->operands.end(), op->result());
      if (slot == yield->operands.end()) continue;
      Value *carried = body_->args.at(static_cast<size_t>(slot - yield->operands.begin()) + 1).get();
      if (op->operand(2) != carried) waitBeforeFirstReader(carried);
      op->attrs["async"] = int64_t{1};
      found.push_back(op.get());
    }
    return found;
  }

  void waitBeforeFirstReader(Value *carried) {
    auto first = std::find_if(body_->ops.begin(), body_->ops.end(),
                              [&](auto &op) { return readsValue(*op, carried); });
    if (first == body_->ops.end()) return;
    Builder b(body_);
    b.setInsertionPoint(body_, first);
    b.setLoc((*first)->loc);
    Value *waited = b.op(OpCode::DotWait, {carried}, carried->type);
    waited->layout = carried->layout;
    replaceUsesExcept(*body_, carried, waited, waited->definingOp);
  }

  // After the loop: r = dot_wait(loop result) for the async dot's accumulator.
  void waitAfterLoop(Operation &dot) {
    Operation *yield = body_->terminator();
    auto slot = std::find(yield->operands.begin(), yield->operands.end(), dot.result());
    Value *result = loop_.result(static_cast<unsigned>(slot - yield->operands.begin()));
    Builder b(loop_.parent);
    b.setInsertionPoint(loop_.parent, std::next(positionOf(loop_)));
    b.setLoc(dot.loc);
    Value *waited = b.op(OpCode::DotWait, {result}, result->type);
    waited->layout = result->layout;
    replaceUsesExcept(fn_.body, result, waited, waited->definingOp);
  }

  // `op` converts to a #dot_op the result of a `code` op of the body that
  // nothing else reads: that op, else null.
  Operation *loadFeedingDotOperand(Operation &op, OpCode code) {
    if (op.code != OpCode::ConvertLayout || !op.result()->layout ||
        op.result()->layout->kind != Layout::Kind::DotOperand)
      return nullptr;
    return readOnceInBody(op.operand(0), code);
  }

  // The `code` op of the body that defines v, which nothing else reads; else null.
  Operation *readOnceInBody(Value *v, OpCode code) {
    Operation *def = v->definingOp;
    if (!def || def->code != code || def->parent != body_ || countUses(fn_.body, v) != 1) return nullptr;
    return def;
  }

  std::vector<Candidate> findCandidates() {
    std::vector<Candidate> found;
    for (auto &op : body_->ops) {
      Operation *load = loadFeedingDotOperand(*op, OpCode::Load);
      if (!load) continue;
      Value *loaded = load->result();
      if (!stageableType(loaded->type)) continue;
      if (load->hasAttr("volatile") && load->intAttr("volatile")) continue;
      if (load->loadOther() && !isZeroConstant(load->loadOther())) continue;
      const unsigned opIdx = op->result()->layout->opIdx;
      const unsigned version = feedsOnlyMmaDots(*op);
      if (!version) continue;
      if (!canClone(load->operand(0)) || (load->loadMask() && !canClone(load->loadMask()))) continue;
      found.push_back({load, op.get(), opIdx, version});
    }
    return found;
  }

  // desc_load -> convert_layout -> #dot_op of wgmma dots only, with a
  // descriptor from outside the loop and offsets computable at another iteration.
  // desc_load -> trans -> convert_layout -> B also (attention's K block for
  // S = Q K^T): the TMA unit writes the block's rows as they are, which is
  // the K-major tile wgmma reads B^T from (the layout cp.async gives a B read
  // along its dim 0, allocateBuffers).
  std::vector<Candidate> findTmaCandidates() {
    std::vector<Candidate> found;
    for (auto &op : body_->ops) {
      Operation *trans = transposedBFeeding(*op);
      Operation *load = trans ? readOnceInBody(trans->operand(0), OpCode::DescLoad)
                              : loadFeedingDotOperand(*op, OpCode::DescLoad);
      if (!load) continue;
      Value *loaded = load->result();
      if (definedInBody(load->operand(0)) || loaded->type.rank() != 2 || feedsOnlyMmaDots(*op) != 3) continue;
      bool clonable = true;
      for (size_t i = 1; i < load->operands.size(); ++i) clonable = clonable && canClone(load->operand(i));
      if (clonable) found.push_back({load, op.get(), op->result()->layout->opIdx, 3, nullptr, trans});
    }
    return found;
  }

  // The trans {order = [1, 0]} (read once, in the body) that `op`, a convert_layout to
  // a #dot_op B operand, converts; else null.
  Operation *transposedBFeeding(Operation &op) {
    if (op.code != OpCode::ConvertLayout || !op.result()->layout ||
        op.result()->layout->kind != Layout::Kind::DotOperand || op.result()->layout->opIdx != 1)
      return nullptr;
    Operation *trans = readOnceInBody(op.operand(0), OpCode::Trans);
    return trans && trans->arrayAttr("order") == std::vector<int64_t>{1, 0} ? trans : nullptr;
  }

  Value *clone(Value *v, Builder &b, const Shift &shift, std::map<const Value *, Value *> &memo) {
    if (!definedInBody(v)) return shift.outside ? shift.outside(v) : v;
    if (auto it = memo.find(v); it != memo.end()) return it->second;
    Value *out;
    if (v == body_->args[0].get()) {
      out = shift.iv;
    } else if (v->ownerBlock) {
      out = shift.iterArg(v);
    } else {
      std::vector<Value *> operands;
      for (Value *o : v->definingOp->operands) operands.push_back(clone(o, b, shift, memo));
      out = copyOf(v, operands, b);
    }
    return memo[v] = out;
  }

  // v's defining op again at b, on `operands`.
  static Value *copyOf(const Value *v, const std::vector<Value *> &operands, Builder &b) {
    const Operation &op = *v->definingOp;
    b.setLoc(op.loc);
    Value *out = b.create(op.code, operands, {v->type}, op.attrs)->result();
    out->layout = v->layout;
    out->nameHint = v->nameHint;
    return out;
  }

  // Iter arg `arg` advanced `times` iterations from `base` (its value now).
  Value *advance(Value *base, Value *arg, int64_t times, Builder &b, const Shift &shift,
                 std::map<const Value *, Value *> &memo) {
    if (times == 0) return base;
    Operation *inc = advanceOf(arg);
    Value *by = clone(inc->operand(1), b, shift, memo);
    if (times > 1) {
      Value *n = b.intConstant(times, by->type);
      n->layout = by->layout;
      Value *scaled = b.op(OpCode::Mul, {by, n}, by->type);
      scaled->layout = by->layout;
      by = scaled;
    }
    Value *r = b.op(inc->code, {base, by}, inc->result()->type, inc->attrs);
    r->layout = inc->result()->layout;
    return r;
  }

  // The copies of iteration `iv` into `stage`, then a commit.
  void emitCopies(const std::vector<Candidate> &cs, Builder &b, const Shift &shift, Value *stage) {
    std::map<const Value *, Value *> memo;
    Value *pred = b.op(OpCode::Cmp, {shift.iv, loop_.operand(1)}, Type(ScalarType::I1),
                       {{"predicate", std::string("lt")}});
    for (const Candidate &c : cs) {
      b.setLoc(c.load->loc);
      Value *ptr = clone(c.load->operand(0), b, shift, memo);
      std::vector<Value *> operands = {ptr, c.buffer, stage, pred};
      std::map<std::string, Attribute> attrs;
      for (const char *key : {"contiguity", "alignment", "mask_constancy"})
        if (c.load->hasAttr(key)) attrs[key] = c.load->attrs.at(key);
      attrs["has_mask"] = int64_t{c.load->loadMask() != nullptr};
      if (Value *mask = c.load->loadMask()) operands.push_back(clone(mask, b, shift, memo));
      b.setLoc(c.load->loc);
      b.create(OpCode::AsyncCopy, operands, {}, attrs);
    }
    b.create(OpCode::AsyncCommit, {}, {});
  }

  // `stages` tiles of the block c stages (transposed by trans where it has one).
  static Type ringType(const Candidate &c, unsigned stages) {
    const Type &t = (c.trans ? c.trans : c.load)->result()->type;
    return t.withShape({stages, t.shape[0], t.shape[1]});
  }

  void allocateBuffers(std::vector<Candidate> &cs, unsigned stages) {
    Builder b(loop_.parent);
    b.setInsertionPoint(loop_.parent, positionOf(loop_));
    for (Candidate &c : cs) {
      const Type &t = (c.trans ? c.trans : c.load)->result()->type;
      b.setLoc(c.load->loc);
      c.buffer = b.op(OpCode::LocalAlloc, {}, ringType(c, stages));
      allocations_.push_back(c.buffer);
      // B read along its dim 0 (a column-major matrix, K^T through strides)
      // is stored transposed, so that cp.async still moves 16-byte runs. The
      // TMA unit writes blocks as they are: transposed when trans makes B of them.
      const LayoutRef &l = c.load->operand(0)->layout;
      const bool transposed = c.trans || (c.load->code == OpCode::Load && c.opIdx == 1 && l &&
                                          l->kind == Layout::Kind::Blocked && l->order[0] == 0);
      c.buffer->layout =
          Layout::sharedOperandTile(c.mmaVersion, c.opIdx, t.shape[transposed ? 0 : 1], bitWidth(t.scalar), transposed);
    }
  }

  // The copies (emitCopies or emitTmaCopies) of the first `count` iterations,
  // iteration d into stage d, before the loop.
  using CopyEmitter = void (LoopPipeliner::*)(const std::vector<Candidate> &, Builder &, const Shift &, Value *);
  void emitPrologue(const std::vector<Candidate> &cs, unsigned count, CopyEmitter emit) {
    Builder b(loop_.parent);
    b.setInsertionPoint(loop_.parent, positionOf(loop_));
    b.setLoc(loop_.loc);
    for (unsigned d = 0; d < count; ++d) {
      std::map<const Value *, Value *> memo;
      Shift shift;
      shift.iv = d == 0 ? loop_.operand(0)
                        : b.op(OpCode::Add, {loop_.operand(0), b.intConstant(d * step_, ivType())}, ivType());
      shift.iterArg = [&, d](Value *arg) {
        return advance(loop_.operand(2 + arg->index), arg, d, b, shift, memo);
      };
      (this->*emit)(cs, b, shift, b.intConstant(d, Type(ScalarType::I32)));
      b.setLoc(loop_.loc);
    }
  }

  // stage + ahead mod stages, at b's insertion point.
  Value *stageAhead(Builder &b, Value *stage, int64_t ahead, unsigned stages) {
    const Type i32(ScalarType::I32);
    Value *sum = b.op(OpCode::Add, {stage, b.intConstant(ahead, i32)}, i32);
    Value *wraps = b.op(OpCode::Cmp, {sum, b.intConstant(stages, i32)}, Type(ScalarType::I1),
                        {{"predicate", std::string("ge")}});
    return b.op(OpCode::Select, {wraps, b.op(OpCode::Sub, {sum, b.intConstant(stages, i32)}, i32), sum}, i32);
  }

  // In the body at b's insertion point: the copies of iteration iv + ahead
  // into `target` (stageAhead(stage, ahead, S)).
  void emitCopiesAhead(const std::vector<Candidate> &cs, Builder &b, Value *target, int64_t ahead, CopyEmitter emit) {
    std::map<const Value *, Value *> memo;
    Shift shift;
    shift.iv = b.op(OpCode::Add, {body_->args[0].get(), b.intConstant(ahead * step_, ivType())}, ivType());
    shift.iterArg = [&](Value *arg) { return advance(arg, arg, ahead, b, shift, memo); };
    (this->*emit)(cs, b, shift, target);
  }

  // A new i32 iter arg starting at 0 (the caller adds its yield operand).
  Value *addIterArg(const Type &type, const std::string &name) {
    Builder b(loop_.parent);
    b.setInsertionPoint(loop_.parent, positionOf(loop_));
    b.setLoc(loop_.loc);
    return appendIterArg(loop_, b.intConstant(0, type), name);
  }

  // loop's new iter arg starting at init: its operand, block argument and result.
  static Value *appendIterArg(Operation &loop, Value *init, const std::string &name) {
    loop.operands.push_back(init);
    Value *arg = loop.region(0)->addArgument(init->type, name);
    auto result = std::make_unique<Value>();
    result->type = init->type;
    result->definingOp = &loop;
    result->index = static_cast<unsigned>(loop.results.size());
    loop.results.push_back(std::move(result));
    return arg;
  }

  Value *addStageCounter(unsigned stages) {
    const Type i32(ScalarType::I32);
    Value *stage = addIterArg(i32, "stage");
    // stage + 1 mod stages, passed on by the yield
    Operation *yield = body_->terminator();
    Builder b(body_);
    b.setLoc(loop_.loc);
    b.setInsertionPoint(body_, positionOf(*yield));
    Value *plus = b.op(OpCode::Add, {stage, b.intConstant(1, i32)}, i32);
    Value *wrap = b.op(OpCode::Cmp, {plus, b.intConstant(stages, i32)}, Type(ScalarType::I1),
                       {{"predicate", std::string("eq")}});
    yield->operands.push_back(b.op(OpCode::Select, {wrap, b.intConstant(0, i32), plus}, i32));
    return stage;
  }

  void emitLoopHead(const std::vector<Candidate> &cs, Value *stage) {
    Builder b(body_);
    b.setInsertionPoint(body_, body_->ops.begin());
    b.setLoc(loop_.loc);
    b.create(OpCode::AsyncWait, {}, {}, {{"pending", int64_t{ahead_ - 1}}});
    if (anyWgmma(cs)) b.create(OpCode::FenceAsyncShared, {}, {});
    b.create(OpCode::Barrier, {}, {});
    // The stage `ahead` from this one: read last iteration (everyone is past
    // it: the barrier), or, with async dots, two iterations ago (its wgmmas
    // are done: each thread waited for them before the barrier).
    emitCopiesAhead(cs, b, stageAhead(b, stage, ahead_, stages_), ahead_, &LoopPipeliner::emitCopies);
  }

  // Programs of more than one warpgroup free a TMA stage through "empty" mbarriers (allocateMbarriers).
  bool hasEmptyMbarriers() const { return specialize_ || fn_.numWarps > 4; }

  void allocateMbarriers(TmaRing &r) {
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
  void emitTmaCopies(const std::vector<Candidate> &cs, Builder &b, const Shift &shift, Value *stage) {
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
  std::vector<TmaRing> formRings(const std::vector<Candidate> &tma, const std::vector<Candidate> &others) {
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
  bool doneAtFirstDot(const TmaRing &r) const {
    bool done = true;
    for (const Candidate &c : r.cs)
      walk(fn_.body, [&](Operation &user) {
        if (readsValue(user, c.convert->result()))
          done = done && (&user == firstDot_ || !(user.hasAttr("async") && user.intAttr("async")));
      });
    return done;
  }

  // Shared memory of a buffer of type t, at 1024-byte alignment (128-byte swizzle).
  static uint64_t alignedBytes(const Type &t) {
    uint64_t bytes = bitWidth(t.scalar) / 8;
    for (int64_t n : t.shape) bytes *= static_cast<uint64_t>(n);
    return (bytes + 1023) / 1024 * 1024;
  }

  uint64_t ringBytes(const TmaRing &r) const {
    uint64_t bytes = 8ull * r.stages * (hasEmptyMbarriers() ? 2 : 1); // full (and empty) mbarriers
    for (const Candidate &c : r.cs) bytes += alignedBytes(ringType(c, r.stages));
    return bytes;
  }

  // Programs of this many bytes of shared memory an sm_90 SM holds (228 KB, 1 KB of
  // each program's kept by the driver; at most 64 warps).
  unsigned programsPerSm(uint64_t bytes) const {
    const uint64_t bySharedMemory = 228 * 1024 / (bytes + 1024);
    const unsigned warps = fn_.numWarps + (specialize_ ? kProducerWarps : 0);
    return static_cast<unsigned>(std::min<uint64_t>(bySharedMemory, 64 / std::max(1u, warps)));
  }

  // phase: the parity of the stage's completed phases, flipped each time the
  // stage counter wraps.
  Value *addPhaseCounter(Value *stage, unsigned stages) {
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
  void waitForRing(const TmaRing &r, bool atTop) {
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
  // arrives once done with it and only the copying warp waits.
  void refillRings(const std::vector<TmaRing> &rings) {
    if (rings.empty()) return;
    Builder b = bodyBuilder(std::next(positionOf(*firstDot_)));
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
  void emitEmptyWait(const TmaRing &r, Builder &b, Builder &end, Value *target, bool readByAsyncFirstDot) {
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
  Builder bodyBuilder(std::list<std::unique_ptr<Operation>>::iterator at) {
    Builder b(body_);
    b.setInsertionPoint(body_, at);
    b.setLoc(loop_.loc);
    return b;
  }

  // Every thread arrives on the empty mbarrier of the stage it is done with (emitEmptyWait):
  // right after the async first dot that read it last iteration (into `target`, the
  // stage before this one), else at the end of the body (`end`), on this iteration's
  // stage or, where a later async dot reads the ring, the last one's.
  void emitRelease(const TmaRing &r, Builder &b, Builder &end, Value *target, bool readByAsyncFirstDot) {
    const int64_t d = r.stages - r.ahead;
    if (readByAsyncFirstDot) {
      b.create(OpCode::MbarrierArrive, {r.empty, target, ivAtLeast(b, d)}, {});
    } else {
      Value *read = d == 1 ? r.stage : stageAhead(end, r.stage, r.stages - 1, r.stages);
      end.create(OpCode::MbarrierArrive, {r.empty, read, ivAtLeast(end, d - 1)}, {});
    }
  }

  // The ring the body's first dot reads (the first, formRings), where that dot is async.
  bool isReadByAsyncFirstDot(const TmaRing &r, const std::vector<TmaRing> &rings) const {
    return &r == &rings.front() && firstDot_->hasAttr("async") && firstDot_->intAttr("async");
  }

  // emitRelease releases the stage an iteration reads in the iteration after (an async dot
  // reads it), not in its own.
  static bool releasedTheStepAfter(const TmaRing &r, bool readByAsyncFirstDot) {
    return readByAsyncFirstDot || r.stages - r.ahead == 2;
  }

  // iv >= lb + iterations * step, at `at`.
  Value *ivAtLeast(Builder &at, int64_t iterations) {
    Value *bound = iterations == 0 ? loop_.operand(0)
                                   : at.op(OpCode::Add, {loop_.operand(0), at.intConstant(iterations * step_, ivType())}, ivType());
    return at.op(OpCode::Cmp, {body_->args[0].get(), bound}, Type(ScalarType::I1), {{"predicate", std::string("ge")}});
  }

  // ------------------------------------------ the producer warpgroup (warp_specialize)

  // tl.range(..., warp_specialize=True) on a loop of the kernel's top level, or directly in
  // one loop of the top level (a persistent kernel's tile loop; the ring then runs across its
  // iterations): a producer runs from the kernel's start. The first such loop; the consumers
  // are whole warpgroups.
  bool wantsProducer() {
    if (!(loop_.hasAttr("warp_specialize") && loop_.intAttr("warp_specialize")) || fn_.numWarps % 4 != 0)
      return false;
    Operation *outer = loop_.parent == &fn_.body ? nullptr : loop_.parent->parentOp;
    if (loop_.parent != &fn_.body && (!outer || outer->code != OpCode::For || outer->parent != &fn_.body)) return false;
    bool taken = false;
    walk(fn_.body, [&](Operation &op) { taken = taken || op.code == OpCode::WarpSpecialize; });
    if (taken) return false;
    outer_ = outer;
    return true;
  }

  Block *outerBody() const { return outer_ ? outer_->region(0) : nullptr; }

  // v can be computed by the producer outside the loop: a parameter, the enclosing loop's
  // variable, or cheap pure ops of the top level (or of the enclosing loop's body) on such values.
  bool computableOutside(const Value *v) {
    if (v->ownerBlock) return v->ownerBlock == &fn_.body || (outer_ && v == outerBody()->args[0].get());
    const Operation *d = v->definingOp;
    if (!d || !(d->parent == &fn_.body || (outer_ && d->parent == outerBody())) || !isClonable(*d)) return false;
    for (const Value *o : d->operands)
      if (!computableOutside(o)) return false;
    return true;
  }

  // v (of the body, clonable: canClone) can be computed by the producer: what it is made of
  // from outside the loop is computableOutside.
  bool producerComputes(const Value *v) {
    if (!definedInBody(v)) return computableOutside(v);
    if (v == body_->args[0].get()) return true;
    if (v->ownerBlock) {
      const Operation *inc = advanceOf(v);
      return computableOutside(loop_.operand(2 + v->index)) && producerComputes(inc->operand(1));
    }
    for (const Value *o : v->definingOp->operands)
      if (!producerComputes(o)) return false;
    return true;
  }

  bool producerCanCompute(const std::vector<Candidate> &tma) {
    for (unsigned i = 0; i < 3; ++i)
      if (!computableOutside(loop_.operand(i)) || (outer_ && !computableOutside(outer_->operand(i)))) return false;
    for (const Candidate &c : tma)
      for (size_t i = 1; i < c.load->operands.size(); ++i)
        if (!producerComputes(c.load->operand(i))) return false;
    return true;
  }

  // v (computableOutside), computed at b's insertion point; the enclosing loop's variable is `outerIv`.
  Value *cloneOutside(Value *v, Builder &b, std::map<const Value *, Value *> &memo, Value *outerIv) {
    if (v->ownerBlock) return v->ownerBlock == &fn_.body ? v : outerIv;
    if (auto it = memo.find(v); it != memo.end()) return it->second;
    std::vector<Value *> operands;
    for (Value *o : v->definingOp->operands) operands.push_back(cloneOutside(o, b, memo, outerIv));
    return memo[v] = copyOf(v, operands, b);
  }

  // With a producer the consumers only wait for stages to land and release them: every
  // thread arrives on a stage's empty mbarrier once done with it (emitRelease), and the
  // producer waits there before refilling it.
  void releaseStages(const std::vector<TmaRing> &rings) {
    Builder b = bodyBuilder(std::next(positionOf(*firstDot_)));
    Builder end = bodyBuilder(positionOf(*body_->terminator()));
    for (const TmaRing &r : rings) {
      Value *previous = stageAhead(b, r.stage, r.stages - 1, r.stages);
      emitRelease(r, b, end, previous, isReadByAsyncFirstDot(r, rings));
    }
  }

  // Inside an enclosing loop the ring runs on across its iterations: each ring's stage and
  // phase pass through it (the next tile's first blocks go where this tile's last ones
  // left off, so the producer fetches them while the consumers store this tile), and the
  // stage a ring releases an iteration late (read by an async dot) is released after the
  // loop, once its dot has been waited for.
  void carryRingsAcrossOuterLoop(const std::vector<TmaRing> &rings) {
    Builder before(&fn_.body), after(outerBody());
    before.setInsertionPoint(&fn_.body, positionOf(*outer_));
    before.setLoc(outer_->loc);
    Operation *yield = outerBody()->terminator();
    const Type i32(ScalarType::I32);
    for (const TmaRing &r : rings)
      for (Value *counter : {r.stage, r.phase}) {
        Value *carried = appendIterArg(*outer_, before.intConstant(0, i32), counter->nameHint);
        loop_.operands[2 + counter->index] = carried;
        yield->operands.push_back(loop_.result(counter->index - 1));
      }
    auto at = std::next(positionOf(loop_));
    while (at != outerBody()->ops.end() && (*at)->code == OpCode::DotWait) ++at;
    after.setInsertionPoint(outerBody(), at);
    after.setLoc(loop_.loc);
    Value *ran = after.op(OpCode::Cmp, {loop_.operand(0), loop_.operand(1)}, Type(ScalarType::I1),
                          {{"predicate", std::string("lt")}});
    for (const TmaRing &r : rings) {
      if (!releasedTheStepAfter(r, isReadByAsyncFirstDot(r, rings))) continue;
      Value *last = stageAhead(after, loop_.result(r.stage->index - 1), r.stages - 1, r.stages);
      after.create(OpCode::MbarrierArrive, {r.empty, last, ran}, {});
    }
  }

  // The producer's program, at the kernel's start (codegen runs it on one more warpgroup,
  // which exits after it; the rest are the consumers):
  //   warp_specialize {
  //     [for the enclosing loop's iv ... iter_args(stage, phase per ring, count):]
  //       lb, ub, step, the copies' operands from outside the loop: recomputed from parameters
  //       for iv in [lb, ub) iter_args(stage, phase per ring, count, the advancing iter args the copies read):
  //         per ring: mbarrier_wait(empty, stage, phase ^ 1, count >= S)  -- its last reader is done
  //                   async_tma_copy(iteration iv into stage)
  //   }
  // count numbers the copies' iterations (the first S fill empty stages). The buffers and
  // mbarriers move to the kernel's start, before it (the producer uses them from its first
  // copy); the rest of the kernel is the consumers'.
  void buildProducer(const std::vector<TmaRing> &rings) {
    auto at = fn_.body.ops.begin();
    for (Value *allocation : allocations_) {
      Operation *op = allocation->definingOp;
      fn_.body.ops.splice(at, op->parent->ops, positionOf(*op));
      op->parent = &fn_.body;
    }
    Builder b(&fn_.body);
    b.setInsertionPoint(&fn_.body, at);
    b.setLoc(loop_.loc);
    Operation *producer = b.create(OpCode::WarpSpecialize, {}, {}, {{"producer_warps", int64_t{kProducerWarps}}}, 1);
    Block *region = producer->region(0);
    Builder pb(region);
    pb.setLoc(loop_.loc);
    const Type i32(ScalarType::I32);
    std::vector<Value *> inits; // stage and phase per ring, then the count
    for (size_t i = 0; i < 2 * rings.size() + 1; ++i) inits.push_back(pb.intConstant(0, i32));
    if (!outer_) {
      std::map<const Value *, Value *> memo;
      buildProducerLoop(rings, pb, inits, memo, nullptr);
      pb.create(OpCode::Yield, {}, {});
      return;
    }
    std::map<const Value *, Value *> memo;
    std::vector<Value *> bounds;
    for (unsigned i = 0; i < 3; ++i) bounds.push_back(cloneOutside(outer_->operand(i), pb, memo, nullptr));
    Operation *tiles = pb.create(OpCode::For, bounds, {}, {}, 1);
    Block *body = tiles->region(0);
    Value *outerIv = body->addArgument(outer_->operand(0)->type, outerBody()->args[0]->nameHint);
    std::vector<Value *> carried;
    for (Value *init : inits) carried.push_back(appendIterArg(*tiles, init, ""));
    pb.create(OpCode::Yield, {}, {});
    Builder tb(body);
    tb.setLoc(outer_->loc);
    std::map<const Value *, Value *> tileMemo;
    Operation *inner = buildProducerLoop(rings, tb, carried, tileMemo, outerIv);
    std::vector<Value *> next;
    for (auto &r : inner->results)
      if (next.size() < carried.size()) next.push_back(r.get());
    tb.create(OpCode::Yield, next, {});
  }

  // The producer's copy loop at b (buildProducer): iter args start from `inits` (stage and phase
  // per ring, count); outside values are recomputed at b (memo), the enclosing loop's variable
  // being `outerIv`.
  Operation *buildProducerLoop(const std::vector<TmaRing> &rings, Builder &b, const std::vector<Value *> &inits,
                               std::map<const Value *, Value *> &outsideMemo, Value *outerIv) {
    Block *where = b.block();
    auto outside = [&, where](Value *v) {
      Builder at(where);
      at.setInsertionPoint(where, positionOf(*loopBeingBuilt_));
      return cloneOutside(v, at, outsideMemo, outerIv);
    };
    std::vector<Value *> bounds;
    for (unsigned i = 0; i < 3; ++i) bounds.push_back(cloneOutside(loop_.operand(i), b, outsideMemo, outerIv));
    Operation *loop = b.create(OpCode::For, bounds, {}, {}, 1);
    loopBeingBuilt_ = loop;
    Block *body = loop->region(0);
    Value *iv = body->addArgument(ivType(), body_->args[0]->nameHint);
    std::vector<Value *> args;
    for (size_t i = 0; i < inits.size(); ++i) args.push_back(appendIterArg(*loop, inits[i], i + 1 == inits.size() ? "count" : ""));
    const Type i32(ScalarType::I32), i1(ScalarType::I1);
    Value *count = args.back();

    Builder lbld(body);
    lbld.setLoc(loop_.loc);
    std::map<const Value *, Value *> memo;
    std::vector<std::pair<Value *, Value *>> advancing; // the loop's advancing iter args and the producer's
    Shift shift;
    shift.iv = iv;
    shift.outside = outside;
    shift.iterArg = [&](Value *arg) {
      for (auto &[theirs, mine] : advancing)
        if (theirs == arg) return mine;
      advancing.emplace_back(arg, appendIterArg(*loop, outside(loop_.operand(2 + arg->index)), arg->nameHint));
      return advancing.back().second;
    };
    for (size_t i = 0; i < rings.size(); ++i) {
      const TmaRing &r = rings[i];
      Value *stage = args[2 * i], *phase = args[2 * i + 1];
      Value *refill = lbld.op(OpCode::Cmp, {count, lbld.intConstant(r.stages, i32)}, i1, {{"predicate", std::string("ge")}});
      Value *parity = lbld.op(OpCode::Xor, {phase, lbld.intConstant(1, i32)}, i32);
      lbld.create(OpCode::MbarrierWait, {r.empty, stage, parity, refill}, {});
      emitTmaCopies(r.cs, lbld, shift, stage);
      lbld.setLoc(loop_.loc);
    }
    std::vector<Value *> next;
    for (size_t i = 0; i < rings.size(); ++i) {
      Value *stage = args[2 * i], *phase = args[2 * i + 1];
      // One compare for both (the consumers' counters are made separately, addStageCounter).
      Value *plus = lbld.op(OpCode::Add, {stage, lbld.intConstant(1, i32)}, i32);
      Value *last = lbld.op(OpCode::Cmp, {stage, lbld.intConstant(rings[i].stages - 1, i32)}, i1,
                            {{"predicate", std::string("eq")}});
      next.push_back(lbld.op(OpCode::Select, {last, lbld.intConstant(0, i32), plus}, i32));
      next.push_back(lbld.op(OpCode::Xor, {phase, lbld.op(OpCode::Cast, {last}, i32)}, i32));
    }
    next.push_back(lbld.op(OpCode::Add, {count, lbld.intConstant(1, i32)}, i32));
    for (auto &[theirs, mine] : advancing) next.push_back(advance(mine, theirs, 1, lbld, shift, memo));
    lbld.create(OpCode::Yield, next, {});
    loopBeingBuilt_ = nullptr;
    return loop;
  }

  void readFromBuffer(Candidate &c, Value *stage) {
    Builder b(body_);
    b.setInsertionPoint(body_, positionOf(*c.convert));
    b.setLoc(c.convert->loc);
    Value *old = c.convert->result();
    Value *fromShared = b.op(OpCode::LocalLoad, {c.buffer, stage}, old->type);
    fromShared->layout = old->layout;
    replaceAllUsesWith(fn_.body, old, fromShared);
    body_->ops.erase(positionOf(*c.convert));
  }

  void emitEpilogue(bool cpAsync) {
    // With a producer around an enclosing loop, the ring lives until that loop is done.
    Operation &last = specialize_ && outer_ ? *outer_ : loop_;
    Builder b(last.parent);
    b.setInsertionPoint(last.parent, std::next(positionOf(last)));
    b.setLoc(loop_.loc);
    // Copies past the end are still writing zeros: let them land before the
    // space is handed to whatever comes next.
    if (cpAsync) b.create(OpCode::AsyncWait, {}, {}, {{"pending", int64_t{0}}});
    // With a producer, it too (arriving as it exits) before the mbarriers are invalidated.
    std::map<std::string, Attribute> attrs;
    if (specialize_) attrs["join_producer"] = int64_t{1};
    b.create(OpCode::Barrier, {}, {}, attrs);
    // Freed in reverse order of allocation (codegen stacks them).
    for (auto it = allocations_.rbegin(); it != allocations_.rend(); ++it) b.create(OpCode::LocalDealloc, {*it}, {});
  }
};

} // namespace

void pipelineLoops(Function &fn, unsigned numStages) {
  if (numStages < 2) return;
  std::vector<Operation *> loops;
  walk(fn.body, [&](Operation &op) {
    if (op.code == OpCode::For) loops.push_back(&op);
  });
  bool changed = false;
  for (Operation *loop : loops) changed |= LoopPipeliner(fn, *loop, numStages).run();
  if (!changed) return;
  eliminateCommonSubexpressions(fn); // the clones recompute loop-invariant values
  eliminateDeadCode(fn);             // the loads and the address math only they used
}

} // namespace tessera::passes
