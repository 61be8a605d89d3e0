// The pipeline pass's buffers for B operands computed in the loop (SoftwarePipeline.cpp
// describes the pass). A tensor-core dot (wgmma, or mma.sync through ldmatrix) reads B from
// shared memory; a B computed in the body (fla's
// chunk_gated_delta_rule_fwd_h: the state h.to(bf16) for v = w @ h, and v.to(bf16) read by two
// dots, h1 += k1^T @ v and h2 += k2^T @ v) is otherwise staged by each dot into the one scratch
// area of the dots: a barrier before each dot and one after it, and a B that two dots read is
// stored twice. Here each such B gets its own one-stage buffer, allocated before the loop:
//
//   for iv ...:
//     async_wait; fence_async_shared; barrier      -- the cp.async ring's loop head
//     ...
//     x = ...                                       -- B, in registers
//     local_store(x, buf_x)                         -- right after x
//     ...
//     fence_async_shared; barrier                   -- once, before the first dot reading a
//                                                   -- buffer stored since the last barrier
//     dot(a, local_load(buf_x), acc)
//
// so that the stores of several operands share one barrier, a B read by several dots is stored
// once, and no barrier follows the dots (mma.sync dots need no fence: their ldmatrix reads
// through the generic proxy; AWQ's and GPTQ's dequantised weights, 32 x 32 blocks on 4 warps). Every dot reading a buffer has waited for its wgmmas
// before the iteration ends (async dots are left out), and the loop head's barrier orders those
// reads before the next iteration's stores into the buffer.
#include "compiler/passes/SoftwarePipelineLoop.h"

#include <algorithm>
#include <map>
#include <set>

