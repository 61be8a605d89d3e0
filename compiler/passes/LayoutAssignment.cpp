// Tiling: gives every block value a layout (see docs/codegen.md).
//
// Policy: one "anchor" blocked layout per rank, derived from the largest
// block shape of that rank; values get it unless their producer dictates
// otherwise (reduce -> slice, expand_dims of a slice -> its parent, broadcast
// -> its operand's layout, elementwise ops, loads and stores -> their first
// operand that is not cheap index math, loop/if results -> their init/then
// value's layout). Where a use needs another layout a convert_layout is
// inserted; afterwards converts of cheap index math are rematerialised
// (remove-layout-conversions' rematerialiseConversions).
//
// Seeded (remove-layout-conversions after coalesce): loads and stores keep
// the layouts given to them, the anchor of a rank is the layout of its
// largest memory access, and everything else is propagated from there.
// propagate-mma-layout (after accelerate-dot) also seeds tensor-core dots
// with their #mma layout: their operands are converted to #dot_op, and the
// values computed from their results (elementwise ops, reductions, loop-
// carried accumulators and row statistics) follow the #mma layout.
//
// Loops: a carried value whose yield arrives in another layout (e.g. an
// accumulator initialised with zeros and updated from a coalesced load) is
// re-carried in the yield's layout and the whole kernel reassigned, so the
// conversion happens once before the loop, not in every iteration.
#include "compiler/passes/LayoutAssignment.h"

#include "compiler/ir/LayoutMath.h"
#include "compiler/ir/ShapeOpLayouts.h"
#include "compiler/passes/RemoveLayoutConversions.h"

#include <functional>
#include <map>
#include <set>
#include <stdexcept>

namespace tessera::passes {

using namespace ir;

namespace {

std::string where(const Operation &op) {
  return "'" + std::string(mnemonic(op.code)) + "' at line " + std::to_string(op.loc.line) +
         ", column " + std::to_string(op.loc.col);
}

class LayoutAssigner {
public:
  LayoutAssigner(Function &fn, const LayoutSeeds *seeds) : fn_(fn), seeds_(seeds) {}

  void run() {
    if (!ir::isPowerOfTwo(fn_.numWarps))
      throw std::runtime_error("num_warps must be a power of two, got " +
                               std::to_string(fn_.numWarps));
    chooseAnchors();
    for (int attempt = 0;; ++attempt) {
      stripConversions(fn_.body);
      assignBlock(fn_.body);
      if (attempt == kMaxAttempts || !recarryLoops())
        break;
    }
    rematerialiseConversions(fn_);
  }

private:
  static constexpr int kMaxAttempts = 4;
  Function &fn_;
  const LayoutSeeds *seeds_;
  std::map<size_t, LayoutRef> anchors_; // by rank
  std::map<const Value *, LayoutRef> carried_; // loop args re-carried in another layout

  const LayoutRef *seed(const Operation &op) const {
    if (!seeds_)
      return nullptr;
    auto it = seeds_->find(&op);
    return it == seeds_->end() ? nullptr : &it->second;
  }

  // Removes every conversion and every layout: each attempt starts afresh.
  void stripConversions(Block &block) {
    for (auto &arg : block.args)
      arg->layout = nullptr;
    for (auto it = block.ops.begin(); it != block.ops.end();) {
      Operation &op = **it;
      for (auto &region : op.regions)
        stripConversions(*region);
      if (op.code == OpCode::ConvertLayout) {
        replaceAllUsesWith(fn_.body, op.result(), op.operand(0));
        it = block.ops.erase(it);
        continue;
      }
      for (auto &r : op.results)
        r->layout = nullptr;
      ++it;
    }
  }

