// Fusion: the pass that folds fused elementwise chains.
//
// Inlining a fused function (a @jit epilogue, score_mod, a generated
// elementwise kernel's body) happens in the specialiser: by the time the
// pipeline runs, the epilogue is ordinary elementwise IR between the dot's
// (or reduction's) result and its store. What fusion can still cost is data
// movement: the result leaves the dot in the tensor-core layout and meets the
// store's coalesced layout at a convert_layout — a round trip through shared
// memory. The unfused kernel converts the fp32 accumulator and then casts it;
// an epilogue adds ops on either side of that conversion.
//
// This pass moves each conversion down its chain: starting at
// `convert_layout %x`, it follows single-use elementwise ops (arithmetic,
// math, casts, selects) whose other operands are cheap index math or
// constants (recomputable in any layout) up to the last cast that narrows the
// elements below %x's width, and recomputes that chain in %x's layout with
// the conversion after the cast. The conversion then moves 16-bit instead of
// 32-bit values (half the shared memory and half the shuffling work), and the
// elementwise ops run on the registers the dot left them in. Operands that
// are real data in the store's layout (a loaded bias or residual) stop the
// chain: moving them would add a conversion. A chain without a narrowing cast
// is left alone (nothing to gain).
//
// A chain may also end at a second conversion (the accumulator converted for
// the epilogue's ops, then again for the store): moving the first one down
// makes the two adjacent, and they fold into one.
//
// Small loads that an epilogue broadcasts (a bias vector: a rank-1 block or
// one with a size-1 dim) do not stop the chain: they are loaded again in the
// chain's layout (their index math recomputed there), when nothing between
// the load and the chain writes memory. Each thread reads the few elements it
// needs (from L1/L2) instead of a shared-memory round trip.
//
// A conversion of a widened value (a 16-bit residual loaded in the store's
// layout, cast to f32 for the epilogue's add, then converted into the
// accumulator's layout) moves above the widening cast: the narrow value
// crosses shared memory (half the bytes and barrier-to-barrier time of the
// fp32 round trip, and no fp32 staging registers) and is widened in the
// target layout.
//
// A conversion of such a small loaded vector itself (through elementwise ops
// and index math: fla solve_tril's row `-tl.load(p)`, read both as a row and
// as a column of the block it updates) is, in the same way, the load made
// again in the wanted layout: in a loop that is a shared-memory round trip
// and two barriers an iteration fewer.
//
// Invariant, checked: the pass never adds a convert_layout (it moves one and
// rematerialises the index math and small loads it needs).
#include "compiler/passes/Fusion.h"

#include "compiler/ir/LayoutMath.h"
#include "compiler/passes/DeadCodeElimination.h"
#include "compiler/passes/RemoveLayoutConversions.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::passes {

using namespace ir;

namespace {

bool isIndexMath(OpCode code) {
  switch (code) {
  case OpCode::Constant: case OpCode::MakeRange: case OpCode::Splat: case OpCode::Broadcast:
  case OpCode::ExpandDims: case OpCode::ConvertLayout: case OpCode::Hint: case OpCode::AddPtr:
    return true;
  default:
    return opIsArithmetic(code) || code == OpCode::Cmp;
  }
}

constexpr int kMaxCloneOps = 48;
constexpr int64_t kSmallLoad = 1024; // elements: a bias row or column

// Recomputes block values in another layout: index math and constants (as
// remove-layout-conversions' rematerialisation) plus small loads. `at` is the
// op the copies go before (in the same block as the originals' users).
class Cloner {
public:
  Cloner(Block *block, std::list<std::unique_ptr<Operation>>::iterator at) : block_(block), at_(at) {}

  // Ops cloning v would create; -1 when it cannot.
  int cost(Value *v, std::set<Value *> &seen) {
    if (!v->type.isBlock() || seen.count(v)) return 0;
    seen.insert(v);
    Operation *def = v->definingOp;
    if (!def) return -1;
    if (def->code == OpCode::Load) {
      if (!smallLoad(*def)) return -1;
    } else if (!isIndexMath(def->code) || def->results.size() != 1) {
      return -1;
    }
    int total = 1;
    for (Value *operand : def->operands) {
      int c = cost(operand, seen);
      if (c < 0) return -1;
      total += c;
    }
    return total <= kMaxCloneOps ? total : -1;
  }

