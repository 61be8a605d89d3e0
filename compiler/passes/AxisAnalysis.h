// Axis analysis: contiguity, divisibility and constancy of integer and
// pointer values along each dim (compiler/ir/AxisInfo.h), written onto block
// loads and stores as the attributes contiguity, alignment (bytes) and
// mask_constancy.
#pragma once

#include "compiler/ir/IR.h"

namespace tessera::passes {

void analyzeAxes(ir::Function &fn);

} // namespace tessera::passes