  // After an attempt: loop-carried values whose yield is computed (not
  // cheap index math) in another layout take that layout next time. True
  // when something changed.
  bool recarryLoops() {
    bool changed = false;
    walk(fn_.body, [&](Operation &op) {
      if (op.code != OpCode::For)
        return;
      Operation *yield = op.region(0)->terminator();
      if (!yield || yield->code != OpCode::Yield)
        return;
      for (unsigned i = 0; i < yield->operands.size(); ++i) {
        Value *y = yield->operand(i);
        if (!y->type.isBlock() || !y->definingOp || y->definingOp->code != OpCode::ConvertLayout)
          continue;
        Value *source = y->definingOp->operand(0);
        const LayoutRef &arrives = source->layout;
        Value *arg = op.region(0)->args.at(i + 1).get();
        std::set<Value *> seen; // cheap yields are rematerialised instead
        if (arrives && !sameLayout(arrives, arg->layout) && rematerialisationCost(source, seen) < 0) {
          carried_[arg] = arrives;
          changed = true;
        }
      }
      changed |= recarryForUses(op);
    });
    return changed;
  }

  // A carried block whose readers in the loop all want one other layout
  // (pointer blocks advanced each step, `ptrs += BLOCK_K * stride`, read by
  // a load with its coalesced layout) is carried in that layout: the update
  // follows it, and the conversion happens once before the loop. Hints
  // (`tl.multiple_of(ptrs, ...)` in the body) pass the block on: their
  // readers count as its readers.
  bool recarryForUses(Operation &loop) {
    bool changed = false;
    Block &body = *loop.region(0);
    for (unsigned i = 1; i < body.args.size(); ++i) {
      Value *arg = body.args[i].get();
      if (!arg->type.isBlock() || carried_.count(arg)) continue;
      std::set<const Value *> passedOn = {arg}; // arg and the hints of it (defined after it)
      LayoutRef wanted;
      bool onlyConversionsAndUpdates = true;
      walk(body, [&](Operation &user) {
        for (Value *operand : user.operands) {
          if (!passedOn.count(operand)) continue;
          if (user.code == OpCode::Hint)
            passedOn.insert(user.result());
          else if (user.code == OpCode::ConvertLayout && user.result()->layout &&
                   (!wanted || sameLayout(wanted, user.result()->layout)))
            wanted = user.result()->layout;
          else if (user.code != OpCode::AddPtr && user.code != OpCode::Add)
            onlyConversionsAndUpdates = false;
        }
      });
      if (onlyConversionsAndUpdates && wanted && wanted->kind != Layout::Kind::DotOperand &&
          !sameLayout(wanted, arg->layout)) {
        carried_[arg] = wanted;
        changed = true;
      }
    }
    return changed;
  }

  // A loop-carried block argument whose init is cheap and that has not been
  // re-carried has no layout of its own to insist on.
  bool flexible(Value *v) {
    if (v->definingOp || !v->ownerBlock || !v->ownerBlock->parentOp || carried_.count(v))
      return false;
    Operation *loop = v->ownerBlock->parentOp;
    if (loop->code != OpCode::For || v->index == 0)
      return false;
    std::set<Value *> seen;
    return rematerialisationCost(loop->operand(2 + v->index), seen) >= 0;
  }

  // ---------------------------------------------------------------- anchors

  void considerShape(const Value &v, std::map<size_t, std::vector<int64_t>> &largest) {
    if (!v.type.isBlock())
      return;
    for (int64_t d : v.type.shape)
      if (!ir::isPowerOfTwo(d))
        throw std::runtime_error("block shape " + v.type.str() +
                                 " has a dimension that is not a power of two");
    auto &best = largest[v.type.rank()];
    if (best.empty() || v.type.numElements() > Type(ScalarType::I32).withShape(best).numElements())
      best = v.type.shape;
  }

