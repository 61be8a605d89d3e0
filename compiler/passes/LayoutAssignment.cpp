// Tiling: gives every block value a layout (see docs/codegen.md).
//
// Policy: one "anchor" blocked layout per rank, derived from the largest
// block shape of that rank; values get it unless their producer dictates
// otherwise (reduce -> slice, expand_dims of a slice -> its parent, broadcast
// -> its operand's layout, elementwise ops, loads and stores -> their first
// operand that is not cheap index math, loop/if results -> their init/then
// value's layout). Where a use needs another layout a
// convert_layout is inserted; afterwards converts of cheap index math
// (make_range, splat, constants and elementwise ops over them) are replaced
// by recomputing that math directly in the wanted layout.
#include "compiler/passes/LayoutAssignment.h"

#include "compiler/codegen/LayoutMath.h"

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

bool isElementwise(OpCode code) {
  switch (code) {
  case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Rem:
  case OpCode::And: case OpCode::Or: case OpCode::Xor: case OpCode::Shl: case OpCode::Shr:
  case OpCode::Max: case OpCode::Min: case OpCode::Neg: case OpCode::Not: case OpCode::Cmp:
  case OpCode::Select: case OpCode::AddPtr: case OpCode::Exp: case OpCode::Exp2:
  case OpCode::Log: case OpCode::Log2: case OpCode::Sqrt: case OpCode::Abs: case OpCode::Cast:
  case OpCode::Bitcast: case OpCode::Hint:
    return true;
  default:
    return false;
  }
}

// Ops whose result is cheap to recompute in another layout (no memory, no
// cross-thread communication).
bool isRematerialisable(OpCode code) {
  return isElementwise(code) || code == OpCode::Constant || code == OpCode::MakeRange ||
         code == OpCode::Splat || code == OpCode::ConvertLayout;
}

class LayoutAssigner {
public:
  explicit LayoutAssigner(Function &fn) : fn_(fn) {}

  void run() {
    if (!codegen::isPowerOfTwo(fn_.numWarps))
      throw std::runtime_error("num_warps must be a power of two, got " +
                               std::to_string(fn_.numWarps));
    chooseAnchors();
    assignBlock(fn_.body);
    rematerialiseConverts();
  }

private:
  Function &fn_;
  std::map<size_t, LayoutRef> anchors_; // by rank

  // ---------------------------------------------------------------- anchors

  void considerShape(const Value &v, std::map<size_t, std::vector<int64_t>> &largest) {
    if (!v.type.isBlock())
      return;
    for (int64_t d : v.type.shape)
      if (!codegen::isPowerOfTwo(d))
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
      anchors_[rank] = codegen::defaultBlockedLayout(shape, fn_.numWarps);
  }

