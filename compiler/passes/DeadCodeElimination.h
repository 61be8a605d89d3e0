// DeadCodeElimination: removes operations without side effects whose
// results nobody uses (stores, control flow and terminators stay).
#pragma once

#include "compiler/ir/IR.h"

namespace tessera::passes {

void eliminateDeadCode(ir::Function &fn);

} // namespace tessera::passes
