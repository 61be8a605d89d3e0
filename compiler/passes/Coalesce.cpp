// Coalesce (Triton's pass of that name): gives every block load, store and
// atomic read-modify-write a blocked layout made for the memory system. Its fastest dim (order[0]) is
// the pointer's most contiguous dim, so the lanes of a warp touch
// consecutive addresses; along it each thread holds as many consecutive
// elements as the axis analysis proves contiguous and aligned, up to 16
// bytes (4 x fp32, 8 x bf16/fp16), so codegen can emit one 128-bit access
// per thread (ld.global.v4.b32; for a float atomic add on sm_90,
// atom.global.add.noftz.v8.f16). An atomic is sized as a store is.
//
// Accesses of one shape and order share the widest such vector (a bf16
// load and the fp32 store of the same tile then agree), but never more than
// the CTA's threads can each get distinct elements of; a store is never
// wider than its own vector (a wider one would leave gaps in a warp's
// write). Operands are converted to the new layout and a load's result is
// converted back, so the IR stays consistent; remove-layout-conversions then
// propagates these layouts and drops the conversions.
#include "compiler/passes/Coalesce.h"

#include "compiler/ir/LayoutMath.h"

#include <algorithm>
#include <map>
#include <set>
#include <numeric>

namespace tessera::passes {

using namespace ir;

namespace {

unsigned elementBytes(const Type &t) {
  if (t.scalar == ScalarType::I1) return 1; // bools are bytes in memory
  return std::max(1u, bitWidth(t.scalar) / 8);
}

// Whether v is computed through a shape op (reshape, trans, join, split, cat) of a block: such an
// offset block is laid out row-major for free (tl.arange(0, N).reshape(...), Triton's
// test_chained_reductions); another order would convert every pointer through shared memory
// (Triton gives the arange a linear layout instead, which tessera has not).
bool builtThroughShapeOp(const Value *v, std::set<const Value *> &seen) {
  if (!v || !v->type.isBlock() || !seen.insert(v).second || !v->definingOp) return false;
  const Operation &op = *v->definingOp;
  if (op.code == OpCode::Reshape || op.code == OpCode::Trans || op.code == OpCode::Join || op.code == OpCode::Split ||
      op.code == OpCode::Cat)
    return true;
  if (!op.regions.empty()) return false;
  for (const Value *operand : op.operands)
    if (builtThroughShapeOp(operand, seen)) return true;
  return false;
}

// Dims by decreasing contiguity. Ties put the first dim fastest, as Triton 3.6 orders them (a
// gather with no contiguous dim, e.g. an implicit-GEMM conv's [pixels, channels] input tile of
// broadcast row and column offsets, then gives each thread one row and many columns: the row's
// pointer, offsets and masks once a thread, not once per row it holds), but keep the last dim
// fastest for pointers built through a shape op (row-major there).
std::vector<unsigned> orderFromContiguity(const std::vector<int64_t> &contiguity, bool lastDimOnTies) {
  std::vector<unsigned> order(contiguity.size());
  if (lastDimOnTies)
    std::iota(order.rbegin(), order.rend(), 0u);
  else
    std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](unsigned a, unsigned b) { return contiguity[a] > contiguity[b]; });
  return order;
}

struct Access {
  Operation *op;
  std::vector<int64_t> shape;
  std::vector<unsigned> order;
  unsigned vector; // elements one access of this op alone could move
};

// Consecutive elements along order[0] that one thread may move at once.
unsigned vectorElements(const Operation &op, const std::vector<int64_t> &shape,
                        const std::vector<unsigned> &order) {
  unsigned d = order[0];
  int64_t bytes = elementBytes(op.operand(0)->type);
  int64_t multiple = std::max<int64_t>(1, op.arrayAttr("alignment").at(d) / bytes);
  int64_t contiguous = std::min(op.arrayAttr("contiguity").at(d), shape[d]);
  int64_t widest = std::max<int64_t>(1, 16 / bytes);
  return static_cast<unsigned>(std::min({multiple, contiguous, widest}));
}

class Coalescer {
public:
  explicit Coalescer(Function &fn) : fn_(fn) {}

  void run() {
    std::vector<Access> accesses;
    walk(fn_.body, [&](Operation &op) {
      const bool access = op.code == OpCode::Load || op.code == OpCode::Store || op.code == OpCode::AtomicRMW;
      if (!access || !op.operand(0)->type.isBlock() ||
          !op.hasAttr("contiguity") || !op.hasAttr("alignment"))
        return;
      const std::vector<int64_t> &shape = op.operand(0)->type.shape;
      std::set<const Value *> seen;
      std::vector<unsigned> order = orderFromContiguity(op.arrayAttr("contiguity"), builtThroughShapeOp(op.operand(0), seen));
      accesses.push_back({&op, shape, order, vectorElements(op, shape, order)});
    });
    for (const Access &a : accesses) {
      unsigned perThread = a.vector;
      for (const Access &other : accesses)
        if (other.op->code == OpCode::Load && other.shape == a.shape && other.order == a.order)
          perThread = std::max(perThread, other.vector);
      int64_t elements = Type(ScalarType::I32).withShape(a.shape).numElements();
      int64_t threads = int64_t{ir::kWarpSize} * fn_.numWarps;
      perThread = static_cast<unsigned>(std::min<int64_t>(perThread, std::max<int64_t>(1, elements / threads)));
      if (a.op->code != OpCode::Load)
        perThread = std::min(perThread, a.vector);
      std::vector<unsigned> spt(a.shape.size(), 1);
      spt[a.order[0]] = perThread;
      relayout(*a.op, ir::blockedLayout(a.shape, spt, a.order, fn_.numWarps));
    }
  }

private:
  Function &fn_;

  Value *convertBefore(Operation &user, Value *v, const LayoutRef &to) {
    if (!v->type.isBlock() || sameLayout(v->layout, to)) return v;
    Builder b(user.parent);
    b.setInsertionPoint(user.parent, positionOf(user));
    b.setLoc(user.loc);
    Value *converted = b.op(OpCode::ConvertLayout, {v}, v->type);
    converted->layout = to;
    return converted;
  }

  void relayout(Operation &op, const LayoutRef &layout) {
    const LayoutRef &current = op.code == OpCode::Load ? op.result()->layout : op.operand(0)->layout;
    if (!current || sameLayout(current, layout)) return; // (no layouts: nothing to refine)
    for (Value *&v : op.operands) v = convertBefore(op, v, layout);
    if (op.code == OpCode::Store) return;
    // Users keep the old layout for now, through a conversion.
    Value *result = op.result();
    LayoutRef old = result->layout;
    result->layout = layout;
    Builder b(op.parent);
    b.setInsertionPoint(op.parent, std::next(positionOf(op)));
    b.setLoc(op.loc);
    Value *back = b.op(OpCode::ConvertLayout, {result}, result->type);
    back->layout = old;
    replaceAllUsesWith(fn_.body, result, back);
    back->definingOp->operands[0] = result; // the conversion itself reads the load
  }
};

} // namespace

void coalesce(Function &fn) { Coalescer(fn).run(); }

} // namespace tessera::passes
