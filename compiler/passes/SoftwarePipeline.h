// Software-pipeline: software-pipelines `for` loops whose loads feed tensor-core dots.
// The loads become cp.async copies into a ring of `numStages` shared-memory
// buffers issued numStages - 1 iterations ahead, and the dot reads its
// operands straight from the ring. See docs/tensor-cores.md.
#pragma once

#include "compiler/ir/IR.h"

namespace tessera::passes {

// Runs after accelerate-dot; numStages < 2 leaves the kernel as it is.
void softwarePipeline(ir::Function &fn, unsigned numStages);

} // namespace tessera::passes
