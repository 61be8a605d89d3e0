// Remove-layout-conversions: after coalesce, loads and stores have their own
// layouts and convert_layout ops (shared-memory round trips) stand between
// them and the rest of the kernel. This pass
//  1. propagates the anchor layouts: every load and store keeps the layout
//     coalesce gave it (a seed), every conversion is dropped, and
//     layout-assignment's rules run again from the seeds — values computed
//     from a load take its layout, the rank's default layout becomes that of
//     its largest access, loop-carried accumulators follow their updates —
//     inserting conversions only where two layouts really meet;
//  2. rematerialises cheap values: a conversion of index math (make_range,
//     splat, constants, broadcast/expand_dims and elementwise ops over them)
//     becomes that math recomputed in the wanted layout. Math over a few
//     values that cannot be recomputed (a loaded row of page numbers that
//     a 2-D pointer block is built from) is recomputed too, those values
//     converted instead: a conversion of 64 elements, not of 128 x 64
//     pointers;
//     A block a loop carries and advances by such math of itself
//     (`offs_k += BLOCK_K`) is carried a second time in the wanted layout,
//     from its init converted once before the loop, as Triton rematerialises
//     through loop arguments; the copy it replaces goes when nothing else
//     reads it;
//  3. folds what is left: conversions to the layout a value already has and
//     chains of conversions.
// What remains is a real data exchange (e.g. two loads whose layouts
// differ), lowered through shared memory by codegen.
#include "compiler/passes/RemoveLayoutConversions.h"

#include "compiler/ir/ShapeOpLayouts.h"
#include "compiler/passes/LayoutAssignment.h"

#include <functional>
#include <map>

