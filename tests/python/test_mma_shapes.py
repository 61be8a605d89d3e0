"""tf32 (m16n8k8) and int8 (m16n8k32) tensor-core dots on the CPU: the
kernel in mma_kernels.py through the interpreter on the IR codegen sees
(pipelined, dot on tensor-core layouts) against numpy, and its PTX through
ptxas with the right mma.sync shapes."""
import os
import subprocess

import numpy as np
import pytest

from conftest import PTXAS, ROOT, run_cli

import tessera  # noqa: E402
from mma_kernels import gemm  # noqa: E402

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

SIG = "*{t}:16,*{t}:16,*{o}:16,i32,i32,i32:16,i32:16,i32:1,i32:16,i32:1,i32:16,i32:1"


def run(monkeypatch, dtype, M, N, K, stages, BK):
    monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")
    kernel = tessera.jit(gemm.fn, interpret=True)
    rng = np.random.default_rng(M + N + K)
    if dtype == np.int8:
        a = rng.integers(-128, 128, (M, K)).astype(np.int8)
        b = rng.integers(-128, 128, (K, N)).astype(np.int8)
        c = np.full((M, N), -7, np.int32)
    else:
        a = rng.standard_normal((M, K)).astype(np.float32)
        b = rng.standard_normal((K, N)).astype(np.float32)
        c = np.full((M, N), np.nan, np.float32)
    kernel[(tessera.cdiv(M, 32), tessera.cdiv(N, 32))](
        a, b, c, M, N, K, K, 1, N, 1, N, 1, BM=32, BN=32, BK=BK, INT_ACC=dtype == np.int8, num_warps=4,
        num_stages=stages)
    ir = kernel._interpreter.ir()
    assert "#mma<" in ir and "local_load" in ir, ir
    return a, b, c


@pytest.mark.parametrize("M, N, K", [(32, 32, 64), (45, 37, 100)])
def test_int8_dot_is_exact(monkeypatch, M, N, K):
    a, b, c = run(monkeypatch, np.int8, M, N, K, 3, 32)
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))


@pytest.mark.parametrize("M, N, K", [(32, 32, 32), (50, 40, 70)])
def test_fp32_dot_on_tensor_cores(monkeypatch, M, N, K):
    a, b, c = run(monkeypatch, np.float32, M, N, K, 2, 16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # The interpreter computes in full fp32; the GPU rounds the inputs to tf32.
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) <= 1e-5


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype, out, instruction, bk, warps", [
    ("fp32", "fp32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 32, 8),
    ("i8", "i32", "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", 64, 8)])
def test_mma_shapes_in_ptx(tmp_path, arch, dtype, out, instruction, bk, warps):
    ptx = tmp_path / "k.ptx"
    run_cli(["compile", str(ROOT / "tests/python/mma_kernels.py"), "--kernel", "gemm", "--signature",
             SIG.format(t=dtype, o=out), "--constexpr", "BM=128", "--constexpr", "BN=128", "--constexpr", f"BK={bk}",
             "--constexpr", f"INT_ACC={int(dtype == 'i8')}", "--num-warps", str(warps), "--num-stages", "3", "--arch", arch,
             "-o", str(ptx)], check=True)
    text = ptx.read_text()
    assert instruction in text
    assert "cp.async.cg.shared.global" in text and "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in text
    if dtype == "fp32":
        assert "cvt.rna.tf32.f32" in text
    proc = subprocess.run([str(PTXAS), f"-arch={arch}", "-v", str(ptx), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    if os.environ.get("TESSERA_BACKEND", "llvm") != "nvrtc":  # NVRTC's code needs more registers (docs/nvrtc.md)
        assert "0 bytes spill stores" in proc.stderr, proc.stderr
