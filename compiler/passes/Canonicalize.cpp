#include "compiler/passes/Canonicalize.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace tessera::passes {

using namespace ir;

namespace {

// Wraps v to the width and signedness of an integer type.
int64_t wrapToType(int64_t v, ScalarType t) {
  unsigned w = bitWidth(t);
  if (w >= 64) return v;
  uint64_t mask = (uint64_t(1) << w) - 1;
  uint64_t u = uint64_t(v) & mask;
  if (isSigned(t) && (u >> (w - 1)) & 1) return int64_t(u | ~mask);
  return int64_t(u);
}

const Operation *constantOf(const Value *v) {
  return v->definingOp && v->definingOp->code == OpCode::Constant ? v->definingOp : nullptr;
}

std::optional<int64_t> intConstant(const Value *v) {
  const Operation *c = constantOf(v);
  if (!c || c->isFloatConstant() || !v->type.isIntElement()) return std::nullopt;
  return c->intAttr("value");
}

// The dims of a shape other than 1, in order.
std::vector<int64_t> nonUnitDims(const std::vector<int64_t> &shape) {
  std::vector<int64_t> out;
  for (int64_t d : shape)
    if (d != 1) out.push_back(d);
  return out;
}

// A reshape that only inserts or removes dims of size 1 ([1, 128, 64] -> [128, 64]).
bool isUnitReshape(const std::vector<int64_t> &from, const std::vector<int64_t> &to) {
  return from != to && nonUnitDims(from) == nonUnitDims(to);
}

class Canonicalizer {
public:
  explicit Canonicalizer(Function &fn) : fn_(fn) {}

  void run() { runOnBlock(fn_.body); }

private:
  Function &fn_;

  Value *replaceWithConstant(Operation &op, Attribute value, const Type &type) {
    Builder b(op.parent);
    b.setInsertionPoint(op.parent, positionOf(op));
    b.setLoc(op.loc);
    Value *c = b.op(OpCode::Constant, {}, type, {{"value", value}});
    replaceAllUsesWith(fn_.body, op.result(), c);
    return c;
  }

  void runOnBlock(Block &block) {
    // Iterate over a snapshot: replacements insert constants before `op`.
    std::vector<Operation *> ops;
    for (auto &op : block.ops) ops.push_back(op.get());
    for (Operation *op : ops) {
      for (auto &region : op->regions) runOnBlock(*region);
      if (op->code == OpCode::For) dropPassThroughIterArgs(*op);
      fold(*op);
    }
  }

  // An iter arg that the body yields back unchanged is its initial value in every
  // iteration: its uses (and the loop's result) read the init instead, and the arg
  // goes. The front-end carries every name a loop body assigns, also in a branch
  // that a constexpr `if` dropped (fla's `o_k1 = ...` under `if USE_GK:`); a loop
  // carrying such a block would hide from the pipeliner that the addresses made
  // from it are loop-invariant.
  void dropPassThroughIterArgs(Operation &loop) {
    Block &body = *loop.region(0);
    Operation *yield = body.terminator();
    if (!yield || yield->code != OpCode::Yield) return;
    bool dropped = false;
    for (size_t i = loop.results.size(); i-- > 0;) {
      Value *arg = body.args.at(i + 1).get();
      // (read through hints: `tl.multiple_of(x, ...)` in the body rebinds x to the hinted value)
      const Value *yielded = yield->operand(static_cast<unsigned>(i));
      while (yielded->definingOp && yielded->definingOp->code == OpCode::Hint) yielded = yielded->definingOp->operand(0);
      if (yielded != arg) continue;
      Value *init = loop.operand(static_cast<unsigned>(3 + i));
      replaceAllUsesWith(fn_.body, arg, init);
      replaceAllUsesWith(fn_.body, loop.result(static_cast<unsigned>(i)), init);
      loop.operands.erase(loop.operands.begin() + static_cast<std::ptrdiff_t>(3 + i));
      yield->operands.erase(yield->operands.begin() + static_cast<std::ptrdiff_t>(i));
      body.args.erase(body.args.begin() + static_cast<std::ptrdiff_t>(i + 1));
      loop.results.erase(loop.results.begin() + static_cast<std::ptrdiff_t>(i));
      dropped = true;
    }
    if (!dropped) return;
    for (size_t j = 0; j < body.args.size(); ++j) body.args[j]->index = static_cast<unsigned>(j);
    for (size_t j = 0; j < loop.results.size(); ++j) loop.results[j]->index = static_cast<unsigned>(j);
  }

