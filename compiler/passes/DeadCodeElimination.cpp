#include "compiler/passes/DeadCodeElimination.h"

#include <set>

namespace tessera::passes {

using namespace ir;

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
