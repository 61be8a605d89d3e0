#include "compiler/passes/HoistEpilogueLoads.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace tessera::passes {

using namespace ir;

namespace {

// 32-bit registers per thread the accumulator and the moved loads may hold across the wait
// (255 is the most a thread has; the rest is addresses, masks and the wait's bookkeeping), and
// the moved loads at most half the accumulator's: a 16-bit tile of its shape loaded as vectors.
// More (an fp32 residual, 16-bit elements loaded one by one along a ragged N) would cost spills or
// the second CTA per SM of the configs that rely on one.
constexpr int64_t kRegisterBudget = 192;

// Elements narrower than 32 bits share a register only when loaded as vectors (codegen's
// vectorWidth: contiguity, alignment in bytes and the mask's constancy along the last dim).
int64_t bitsPerElement(const Operation &load) {
  const Type &t = load.result()->type;
  int64_t bits = t.pointer ? 64 : std::max<int64_t>(bitWidth(t.scalar), 1);
  if (bits >= 32) return bits;
  auto last = [&](const char *key) -> int64_t {
    if (!load.hasAttr(key) || load.arrayAttr(key).empty()) return 1;
    return load.arrayAttr(key).back();
  };
  int64_t vec = std::min(last("contiguity"), last("alignment") * 8 / bits);
  if (load.hasAttr("has_mask") && load.intAttr("has_mask")) vec = std::min(vec, last("mask_constancy"));
  return vec * bits >= 32 ? bits : 32;
}

int64_t registersPerThread(const Value *v, unsigned numWarps) {
  const Type &t = v->type;
  if (!t.isBlock()) return 1;
  int64_t bits = v->definingOp && v->definingOp->code == OpCode::Load ? bitsPerElement(*v->definingOp)
                 : t.pointer                                          ? 64
                                                                      : std::max<int64_t>(bitWidth(t.scalar), 1);
  int64_t threads = 32 * static_cast<int64_t>(std::max(numWarps, 1u));
  return (t.numElements() * bits + 32 * threads - 1) / (32 * threads);
}

// A bias row or column: every tile of the row (column) reads it again, so it stays in L2.
bool smallBroadcast(const Type &t) {
  bool broadcastShape = t.rank() == 1;
  for (int64_t d : t.shape) broadcastShape |= d == 1;
  return broadcastShape;
}

// Whether a load may not move above `op`: it may write global memory (shared-memory writes,
// barriers, waits and frees do not change what a global load reads).
bool mayWriteGlobalMemory(const Operation &op) {
  if (!op.regions.empty()) return !isPure(op);
  if (op.code == OpCode::InlineAsm) return !isPure(op);
  return opWritesMemory(op.code) && !opWritesSharedMemory(op.code);
}

void hoistInBlock(Function &fn, Block &block) {
  for (auto &op : block.ops)
    for (auto &region : op->regions) hoistInBlock(fn, *region);
  for (auto waitIt = block.ops.begin(); waitIt != block.ops.end(); ++waitIt) {
    Operation &wait = **waitIt;
    if (wait.code != OpCode::DotWait) continue;
    std::map<const Operation *, size_t> position;
    size_t index = 0;
    for (auto &op : block.ops) position[op.get()] = index++;
    const size_t waitAt = position[&wait];
    const int64_t accumulator = registersPerThread(wait.result(), fn.numWarps);
    int64_t registers = accumulator, hoisted = 0;
    std::set<Operation *> moving;
    for (auto it = std::next(waitIt); it != block.ops.end(); ++it) {
      Operation &load = **it;
      if (mayWriteGlobalMemory(load)) break;
      // Tiles only: a bias row or column is an L2 hit (every tile of the row reads it), and its copies
      // in the accumulator's layout would hold many registers across the wait.
      if (load.code != OpCode::Load || hasSideEffects(load) || !load.result()->type.isBlock() ||
          smallBroadcast(load.result()->type))
        continue;
      // The load and the ops after the wait that compute its operands, all pure and not reading the wait.
      std::vector<Operation *> work = {&load}, deps;
      std::set<Operation *> seen;
      bool movable = true;
      while (!work.empty() && movable) {
        Operation *op = work.back();
        work.pop_back();
        if (!seen.insert(op).second || moving.count(op)) continue;
        deps.push_back(op);
        for (Value *operand : op->operands) {
          Operation *def = operand->definingOp;
          if (!def || def->parent != &block || position[def] < waitAt) continue;
          if (def == &wait || !isPure(*def) || !def->regions.empty()) {
            movable = false;
            break;
          }
          work.push_back(def);
        }
      }
      if (!movable) continue;
      int64_t more = registersPerThread(load.result(), fn.numWarps);
      if (registers + more > kRegisterBudget || 2 * (hoisted + more) > accumulator) continue;
      hoisted += more;
      registers += more;
      moving.insert(deps.begin(), deps.end());
    }
    if (moving.empty()) continue;
    std::vector<Operation *> ordered(moving.begin(), moving.end());
    std::sort(ordered.begin(), ordered.end(),
              [&](Operation *a, Operation *b) { return position[a] < position[b]; });
    for (Operation *op : ordered) {
      block.ops.splice(waitIt, block.ops, positionOf(*op));
      // The wait reads the loaded values (codegen: loadWaitAnchors), so LLVM and ptxas keep the
      // loads before it, and read once per tile, they make way for the K loop's operands in L2.
      if (op->code == OpCode::Load) {
        wait.operands.push_back(op->result());
        if (!op->hasAttr("eviction") && !op->hasAttr("cache"))
          op->attrs["eviction"] = std::string("evict_first");
      }
    }
  }
}

} // namespace

void hoistEpilogueLoads(Function &fn) { hoistInBlock(fn, fn.body); }

} // namespace tessera::passes
