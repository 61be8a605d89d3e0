// DeferLaneReductions (after the layouts are final): a sum carried by a loop,
// as the online softmax's row sum  l = l * alpha + sum(p, axis=1),  is
// linear in its partial sums. A row of p is split over a few lanes (the
// 4 lanes of a quad in the mma layouts), so reduce(sum) ends with butterfly
// shuffles every iteration, a dependent shfl/add chain that stalls the
// warp between its tensor-core instructions. Instead each lane keeps its
// own partial sum through the loop (the reduce is marked `partial`: each
// thread adds its registers only) and one lane_reduce after the loop adds
// the lanes up, as FlashAttention-3 does with its row sums.
//
// It applies to a loop-carried value whose update is built only from
//   the carried value itself, reduce(sum) of the body (not across warps),
//   add(partial, partial), mul(partial, x), fma(partial, x, partial),
//   fma(x, partial, partial)
// where x is any value not built from a partial one (the same in every lane
// of the row: alpha), each partial value read once, and whose initial value
// is a zero constant or the lane_reduce of an earlier such loop (the two key
// sweeps of the attention forward then share one lane_reduce at the end).
#pragma once

#include "compiler/ir/IR.h"

namespace tessera::passes {

void deferLaneReductions(ir::Function &fn);

} // namespace tessera::passes
