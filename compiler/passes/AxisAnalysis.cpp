// Axis analysis: the axis info of the kernel's values (compiler/ir/AxisInfo.h)
// that later stages need, written as attributes of block loads, stores and
// atomic read-modify-writes (codegen vectorises atomic adds by them) so
// the printer (and the golden tests) show them:
//   contiguity = [..]      of the pointer, in elements
//   alignment = [..]       the pointer's divisibility, in bytes
//   mask_constancy = [..]  of the mask, when there is one
// The coalesce pass and codegen's vector width read them.
#include "compiler/passes/AxisAnalysis.h"

#include "compiler/ir/AxisInfo.h"

namespace tessera::passes {

using namespace ir;

namespace {

void annotate(Operation &op, const AxisInfoAnalysis &axes) {
  for (const char *key : {"contiguity", "alignment", "mask_constancy"}) op.attrs.erase(key);
  Value *ptr = op.operand(0);
  if (!ptr->type.isBlock()) return;
  const AxisInfo p = axes.of(ptr);
  op.attrs["contiguity"] = p.contiguity;
  op.attrs["alignment"] = p.divisibility;
  Value *mask = op.code == OpCode::Load ? op.loadMask() : op.storeMask();
  if (mask) op.attrs["mask_constancy"] = axes.of(mask).constancy;
}

} // namespace

void analyzeAxes(Function &fn) {
  const AxisInfoAnalysis axes(fn);
  walk(fn.body, [&](Operation &op) {
    if (op.code == OpCode::Load || op.code == OpCode::Store || op.code == OpCode::AtomicRMW) annotate(op, axes);
  });
}

} // namespace tessera::passes