  void chooseAnchors() {
    std::map<size_t, std::vector<int64_t>> largest;
    walk(fn_.body, [&](Operation &op) {
      for (auto &r : op.results)
        considerShape(*r, largest);
      for (auto &region : op.regions)
        for (auto &arg : region->args)
          considerShape(*arg, largest);
    });
    for (auto &[rank, shape] : largest)
      anchors_[rank] = ir::defaultBlockedLayout(shape, fn_.numWarps);
    if (!seeds_)
      return;
    // Seeded: the first largest access of a rank (loads first) sets its anchor.
    std::map<size_t, LayoutRef> fromLoads, fromStores;
    walk(fn_.body, [&](Operation &op) {
      const LayoutRef *l = seed(op);
      if (!l || (op.code != OpCode::Load && op.code != OpCode::Store))
        return;
      const Type &t = op.operand(0)->type;
      if (!t.isBlock() || t.shape != largest[t.rank()])
        return;
      auto &chosen = op.code == OpCode::Load ? fromLoads : fromStores;
      chosen.emplace(t.rank(), *l);
    });
    for (auto &[rank, layout] : fromStores)
      anchors_[rank] = layout;
    for (auto &[rank, layout] : fromLoads)
      anchors_[rank] = layout;
  }

  LayoutRef anchor(size_t rank) {
    auto it = anchors_.find(rank);
    if (it == anchors_.end()) // only reachable for ranks created by rewrites
      it = anchors_.emplace(rank, ir::defaultBlockedLayout(std::vector<int64_t>(rank, 1),
                                                                fn_.numWarps)).first;
    return it->second;
  }

  // ------------------------------------------------------------ conversion

  // Returns `v` in layout `to`, inserting a convert_layout before `user`.
  Value *convertFor(Value *v, const LayoutRef &to, Operation &user) {
    if (!v->type.isBlock() || sameLayout(v->layout, to))
      return v;
    Block *block = user.parent;
    auto it = block->ops.begin();
    while (it->get() != &user)
      ++it;
    Builder b(block);
    b.setInsertionPoint(block, it);
    b.setLoc(user.loc);
    Value *converted = b.op(OpCode::ConvertLayout, {v}, v->type);
    converted->layout = to;
    return converted;
  }

  void convertOperand(Operation &op, unsigned i, const LayoutRef &to) {
    op.operands[i] = convertFor(op.operands[i], to, op);
  }

  // -------------------------------------------------------------- assignment

  void assignBlock(Block &block) {
    for (auto &op : block.ops)
      assignOp(*op);
  }

  void setResultLayout(Operation &op, unsigned i, LayoutRef layout) {
    Value *r = op.result(i);
    r->layout = r->type.isBlock() ? std::move(layout) : nullptr;
  }

  // A broadcast keeps its operand's layout, unless that layout would give each thread more of the
  // result than the anchor does: a [1, 1] load laid out with its lanes along dim 0 would hand
  // every thread a whole [1, 1024] row (Inductor's cross-entropy backward: each thread then sums
  // all 1024 columns alone). The small operand is converted instead.
  void assignBroadcast(Operation &op) {
    const LayoutRef &from = op.operand(0)->layout;
    const LayoutRef to = anchor(op.result()->type.rank());
    if (from->kind == Layout::Kind::Blocked && to->kind == Layout::Kind::Blocked && !sameLayout(from, to)) {
      const std::vector<int64_t> &shape = op.result()->type.shape;
      if (ir::DistributedLayout(*from, shape).numRegs() > ir::DistributedLayout(*to, shape).numRegs()) {
        convertOperand(op, 0, to);
        return setResultLayout(op, 0, to);
      }
    }
    setResultLayout(op, 0, from);
  }