namespace tessera::passes {

using namespace ir;

namespace {

constexpr int kMaxRematOps = 32; // integer ops per element: cheaper than a shared-memory round trip
// A value that cannot be recomputed is converted in place of the value built from it when it has at
// most 1/kNarrowLeafRatio of its elements (a row or column of a 2-D block).
constexpr int64_t kNarrowLeafRatio = 4;
constexpr int kMaxCarriedUpdateOps = 8; // the math advancing a carried block that is carried again

// Whether an op has effects is Ops.def's (opIsPure); this list only says which pure
// ops are cheap enough to recompute in another layout.
bool isRematerialisable(OpCode code) {
  if (!opIsPure(code)) return false;
  switch (code) {
  case OpCode::Constant: case OpCode::MakeRange: case OpCode::Splat: case OpCode::Broadcast:
  case OpCode::ExpandDims: case OpCode::ConvertLayout: case OpCode::Hint:
  case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Rem:
  case OpCode::And: case OpCode::Or: case OpCode::Xor: case OpCode::Shl: case OpCode::Shr:
  case OpCode::Max: case OpCode::Min: case OpCode::Neg: case OpCode::Not: case OpCode::Cmp:
  case OpCode::Select: case OpCode::AddPtr: case OpCode::Exp: case OpCode::Exp2:
  case OpCode::Log: case OpCode::Log2: case OpCode::Sqrt: case OpCode::Abs: case OpCode::Cast:
  case OpCode::Bitcast:
    return true;
  default:
    return false;
  }
}

// Erases the ops among `candidates` whose results are no longer used.
void eraseDead(Function &fn, std::set<Operation *> candidates) {
  bool changed = true;
  while (changed) {
    changed = false;
    std::map<Value *, unsigned> uses;
    walk(fn.body, [&](Operation &op) {
      for (Value *v : op.operands) ++uses[v];
    });
    for (auto it = candidates.begin(); it != candidates.end();) {
      Operation *op = *it;
      bool dead = true;
      for (auto &r : op->results) dead = dead && uses[r.get()] == 0;
      if (!dead) {
        ++it;
        continue;
      }
      op->parent->ops.remove_if([&](const std::unique_ptr<Operation> &p) { return p.get() == op; });
      it = candidates.erase(it);
      changed = true;
    }
  }
}

// op is in loop's body or in a region nested in it.
bool isInside(const Operation *op, const Operation *loop) {
  for (const Block *b = op ? op->parent : nullptr; b && b->parentOp; b = b->parentOp->parent)
    if (b->parentOp == loop) return true;
  return false;
}

// A block that a for loop carries (body argument v) and that its yield computes from v itself and
// values from before the loop by a few cheap ops in the body (`offs_k += BLOCK_K`): the loop can
// carry it in a second layout, advanced by the same math.
bool isRecarriable(Value *v) {
  if (v->definingOp || !v->ownerBlock || !v->type.isBlock() || v->index == 0) return false;
  Operation *loop = v->ownerBlock->parentOp, *yield = v->ownerBlock->terminator();
  if (!loop || loop->code != OpCode::For || !yield || yield->code != OpCode::Yield ||
      yield->operands.size() < v->index || yield->operand(v->index - 1) == v)
    return false;
  int ops = 0;
  std::set<Value *> seen;
  std::function<bool(Value *)> cheap = [&](Value *x) {
    if (x == v || !x->type.isBlock() || !seen.insert(x).second) return true;
    Operation *def = x->definingOp;
    if (!def || !isRematerialisable(def->code) || ++ops > kMaxCarriedUpdateOps) return false;
    if (def->parent != v->ownerBlock && isInside(def, loop)) return false; // in a branch of the body
    for (Value *operand : def->operands)
      if (!cheap(operand)) return false;
    return true;
  };
  return cheap(yield->operand(v->index - 1));
}

// The carried blocks among `carried` (body arguments that were carried again in other layouts) that
// now only advance themselves (their loop result unread, their body argument read only by the math
// computing their next value) are dropped with that math.
void dropUnreadCarriedBlocks(Function &fn, const std::set<Value *> &carried) {
  std::set<Operation *> loops;
  for (Value *arg : carried) loops.insert(arg->ownerBlock->parentOp);
  for (Operation *loop : loops) {
    Block &body = *loop->region(0);
    Operation *yield = body.terminator();
    if (!yield || yield->code != OpCode::Yield) continue;
    bool dropped = false;
    for (size_t i = loop->results.size(); i-- > 0;) {
      Value *arg = body.args.at(i + 1).get();
      if (!carried.count(arg) || countUses(fn.body, loop->result(static_cast<unsigned>(i))) != 0) continue;
      // The body ops computing the yielded value, read by nothing else.
      std::set<Operation *> chain;
      std::vector<Value *> work = {yield->operand(static_cast<unsigned>(i))};
      while (!work.empty()) {
        Value *x = work.back();
        work.pop_back();
        Operation *def = x->definingOp;
        if (!def || def->parent != &body || !opIsPure(def->code) || !chain.insert(def).second) continue;
        for (Value *operand : def->operands) work.push_back(operand);
      }
      for (bool changed = true; changed;) {
        changed = false;
        walk(fn.body, [&](Operation &user) {
          for (unsigned k = 0; k < user.operands.size(); ++k) {
            Operation *def = user.operands[k]->definingOp;
            if (!def || !chain.count(def) || chain.count(&user) || (&user == yield && k == i)) continue;
            chain.erase(def);
            changed = true;
          }
        });
      }
      bool onlyChain = true;
      walk(fn.body, [&](Operation &user) {
        for (unsigned k = 0; k < user.operands.size(); ++k)
          if (user.operands[k] == arg && !chain.count(&user) && !(&user == yield && k == i)) onlyChain = false;
      });
      if (!onlyChain) continue;
      yield->operands.erase(yield->operands.begin() + static_cast<std::ptrdiff_t>(i));
      for (auto it = body.ops.begin(); it != body.ops.end();)
        it = chain.count(it->get()) ? body.ops.erase(it) : std::next(it);
      loop->operands.erase(loop->operands.begin() + static_cast<std::ptrdiff_t>(3 + i));
      body.args.erase(body.args.begin() + static_cast<std::ptrdiff_t>(i + 1));
      loop->results.erase(loop->results.begin() + static_cast<std::ptrdiff_t>(i));
      dropped = true;
    }
    if (!dropped) continue;
    for (size_t j = 0; j < body.args.size(); ++j) body.args[j]->index = static_cast<unsigned>(j);
    for (size_t j = 0; j < loop->results.size(); ++j) loop->results[j]->index = static_cast<unsigned>(j);
  }
}

class Rematerialiser {
public:
  explicit Rematerialiser(Function &fn) : fn_(fn) {}

  // The loop arguments carried again in another layout (recarry).
  const std::set<Value *> &recarried() const { return recarried_; }

