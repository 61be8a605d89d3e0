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
void accelerateDot(ir::Function &fn, const std::string &arch, bool wgmma = true);

// The k extent of one mma.sync for inputs `in` accumulating into `out`
// (16 for f16/bf16 -> f32, 8 for tf32, 32 for i8 -> i32), or 0 when no
// tensor-core instruction fits. input_precision "ieee"/"tf32x3" keep f32
// dots exact (FMA lowering).
int64_t mmaKStep(ir::ScalarType in, ir::ScalarType out, const std::string &inputPrecision);

} // namespace tessera::passes
