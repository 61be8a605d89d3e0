"""A loop-carried block advanced by cheap math (`offs_k = (offs_k + BK) % BK`, lang_kernels/m_major_a.py
with USE_G, which tests/gpu/test_wgmma_m_major_a.py runs on the GPU) and read in two
layouts is carried a second time in the other layout (remove-layout-conversions' recarry). The
recomputed update must not read a value the body defines later: the splat of BK that the
original update reads came after the reads of offs_k, and reusing it there left an undefined
operand ("tiling: operand of 'add' has no layout yet"; Hopper's M-major-A matmul tests)."""
import numpy as np
import pytest

from lang_support import assemble, compile_kernel
from ptx_emulator import GlobalMemory, run_kernel

SIG = "*bf16:16,*bf16:16,*fp32:16,i32:16,i32:16,i32:16"


def ptx_for(arch, bm=32, bn=32, bk=32):
    return compile_kernel("m_major_a.py", "m_major_a_matmul", SIG, {"USE_G": True, "BM": bm, "BN": bn, "BK": bk},
                          arch=arch, extra=["--num-warps", "4", "--num-stages", "3"])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_compiles_and_assembles(arch, tmp_path):
    ptx = ptx_for(arch)
    assert "mma.sync" in ptx or "wgmma" in ptx
    assemble(ptx, arch, tmp_path)


def test_emulated_ptx_matches_numpy():
    M, N, K = 32, 32, 80
    rng = np.random.default_rng(7)
    a = rng.standard_normal((K, M)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    bf16 = lambda x: (x.view(np.uint32) >> 16).astype(np.uint16)  # noqa: E731 (truncation: exact in the reference)
    a16, b16 = bf16(a), bf16(b)
    widen = lambda h: (h.astype(np.uint32) << 16).view(np.float32).astype(np.float64)  # noqa: E731
    mem = GlobalMemory()
    c = mem.alloc(np.full((M, N), np.nan, np.float32))
    run_kernel(ptx_for("sm_80"), grid=(1, 1), block=(128,), args=[mem.alloc(a16), mem.alloc(b16), c, M, N, K],
               memory=mem, shared_bytes=48 * 1024)
    got = mem.read(c, np.float32, M * N).reshape(M, N)
    np.testing.assert_allclose(got, widen(a16).T @ widen(b16), rtol=1e-4, atol=1e-4)