  void run() {
    std::vector<Operation *> converts;
    walk(fn_.body, [&](Operation &op) {
      if (op.code == OpCode::ConvertLayout) converts.push_back(&op);
    });
    std::set<Operation *> candidates;
    for (Operation *convert : converts) {
      // A #dot_op value has no registers of its own: the dot reads its operand's.
      if (convert->result()->layout && convert->result()->layout->kind == Layout::Kind::DotOperand) continue;
      std::set<Value *> seen;
      narrowLeaves_.clear();
      if (rematerialisationCost(convert->operand(0), seen) < 0) {
        seen.clear();
        if (costWithNarrowLeaves(convert->operand(0), convert->operand(0)->type.numElements(), seen) < 0) {
          seen.clear();
          narrowLeaves_.clear();
          if (costInLayout(convert->operand(0), convert->result()->layout, seen,
                           convert->operand(0)->type.numElements()) < 0)
            continue;
        }
      }
      // A value from before a loop is recomputed before it, once (AWQ's shifts, read in the K loop).
      Operation *at = convert;
      Value *source = convert->operand(0);
      while (Operation *loop = at->parent->parentOp) {
        if (loop->code != OpCode::For || (source->definingOp ? isInside(source->definingOp, loop)
                                                             : source->ownerBlock == loop->region(0)))
          break;
        at = loop;
      }
      Builder b(at->parent);
      b.setInsertionPoint(at->parent, positionOf(*at));
      Value *replacement = cloneIn(convert->operand(0), convert->result()->layout, b, candidates);
      replaceAllUsesWith(fn_.body, convert->result(), replacement);
      candidates.insert(convert);
    }
    eraseDead(fn_, candidates);
  }

private:
  Function &fn_;
  // (value, layout) -> its copy, reused by later conversions the copy dominates.
  std::map<std::pair<Value *, std::string>, Value *> cloned_;
  // v can be read at b's insertion point: defined in b's block before that point, or in an enclosing
  // block (whose op holding b's block comes after it). Recarry's update is built before the yield,
  // after which the body may define a value (a splat) the update reads: that one is recomputed.
  static bool availableAt(Value *v, const Builder &b) {
    const Block *where = v->definingOp ? v->definingOp->parent : v->ownerBlock;
    if (where == b.block() && v->definingOp) {
      for (auto it = b.block()->ops.begin(); it != b.insertionPoint(); ++it)
        if (it->get() == v->definingOp) return true;
      return false;
    }
    for (const Block *in = b.block(); in; in = in->parentOp ? in->parentOp->parent : nullptr)
      if (in == where) return true;
    return false;
  }

  std::set<Value *> narrowLeaves_; // values the current conversion converts instead of recomputing
  std::set<Value *> recarried_;

  // rematerialisationCost, where a value that cannot be recomputed but is narrow next to the
  // converted one (`wide` elements) costs one conversion (counted as 4 ops) instead of failing, and
  // math on narrow values (a [128, 1] column of offsets) is not counted: only ops on blocks as wide
  // as the converted one are, those a thread repeats for each of its elements.
  int costWithNarrowLeaves(Value *v, int64_t wide, std::set<Value *> &seen) {
    if (!v->type.isBlock() || seen.count(v)) return 0;
    seen.insert(v);
    Operation *def = v->definingOp;
    if (isRecarriable(v)) return 2;
    const bool narrow = v->type.numElements() * kNarrowLeafRatio <= wide && v->layout;
    // Narrow math with an integer division (`offs_d // x` by a runtime x) is converted too: in the
    // wide value's layout a thread may hold many more of its elements than in its own.
    if (!def || !isRematerialisable(def->code) || (narrow && dividesIntegers(v))) {
      if (!narrow) return -1;
      narrowLeaves_.insert(v);
      return 4;
    }
    if (def->code == OpCode::ConvertLayout) return costWithNarrowLeaves(def->operand(0), wide, seen);
    int cost = v->type.numElements() * kNarrowLeafRatio > wide ? 1 : 0;
    for (Value *operand : def->operands) {
      int c = costWithNarrowLeaves(operand, wide, seen);
      if (c < 0) return -1;
      cost += c;
    }
    return cost <= kMaxRematOps ? cost : -1;
  }

