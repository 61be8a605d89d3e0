// The pipeline pass's cp.async rings (SoftwarePipeline.cpp describes them): loads feeding
// tensor-core dots, copied into shared memory by cp.async ahead of the iteration that reads them.
#include "compiler/passes/SoftwarePipelineLoop.h"

namespace tessera::passes::software_pipeline {

std::vector<Candidate> LoopPipeliner::findCandidates() {
  std::vector<Candidate> found;
  // Only these copies' address math may read memory a few iterations early (cloneLoadAhead);
  // what canClone decided with loads allowed is forgotten after.
  cloneLoads_ = true;
  clonable_.clear();
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
  cloneLoads_ = false;
  clonable_.clear();
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
  // The stage `ahead` from this one: read last iteration (everyone is past
  // it: the barrier), or, with async dots, two iterations ago (its wgmmas
  // are done: each thread waited for them before the barrier).
  emitCopiesAhead(cs, b, stageAhead(b, stage, ahead_, stages_), ahead_, &LoopPipeliner::emitCopies);
}

} // namespace tessera::passes::software_pipeline