  Value *clone(Value *v, const LayoutRef &layout) { return clone(v, layout, at_, cloned_); }

private:
  Block *block_;
  std::list<std::unique_ptr<Operation>>::iterator at_;
  std::map<std::pair<Value *, std::string>, Value *> cloned_;

  // The copies go before `at`. A load's copy (and the address math it needs) goes right after the
  // original load instead, so that it is issued as early (a row reloaded in a loop body: its
  // latency overlaps the other load's instead of following the work between them).
  Value *clone(Value *v, const LayoutRef &layout, std::list<std::unique_ptr<Operation>>::iterator at,
               std::map<std::pair<Value *, std::string>, Value *> &memo) {
    if (!v->type.isBlock()) return v;
    if (sameLayout(v->layout, layout)) return v;
    auto key = std::make_pair(v, layout->str());
    if (auto it = memo.find(key); it != memo.end()) return it->second;
    Operation *def = v->definingOp;
    if (def->code == OpCode::ConvertLayout) return memo[key] = clone(def->operand(0), layout, at, memo);
    std::map<std::pair<Value *, std::string>, Value *> early;
    const bool load = def->code == OpCode::Load && def->parent == block_;
    if (load) at = std::next(positionOf(*def));
    std::vector<Value *> operands;
    for (Value *operand : def->operands)
      operands.push_back(clone(operand,
                               def->code == OpCode::ExpandDims
                                   ? Layout::slice(static_cast<unsigned>(def->intAttr("axis")), layout)
                                   : layout,
                               at, load ? early : memo));
    Builder b(block_);
    b.setInsertionPoint(block_, at);
    b.setLoc(def->loc);
    Operation *copy = b.create(def->code, operands, {def->result()->type}, def->attrs);
    copy->result()->layout = layout;
    return memo[key] = copy->result();
  }

