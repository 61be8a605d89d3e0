// Propagate-mma-layout (runs after accelerate-dot, before pipeline).
//
// remove-layout-conversions propagates the layouts of loads and stores
// before accelerate-dot exists, so a dot's result reaches the ops that use
// it through a conversion #mma -> #blocked (a round trip through shared
// memory), and a loop-carried value updated from it comes back through
// another one. For FlashAttention's key loop that is S, P and the
// accumulator every iteration (docs/attention.md).
//
// This pass runs the same propagation again with the tensor-core dots as
// seeds too: loads and stores keep their layouts, every dot with an #mma
// result keeps it (operands converted to its #dot_op layouts, the
// accumulator to #mma), every other conversion is dropped, and layout
// assignment's rules place the rest (compiler/passes/LayoutAssignment.cpp):
//   * an elementwise op or cast runs in the layout of its first operand that
//     is real data, so the chain after a dot stays in #mma;
//   * a reduction of an #mma value gives #slice<dim, #mma>, and expand_dims
//     (then broadcast) of that gives #mma back: row statistics meet the
//     block they scale without a conversion;
//   * loop-carried values whose update arrives in #mma (the accumulator,
//     `acc * alpha` included) or in a slice of it (the running max and sum)
//     are carried in that layout, converted once before and after the loop;
//   * index math (masks, offsets) is recomputed in #mma where it is needed.
// A conversion of a small block (rank 1 or a size-1 dim) into any other
// register layout is narrowed the same way (fla delta_h's gate row b_g, used
// as b_g[:, None] beside v): the small load is made again in that layout.
// Conversions remain where real data in two layouts meet: stores (after the
// epilogue's cast, which the fusion pass then moves the conversion below)
// and loaded operands of elementwise ops. A float atomic add of a dot's result
// whose old values nobody reads is seeded with the dot's #mma layout instead
// (atomicAddOfDot: its addresses are computed there).
#include "compiler/passes/PropagateMmaLayout.h"