  // rematerialisationCost with the layout each value is wanted in, so that a reshape or join
  // whose operands can be put where it only renumbers registers is recomputed too (pointers built
  // from tl.arange(0, N).reshape(...): converting them would move 8 bytes an element; AWQ's shifts,
  // a broadcast [BY * BX, 8] row reshaped to [BY, 8 * BX], and its zero row widened by
  // interleaving). As in costWithNarrowLeaves, a value that cannot be recomputed there but is
  // narrow next to the converted one (`wide` elements: a loaded row) is converted instead.
  int costInLayout(Value *v, const LayoutRef &layout, std::set<Value *> &seen, int64_t wide) {
    if (!v->type.isBlock() || seen.count(v)) return 0;
    Operation *def = v->definingOp;
    seen.insert(v);
    if (isRecarriable(v)) return 2;
    const bool narrow = v->type.numElements() * kNarrowLeafRatio <= wide && v->layout;
    auto leaf = [&] {
      narrowLeaves_.insert(v);
      return 4;
    };
    const bool shapeOp = def && (def->code == OpCode::Reshape || def->code == OpCode::Join);
    if (!def || !(shapeOp || isRematerialisable(def->code))) return narrow ? leaf() : -1;
    if (def->code == OpCode::ConvertLayout) return costInLayout(def->operand(0), layout, seen, wide);
    LayoutRef wanted = operandLayout(*def, layout, fn_.numWarps);
    if (!wanted) return narrow ? leaf() : -1;
    int cost = v->type.numElements() * kNarrowLeafRatio > wide ? 1 : 0;
    for (Value *operand : def->operands) {
      int c = costInLayout(operand, wanted, seen, wide);
      if (c < 0) return -1;
      cost += c;
    }
    return cost <= kMaxRematOps ? cost : -1;
  }

  // Whether v's rematerialisable math has an integer division or remainder by a runtime value
  // (by a constant it is a few cheap instructions).
  static bool dividesIntegers(Value *v) {
    Operation *def = v->definingOp;
    if (!v->type.isBlock() || !def || !isRematerialisable(def->code)) return false;
    if ((def->code == OpCode::Div || def->code == OpCode::Rem) && v->type.isIntElement()) {
      const Operation *divisor = def->operand(1)->definingOp;
      while (divisor && (divisor->code == OpCode::Splat || divisor->code == OpCode::Broadcast) &&
             divisor->operand(0)->definingOp)
        divisor = divisor->operand(0)->definingOp;
      if (!divisor || divisor->code != OpCode::Constant) return true;
    }
    for (Value *operand : def->operands)
      if (dividesIntegers(operand)) return true;
    return false;
  }

  // The layout the operands of `def` need for `def` to produce `layout` (nullptr: none).
  static LayoutRef operandLayout(const Operation &def, const LayoutRef &layout, unsigned numWarps) {
    if (def.code == OpCode::ExpandDims)
      return Layout::slice(static_cast<unsigned>(def.intAttr("axis")), layout);
    if (def.code == OpCode::Reshape) return inRegisterReshapeOperandLayout(def, layout, numWarps);
    if (def.code == OpCode::Join) return inRegisterJoinOperandLayout(def, layout);
    return layout; // elementwise and broadcast: the result's
  }

  Value *cloneIn(Value *v, const LayoutRef &layout, Builder &b, std::set<Operation *> &replaced) {
    if (!v->type.isBlock()) return v;
    auto key = std::make_pair(v, layout->str());
    if (auto it = cloned_.find(key); it != cloned_.end() && availableAt(it->second, b)) return it->second;
    Operation *def = v->definingOp;
    if (narrowLeaves_.count(v)) {
      if (sameLayout(v->layout, layout)) return cloned_[key] = v;
      if (def) b.setLoc(def->loc);
      Value *converted = b.op(OpCode::ConvertLayout, {v}, v->type);
      converted->layout = layout;
      return cloned_[key] = converted;
    }
    if (!def) {
      if (sameLayout(v->layout, layout)) return cloned_[key] = v;
      return recarry(v, layout, key, replaced);
    }
    replaced.insert(def);
    if (def->code == OpCode::ConvertLayout) return cloned_[key] = cloneIn(def->operand(0), layout, b, replaced);
    if (sameLayout(v->layout, layout) && availableAt(v, b)) return cloned_[key] = v;
    std::vector<Value *> operands;
    for (Value *operand : def->operands)
      operands.push_back(cloneIn(operand, operandLayout(*def, layout, fn_.numWarps), b, replaced));
    std::vector<Type> types;
    for (auto &r : def->results) types.push_back(r->type);
    b.setLoc(def->loc);
    Operation *copy = b.create(def->code, operands, types, def->attrs);
    copy->result()->layout = layout;
    return cloned_[key] = copy->result();
  }

