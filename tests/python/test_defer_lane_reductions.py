"""defer-lane-reductions (compiler/passes/DeferLaneReductions.h): which loop-carried sums keep
per-lane partial sums, and which must not (kernels: lang_kernels/lane_sums.py). The golden case
tests/golden/defer-lane-reductions/ shows the IR of one that does; tests/gpu/test_lang_ops.py runs
the kernels on the GPU."""
import re

import pytest

from lang_support import compile_kernel

MUST_STAY_WHOLE = ["read_in_loop", "from_one", "plus_one", "squared"]


def compile_sum(variant, block=16, emit="ir-opt"):
    return compile_kernel("lane_sums.py", "row_sums", "*fp32:16,*fp32:16,i32", {"BLOCK": block, "VARIANT": variant},
                          emit=emit, extra=["--num-warps", "4"])


def test_an_online_sum_keeps_partial_sums_in_the_loop():
    ir = compile_sum("online")
    assert re.search(r'reduce %\d+ \{axis = 1, kind = "sum", partial = 1\}', ir), ir
    assert re.search(r'reduce %\d+ \{axis = 1, kind = "max"\}', ir), ir  # not linear: whole
    # tpw = [2, 16]: the 16 lanes of a row, added once after the loop.
    assert re.search(r'\}\n  %\d+ = lane_reduce %\d+ \{kind = "sum", lane_masks = \[1, 2, 4, 8\]\}', ir), ir


def loop_and_after(ptx):
    """The PTX of the loop (from the label a branch jumps back to, to that branch) and what follows."""
    for branch in reversed(list(re.finditer(r"\bbra(?:\.uni)? \t?(\$L__BB\d+_\d+);", ptx))):
        head = ptx.find(branch.group(1) + ":")
        if 0 <= head < branch.start():
            return ptx[head:branch.end()], ptx[branch.end():]
    raise AssertionError("no loop in the PTX")


def test_the_lanes_are_added_once_after_the_loop():
    shuffles = lambda text: len(re.findall(r"shfl\.sync\.bfly\.b32", text))
    loop, after = loop_and_after(compile_sum("online", emit="ptx"))
    whole_loop, whole_after = loop_and_after(compile_sum("plus_one", emit="ptx"))
    # The loop keeps the maximum's shuffles only; the sum's go after it.
    assert 2 * shuffles(loop) == shuffles(whole_loop) and shuffles(after) == shuffles(loop) > 0
    assert shuffles(whole_after) == 0


@pytest.mark.parametrize("variant", MUST_STAY_WHOLE)
def test_sums_that_must_stay_whole(variant):
    ir = compile_sum(variant)
    assert "partial" not in ir and "lane_reduce" not in ir, ir


def test_a_sum_across_warps_stays_whole():
    # 64 columns over 4 warps: wpc = [2, 2], the reduce's last step goes through shared memory.
    ir = compile_sum("online", block=64)
    assert "wpc=[2,2]" in ir and "lane_reduce" not in ir, ir
