// sort, gather, histogram and inline_asm on the host. sort runs the GPU's
// bitonic network (compiler/codegen/Sort.cpp) so that every input, NaNs
// included, comes out as it does there; gather reports an index outside its
// axis; inline_asm cannot run here (PTX), as in Triton's interpreter.
#include "compiler/interp/Executor.h"

namespace tessera::interp {

using ir::OpCode;

namespace {

bool greater(const Scalar &a, const Scalar &b, const ir::Type &t) {
  if (t.isFloatElement()) return a.f > b.f;
  if (ir::isSigned(t.scalar) && t.scalar != ir::ScalarType::I1) return a.i > b.i;
  return a.u > b.u;
}

HostValue evalSort(Executor &ex, const ir::Operation &op) {
  HostValue out = ex.get(op.operand(0));
  const ir::Type elem = out.type.element();
  const int64_t n = out.type.shape.back();
  const bool descending = op.intAttr("descending") != 0;
  std::vector<Scalar> next(out.data.size());
  for (int64_t k = 2; k <= n; k *= 2)
    for (int64_t j = k / 2; j >= 1; j /= 2) {
      for (size_t i = 0; i < out.data.size(); ++i) {
        const int64_t position = static_cast<int64_t>(i) % n;
        const Scalar &mine = out.data[i], &theirs = out.data[i ^ static_cast<size_t>(j)];
        const bool ascending = ((position & k) == 0) != descending;
        const bool lower = (position & j) == 0;
        const bool mineGreater = greater(mine, theirs, elem);
        const Scalar &smaller = mineGreater ? theirs : mine, &larger = mineGreater ? mine : theirs;
        next[i] = ascending == lower ? smaller : larger;
      }
      out.data.swap(next);
    }
  return out;
}

HostValue evalGather(Executor &ex, const ir::Operation &op) {
  const HostValue &src = ex.get(op.operand(0)), &index = ex.get(op.operand(1));
  HostValue out(op.result()->type);
  const size_t axis = static_cast<size_t>(op.intAttr("axis"));
  const std::vector<int64_t> &srcShape = src.type.shape;
  const bool isSignedIndex = ir::isSigned(index.type.scalar);
  for (size_t i = 0; i < out.size(); ++i) {
    std::vector<int64_t> c = coordinatesOf(static_cast<int64_t>(i), out.type.shape);
    const Scalar at = index.data.size() == 1 ? index.data[0] : index.data[i];
    const bool inside = isSignedIndex ? at.i >= 0 && at.i < srcShape[axis] : at.u < uint64_t(srcShape[axis]);
    if (!inside)
      ex.error(op, "gather index " + (isSignedIndex ? std::to_string(at.i) : std::to_string(at.u)) + " at element " +
                       coordinateText(static_cast<int64_t>(i), out.type.shape) + " is outside the source's axis " +
                       std::to_string(axis) + " of size " + std::to_string(srcShape[axis]) + " (program " +
                       ex.programText() + ")");
    c[axis] = at.i;
    int64_t from = 0;
    for (size_t d = 0; d < c.size(); ++d) from = from * srcShape[d] + c[d];
    out.data[i] = src.data.size() == 1 ? src.data[0] : src.data[static_cast<size_t>(from)];
  }
  return out;
}

HostValue evalHistogram(Executor &ex, const ir::Operation &op) {
  const HostValue &x = ex.get(op.operand(0));
  const HostValue *mask = op.operands.size() > 1 ? &ex.get(op.operand(1)) : nullptr;
  HostValue out(op.result()->type);
  const uint64_t bins = static_cast<uint64_t>(op.intAttr("num_bins"));
  const bool isSignedValue = ir::isSigned(x.type.scalar);
  for (size_t i = 0; i < x.size(); ++i) {
    if (mask && (mask->data.size() == 1 ? mask->data[0] : mask->data[i]).u == 0) continue;
    const Scalar v = x.data.size() == 1 ? x.data[0] : x.data[i];
    if (isSignedValue ? v.i >= 0 && uint64_t(v.i) < bins : v.u < bins) ++out.data[static_cast<size_t>(v.u)].i;
  }
  return out;
}

} // namespace

bool evalDataDependentOp(Executor &ex, const ir::Operation &op) {
  switch (op.code) {
  case OpCode::Sort: ex.set(op.result(), evalSort(ex, op)); return true;
  case OpCode::Gather: ex.set(op.result(), evalGather(ex, op)); return true;
  case OpCode::Histogram: ex.set(op.result(), evalHistogram(ex, op)); return true;
  case OpCode::InlineAsm:
    // tl.extra.cuda.gdc_wait() / gdc_launch_dependents(): nothing to wait for when programs run in order.
    if (op.stringAttr("asm").rfind("griddepcontrol.", 0) == 0) {
      for (size_t i = 0; i < op.results.size(); ++i) ex.set(op.result(i), HostValue(op.result(i)->type));
      return true;
    }
    ex.error(op, "tl.inline_asm_elementwise cannot run in the interpreter (its PTX runs only on the GPU)");
  default: return false;
  }
}

} // namespace tessera::interp
