// Accelerate-dot: dots that tensor cores can run (fp16/bf16 inputs, fp32
// accumulator, block shape and warps fitting mma.sync m16n8k16) get an Mma
// result layout; their operands are converted to dot-operand layouts. See
// docs/tensor-cores.md.
#pragma once

#include "compiler/ir/IR.h"

#include <cstdint>
#include <string>

namespace tessera::passes {

// `arch`: "sm_80" ... "sm_90a"; below sm_80 nothing changes. The pipeline runs
// it only with tensor cores on (--tensor-cores / TESSERA_MMA=1).
// `wgmma`: on sm_90a, use Hopper's wgmma where it fits (TESSERA_WGMMA=0 turns it off).
// fp8 dots (widened to f16 by the front-end, marked `fp8`) get their fp8
// operands back where fp8 wgmma (sm_90a) or fp8 mma.sync (sm_89+) takes them.
void accelerateDot(ir::Function &fn, const std::string &arch, bool wgmma = true);

} // namespace tessera::passes
