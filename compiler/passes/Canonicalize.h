// Canonicalize: folds constants (casts, splats and broadcasts of constants,
// scalar integer arithmetic on constants) and removes identities such as
// x + 0 and x * 1 on integers. Leaves dead code for DeadCodeElimination.
#pragma once

#include "compiler/ir/IR.h"

namespace tessera::passes {

void canonicalize(ir::Function &fn);

} // namespace tessera::passes