namespace tessera::passes::software_pipeline {

namespace {

// A tensor-core dot: wgmma, or mma.sync (#mma version 2).
bool isMmaDot(const Operation &op) {
  const Value *r = op.results.empty() ? nullptr : op.result();
  return op.code == OpCode::Dot && r && r->layout && r->layout->kind == Layout::Kind::Mma;
}

// The tensor-core dots reading `v` as operand B, or empty when something else reads it.
std::vector<Operation *> mmaReadersAsB(Block &body, const Value *v) {
  std::vector<Operation *> readers;
  bool other = false;
  walk(body, [&](Operation &op) {
    for (unsigned i = 0; i < op.operands.size(); ++i) {
      if (op.operand(i) != v) continue;
      const bool asB = isMmaDot(op) && i == 1 && op.parent == &body &&
                       !(op.hasAttr("async") && op.intAttr("async"));
      if (asB) readers.push_back(&op);
      else other = true;
    }
  });
  return other ? std::vector<Operation *>{} : readers;
}

} // namespace

void LoopPipeliner::bufferRegisterOperands() {
  auto head = std::find_if(body_->ops.begin(), body_->ops.end(),
                           [](auto &op) { return op->code == OpCode::Barrier; });
  if (head == body_->ops.end()) return;
  std::map<const Operation *, size_t> position;
  size_t n = 0;
  for (auto &op : body_->ops) position[op.get()] = n++;
  const size_t headAt = position.at(head->get());

  std::vector<Operation *> converts;
  for (auto &op : body_->ops) {
    if (op->code != OpCode::ConvertLayout || position.at(op.get()) <= headAt) continue;
    const LayoutRef &l = op->result()->layout;
    if (!l || l->kind != Layout::Kind::DotOperand || l->opIdx != 1) continue;
    Value *x = op->operand(0);
    const Type &t = x->type;
    if (t.rank() != 2 || (t.scalar != ScalarType::F16 && t.scalar != ScalarType::BF16)) continue;
    if (!x->definingOp || x->definingOp->parent != body_ || !x->layout ||
        x->layout->kind == Layout::Kind::Shared || x->definingOp->code == OpCode::Load ||
        x->definingOp->code == OpCode::LocalLoad)
      continue;
    if (mmaReadersAsB(*body_, op->result()).empty()) continue;
    converts.push_back(op.get());
  }
  // The buffer stores each warpgroup's columns together as the dot splits N (columnGroups); a value
  // read by dots that split N differently keeps its staging.
  auto versionOf = [](Operation *convert) { return convert->result()->layout->parent->mmaVersion; };
  auto columnGroupsOf = [&](Operation *convert) { return columnGroups({nullptr, convert, 1, versionOf(convert)}); };
  // So does a value read by both wgmma and mma.sync dots (their tiles differ).
  std::map<const Value *, std::set<std::pair<unsigned, unsigned>>> formsOf;
  for (Operation *convert : converts) formsOf[convert->operand(0)].insert({versionOf(convert), columnGroupsOf(convert)});
  converts.erase(std::remove_if(converts.begin(), converts.end(),
                                [&](Operation *c) { return formsOf[c->operand(0)].size() != 1; }),
                 converts.end());
  if (converts.empty()) return;

  Builder outside(loop_.parent);
  outside.setInsertionPoint(loop_.parent, positionOf(loop_));
  outside.setLoc(loop_.loc);
  Value *zero = outside.intConstant(0, Type(ScalarType::I32));
  std::set<const Value *> buffers, wgmmaRead; // (those that wgmma dots read)
  std::map<const Value *, Value *> bufferOf; // x -> its buffer (one per value, whatever reads it)
  for (Operation *convert : converts) {
    Value *x = convert->operand(0);
    const Type &t = x->type;
    Value *&buffer = bufferOf[x];
    if (!buffer) {
      outside.setLoc(convert->loc);
      buffer = outside.op(OpCode::LocalAlloc, {}, t.withShape({1, t.shape[0], t.shape[1]}));
      buffer->layout =
          Layout::sharedOperandTile(versionOf(convert), 1, t.shape[1], bitWidth(t.scalar), false, columnGroupsOf(convert));
      allocations_.push_back(buffer);
      buffers.insert(buffer);
      if (versionOf(convert) == 3) wgmmaRead.insert(buffer);
      // Stored as soon as x exists (and the loop head's barrier has passed).
      Operation *def = x->definingOp;
      Builder store(body_);
      store.setInsertionPoint(body_, std::next(position.at(def) > headAt ? positionOf(*def) : head));
      store.setLoc(convert->loc);
      store.create(OpCode::LocalStore, {x, buffer, zero}, {});
    }
    Builder read(body_);
    read.setInsertionPoint(body_, positionOf(*convert));
    read.setLoc(convert->loc);
    Value *fromShared = read.op(OpCode::LocalLoad, {buffer, zero}, convert->result()->type);
    fromShared->layout = convert->result()->layout;
    replaceAllUsesWith(fn_.body, convert->result(), fromShared);
    body_->ops.erase(positionOf(*convert));
  }

  // One barrier before the first read of a buffer stored since the last barrier, after a fence
  // where wgmma (the async proxy) reads it.
  std::set<const Value *> stored;
  for (auto it = body_->ops.begin(); it != body_->ops.end(); ++it) {
    Operation &op = **it;
    if (op.code == OpCode::LocalStore && buffers.count(op.operand(1))) stored.insert(op.operand(1));
    if (op.code == OpCode::Barrier) { // publishes the stores before it (wgmma's: after a fence)
      const bool fenced = it != body_->ops.begin() && (*std::prev(it))->code == OpCode::FenceAsyncShared;
      for (auto s = stored.begin(); s != stored.end();)
        s = fenced || !wgmmaRead.count(*s) ? stored.erase(s) : std::next(s);
    }
    if (op.code == OpCode::LocalLoad && stored.count(op.operand(0))) {
      Builder b(body_);
      b.setInsertionPoint(body_, it);
      b.setLoc(op.loc);
      if (std::any_of(stored.begin(), stored.end(), [&](const Value *s) { return wgmmaRead.count(s); }))
        b.create(OpCode::FenceAsyncShared, {}, {});
      b.create(OpCode::Barrier, {}, {});
      stored.clear();
    }
  }
}

} // namespace tessera::passes::software_pipeline
