// DeferWgmmaWaits (runs last): a wgmma dot that is not `async` (the
// pipeline pass's loop-carried case) issues its wgmmas and waits for them at
// once. When its result is first read further down the same block, the wait
// moves there: the dot is marked `deferred` (codegen commits its group and
// goes on) and `r = dot_wait(r) {pending = k}` goes before the first reader,
// k being the wgmma dots issued in between (each commits one group, and
// wait_group k leaves only those k running). So the tensor cores work on
// the dot while the ops in between run — FlashAttention-3's overlap of
// S = Q·K_{j+1}ᵀ and P_j·V_j with the softmax, when the kernel issues both
// dots before reading S (kernels/attention.py).
//
// The wait never moves past an op with regions (its commits and waits are
// not counted), a write to shared memory (local_store, cp.async copies, which
// might overwrite what the wgmmas read), a local_dealloc, or the block's
// terminator; it goes before the first of those instead. The pipeline pass's
// TMA copies (async_tma_copy) write a stage that no wgmma in flight reads
// (SoftwarePipelineTma.cpp, refillRings), and the wait moves past them: the
// copying thread issues them in the shadow of S = Q·Kᵀ.
#pragma once

#include "compiler/ir/IR.h"

namespace tessera::passes {

void deferWgmmaWaits(ir::Function &fn);

} // namespace tessera::passes
