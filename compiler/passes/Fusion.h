// Fusion: folds the elementwise chain between a layout conversion and the
// value's narrowing cast (a dot's or reduction's epilogue, e.g. the inlined
// `EPILOGUE(acc, bias).to(tl.float16)` of a fused GEMM) so that the
// conversion moves the narrow values, never adding a conversion.
// docs/fusion.md explains where fusion happens (the specialiser inlines the
// functions; this pass cleans up the chain they leave).
#pragma once

#include "compiler/ir/IR.h"

namespace tessera::passes {

void fuseElementwiseChains(ir::Function &fn);

} // namespace tessera::passes
