"""Dots on blocks with fewer 16 x 8 tiles than warps (GPTQ's small-M GEMM: 16 x 16 on 4 warps) run on
mma.sync as Triton's do, the extra warps repeating the tiles of the first ones
(compiler/passes/AccelerateDot.cpp chooses the warps, compiler/codegen/MmaDot.cpp wraps their tile
indices); they took the FMA lowering. The PTX, run by tests/python/ptx_emulator.py, agrees with numpy,
staged by the dot (1 stage) and from the cp.async ring (3 stages)."""
import numpy as np
import pytest

from lang_support import assemble, compile_kernel
from ptx_emulator import GlobalMemory, run_kernel

CASES = [(16, 16, 4), (16, 8, 4), (32, 16, 8), (16, 32, 8)]  # BM, BN, warps


def small_gemm_ptx(bm, bn, warps, stages, arch="sm_90a"):
    return compile_kernel("small_dots.py", "small_gemm", "*fp16:16,*fp16:16,*fp32:16,i32:16",
                          {"BM": bm, "BN": bn, "BK": 32}, arch=arch,
                          extra=["--num-warps", str(warps), "--num-stages", str(stages)])


@pytest.mark.parametrize("bm, bn, warps", CASES)
def test_small_blocks_take_mma_sync(bm, bn, warps, tmp_path):
    for arch in ("sm_80", "sm_90a"):
        ptx = small_gemm_ptx(bm, bn, warps, 3, arch)
        assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx and "fma.rn.f32" not in ptx
        assemble(ptx, arch, tmp_path)


@pytest.mark.parametrize("bm, bn, warps", CASES)
@pytest.mark.parametrize("stages", [1, 3])
def test_emulated_small_gemm_matches_numpy(bm, bn, warps, stages):
    K = 96
    rng = np.random.default_rng(bm * bn + warps + stages)
    a = rng.standard_normal((bm, K)).astype(np.float16)
    b = rng.standard_normal((K, bn)).astype(np.float16)
    mem = GlobalMemory()
    c = mem.alloc(np.full((bm, bn), np.nan, np.float32))
    run_kernel(small_gemm_ptx(bm, bn, warps, stages), grid=(1,), block=(32 * warps,),
               args=[mem.alloc(a), mem.alloc(b), c, K], memory=mem, shared_bytes=48 * 1024)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(mem.read(c, np.float32, bm * bn).reshape(bm, bn), want, rtol=1e-4, atol=1e-4)
