"""A loop over a group of rows cut short at the end, `for r in range(start, min(start + GROUP, n))`
(Unsloth's RoPE): where the group is whole it runs GROUP iterations, which LLVM 19 cannot see from
the min, so the loop stayed a generic one whose loads waited for the previous row's stores. Codegen
gives whole groups a copy counted to GROUP, which LLVM unrolls; ptxas then issues every row's loads
before the stores (in the SASS of Unsloth's RoPE: 8 LDG, then 8 STG, as Triton's).
The copy for cut groups stays a loop. (tests/gpu/test_realworld_perf_paths.py runs both on the GPU.)"""
import re

import pytest

from lang_support import assemble, compile_kernel

SIG = "*bf16:16,*bf16:16,*bf16:16,i32"


def straight_runs(ptx):
    """The PTX cut at labels and branches: the straight-line stretches."""
    return re.split(r"\n\$L__BB\d+_\d+:|\bbra(?:\.uni)?\s", ptx)


def loads_in_one_stretch(ptx):
    return max(run.count("ld.global") for run in straight_runs(ptx))


@pytest.mark.parametrize("group", [2, 4, 8])
def test_whole_groups_are_unrolled(tmp_path, group):
    ptx = compile_kernel("grouped_rows.py", "rotate_row_groups", SIG, {"GROUP": group, "HALF": 64, "ROW_STRIDE": 128})
    assemble(ptx, "sm_90a", tmp_path)
    # one straight stretch loads both halves of all GROUP rows (ptxas then issues them together:
    # the rows are constant offsets apart)
    assert loads_in_one_stretch(ptx) >= 2 * group


def test_a_group_larger_than_the_limit_stays_one_loop():
    ptx = compile_kernel("grouped_rows.py", "rotate_row_groups", SIG, {"GROUP": 16, "HALF": 64, "ROW_STRIDE": 128})
    assert loads_in_one_stretch(ptx) < 2 * 16