  void assignOp(Operation &op) {
    for (Value *v : op.operands)
      if (v->type.isBlock() && !v->layout)
        throw std::logic_error("tiling: operand of " + where(op) + " has no layout yet");

    switch (op.code) {
    case OpCode::Constant: case OpCode::MakeRange: case OpCode::Splat:
    case OpCode::DescLoad: // read from shared memory (codegen): any layout will do
      if (!op.results.empty() && op.result()->type.isBlock())
        setResultLayout(op, 0, anchor(op.result()->type.rank()));
      return;
    case OpCode::ConvertLayout:
      if (!op.result()->layout)
        setResultLayout(op, 0, anchor(op.result()->type.rank()));
      return;
    case OpCode::Broadcast:
      return assignBroadcast(op);
    case OpCode::ExpandDims:
      return assignExpandDims(op);
    case OpCode::Reduce:
      setResultLayout(op, 0, Layout::slice(static_cast<unsigned>(op.intAttr("axis")),
                                           op.operand(0)->layout));
      return;
    case OpCode::Load: case OpCode::Store: case OpCode::AtomicRMW: // (atomics: seeded by coalesce)
      if (const LayoutRef *l = seed(op)) {
        for (unsigned i = 0; i < op.operands.size(); ++i)
          convertOperand(op, i, *l);
        if (!op.results.empty())
          setResultLayout(op, 0, *l);
        return;
      }
      return assignElementwise(op);
    case OpCode::For:
      return assignFor(op);
    case OpCode::If:
      return assignIf(op);
    case OpCode::While:
      return assignWhile(op);
    case OpCode::ProgramId: case OpCode::NumPrograms: case OpCode::SmId: case OpCode::GlobalTimer:
    case OpCode::Yield: case OpCode::Condition: case OpCode::Return:
      return; // scalars, or handled by the parent op
    // The rest of triton.language (docs/language.md): atomics and debug ops run
    // in their operands' layout (as elementwise ops, the default below); data
    // movement and dot (through shared memory) give the anchor; reduce_combine/scan
    // follow operand 0, like reduce.
    case OpCode::AtomicCAS: case OpCode::Print: case OpCode::Assert:
    case OpCode::Assume: case OpCode::Barrier:
    case OpCode::DescStore: // written to shared memory (codegen): the value's layout will do
    case OpCode::InlineAsm:  // per element (pack elements of one thread's registers at a time)
    case OpCode::MapElementwise: // the same; its region holds scalars (no layouts)
      return assignElementwise(op);
    case OpCode::Sort: // through shared memory, back into the operand's registers
      setResultLayout(op, 0, op.operand(0)->layout);
      return;
    case OpCode::Gather: // each result register reads src (in shared memory) where its index says
      setResultLayout(op, 0, op.operand(1)->layout);
      return;
    case OpCode::Histogram: // counted in shared memory, read out in the anchor of the bins
      if (op.operands.size() > 1)
        convertOperand(op, 1, op.operand(0)->layout);
      setResultLayout(op, 0, anchor(1));
      return;
    case OpCode::Dot:
      if (const LayoutRef *l = seed(op); l && (*l)->kind == Layout::Kind::Mma) {
        // A tensor-core dot (seeded by propagate-mma-layout): operands in
        // its dot-operand layouts, the accumulator in the result's registers.
        setResultLayout(op, 0, *l);
        convertOperand(op, 0, Layout::dotOperand(0, *l));
        convertOperand(op, 1, Layout::dotOperand(1, *l));
        convertOperand(op, 2, *l);
        return;
      }
      [[fallthrough]];
    case OpCode::Cat: case OpCode::Flip:
      for (unsigned i = 0; i < op.results.size(); ++i)
        if (op.result(i)->type.isBlock())
          setResultLayout(op, i, anchor(op.result(i)->type.rank()));
      if (op.code == OpCode::Dot) // the accumulator lives in the result's registers
        convertOperand(op, 2, op.result()->layout);
      return;
    case OpCode::Reshape: case OpCode::Trans: case OpCode::Join: case OpCode::Split:
      return assignShapeOp(op);
    case OpCode::ReduceCombine: case OpCode::Scan:
      for (unsigned i = 1; i < op.operands.size(); ++i)
        convertOperand(op, i, op.operand(0)->layout);
      for (unsigned i = 0; i < op.results.size(); ++i)
        setResultLayout(op, i, op.code == OpCode::Scan ? op.operand(0)->layout
                                   : Layout::slice(static_cast<unsigned>(op.intAttr("axis")), op.operand(0)->layout));
      return;
    default:
      if (opIsElementwise(op.code))
        return assignElementwise(op);
      throw std::runtime_error("tiling: unsupported operation " + where(op));
    }
  }

