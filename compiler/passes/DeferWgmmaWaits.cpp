#include "compiler/passes/DeferWgmmaWaits.h"

#include <algorithm>
#include <vector>

namespace tessera::passes {

using namespace ir;

namespace {

// Ops the wait must stay before (see the header): writes to shared memory and frees of it, except
// the TMA copies (they fill a stage no wgmma in flight reads), ops with regions and the terminator.
bool stopsTheWait(const Operation &op) {
  if (opFrees(op.code)) return true;
  if (opWritesSharedMemory(op.code) && op.code != OpCode::AsyncTmaCopy) return true;
  return !op.regions.empty() || &op == op.parent->terminator();
}

// The values computed between the dot and its wait that the ops there do not
// read but ops after it do: the ends of the work the wait should follow.
// ptxas schedules a wait_group as early as nothing orders it (it has no
// inputs), i.e. right after the dot; codegen puts a shared load whose address
// is made from these before the wait, which ptxas keeps in order
// (WgmmaDot.cpp, loadWaitAnchors). Only 32-bit values: what it bit-casts.
// Not a global load whose value only a loop body's yield reads (a register
// prefetch carried to the next iteration, SoftwarePipelinePrefetch.cpp): the
// anchor reads its data, so the wait would stall until memory answers, in this
// iteration, and the prefetch would no longer reach past the loop edge.
bool carriedLoad(Block &block, const Operation &op, const Value *r) {
  const Operation *end = block.terminator();
  if (op.code != OpCode::Load || !block.parentOp || block.parentOp->code != OpCode::For || !end ||
      !opIsTerminator(end->code))
    return false;
  for (auto &user : block.ops)
    if (user.get() != end && readsValue(*user, r)) return false;
  return true;
}

std::vector<Value *> anchorsOf(Block &block, std::list<std::unique_ptr<Operation>>::iterator from,
                               std::list<std::unique_ptr<Operation>>::iterator to) {
  std::vector<Value *> anchors;
  for (auto it = from; it != to; ++it)
    for (auto &r : (*it)->results) {
      // A dot's registers are the tensor cores' until its own wait; a constant is no work.
      if (isWgmmaDot(**it) || (*it)->code == OpCode::Constant) continue;
      const Type &t = r->type;
      if (t.pointer || t.isTensorDesc() || bitWidth(t.scalar) != 32 || carriedLoad(block, **it, r.get())) continue;
      bool readBefore = false;
      for (auto u = std::next(it); u != to && !readBefore; ++u) readBefore = readsValue(**u, r.get());
      if (!readBefore && countUses(block, r.get()) > 0) anchors.push_back(r.get());
    }
  return anchors;
}

void deferInBlock(Block &block) {
  for (auto it = block.ops.begin(); it != block.ops.end(); ++it) {
    Operation &dot = **it;
    for (auto &region : dot.regions) deferInBlock(*region);
    if (!isWgmmaDot(dot) || (dot.hasAttr("async") && dot.intAttr("async"))) continue;
    Value *result = dot.result();
    auto at = std::next(it);
    int64_t pending = 0;
    for (; at != block.ops.end() && !readsValue(**at, result) && !stopsTheWait(**at); ++at)
      pending += isWgmmaDot(**at);
    if (at == std::next(it) || at == block.ops.end()) continue; // read right away: nothing to overlap
    dot.attrs["deferred"] = int64_t{1};
    Builder b(&block);
    b.setInsertionPoint(&block, at);
    b.setLoc((*at)->loc);
    std::vector<Value *> operands = {result};
    for (Value *v : anchorsOf(block, std::next(it), at)) operands.push_back(v);
    Value *waited = b.op(OpCode::DotWait, operands, result->type, {{"pending", pending}});
    waited->layout = result->layout;
    replaceUsesExcept(block, result, waited, waited->definingOp);
  }
}

} // namespace

void deferWgmmaWaits(Function &fn) { deferInBlock(fn.body); }

} // namespace tessera::passes
