// Propagate-mma-layout (after accelerate-dot): the tensor-core layout flows
// forward from the dots into the ops that use their results.
#pragma once

#include "compiler/ir/IR.h"

namespace tessera::passes {

void propagateMmaLayout(ir::Function &fn);

} // namespace tessera::passes
