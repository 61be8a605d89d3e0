// Tiling (layout assignment): attaches a Layout to every block value of the
// kernel, inserting convert_layout ops where two layouts meet.
#pragma once

#include "compiler/ir/IR.h"

namespace tessera::passes {

void assignLayouts(ir::Function &fn);

} // namespace tessera::passes
