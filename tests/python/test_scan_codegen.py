"""The scan lowering follows the layout (compiler/codegen/Scan.cpp): a thread scans its own
run, lanes combine with shfl.sync.up (down for a reverse scan), and only warps along the axis
meet in shared memory, behind one barrier (fla's chunk_local_cumsum kernels; the shared-memory
Hillis-Steele form took two barriers per log2(n) step). Results are checked on the GPU by
tests/gpu/test_scan_layouts.py."""
import re

import pytest

from lang_support import compile_and_assemble

SIG = "*fp32:16,*fp32:16"


def barriers(ptx):
    return len(re.findall(r"\bbar\.sync\b|\bbarrier\.sync\b", ptx))


@pytest.mark.parametrize("reverse", [0, 1])
def test_scan_across_warps_takes_one_round_through_shared_memory(tmp_path, reverse):
    # fla's chunk_local_cumsum_vector: [64, 32] along the rows, 4 warps along them.
    ptx = compile_and_assemble(tmp_path, "scans.py", "scan_2d", SIG,
                               {"M": 64, "N": 32, "AXIS": 0, "REVERSE": reverse}, extra=["--num-warps", "4"])
    assert barriers(ptx) <= 2, ptx
    assert ("shfl.sync.down" if reverse else "shfl.sync.up") in ptx


@pytest.mark.parametrize("m, n, axis", [(64, 32, 1), (16, 128, 1), (4, 64, 1), (32, 8, 1)])
def test_scan_within_a_warp_needs_no_barrier(tmp_path, m, n, axis):
    ptx = compile_and_assemble(tmp_path, "scans.py", "scan_2d", SIG,
                               {"M": m, "N": n, "AXIS": axis, "REVERSE": 0}, extra=["--num-warps", "4"])
    assert barriers(ptx) == 0, ptx
    assert "shfl.sync.up" in ptx


@pytest.mark.parametrize("warps", [1, 4, 8])
@pytest.mark.parametrize("reverse", [0, 1])
def test_non_commutative_scan_assembles(tmp_path, warps, reverse):
    for m, n, axis in [(64, 32, 0), (4, 256, 1), (2, 8, 0)]:
        ptx = compile_and_assemble(tmp_path, "scans.py", "affine_scan_2d", "*fp32,*fp32,*fp32,*fp32",
                                   {"M": m, "N": n, "AXIS": axis, "REVERSE": reverse},
                                   extra=["--num-warps", str(warps)])
        assert barriers(ptx) <= 2
