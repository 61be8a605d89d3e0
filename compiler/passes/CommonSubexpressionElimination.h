// CommonSubexpressionElimination: an operation without side effects that
// repeats an earlier one (same opcode, operands, attributes and result
// types) in the same or an enclosing block is replaced by the earlier one.
// The specialiser emits such repeats whenever a kernel writes
// `rows[:, None]` more than once; removing them keeps the IR (and the
// registers codegen allocates) small.
#pragma once

#include "compiler/ir/IR.h"

namespace tessera::passes {

void eliminateCommonSubexpressions(ir::Function &fn);

} // namespace tessera::passes
