// Shape ops in registers: reshape, trans, split and join only renumber
// elements, so when every thread already holds the elements its result
// registers want, the op is a choice of registers and moves no data
// (Triton finds such layouts with linear layouts). The tiling pass asks for
// result layouts that make it so (inRegisterResultLayouts); codegen checks
// the layouts it is given, thread by thread, and picks the registers
// (registersInThread), else goes through shared memory.
//
// Blocked layouts (and the mma accumulators, register-for-register blocked)
// with power-of-two parameters are linear maps from the bits of (register,
// lane, warp) to the bits of the row-major element index, each input bit
// giving one index bit. A reshape keeps the row-major index, so the result
// dims take consecutive runs of its bits; a run is a blocked dim when its
// bits read, from the lowest: registers, lanes, warps, registers (or lanes,
// registers, warps, registers: an interleaved dim, as the wgmma accumulator's
// rows), with each dim's lanes (warps) a consecutive run of the lane (warp)
// id's bits. Lane and warp bits that give no index bit (threads holding
// copies) are placed where a blocked dim wraps. trans permutes the dims; split drops, and join adds, a last dim
// of 2 held in one thread's registers.
#pragma once

#include "compiler/ir/IR.h"
#include "compiler/ir/Layout.h"
#include "compiler/ir/LayoutMath.h"

#include <optional>
#include <utility>
#include <vector>

namespace tessera::ir {

// True for the ops this file handles.
bool isRegisterShapeOp(OpCode code);

// For result `k` of shape op `op` (reshape, trans, split, join; or a
// convert_layout, whose result holds the same elements) in layout
// `result`, its operands in `operands`: the (operand, register) that holds
// each result register's element, the same in every thread; nullopt when
// some thread would need an element another thread holds.
std::optional<std::vector<std::pair<unsigned, unsigned>>>
registersInThread(const Operation &op, unsigned k, const std::vector<DistributedLayout> &operands,
                  const DistributedLayout &result);

// Layouts for op's results (one per result) that make it a choice of
// registers when its operands are in `operandLayout` (join: both operands);
// empty when that layout allows none (slices, elements spread over threads
// along a split dim, a reshape whose bits make no blocked layout). Threads
// holding copies (a [1, N] row) keep them: the copies' lanes and warps go to
// a dim of extent 1, else on top of a dim's own, where they wrap.
// A 2-D result register-for-register equal to the wgmma accumulator is given
// as that #mma layout.
std::vector<LayoutRef> inRegisterResultLayouts(const Operation &op, const LayoutRef &operandLayout,
                                               unsigned numWarps);

// The layout a reshape's operand needs for the reshape to give `result` in
// registers (a reshape read backwards is a reshape: the same bits); nullptr
// when there is none. Lets an index block built as tl.arange(0, N).reshape(...)
// be recomputed in another layout instead of converted.
LayoutRef inRegisterReshapeOperandLayout(const Operation &reshape, const LayoutRef &result, unsigned numWarps);

// Likewise for a join: the layout both operands need for the join to give `result` in registers
// (the result's with its last dim, two registers of a thread, dropped); nullptr when there is none.
LayoutRef inRegisterJoinOperandLayout(const Operation &join, const LayoutRef &result);

} // namespace tessera::ir
