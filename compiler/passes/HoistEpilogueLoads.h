// HoistEpilogueLoads (after fusion): the loads of a GEMM's epilogue (a
// residual tile, a bias) are issued before the wait for the main loop's last
// wgmmas, so their global-memory latency runs under those wgmmas instead of
// after them, while the SM's tensor cores would otherwise idle.
//
// `dot_wait` (the pipeline pass's wait for the asynchronous wgmma dots of the
// K loop) is followed by the store stage. Each load after it, in the same
// block and before anything that may write global memory (a store, an
// atomic, an op with regions, an impure inline_asm), whose operands are
// computed by pure ops that do not read the wait's result, moves with those
// ops to just before the wait. Shared-memory ops in between (the ring's
// barrier and frees) do not matter: the loads read global memory.
//
// The moved loads' registers are live across the wait, beside the
// accumulator: loads move only while the accumulator's and their registers
// per thread stay within a budget and theirs within half the accumulator's
// (a 16-bit tile loaded as vectors; HoistEpilogueLoads.cpp), so ptxas keeps
// them without spilling or losing a CTA per SM. Loads that do not fit stay
// where they are. Bias rows and columns stay too: every tile reads them (L2
// hits), and their copies in the accumulator's layout take many registers.
//
// The wait takes the moved loads as operands (anchors: codegen makes the
// wait depend on their values, WgmmaDot.cpp, so neither LLVM nor ptxas
// moves them back below it), and tiles without a cache policy get
// evict_first: read once per tile, they should not push the K loop's A and
// B panels, which other tiles read again, out of L2.
#pragma once

#include "compiler/ir/IR.h"

namespace tessera::passes {

void hoistEpilogueLoads(ir::Function &fn);

} // namespace tessera::passes