  LayoutRef anchor(size_t rank) {
    auto it = anchors_.find(rank);
    if (it == anchors_.end()) // only reachable for ranks created by rewrites
      it = anchors_.emplace(rank, codegen::defaultBlockedLayout(std::vector<int64_t>(rank, 1),
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

  void assignOp(Operation &op) {
    for (Value *v : op.operands)
      if (v->type.isBlock() && !v->layout)
        throw std::logic_error("tiling: operand of " + where(op) + " has no layout yet");

    switch (op.code) {
    case OpCode::Constant: case OpCode::MakeRange: case OpCode::Splat: case OpCode::Reshape:
      if (!op.results.empty() && op.result()->type.isBlock())
        setResultLayout(op, 0, anchor(op.result()->type.rank()));
      return;
    case OpCode::ConvertLayout:
      if (!op.result()->layout)
        setResultLayout(op, 0, anchor(op.result()->type.rank()));
      return;
    case OpCode::Broadcast:
      setResultLayout(op, 0, op.operand(0)->layout);
      return;
    case OpCode::ExpandDims:
      return assignExpandDims(op);
    case OpCode::Reduce:
      setResultLayout(op, 0, Layout::slice(static_cast<unsigned>(op.intAttr("axis")),
                                           op.operand(0)->layout));
      return;
    case OpCode::Load: case OpCode::Store:
      return assignElementwise(op);
    case OpCode::For:
      return assignFor(op);
    case OpCode::If:
      return assignIf(op);
    case OpCode::While:
      return assignWhile(op);
    case OpCode::ProgramId: case OpCode::NumPrograms: case OpCode::Yield:
    case OpCode::Condition: case OpCode::Return:
      return; // scalars, or handled by the parent op
    default:
      if (isElementwise(op.code))
        return assignElementwise(op);
      throw std::runtime_error("tiling: unsupported operation " + where(op));
    }
  }

  // Elementwise ops (and load/store) run in the layout of their first block
  // operand that is expensive to recompute, else of their first block
  // operand; the others are converted (index math gets recomputed later).
  void assignElementwise(Operation &op) {
    LayoutRef layout;
    for (Value *v : op.operands) {
      if (!v->type.isBlock())
        continue;
      if (!layout)
        layout = v->layout;
      std::set<Value *> seen;
      if (rematCost(v, seen) < 0) {
        layout = v->layout;
        break;
      }
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
    for (unsigned i = 3; i < op.operands.size(); ++i)
      carried.push_back(op.operand(i)->layout);
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

  // ------------------------------------------------------ rematerialisation

  static constexpr int kMaxRematOps = 8;

  // Counts the ops that recomputing `v` would clone; -1 when not possible.
  int rematCost(Value *v, std::set<Value *> &seen) {
    if (!v->type.isBlock() || seen.count(v))
      return 0;
    Operation *def = v->definingOp;
    if (!def || !isRematerialisable(def->code))
      return -1;
    seen.insert(v);
    if (def->code == OpCode::ConvertLayout)
      return rematCost(def->operand(0), seen);
    int cost = 1;
    for (Value *operand : def->operands) {
      int c = rematCost(operand, seen);
      if (c < 0)
        return -1;
      cost += c;
    }
    return cost <= kMaxRematOps ? cost : -1;
  }

  Value *cloneIn(Value *v, const LayoutRef &layout, Builder &b,
                 std::map<Value *, Value *> &cloned, std::set<Operation *> &replaced) {
    if (!v->type.isBlock())
      return v;
    if (auto it = cloned.find(v); it != cloned.end())
      return it->second;
    Operation *def = v->definingOp;
    replaced.insert(def);
    if (def->code == OpCode::ConvertLayout)
      return cloned[v] = cloneIn(def->operand(0), layout, b, cloned, replaced);
    if (sameLayout(v->layout, layout))
      return cloned[v] = v;
    std::vector<Value *> operands;
    for (Value *operand : def->operands)
      operands.push_back(cloneIn(operand, layout, b, cloned, replaced));
    std::vector<Type> types;
    for (auto &r : def->results)
      types.push_back(r->type);
    b.setLoc(def->loc);
    Operation *copy = b.create(def->code, operands, types, def->attrs);
    copy->result()->layout = layout;
    return cloned[v] = copy->result();
  }

  void rematerialiseConverts() {
    std::vector<Operation *> converts;
    walk(fn_.body, [&](Operation &op) {
      if (op.code == OpCode::ConvertLayout)
        converts.push_back(&op);
    });
    std::set<Operation *> candidates;
    for (Operation *convert : converts) {
      std::set<Value *> seen;
      if (rematCost(convert->operand(0), seen) < 0)
        continue;
      Block *block = convert->parent;
      auto it = block->ops.begin();
      while (it->get() != convert)
        ++it;
      Builder b(block);
      b.setInsertionPoint(block, it);
      std::map<Value *, Value *> cloned;
      Value *replacement = cloneIn(convert->operand(0), convert->result()->layout, b, cloned,
                                   candidates);
      replaceAllUsesWith(fn_.body, convert->result(), replacement);
      candidates.insert(convert);
    }
    eraseDead(candidates);
  }

  // Erases the ops among `candidates` whose results are no longer used.
  void eraseDead(std::set<Operation *> candidates) {
    bool changed = true;
    while (changed) {
      changed = false;
      std::map<Value *, unsigned> uses;
      walk(fn_.body, [&](Operation &op) {
        for (Value *v : op.operands)
          ++uses[v];
      });
      for (auto it = candidates.begin(); it != candidates.end();) {
        Operation *op = *it;
        bool dead = true;
        for (auto &r : op->results)
          dead = dead && uses[r.get()] == 0;
        if (!dead) {
          ++it;
          continue;
        }
        Block *block = op->parent;
        block->ops.remove_if([&](const std::unique_ptr<Operation> &p) { return p.get() == op; });
        it = candidates.erase(it);
        changed = true;
      }
    }
  }
};

} // namespace

void assignLayouts(Function &fn) { LayoutAssigner(fn).run(); }

} // namespace tessera::passes
