"""dot(a, w.T) of a [BN x BK] weight block (Unsloth's MoE grouped GEMM) compiles to a
pipelined loop on sm_90a: both blocks are cp.async copies into the ring (the weight
block into a transposed tile), nothing is loaded into registers in the loop, no
trans goes through shared memory, and ptxas keeps it without spills. Before, the
weight block was loaded with ld.global, transposed through shared memory and staged
by the dot every step (4 barriers a step; Unsloth's 64x128x64 / 8 warps: 176
registers, 6 cp.async against Triton's 18)."""
import re
import subprocess

import pytest

from conftest import PTXAS, ROOT, run_cli

KERNEL = ROOT / "tests" / "golden" / "software-pipeline" / "trans_b.py"
SIG = "*bf16:16,*bf16:16,*fp32:16,i32,i32,i32:16,i32:16,i32:16,i32:16"


def compile_trans_b(tmp_path, bm, bn, bk, warps, stages=3):
    ptx = tmp_path / f"trans_b_{bm}_{bn}_{bk}_{warps}.ptx"
    run_cli(["compile", str(KERNEL), "--kernel", "trans_b_matmul", "--signature", SIG,
             "--constexpr", f"BM={bm}", "--constexpr", f"BN={bn}", "--constexpr", f"BK={bk}",
             "--num-warps", str(warps), "--num-stages", str(stages), "--arch", "sm_90a", "-o", str(ptx)], check=True)
    info = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(ptx), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert info.returncode == 0, info.stderr
    return ptx.read_text(), info.stderr


def copies_per_stage(bm, bn, bk, warps):
    return (bm * bk + bn * bk) * 2 // 16 // (32 * warps)  # 16-byte cp.async per thread


# Unsloth's 64 x 128 x 64 on 8 warps takes wgmma with warpgroups along N (wpc = [4, 2],
# tests/python/test_split_n_wgmma.py); 2 warps keep mma.sync.
@pytest.mark.parametrize("bm, bn, bk, warps, wgmma", [(64, 128, 64, 8, True), (128, 128, 64, 8, True),
                                                      (64, 64, 32, 4, True), (64, 64, 32, 2, False)])
def test_transposed_weight_block_is_copied_into_the_ring(tmp_path, bm, bn, bk, warps, wgmma):
    text, info = compile_trans_b(tmp_path, bm, bn, bk, warps)
    assert ("wgmma.mma_async" in text) == wgmma
    # 3 stages: two in the prologue, one a step in the loop
    assert text.count("cp.async.cg.shared.global") == 3 * copies_per_stage(bm, bn, bk, warps), text
    assert not re.search(r"\bld\.global", text), "a block is still loaded into registers"
    if not wgmma:
        assert "ldmatrix" in text and ".trans" not in text  # B comes K-major: ldmatrix without .trans
    assert "0 bytes spill stores" in info, info
