#include "compiler/passes/Canonicalize.h"

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
      if (yield->operand(static_cast<unsigned>(i)) != arg) continue;
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
    default:
      return;
    }
  }
};

} // namespace

void canonicalize(Function &fn) { Canonicalizer(fn).run(); }

} // namespace tessera::passes