  // Elementwise ops (and load/store) run in the layout of their first block
  // operand that is expensive to recompute, else of their first block
  // operand; the others are converted (index math gets recomputed later).
  // v is a broadcast of a value with at most a quarter of its elements (a [K, 1] column spread over
  // [K, N]): converting that value is cheaper than converting another operand.
  static bool broadcastOfNarrow(const Value *v) {
    const Operation *def = v->definingOp;
    return def && def->code == OpCode::Broadcast && def->operand(0)->type.isBlock() &&
           def->operand(0)->type.numElements() * 4 <= v->type.numElements();
  }

  void assignElementwise(Operation &op) {
    LayoutRef layout;
    bool found = false;
    // The layout of an operand that cannot be recomputed, one not broadcast from a narrow value
    // first (gemlite's GEMV: a * b, with a [K, 1] column of the activations: b keeps its layout).
    for (bool narrowToo : {false, true}) {
      for (Value *v : op.operands) {
        if (!v->type.isBlock() || (!narrowToo && broadcastOfNarrow(v)))
          continue;
        if (!layout)
          layout = v->layout;
        std::set<Value *> seen;
        if (rematerialisationCost(v, seen) < 0 && !flexible(v)) {
          layout = v->layout;
          found = true;
          break;
        }
      }
      if (found) break;
    }
    if (!layout) { // all-scalar op
      for (auto &r : op.results)
        if (r->type.isBlock())
          throw std::runtime_error("tiling: block result from scalar operands in " + where(op));
      return;
    }
    for (unsigned i = 0; i < op.operands.size(); ++i)
      convertOperand(op, i, layout);
    for (unsigned i = 0; i < op.results.size(); ++i)
      setResultLayout(op, i, layout);
  }

  // Reshape, trans, split and join choose registers where the operand's
  // layout lets them (compiler/ir/ShapeOpLayouts.h), as Triton's layout
  // propagation does; otherwise their results take the anchor and codegen
  // moves them through shared memory (a reshape: a conversion of its operand).
  void assignShapeOp(Operation &op) {
    std::vector<LayoutRef> layouts;
    // A tile read from shared memory (a descriptor load) may be read in any
    // layout: its trans keeps the anchor, as it had (reading the tile
    // transposed took fewer shared accesses but more registers in the
    // CUDA-core and mma.sync attention kernels; wgmma dots read it as it is).
    const Operation *producer = op.operand(0)->definingOp;
    const bool readFromSharedMemory = producer && producer->code == OpCode::DescLoad;
    if (op.operand(0)->type.isBlock() && !readFromSharedMemory)
      layouts = inRegisterResultLayouts(op, op.operand(0)->layout, fn_.numWarps);
    if (layouts.empty()) {
      // A reshape of index math (AWQ's shifts: a broadcast row reshaped) whose operand can be
      // converted to where it gives the anchor in registers is: the conversion is then recomputed
      // instead (of other values, codegen's round trip stays: no padded conversion buffer).
      LayoutRef in = op.code == OpCode::Reshape && op.operand(0)->type.isBlock() && !readFromSharedMemory &&
                             isIndexMath(op.operand(0))
                         ? inRegisterReshapeOperandLayout(op, anchor(op.result()->type.rank()), fn_.numWarps)
                         : nullptr;
      if (in) convertOperand(op, 0, in);
      for (unsigned i = 0; i < op.results.size(); ++i)
        if (op.result(i)->type.isBlock()) // (split of a <2> block: two scalars)
          setResultLayout(op, i, anchor(op.result(i)->type.rank()));
      return;
    }
    if (op.code == OpCode::Join) // both halves in one layout
      convertOperand(op, 1, op.operand(0)->layout);
    for (unsigned i = 0; i < op.results.size(); ++i)
      if (op.result(i)->type.isBlock())
        setResultLayout(op, i, layouts[i]);
  }

