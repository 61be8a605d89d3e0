// Axis analysis: contiguity, divisibility and constancy of integer and
// pointer values along each dim, written onto block loads and stores as
// the attributes contiguity, alignment (bytes) and mask_constancy.
#pragma once

#include "compiler/ir/IR.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace tessera::passes {

void analyzeAxes(ir::Function &fn);

// The same analysis without touching the IR, for codegen on the final IR: per block
// compare, the constancy of its result along each dim (runs of that many elements,
// starting at multiples of it, are equal). Codegen evaluates one compare per run
// (docs/codegen.md, masks).
std::unordered_map<const ir::Operation *, std::vector<int64_t>> compareConstancy(ir::Function &fn);

} // namespace tessera::passes
