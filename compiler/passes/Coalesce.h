// Coalesce: block loads and stores get layouts made for wide, coalesced
// memory accesses (from the axis analysis' contiguity and alignment).
#pragma once

#include "compiler/ir/IR.h"

namespace tessera::passes {

void coalesce(ir::Function &fn);

} // namespace tessera::passes
