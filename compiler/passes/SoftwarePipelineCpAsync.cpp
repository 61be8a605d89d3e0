// The pipeline pass's cp.async rings (SoftwarePipeline.cpp describes them): loads feeding
// tensor-core dots, copied into shared memory by cp.async ahead of the iteration that reads them.
#include "compiler/passes/SoftwarePipelineLoop.h"

#include <algorithm>

namespace tessera::passes::software_pipeline {

// load -> trans -> convert_layout -> B also (Unsloth's grouped GEMM: dot(x, w.T) of a
// [N x K] block): the copy writes the block's rows as the stage's columns (async_copy
// transpose = 1), a transposed tile, so no trans runs through shared memory in the loop.
std::vector<Candidate> LoopPipeliner::findCandidates() {
  std::vector<Candidate> found;
  // Only these copies' address math may read memory a few iterations early (cloneLoadAhead);
  // what canClone decided with loads allowed is forgotten after.
  cloneLoads_ = true;
  clonable_.clear();
  for (auto &op : body_->ops) {
    Operation *trans = transposedBFeeding(*op);
    Operation *load = trans ? readOnceInBody(trans->operand(0), OpCode::Load) : loadFeedingDotOperand(*op, OpCode::Load);
    if (!load) continue;
    const unsigned opIdx = op->result()->layout->opIdx;
    const unsigned version = feedsOnlyMmaDots(*op);
    if (!version) continue;
    if (!fitsCpAsyncRing(*load)) continue;
    // A read along its dim 0 (fla's k tile, [K, T] with K contiguous) is staged as a transposed
    // tile, which 16-bit wgmma reads ("transpose A") and mma.sync does not: there cp.async would
    // move it element by element, so it stays an ordinary (vectorised) load that the dot stages.
    // (fp8 / tf32 wgmma cannot transpose A: their tile is staged K-major, as before.)
    if (opIdx == 0 && version != 3 && !trans && readAlongDim0(*load)) continue;
    found.push_back({load, op.get(), opIdx, version, nullptr, trans});
  }
  std::vector<Candidate> shared = findSharedBlocks();
  found.insert(found.end(), shared.begin(), shared.end());
  cloneLoads_ = false;
  clonable_.clear();
  return found;
}

// Bits of consecutive elements along the load's fastest dim, as far as the axis analysis proves
// them contiguous (alignment and masks aside).
static int64_t contiguousBits(const Operation &load) {
  const Type &t = load.result()->type;
  const LayoutRef &l = load.operand(0)->layout;
  if (!l || l->kind != Layout::Kind::Blocked || !load.hasAttr("contiguity")) return 32; // unknown: no gather
  return std::max<int64_t>(1, load.arrayAttr("contiguity").at(l->order[0])) * bitWidth(t.scalar);
}

// The load can be copied ahead: a 2-D block of a stageable type, other = 0, its address (and
// mask) computable at another iteration, and not a gather of elements narrower than cp.async's
// 4 bytes (an implicit-GEMM conv's 16-bit [pixels, channels] tile: no dim contiguous). Such a
// ring is loaded and stored element by element an iteration early, with every element's 64-bit
// address and mask live across the loop (attorch's conv2d spilled 0.1-29 KB); Triton's pipeliner
// leaves loads under 32 bits wide in the loop too (canBeConvertedToAsyncLoad). A contiguous block
// whose alignment or mask narrows the copies (a GEMM's B with N % 8 != 0) keeps its ring: its
// dot can still run on into the next iteration.
bool LoopPipeliner::fitsCpAsyncRing(Operation &load) {
  if (!stageableType(load.result()->type)) return false;
  if (load.hasAttr("volatile") && load.intAttr("volatile")) return false;
  if (load.loadOther() && !isZeroConstant(load.loadOther())) return false;
  if (contiguousBits(load) < 32) return false;
  return canClone(load.operand(0)) && (!load.loadMask() || canClone(load.loadMask()));
}

// A 16-bit block that several wgmma dots read, as it is and through trans (the attention
// backward's dK/dV loop: Q^T is B of K Q^T and, transposed, of dS^T Q; dO is B of P^T dO and,
// transposed, of V dO^T): one ring, each reader's local_load a view of the stage (wgmma reads
// a tile N- or K-major, A K- or M-major, and the tile's bytes are the same either way), as
// Triton's memdesc_trans. Staged by the dots instead, each staged it again in every iteration
// (a store, a fence and a barrier each).
std::vector<Candidate> LoopPipeliner::findSharedBlocks() {
  std::vector<Candidate> found;
  for (auto &op : body_->ops) {
    if (op->code != OpCode::Load || countUses(fn_.body, op->result()) < 2) continue;
    Operation &load = *op;
    const Type &t = load.result()->type;
    if (t.rank() != 2 || t.pointer || bitWidth(t.scalar) != 16) continue;
    // Every reader: convert -> #dot_op of wgmma dots, or trans -> convert -> B of wgmma dots.
    std::vector<std::pair<Operation *, Operation *>> routes; // (convert, trans or null), in body order
    unsigned users = 0;
    bool ok = true;
    for (auto &user : body_->ops) {
      if (!readsValue(*user, load.result())) continue;
      ++users;
      Operation *convert = user.get(), *trans = nullptr;
      if (user->code == OpCode::Trans) {
        trans = user.get();
        convert = nullptr;
        for (auto &next : body_->ops)
          if (readsValue(*next, trans->result()) && transposedBFeeding(*next) == trans) convert = next.get();
        if (!convert) { ok = false; break; }
      }
      const bool toDotOperand = convert->code == OpCode::ConvertLayout && convert->result()->layout &&
                                convert->result()->layout->kind == Layout::Kind::DotOperand;
      if (!toDotOperand || feedsOnlyMmaDots(*convert) != 3) { ok = false; break; }
      routes.emplace_back(convert, trans);
    }
    if (!ok || users != countUses(fn_.body, load.result()) || routes.size() < 2) continue;
    if (!fitsCpAsyncRing(load)) continue;
    std::sort(routes.begin(), routes.end(), [&](auto &a, auto &b) {
      for (auto &o : body_->ops) {
        if (o.get() == a.first) return a.first != b.first;
        if (o.get() == b.first) return false;
      }
      return false;
    });
    Candidate c{&load, routes[0].first, routes[0].first->result()->layout->opIdx, 3, nullptr, routes[0].second};
    for (size_t i = 1; i < routes.size(); ++i)
      c.views.emplace_back(routes[i].first, (routes[i].second != nullptr) != (routes[0].second != nullptr));
    found.push_back(c);
  }
  return found;
}

// The copies of iteration `iv` into `stage`, then a commit.
void LoopPipeliner::emitCopies(const std::vector<Candidate> &cs, Builder &b, const Shift &shift, Value *stage) {
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
    if (c.trans) attrs["transpose"] = int64_t{1};
    if (Value *mask = c.load->loadMask()) operands.push_back(clone(mask, b, shift, memo));
    b.setLoc(c.load->loc);
    b.create(OpCode::AsyncCopy, operands, {}, attrs);
  }
  b.create(OpCode::AsyncCommit, {}, {});
}