  // A load of few elements (rank 1, or a size-1 dim: broadcast later) in the same block,
  // with nothing that writes memory between it and the copy.
  bool smallLoad(Operation &load) {
    const Type &t = load.result()->type;
    bool broadcastShape = t.rank() == 1;
    for (int64_t d : t.shape) broadcastShape |= d == 1;
    if (!broadcastShape || t.numElements() > kSmallLoad || load.parent != block_) return false;
    auto it = load.parent->ops.begin();
    while (it->get() != &load) ++it;
    for (++it; it != at_ && it != block_->ops.end(); ++it)
      if (mayWriteMemory(**it)) return false;
    return true;
  }
};

unsigned countConversions(Function &fn) {
  unsigned n = 0;
  walk(fn.body, [&](Operation &op) { n += op.code == OpCode::ConvertLayout; });
  return n;
}

std::map<Value *, std::vector<Operation *>> usersOf(Function &fn) {
  std::map<Value *, std::vector<Operation *>> users;
  walk(fn.body, [&](Operation &op) {
    for (Value *v : op.operands) users[v].push_back(&op);
  });
  return users;
}

// The chain after `convert` worth moving above it: ops up to the last narrowing cast.
std::vector<Operation *> chainToNarrowingCast(Operation &convert, std::map<Value *, std::vector<Operation *>> &users) {
  Value *source = convert.operand(0);
  unsigned width = bitWidth(source->type.scalar);
  std::vector<Operation *> chain;
  size_t keep = 0;
  Value *current = convert.result();
  while (true) {
    auto it = users.find(current);
    if (it == users.end() || it->second.size() != 1) break;
    Operation *user = it->second.front();
    if (user->code == OpCode::ConvertLayout && user->parent == convert.parent) {
      keep = chain.size(); // two conversions become adjacent and fold into one
      break;
    }
    if (!opIsArithmetic(user->code) || user->parent != convert.parent || user->results.size() != 1 ||
        !sameLayout(user->result()->layout, convert.result()->layout) ||
        user->result()->type.shape != source->type.shape)
      break;
    bool othersCheap = true;
    unsigned uses = 0;
    Cloner cloner(convert.parent, std::next(positionOf(*user)));
    for (Value *operand : user->operands) {
      if (operand == current) {
        ++uses;
        continue;
      }
      std::set<Value *> seen;
      if (operand->type.isBlock() && cloner.cost(operand, seen) < 0) othersCheap = false;
    }
    if (!othersCheap || uses != 1) break;
    chain.push_back(user);
    if (user->code == OpCode::Cast && !user->result()->type.pointer && bitWidth(user->result()->type.scalar) < width)
      keep = chain.size();
    current = user->result();
  }
  chain.resize(keep);
  return chain;
}

bool sinkConversion(Function &fn, Operation &convert, std::map<Value *, std::vector<Operation *>> &users) {
  std::vector<Operation *> chain = chainToNarrowingCast(convert, users);
  if (chain.empty()) return false;
  Value *source = convert.operand(0);
  const LayoutRef &from = source->layout;
  Operation *last = chain.back();
  auto at = std::next(positionOf(*last));
  Builder b(convert.parent);
  b.setInsertionPoint(last->parent, at);
  Cloner cloner(last->parent, at);
  // The chain was found with copies placed at the conversion; check them where they go.
  for (Operation *op : chain)
    for (Value *operand : op->operands) {
      std::set<Value *> seen;
      if (operand->type.isBlock() && operand->definingOp != convert.operand(0)->definingOp &&
          std::find(chain.begin(), chain.end(), operand->definingOp) == chain.end() &&
          operand != convert.result() && cloner.cost(operand, seen) < 0)
        return false;
    }
  Value *current = source;
  Value *previous = convert.result();
  for (Operation *op : chain) {
    std::vector<Value *> operands;
    for (Value *operand : op->operands)
      operands.push_back(operand == previous ? current : cloner.clone(operand, from));
    b.setLoc(op->loc);
    Operation *copy = b.create(op->code, operands, {op->result()->type}, op->attrs);
    copy->result()->layout = from;
    previous = op->result();
    current = copy->result();
  }
  b.setLoc(convert.loc);
  Value *converted = b.op(OpCode::ConvertLayout, {current}, current->type);
  converted->layout = last->result()->layout;
  replaceAllUsesWith(fn.body, last->result(), converted);
  // The old chain and conversion are dead now.
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    Operation *op = *it;
    op->parent->ops.remove_if([&](const std::unique_ptr<Operation> &p) { return p.get() == op; });
  }
  Operation *old = &convert;
  old->parent->ops.remove_if([&](const std::unique_ptr<Operation> &p) { return p.get() == old; });
  return true;
}

// convert_layout(cast %x) with %x narrower and the cast used only here -> cast(convert_layout %x).
bool convertBeforeWidening(Function &fn, Operation &convert, std::map<Value *, std::vector<Operation *>> &users) {
  Operation *cast = convert.operand(0)->definingOp;
  if (!cast || cast->code != OpCode::Cast || cast->parent != convert.parent) return false;
  // Into a register layout of its own: a dot operand or shared-memory layout is the dot's
  // to stage (elementwise ops, the moved cast, have no lowering there).
  const LayoutRef &target = convert.result()->layout;
  if (!target || target->kind == Layout::Kind::DotOperand || target->kind == Layout::Kind::Shared) return false;
  Value *narrow = cast->operand(0);
  const Type &from = narrow->type, &to = cast->result()->type;
  if (!narrow->type.isBlock() || !narrow->layout || from.pointer || to.pointer || from.shape != to.shape ||
      bitWidth(from.scalar) < 16 || bitWidth(from.scalar) >= bitWidth(to.scalar) ||
      isFloat(from.scalar) != isFloat(to.scalar))
    return false;
  auto it = users.find(cast->result());
  if (it == users.end() || it->second.size() != 1) return false;
  Builder b(convert.parent);
  b.setInsertionPoint(convert.parent, positionOf(convert));
  b.setLoc(convert.loc);
  Value *moved = b.op(OpCode::ConvertLayout, {narrow}, from);
  moved->layout = convert.result()->layout;
  b.setLoc(cast->loc);
  Operation *widened = b.create(OpCode::Cast, {moved}, {to}, cast->attrs);
  widened->result()->layout = convert.result()->layout;
  replaceAllUsesWith(fn.body, convert.result(), widened->result());
  Operation *old = &convert;
  old->parent->ops.remove_if([&](const std::unique_ptr<Operation> &p) { return p.get() == old; });
  cast->parent->ops.remove_if([&](const std::unique_ptr<Operation> &p) { return p.get() == cast; });
  return true;
}