  // v is computed from ranges and constants alone by a few cheap ops, shape ops among them (AWQ's
  // shifts), with no memory read: a conversion of it can be recomputed instead.
  static bool isIndexMath(Value *v) {
    std::set<Value *> seen;
    std::function<bool(Value *)> cheap = [&](Value *x) {
      if (!x->type.isBlock() || !seen.insert(x).second) return true;
      const Operation *def = x->definingOp;
      if (!def || seen.size() > 32) return false;
      switch (def->code) {
      case OpCode::Constant: case OpCode::MakeRange: case OpCode::Splat: case OpCode::Broadcast:
      case OpCode::ExpandDims: case OpCode::ConvertLayout: case OpCode::Reshape: case OpCode::Join:
      case OpCode::Trans: case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Shl:
      case OpCode::Shr: case OpCode::And: case OpCode::Or:
        break;
      default:
        return false;
      }
      for (Value *operand : def->operands)
        if (!cheap(operand)) return false;
      return true;
    };
    return cheap(v);
  }

  void assignExpandDims(Operation &op) {
    unsigned axis = static_cast<unsigned>(op.intAttr("axis"));
    const LayoutRef &in = op.operand(0)->layout;
    size_t rank = op.result()->type.rank();
    if (in && in->kind == Layout::Kind::Slice && in->sliceDim == axis && in->parent->rank() == rank) {
      setResultLayout(op, 0, in->parent);
      return;
    }
    LayoutRef out = anchor(rank);
    convertOperand(op, 0, Layout::slice(axis, out));
    setResultLayout(op, 0, out);
  }

  // Makes the values a terminator passes on match the given layouts.
  void convertTerminator(Block &region, const std::vector<LayoutRef> &layouts, unsigned first) {
    Operation *term = region.terminator();
    if (!term)
      return;
    for (unsigned i = 0; i < layouts.size() && first + i < term->operands.size(); ++i)
      if (layouts[i])
        convertOperand(*term, first + i, layouts[i]);
  }

  void assignFor(Operation &op) {
    Block &body = *op.region(0);
    std::vector<LayoutRef> carried;
    for (unsigned i = 3; i < op.operands.size(); ++i) {
      auto it = carried_.find(body.args.at(i - 2).get());
      carried.push_back(it != carried_.end() ? it->second : op.operand(i)->layout);
      convertOperand(op, i, carried.back());
    }
    for (unsigned i = 0; i < carried.size(); ++i) {
      body.args.at(i + 1)->layout = carried[i];
      setResultLayout(op, i, carried[i]);
    }
    assignBlock(body);
    convertTerminator(body, carried, 0);
  }

  void assignIf(Operation &op) {
    Block &thenBlock = *op.region(0);
    assignBlock(thenBlock);
    std::vector<LayoutRef> results;
    if (Operation *y = thenBlock.terminator())
      for (unsigned i = 0; i < op.results.size() && i < y->operands.size(); ++i)
        results.push_back(y->operand(i)->layout);
    for (unsigned i = 0; i < results.size(); ++i)
      setResultLayout(op, i, results[i]);
    if (op.regions.size() > 1) {
      assignBlock(*op.region(1));
      convertTerminator(*op.region(1), results, 0);
    }
  }

  void assignWhile(Operation &op) {
    Block &before = *op.region(0);
    Block &after = *op.region(1);
    std::vector<LayoutRef> carried;
    for (Value *init : op.operands)
      carried.push_back(init->layout);
    for (unsigned i = 0; i < carried.size(); ++i)
      before.args.at(i)->layout = carried[i];
    assignBlock(before);
    Operation *cond = before.terminator();
    if (!cond || cond->code != OpCode::Condition)
      throw std::runtime_error("tiling: while without a condition in " + where(op));
    for (unsigned i = 1; i < cond->operands.size(); ++i) {
      LayoutRef l = cond->operand(i)->layout;
      after.args.at(i - 1)->layout = l;
      setResultLayout(op, i - 1, l);
    }
    assignBlock(after);
    convertTerminator(after, carried, 0);
  }
};

} // namespace

void assignLayouts(Function &fn) { LayoutAssigner(fn, nullptr).run(); }

void assignLayouts(Function &fn, const LayoutSeeds &seeds) { LayoutAssigner(fn, &seeds).run(); }

} // namespace tessera::passes
