#include "compiler/passes/DeadCodeElimination.h"

#include <set>

namespace tessera::passes {

using namespace ir;

static bool hasSideEffects(const Operation &op) {
  switch (op.code) {
  case OpCode::Store:
  case OpCode::DescStore:
  case OpCode::For:
  case OpCode::If:
  case OpCode::While:
  case OpCode::Yield:
  case OpCode::Condition:
  case OpCode::Return:
  case OpCode::AtomicRMW: // tl.atomic_*, tl.device_print/assert, tl.assume, tl.debug_barrier
  case OpCode::AtomicCAS:
  case OpCode::Print:
  case OpCode::Assert:
  case OpCode::Assume:
  case OpCode::Barrier:
  case OpCode::LocalDealloc: // shared memory and cp.async (the pipeline pass)
  case OpCode::AsyncCopy:
  case OpCode::AsyncTmaCopy:
  case OpCode::MbarrierWait:
  case OpCode::MbarrierArrive:
  case OpCode::WarpSpecialize:
  case OpCode::LocalStore:
  case OpCode::AsyncCommit:
  case OpCode::FenceAsyncShared:
  case OpCode::DotWait: // also orders the wgmma reads of the buffers before their reuse
  case OpCode::AsyncWait:
    return true;
  case OpCode::Load:
    return op.hasAttr("volatile") && op.intAttr("volatile");
  case OpCode::InlineAsm: // tl.inline_asm_elementwise(..., is_pure=False) may store
    return !op.intAttr("pure");
  default:
    return false;
  }
}

static bool removeDead(Block &block, const std::set<const Value *> &used) {
  bool changed = false;
  for (auto it = block.ops.begin(); it != block.ops.end();) {
    Operation &op = **it;
    for (auto &region : op.regions) changed |= removeDead(*region, used);
    bool dead = !hasSideEffects(op);
    for (const auto &r : op.results) dead = dead && !used.count(r.get());
    if (dead) {
      it = block.ops.erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  return changed;
}

void eliminateDeadCode(Function &fn) {
  bool changed = true;
  while (changed) {
    std::set<const Value *> used;
    walk(fn.body, [&](Operation &op) {
      for (const Value *v : op.operands) used.insert(v);
    });
    changed = removeDead(fn.body, used);
  }
}

} // namespace tessera::passes