// A conversion of a small block computed from small loads and index math: that computation again
// in the wanted layout, right before the conversion.
bool reloadSmallConversion(Function &fn, Operation &convert) {
  Value *source = convert.operand(0);
  const LayoutRef &to = convert.result()->layout;
  if (!to || to->kind == Layout::Kind::DotOperand || to->kind == Layout::Kind::Shared) return false;
  const Type &t = source->type;
  bool broadcastShape = t.rank() == 1;
  for (int64_t d : t.shape) broadcastShape |= d == 1;
  if (!broadcastShape || t.numElements() > kSmallLoad) return false;
  // In a loop the reload runs every iteration: a vector a thread holds many registers of in the
  // wanted layout (a 128-column scale in an #mma slice: 32 loads and pointers a thread) stays one
  // load and a conversion, as propagate-mma-layout keeps it (kMostLoadsInLoop there).
  bool inLoop = false;
  for (const Block *b = convert.parent; b && b->parentOp && !inLoop; b = b->parentOp->parent)
    inLoop = b->parentOp->code == OpCode::For || b->parentOp->code == OpCode::While;
  if (inLoop) {
    try {
      if (DistributedLayout(*to, t.shape).numRegs() > 8) return false;
    } catch (const std::invalid_argument &) {
      return false;
    }
  }
  bool loads = false;
  std::vector<Value *> work = {source};
  std::set<Value *> visited;
  while (!work.empty()) {
    Value *v = work.back();
    work.pop_back();
    if (!v->definingOp || !visited.insert(v).second) continue;
    loads = loads || v->definingOp->code == OpCode::Load;
    for (Value *operand : v->definingOp->operands) work.push_back(operand);
  }
  if (!loads) return false; // index math alone: remove-layout-conversions recomputes it
  Cloner cloner(convert.parent, positionOf(convert));
  std::set<Value *> seen;
  if (cloner.cost(source, seen) < 0) return false;
  replaceAllUsesWith(fn.body, convert.result(), cloner.clone(source, to));
  convert.parent->ops.remove_if([&](const std::unique_ptr<Operation> &p) { return p.get() == &convert; });
  return true;
}

} // namespace

void fuseElementwiseChains(Function &fn) {
  unsigned before = countConversions(fn);
  std::vector<Operation *> converts;
  walk(fn.body, [&](Operation &op) {
    if (op.code == OpCode::ConvertLayout && op.operand(0)->type.isBlock() && op.operand(0)->layout &&
        !op.operand(0)->type.pointer)
      converts.push_back(&op);
  });
  bool changed = false;
  std::vector<Operation *> remaining;
  for (Operation *convert : converts) {
    auto users = usersOf(fn);
    if (convertBeforeWidening(fn, *convert, users))
      changed = true;
    else
      remaining.push_back(convert);
  }
  for (Operation *convert : remaining) {
    auto users = usersOf(fn);
    changed |= sinkConversion(fn, *convert, users);
  }
  std::vector<Operation *> unsunk; // what is left after the sinking (it removed some)
  walk(fn.body, [&](Operation &op) {
    if (op.code == OpCode::ConvertLayout && op.operand(0)->type.isBlock() && op.operand(0)->layout &&
        !op.operand(0)->type.pointer)
      unsunk.push_back(&op);
  });
  for (Operation *convert : unsunk) changed |= reloadSmallConversion(fn, *convert);
  if (!changed) return;
  rematerialiseConversions(fn); // folds the conversions that became adjacent
  eliminateDeadCode(fn);        // the originals of what was recomputed
  unsigned after = countConversions(fn);
  if (after > before)
    throw std::logic_error("fusion added layout conversions (" + std::to_string(before) + " -> " +
                           std::to_string(after) + ") in kernel '" + fn.name + "'");
}

} // namespace tessera::passes