#include "compiler/ir/LayoutMath.h"
#include "compiler/passes/DeadCodeElimination.h"
#include "compiler/passes/LayoutAssignment.h"
#include "compiler/passes/RemoveLayoutConversions.h"

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::passes {

using namespace ir;

namespace {

bool encloses(const Block *outer, const Block *inner) {
  for (const Block *b = inner; b; b = b->parentOp ? b->parentOp->parent : nullptr)
    if (b == outer) return true;
  return false;
}

// Layout assignment inserts a conversion right before its first user. Each
// conversion (other than to #dot_op, which the pipeline pass stages) moves up
// to right after its operand: where accelerate-dot and fusion placed them,
// so that the operand's registers die there instead of staying live across
// the address math of a store; and a loop-invariant operand (the backward's
// LSE and delta rows, converted to #slice<#mma>) is converted once before the
// loop instead of in every iteration.
void placeConversionsAfterOperands(Function &fn) {
  std::vector<Operation *> converts;
  walk(fn.body, [&](Operation &op) {
    if (op.code == OpCode::ConvertLayout && op.result()->layout &&
        op.result()->layout->kind != Layout::Kind::DotOperand)
      converts.push_back(&op);
  });
  for (Operation *convert : converts) {
    Value *source = convert->operand(0);
    Operation *def = source->definingOp;
    if (def && def->code == OpCode::ConvertLayout) continue;
    Block *to = def ? def->parent : source->ownerBlock;
    if (!to || !encloses(to, convert->parent)) continue;
    Block *from = convert->parent;
    auto at = positionOf(*convert);
    std::unique_ptr<Operation> moved = std::move(*at);
    from->ops.erase(at);
    moved->parent = to;
    to->ops.insert(def ? std::next(positionOf(*def)) : to->ops.begin(), std::move(moved));
  }
}

bool isMmaDerived(const LayoutRef &l) {
  if (!l) return false;
  if (l->kind == Layout::Kind::Mma) return true;
  return l->kind == Layout::Kind::Slice && isMmaDerived(l->parent);
}

// Broadcasts, expand_dims and elementwise ops: the chain recomputed in the wanted layout.
bool isShapeOrElementwise(OpCode code) {
  return code == OpCode::Broadcast || code == OpCode::ExpandDims || opIsElementwise(code);
}

// A conversion into an #mma-derived layout of a value broadcast from fewer
// elements (a bias row, a per-row scale: `x[None, :]` of a loaded vector)
// moves the broadcast elements through shared memory. Instead the chain of
// broadcasts, expand_dims and elementwise ops is recomputed in the wanted
// layout from its small leaves: a small load (a rank-1 block, or one with a
// size-1 dim) with nothing writing memory between it and the conversion is
// loaded again in that layout (its address math recomputed), any other small
// leaf is converted there (a quarter of the elements or fewer), cheap index
// math is recomputed as rematerialisation does.
class Narrower {
public:
  Narrower(Function &fn, Operation &convert) : fn_(fn), convert_(convert), block_(convert.parent) {
    total_ = convert.result()->type.numElements();
  }

  bool run() {
    Value *source = convert_.operand(0);
    std::set<std::pair<Value *, std::string>> seen;
    int leaves = 0;
    if (!plan(source, convert_.result()->layout, seen, leaves, /*root=*/true) || leaves == 0) return false;
    Builder b(block_);
    b.setInsertionPoint(block_, positionOf(convert_));
    Value *replacement = clone(source, convert_.result()->layout, b);
    replaceAllUsesWith(fn_.body, convert_.result(), replacement);
    block_->ops.erase(positionOf(convert_));
    return true;
  }

private:
  Function &fn_;
  Operation &convert_;
  Block *block_;
  int64_t total_;
  std::map<std::pair<Value *, std::string>, Value *> cloned_;

  static LayoutRef operandLayout(const Operation &def, const LayoutRef &layout) {
    if (def.code == OpCode::ExpandDims) return Layout::slice(static_cast<unsigned>(def.intAttr("axis")), layout);
    return layout;
  }

  // Up to the columns of a 32-wide slice of an mma tile a thread holds (the attention backward's
  // LSE and delta rows); a 128-column scale (32 a thread) is converted instead.
  static constexpr unsigned kMostLoadsInLoop = 8;

  static unsigned registersPerThread(const Type &t, const LayoutRef &layout) {
    try {
      return DistributedLayout(*layout, t.shape).numRegs();
    } catch (const std::invalid_argument &) {
      return ~0u;
    }
  }

  static bool insideLoop(const Operation &op) {
    for (const Block *b = op.parent; b && b->parentOp; b = b->parentOp->parent)
      if (b->parentOp->code == OpCode::For || b->parentOp->code == OpCode::While) return true;
    return false;
  }

  bool smallLoad(Operation &load, const LayoutRef &layout) {
    const Type &t = load.result()->type;
    bool broadcastShape = t.rank() == 1;
    for (int64_t d : t.shape) broadcastShape |= d == 1;
    if (!broadcastShape || t.numElements() > 1024 || load.parent != block_) return false;
    if (load.hasAttr("volatile") && load.intAttr("volatile")) return false;
    // In a loop the load runs every iteration, and in an #mma slice every thread loads (and
    // keeps the addresses of) each element it holds: a column scale of a 128-wide wgmma tile
    // is 32 loads and 32 pointers a thread, beside the accumulator (Unsloth's fp8 block
    // GEMM spilled them). There a vector of more than kMostLoadsInLoop registers a thread is
    // loaded in its own layout and converted through shared memory, as Triton does.
    if (insideLoop(load) && registersPerThread(t, layout) > kMostLoadsInLoop) return false;
    for (auto it = std::next(positionOf(load)); it != block_->ops.end() && it->get() != &convert_; ++it)
      if (mayWriteMemory(**it)) return false;
    for (Value *operand : load.operands) {
      std::set<Value *> seen;
      if (rematerialisationCost(operand, seen) < 0) return false;
    }
    return true;
  }

  bool plan(Value *v, const LayoutRef &layout, std::set<std::pair<Value *, std::string>> &seen, int &leaves,
            bool root = false) {
    if (!v->type.isBlock() || sameLayout(v->layout, layout)) return true;
    if (!seen.insert({v, layout->str()}).second) return true;
    if (seen.size() > 48) return false;
    std::set<Value *> cheap;
    if (!root && rematerialisationCost(v, cheap) >= 0) return true;
    Operation *def = v->definingOp;
    if (def && def->code == OpCode::ConvertLayout) return plan(def->operand(0), layout, seen, leaves);
    if (def && def->code == OpCode::Load && smallLoad(*def, layout)) {
      ++leaves;
      return true;
    }
    if (def && def->results.size() == 1 && isShapeOrElementwise(def->code)) {
      for (Value *operand : def->operands)
        if (!plan(operand, operandLayout(*def, layout), seen, leaves)) return false;
      return true;
    }
    if (root || v->type.numElements() * 4 > total_) return false;
    ++leaves;
    return true;
  }

  Value *clone(Value *v, const LayoutRef &layout, Builder &b) {
    if (!v->type.isBlock() || sameLayout(v->layout, layout)) return v;
    auto key = std::make_pair(v, layout->str());
    if (auto it = cloned_.find(key); it != cloned_.end()) return it->second;
    Operation *def = v->definingOp;
    if (def && def->code == OpCode::ConvertLayout) return cloned_[key] = clone(def->operand(0), layout, b);
    std::set<Value *> cheap;
    const bool recompute = def && (rematerialisationCost(v, cheap) >= 0 || isShapeOrElementwise(def->code) ||
                                   (def->code == OpCode::Load && smallLoad(*def, layout)));
    if (!recompute) { // a small leaf: converted
      b.setLoc(convert_.loc);
      Value *c = b.op(OpCode::ConvertLayout, {v}, v->type);
      c->layout = layout;
      return cloned_[key] = c;
    }
    std::vector<Value *> operands;
    for (Value *operand : def->operands) operands.push_back(clone(operand, operandLayout(*def, layout), b));
    std::vector<Type> types;
    for (auto &r : def->results) types.push_back(r->type);
    b.setLoc(def->loc);
    Operation *copy = b.create(def->code, operands, types, def->attrs);
    copy->result()->layout = layout;
    return cloned_[key] = copy->result();
  }
};

// A conversion of a small block (rank 1, or a size-1 dim: a row of gates, fla delta_h's g) into
// any register layout: the Narrower loads it again there too, before the pipeline carries it.
bool convertsSmallBlock(const Operation &convert) {
  const Type &t = convert.operand(0)->type;
  const LayoutRef &to = convert.result()->layout;
  if (!to || to->kind == Layout::Kind::DotOperand || to->kind == Layout::Kind::Shared || t.numElements() > 1024)
    return false;
  bool broadcastShape = t.rank() == 1;
  for (int64_t d : t.shape) broadcastShape |= d == 1;
  return broadcastShape;
}

void narrowConversionsIntoMma(Function &fn) {
  std::vector<Operation *> converts;
  walk(fn.body, [&](Operation &op) {
    if (op.code == OpCode::ConvertLayout && (isMmaDerived(op.result()->layout) || convertsSmallBlock(op)))
      converts.push_back(&op);
  });
  bool changed = false;
  for (Operation *convert : converts) changed |= Narrower(fn, *convert).run();
  if (changed) eliminateDeadCode(fn);
}

// The #mma layout of a tensor-core dot's result that a float atomic add (whose old values nobody
// reads) sums into memory, or null: the add then runs in the dot's layout, its addresses
// computed there, instead of the result going through shared memory into the pointers'
// layout (the attention backward's dQ, a split-K GEMM's partial sums). Each thread's pairs of
// adjacent columns still make vector adds (.v2.f32), and every row a warp touches is a whole
// 32-byte sector.
LayoutRef atomicAddOfDot(Function &fn, const Operation &op) {
  if (op.code != OpCode::AtomicRMW || op.stringAttr("kind") != "add" || countUses(fn.body, op.result()) != 0)
    return nullptr;
  if (!op.result()->type.element().isFloatElement() || op.result()->type.rank() != 2) return nullptr;
  const Value *value = op.operand(1);
  const Operation *def = value->definingOp;
  while (def && def->code == OpCode::ConvertLayout) def = def->operand(0)->definingOp;
  if (!def || def->code != OpCode::Dot) return nullptr;
  const LayoutRef &mma = def->result()->layout;
  return mma && mma->kind == Layout::Kind::Mma ? mma : nullptr;
}

} // namespace

void propagateMmaLayout(Function &fn) {
  LayoutSeeds seeds;
  bool anyMma = false;
  walk(fn.body, [&](Operation &op) {
    if (op.code == OpCode::Load && op.result()->layout)
      seeds[&op] = op.result()->layout;
    else if (LayoutRef mma = atomicAddOfDot(fn, op))
      seeds[&op] = mma;
    else if ((op.code == OpCode::Store || op.code == OpCode::AtomicRMW) && op.operand(0)->layout)
      seeds[&op] = op.operand(0)->layout;
    else if (op.code == OpCode::Dot && op.result()->layout && op.result()->layout->kind == Layout::Kind::Mma) {
      seeds[&op] = op.result()->layout;
      anyMma = true;
    }
  });
  if (!anyMma) return;
  assignLayouts(fn, seeds);
  narrowConversionsIntoMma(fn);
  placeConversionsAfterOperands(fn);
}

} // namespace tessera::passes
