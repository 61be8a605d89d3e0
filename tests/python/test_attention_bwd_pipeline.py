"""The dK/dV loops of Triton's tutorial 06 attention backward (tests/golden/software-pipeline/
attn_bwd_dkdv.py) on sm_90a: K and V, read by both key loops, are staged in shared memory once
(not stored again before the second loop, which kept them in registers across the first), and
Q^T and dO, each B of one dot as they are and of another through tl.trans, are copied into one
ring each by cp.async that both dots read (local_load {transpose = 1}: the stage read the other
way, as Triton's memdesc_trans). Before, each of the four dots staged its register operand
through shared memory every step: 12 barriers and 26 st.shared a step in the masked loop, and
255 registers with 316 bytes spilled (now 1 barrier, no st.shared, no spills); the tutorial's
_attn_bwd at D=64 / 4 warps / 5 stages went from 436 to 0 bytes spilled, its key steps from
325 / 514 / 282 / 422 SASS instructions to 219 / 314 / 222 / 282 (Triton: 267 / 331 / 220 / 260).
The interpreter runs the IR after every pass (TESSERA_INTERPRET_PASSES=1) against numpy."""
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import PTXAS, ROOT, run_cli

import tessera

sys.path.insert(0, str(ROOT / "tests" / "golden" / "software-pipeline"))
from attn_bwd_dkdv import attn_bwd_dkdv  # noqa: E402

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

KERNEL = ROOT / "tests" / "golden" / "software-pipeline" / "attn_bwd_dkdv.py"
SIG = "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,*fp32:16,i32:16,i32:16"
ARGS = ["--kernel", "attn_bwd_dkdv", "--signature", SIG, "--constexpr", "BLOCK_M=32", "--constexpr", "BLOCK_N=128",
        "--constexpr", "HEAD_DIM=64", "--num-warps", "4", "--num-stages", "5", "--arch", "sm_90a"]


def loops(ptx):
    """The text of each loop (from a label to the branch back to it)."""
    found = []
    for m in re.finditer(r"^(\$L__BB\d+_\d+):", ptx, re.M):
        back = re.search(r"bra(\.uni)?\s+" + re.escape(m.group(1)) + ";", ptx[m.end():])
        if back:
            found.append(ptx[m.end():m.end() + back.end()])
    return found


def test_loops_read_their_operands_from_rings(tmp_path):
    ptx = tmp_path / "dkdv.ptx"
    run_cli(["compile", str(KERNEL), *ARGS, "-o", str(ptx)], check=True)
    text = ptx.read_text()
    bodies = [b for b in loops(text) if "wgmma.mma_async" in b]
    assert len(bodies) == 2, text
    for body in bodies:
        assert body.count("bar.sync") == 1, body  # the ring's; no dot stages an operand
        assert not re.search(r"\bst\.shared|\bld\.shared", body), body
        assert "cp.async" in body
    info = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(ptx), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert info.returncode == 0, info.stderr
    assert "0 bytes spill stores" in info.stdout + info.stderr, info.stderr
    # The 128-row dots start from zero with scale-d = 0: no zeros moved into the accumulator
    # between the two slabs' wgmmas, where ptxas injected a warpgroup arrive (2 of them before).
    assert "C75" not in info.stdout + info.stderr, info.stderr


def test_k_and_v_are_staged_once(tmp_path):
    ir = run_cli(["compile", str(KERNEL), *ARGS, "--emit", "ir-opt", "--stop-after", "software-pipeline"],
                 check=True).stdout
    assert ir.count("local_store") == 2, ir
    assert ir.count("{transpose = 1}") == 4, ir  # dO^T and (Q^T)^T in each loop


@pytest.mark.parametrize("N", [256, 384])
def test_after_all_passes_against_numpy(monkeypatch, N):
    monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")
    kernel = tessera.jit(attn_bwd_dkdv.fn, interpret=True)
    D, BM, BN = 64, 32, 128
    rng = np.random.default_rng(N)
    q, k, v, do = ((0.5 * rng.standard_normal((N, D))).astype(np.float16) for _ in range(4))
    q64, k64, v64, do64 = (x.astype(np.float64) for x in (q, k, v, do))
    s = q64 @ k64.T  # in log2 units (the tutorial scales K by sm_scale / ln 2 first); causal
    s = np.where(np.tril(np.ones((N, N), bool)), s, -np.inf)
    m = s.max(1) + np.log2(np.exp2(s - s.max(1)[:, None]).sum(1))
    p = np.exp2(s - m[:, None])
    delta = (p @ v64 * do64).sum(1)
    ds = p * (do64 @ v64.T - delta[:, None])
    ref_dv, ref_dk = p.T @ do64, ds.T @ q64
    dk, dv = np.full((N, D), np.nan, np.float16), np.full((N, D), np.nan, np.float16)
    kernel[(N // BN,)](q, k, v, do, dk, dv, m.astype(np.float32), delta.astype(np.float32), D, N,
                       BLOCK_M=BM, BLOCK_N=BN, HEAD_DIM=D, num_warps=4, num_stages=5)
    ir = kernel._interpreter.ir()
    assert ir.count("{transpose = 1}") == 4 and ir.count("local_store") == 2, ir
    for got, ref in ((dv, ref_dv), (dk, ref_dk)):
        assert np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref) <= 1e-2