void LoopPipeliner::emitLoopHead(const std::vector<Candidate> &cs, Value *stage) {
  Builder b(body_);
  b.setInsertionPoint(body_, body_->ops.begin());
  b.setLoc(loop_.loc);
  b.create(OpCode::AsyncWait, {}, {}, {{"pending", int64_t{ahead_ - 1}}});
  if (anyWgmma(cs)) b.create(OpCode::FenceAsyncShared, {}, {});
  b.create(OpCode::Barrier, {}, {});
  if (copiesAfter_) {
    // Last iteration's stage, free once every warp has waited for the group that read it.
    Builder after(body_);
    after.setInsertionPoint(body_, std::next(positionOf(*copiesAfter_)));
    after.setLoc(loop_.loc);
    after.create(OpCode::Barrier, {}, {});
    emitCopiesAhead(cs, after, stageAhead(after, stage, ahead_, stages_), ahead_, &LoopPipeliner::emitCopies);
    return;
  }
  // The stage `ahead` from this one: read last iteration (everyone is past
  // it: the barrier), or, with async dots, two iterations ago (its wgmmas
  // are done: each thread waited for them before the barrier).
  emitCopiesAhead(cs, b, stageAhead(b, stage, ahead_, stages_), ahead_, &LoopPipeliner::emitCopies);
}

// The one async wgmma dot of a GEMM loop, when it is the body's only wgmma dot and the only
// reader of every staged block: the copies can follow it (SoftwarePipeline.cpp); else null.
Operation *LoopPipeliner::lateCopyDot(const std::vector<Candidate> &cs, const std::vector<Operation *> &asyncDots) {
  if (cs.empty() || asyncDots.size() != 1) return nullptr;
  Operation *dot = asyncDots.front();
  for (auto &op : body_->ops)
    if (op.get() != dot && isWgmmaDot(*op)) return nullptr;
  for (const Candidate &c : cs) {
    bool onlyDot = true;
    walk(fn_.body, [&](Operation &user) {
      const auto &ops = user.operands;
      if (std::find(ops.begin(), ops.end(), c.convert->result()) != ops.end()) onlyDot = onlyDot && &user == dot;
    });
    if (!onlyDot) return nullptr;
  }
  return dot;
}

} // namespace tessera::passes::software_pipeline