  void fold(Operation &op) {
    switch (op.code) {
    case OpCode::Splat:
    case OpCode::Broadcast:
      // A block of one repeated constant is itself a constant.
      if (const Operation *c = constantOf(op.operand(0)))
        replaceWithConstant(op, c->attrs.at("value"), op.result()->type);
      return;
    case OpCode::Cast: {
      const Operation *c = constantOf(op.operand(0));
      if (!c) return;
      const Type &from = op.operand(0)->type, &to = op.result()->type;
      if (from.pointer || to.pointer) return;
      if (to.isFloatElement()) {
        double v = c->isFloatConstant() ? c->floatAttr("value")
                   : isSigned(from.scalar) || from.scalar == ScalarType::I1 ? double(c->intAttr("value"))
                                                                            : double(uint64_t(c->intAttr("value")));
        if (to.scalar == ScalarType::F32) v = double(float(v));
        if (to.scalar != ScalarType::F64 && to.scalar != ScalarType::F32) return; // rounding to 16 bits: leave to codegen
        replaceWithConstant(op, v, to);
      } else if (!c->isFloatConstant()) {
        int64_t v = c->intAttr("value");
        if (to.scalar == ScalarType::I1) v = v != 0;
        else v = wrapToType(v, to.scalar);
        replaceWithConstant(op, v, to);
      }
      return;
    }
    case OpCode::Add: case OpCode::Sub: case OpCode::Mul: {
      const Type &t = op.result()->type;
      if (!t.isIntElement() || t.scalar == ScalarType::I1) return;
      auto a = intConstant(op.operand(0)), b = intConstant(op.operand(1));
      if (a && b) {
        int64_t r = op.code == OpCode::Add ? int64_t(uint64_t(*a) + uint64_t(*b))
                    : op.code == OpCode::Sub ? int64_t(uint64_t(*a) - uint64_t(*b))
                                             : int64_t(uint64_t(*a) * uint64_t(*b));
        replaceWithConstant(op, wrapToType(r, t.scalar), t);
        return;
      }
      // x + 0, 0 + x, x - 0, x * 1, 1 * x
      int64_t identity = op.code == OpCode::Mul ? 1 : 0;
      if (b && *b == identity) replaceAllUsesWith(fn_.body, op.result(), op.operand(0));
      else if (a && *a == identity && op.code != OpCode::Sub) replaceAllUsesWith(fn_.body, op.result(), op.operand(1));
      return;
    }
    case OpCode::Reshape:
      loadInUnitReshapedShape(op);
      return;
    default:
      return;
    }
  }

  // reshape(load(p, mask, other)) that only drops or adds unit dims (a descriptor block
  // [1, BN, BK] of a 3-D descriptor, reshaped to [BN, BK]: Unsloth's MoE grouped GEMM) is a
  // load of the pointers, mask and other computed in the reshaped shape: the load then feeds
  // its dot directly, as the pipeline pass wants it (cp.async staging), and no reshape of the
  // loaded block is left.
  void loadInUnitReshapedShape(Operation &reshape) {
    Value *loaded = reshape.operand(0);
    Operation *load = loaded->definingOp;
    const std::vector<int64_t> &shape = reshape.result()->type.shape;
    if (!load || load->code != OpCode::Load || load->parent != reshape.parent || !loaded->type.isBlock() ||
        !isUnitReshape(loaded->type.shape, shape) || countUses(fn_.body, loaded) != 1)
      return;
    Builder b(load->parent);
    b.setInsertionPoint(load->parent, positionOf(*load));
    std::vector<Value *> operands;
    for (Value *operand : load->operands) operands.push_back(inShape(operand, shape, b));
    b.setLoc(load->loc);
    Value *reshaped = b.create(OpCode::Load, operands, {reshape.result()->type}, load->attrs)->result();
    reshaped->nameHint = loaded->nameHint;
    replaceAllUsesWith(fn_.body, reshape.result(), reshaped);
  }

  // v (a block with the non-unit dims of `shape`, in order) computed in `shape`: its index
  // math (constants, splats, make_range, expand_dims, broadcasts, elementwise ops) is
  // rebuilt in that shape at b; anything else is reshaped where it is.
  Value *inShape(Value *v, const std::vector<int64_t> &shape, Builder &b) {
    const std::vector<int64_t> &from = v->type.shape;
    if (from == shape) return v;
    const Type type = v->type.withShape(shape);
    Operation *def = v->definingOp;
    if (def) b.setLoc(def->loc);
    if (def && def->code == OpCode::Constant) return b.op(OpCode::Constant, {}, type, def->attrs);
    if (def && def->code == OpCode::Splat) return b.op(OpCode::Splat, {def->operand(0)}, type);
    if (def && (def->code == OpCode::ExpandDims || def->code == OpCode::Reshape) &&
        nonUnitDims(def->operand(0)->type.shape) == nonUnitDims(shape))
      return inShape(def->operand(0), shape, b); // dropped or added only unit dims itself
    if (def && def->code == OpCode::Broadcast) {
      // Dim k of `shape` that is not 1 is the k-th such dim of the broadcast's result: the
      // broadcast operand has there its own extent (1 where it was broadcast).
      const std::vector<int64_t> &source = def->operand(0)->type.shape;
      std::vector<int64_t> sourceShape(shape.size(), 1);
      for (size_t i = 0, j = 0; i < shape.size(); ++i) {
        if (shape[i] == 1) continue;
        while (from[j] == 1) ++j;
        sourceShape[i] = source[j++];
      }
      Value *x = inShape(def->operand(0), sourceShape, b);
      b.setLoc(def->loc);
      return x->type.shape == shape ? x : b.op(OpCode::Broadcast, {x}, type);
    }
    if (def && opIsElementwise(def->code) && def->code != OpCode::Hint && def->results.size() == 1 &&
        def->regions.empty() &&
        std::all_of(def->operands.begin(), def->operands.end(), [&](Value *o) { return o->type.shape == from; })) {
      std::vector<Value *> operands;
      for (Value *o : def->operands) operands.push_back(inShape(o, shape, b));
      b.setLoc(def->loc);
      return b.op(def->code, operands, type, def->attrs);
    }
    // Anything else: expand_dims where it has no unit dims (every 1 of `shape` is added), else a reshape.
    if (from == nonUnitDims(from)) {
      Value *x = v;
      std::vector<int64_t> now = from;
      for (size_t i = 0; i < shape.size(); ++i)
        if (shape[i] == 1) {
          now.insert(now.begin() + static_cast<std::ptrdiff_t>(i), 1);
          x = b.op(OpCode::ExpandDims, {x}, v->type.withShape(now), {{"axis", static_cast<int64_t>(i)}});
        }
      return x;
    }
    return b.op(OpCode::Reshape, {v}, type);
  }
};

} // namespace

void canonicalize(Function &fn) { Canonicalizer(fn).run(); }

} // namespace tessera::passes
