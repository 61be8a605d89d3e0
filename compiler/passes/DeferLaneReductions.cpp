#include "compiler/passes/DeferLaneReductions.h"

#include "compiler/ir/LayoutMath.h"

#include <map>
#include <optional>
#include <vector>

namespace tessera::passes {

using namespace ir;

namespace {

// The xor masks of the lanes a sum over `axis` of `x` combines (as
// codegen's reduce step 2 does), or nothing when the reduction also crosses
// warps (its last step goes through shared memory) or no lanes split the axis.
std::optional<std::vector<int64_t>> laneMasksOf(const Value *x, int64_t axis) {
  if (!x->type.isBlock() || !x->layout || axis < 0) return std::nullopt;
  try {
    ir::DistributedLayout layout(*x->layout, x->type.shape);
    if (axis >= static_cast<int64_t>(layout.rank())) return std::nullopt;
    const ir::DimMap &m = layout.dim(layout.valueDims()[static_cast<size_t>(axis)]);
    if (m.distinctWarps() > 1) return std::nullopt;
    std::vector<int64_t> masks;
    for (unsigned bit = 1; bit < m.distinctLanes(); bit *= 2) masks.push_back(static_cast<int64_t>(bit * m.laneStride));
    if (masks.empty()) return std::nullopt;
    return masks;
  } catch (const std::invalid_argument &) {
    return std::nullopt;
  }
}

// One loop-carried value's update, checked: the ops that compute it from
// partial sums (the reduces among them) and the lanes they combine.
class CarriedSum {
public:
  CarriedSum(Block &body, Value *carried) : body_(body), carried_(carried) {}

  // Whether `v` can be computed lane by lane from partial sums (see the header). Every
  // partial value is read once, by the next op of the chain, so no other value (a mul's
  // other factor) can be built from one.
  bool partial(Value *v) {
    if (v == carried_) return true;
    Operation *op = v->definingOp;
    if (!op || op->parent != &body_ || countUses(body_, v) != 1) return false;
    auto it = verdict_.find(v);
    if (it != verdict_.end()) return it->second;
    verdict_[v] = false; // a cycle (none in SSA) or a failure below
    bool ok = false;
    switch (op->code) {
    case OpCode::Reduce:
      ok = op->stringAttr("kind") == "sum" && sameMasks(laneMasksOf(op->operand(0), op->intAttr("axis")));
      if (ok) reduces_.push_back(op);
      break;
    case OpCode::Add:
      ok = partial(op->operand(0)) && partial(op->operand(1));
      break;
    case OpCode::Mul:
      ok = partial(op->operand(0)) != partial(op->operand(1));
      break;
    case OpCode::Fma: // a * b + c
      ok = partial(op->operand(2)) && partial(op->operand(0)) != partial(op->operand(1));
      break;
    default:
      break;
    }
    verdict_[v] = ok;
    return ok;
  }

  const std::vector<Operation *> &reduces() const { return reduces_; }
  const std::vector<int64_t> &masks() const { return *masks_; }

private:
  bool sameMasks(const std::optional<std::vector<int64_t>> &masks) {
    if (!masks) return false;
    if (!masks_) masks_ = masks;
    return *masks_ == *masks;
  }

  Block &body_;
  Value *carried_;
  std::map<Value *, bool> verdict_;
  std::vector<Operation *> reduces_;
  std::optional<std::vector<int64_t>> masks_;
};

// The lane_reduce that `v` is, with these masks, or null.
Operation *laneReduceOf(Value *v, const std::vector<int64_t> &masks) {
  Operation *op = v->definingOp;
  return op && op->code == OpCode::LaneReduce && op->arrayAttr("lane_masks") == masks ? op : nullptr;
}

void deferInLoop(Function &fn, Operation &loop) {
  Block &body = *loop.region(0);
  Operation *yield = body.terminator();
  const unsigned carried = static_cast<unsigned>(loop.results.size());
  for (unsigned i = 0; i < carried; ++i) {
    Value *arg = body.args.at(i + 1).get(), *next = yield->operand(i), *init = loop.operand(3 + i);
    if (!arg->type.isBlock() || countUses(body, arg) > 1) continue;
    CarriedSum sum(body, arg);
    if (!sum.partial(next) || sum.reduces().empty()) continue;
    // The loop starts from zero, or from where an earlier loop's partial sums left off.
    Operation *earlier = laneReduceOf(init, sum.masks());
    if (!earlier && !isZeroConstant(init)) continue;
    if (earlier) {
      loop.operands[3 + i] = earlier->operand(0);
      if (countUses(fn.body, earlier->result()) == 0) earlier->parent->ops.erase(positionOf(*earlier));
    }
    for (Operation *reduce : sum.reduces()) reduce->attrs["partial"] = int64_t{1};
    Value *result = loop.result(i);
    Builder b(loop.parent);
    b.setInsertionPoint(loop.parent, std::next(positionOf(loop)));
    b.setLoc(loop.loc);
    Value *total = b.op(OpCode::LaneReduce, {result}, result->type,
                        {{"kind", std::string("sum")}, {"lane_masks", sum.masks()}});
    total->layout = result->layout;
    replaceUsesExcept(fn.body, result, total, total->definingOp);
  }
}

} // namespace

void deferLaneReductions(Function &fn) {
  std::vector<Operation *> loops; // program order: an earlier loop's lane_reduce exists when a later one looks
  walk(fn.body, [&](Operation &op) {
    if (op.code == OpCode::For) loops.push_back(&op);
  });
  for (Operation *loop : loops) deferInLoop(fn, *loop);
}

} // namespace tessera::passes