  // The recarriable block argument `arg` carried again in `layout`: its init recomputed (or
  // converted) before the loop, its update recomputed before the yield from the new argument.
  Value *recarry(Value *arg, const LayoutRef &layout, const std::pair<Value *, std::string> &key,
                 std::set<Operation *> &replaced) {
    recarried_.insert(arg);
    Block *body = arg->ownerBlock;
    Operation *loop = body->parentOp, *yield = body->terminator();
    Value *init = loop->operand(2 + arg->index);
    Builder before(loop->parent);
    before.setInsertionPoint(loop->parent, positionOf(*loop));
    before.setLoc(loop->loc);
    std::set<Value *> seen;
    Value *initCopy;
    if (sameLayout(init->layout, layout)) {
      initCopy = init;
    } else if (rematerialisationCost(init, seen) >= 0) {
      initCopy = cloneIn(init, layout, before, replaced);
    } else {
      initCopy = before.op(OpCode::ConvertLayout, {init}, init->type);
      initCopy->layout = layout;
    }
    loop->operands.push_back(initCopy);
    Value *copy = body->addArgument(arg->type, arg->nameHint);
    copy->layout = layout;
    auto result = std::make_unique<Value>();
    result->type = arg->type;
    result->layout = layout;
    result->definingOp = loop;
    result->index = static_cast<unsigned>(loop->results.size());
    loop->results.push_back(std::move(result));
    cloned_[key] = copy;
    Builder atYield(body);
    atYield.setInsertionPoint(body, positionOf(*yield));
    atYield.setLoc(yield->loc);
    Value *next = cloneIn(yield->operand(arg->index - 1), layout, atYield, replaced);
    yield->operands.push_back(next);
    return copy;
  }
};

// Conversions to the layout the value already has, and chains of them.
void foldConversions(Function &fn) {
  std::set<Operation *> candidates;
  walk(fn.body, [&](Operation &op) {
    if (op.code != OpCode::ConvertLayout) return;
    Value *source = op.operand(0);
    while (source->definingOp && source->definingOp->code == OpCode::ConvertLayout) {
      candidates.insert(source->definingOp);
      source = source->definingOp->operand(0);
    }
    op.operands[0] = source;
    if (sameLayout(source->layout, op.result()->layout)) {
      replaceAllUsesWith(fn.body, op.result(), source);
      candidates.insert(&op);
    }
  });
  eraseDead(fn, candidates);
}

} // namespace

int rematerialisationCost(Value *v, std::set<Value *> &seen) {
  if (!v->type.isBlock() || seen.count(v)) return 0;
  Operation *def = v->definingOp;
  if (!def || !isRematerialisable(def->code)) return -1;
  seen.insert(v);
  if (def->code == OpCode::ConvertLayout) return rematerialisationCost(def->operand(0), seen);
  int cost = 1;
  for (Value *operand : def->operands) {
    int c = rematerialisationCost(operand, seen);
    if (c < 0) return -1;
    cost += c;
  }
  return cost <= kMaxRematOps ? cost : -1;
}

void rematerialiseConversions(Function &fn) {
  Rematerialiser rematerialiser(fn);
  rematerialiser.run();
  foldConversions(fn);
  dropUnreadCarriedBlocks(fn, rematerialiser.recarried());
}

void removeLayoutConversions(Function &fn) {
  LayoutSeeds seeds;
  walk(fn.body, [&](Operation &op) {
    if (op.code == OpCode::Load && op.result()->layout)
      seeds[&op] = op.result()->layout;
    else if ((op.code == OpCode::Store || op.code == OpCode::AtomicRMW) && op.operand(0)->layout)
      seeds[&op] = op.operand(0)->layout;
  });
  assignLayouts(fn, seeds); // drops every conversion, propagates, rematerialises, folds
}

} // namespace tessera::passes
