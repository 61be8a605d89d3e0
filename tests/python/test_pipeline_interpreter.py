"""The pipeline pass, checked on the CPU: matmul kernels run in the host
interpreter on the IR that code generation sees (TESSERA_INTERPRET_PASSES=1:
accelerate-dot and pipeline applied, cp.async copies into a ring of
num_stages shared buffers, the dot reading its operands from the ring)
against numpy — ragged shapes so that the copies past the end and the
masked-off elements must come out as zeros."""
import sys

import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))

import tessera  # noqa: E402
from kernels import matmul  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "golden" / "software-pipeline"))
from carried_pointers import carried_pointer_matmul  # noqa: E402

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


def run_bundled(M, N, K, stages, dtype, b_transposed=False):
    kernel = tessera.jit(matmul.matmul_kernel.fn, interpret=True)
    rng = np.random.default_rng(M * 1000 + N * 10 + K)
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((N, K)).astype(dtype).T if b_transposed else rng.standard_normal((K, N)).astype(dtype)
    c = np.full((M, N), np.nan, np.float32)
    BM, BN, BK = 32, 32, 16
    grid = (tessera.cdiv(M, BM) * tessera.cdiv(N, BN),)
    es = a.itemsize
    kernel[grid](a, b, c, M, N, K, a.strides[0] // es, a.strides[1] // es, b.strides[0] // es,
                 b.strides[1] // es, c.strides[0] // 4, c.strides[1] // 4,
                 BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=2, num_warps=4, num_stages=stages)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    return kernel, c, ref


@pytest.fixture
def all_passes(monkeypatch):
    monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("M, N, K", [(64, 64, 64), (45, 37, 29), (33, 70, 100), (20, 8, 16)])
def test_pipelined_matmul(all_passes, M, N, K, stages):
    kernel, c, ref = run_bundled(M, N, K, stages, np.float16)
    ir = kernel._interpreter.ir()
    assert ir.count("async_copy") == 2 * stages, ir  # (stages - 1) prologue copies + 1 in the loop, per operand
    assert "local_load" in ir and "async_wait {pending = %d}" % (stages - 2) in ir
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) <= 1e-3


def test_pipelined_matmul_transposed_b(all_passes):
    kernel, c, ref = run_bundled(40, 48, 72, 3, np.float16, b_transposed=True)
    assert kernel._interpreter.ir().count("async_copy") == 6
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) <= 1e-3


def test_one_stage_leaves_the_loop_alone(all_passes):
    kernel, c, ref = run_bundled(45, 37, 29, 1, np.float16)
    assert "async_copy" not in kernel._interpreter.ir()
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) <= 1e-3


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("M, N, K", [(32, 32, 64), (50, 40, 90)])
def test_carried_pointer_blocks_are_pipelined(all_passes, M, N, K, stages):
    kernel = tessera.jit(carried_pointer_matmul.fn, interpret=True)
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    BM, BN, BK = 32, 32, 16
    kernel[(tessera.cdiv(M, BM), tessera.cdiv(N, BN))](
        a, b, c, M, N, K, K, 1, N, 1, N, 1, BM=BM, BN=BN, BK=BK, num_warps=4, num_stages=stages)
    ir = kernel._interpreter.ir()
    assert ir.count("async_copy") == 2 * stages, ir
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) <= 1e-3


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("M, N, K", [(32, 32, 64), (45, 37, 90)])
def test_transposed_weight_blocks_are_pipelined(all_passes, M, N, K, stages):
    # dot(a, w.T) of a [BN x BK] block: staged by transposing copies (no trans left in the loop).
    sys.path.insert(0, str(ROOT / "tests" / "golden" / "software-pipeline"))
    from trans_b import trans_b_matmul
    kernel = tessera.jit(trans_b_matmul.fn, interpret=True)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((M, K)).astype(np.float16)
    w = rng.standard_normal((N, K)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    BM, BN, BK = 32, 32, 16
    kernel[(tessera.cdiv(M, BM), tessera.cdiv(N, BN))](a, w, c, M, N, K, K, K, N, BM=BM, BN=BN, BK=BK,
                                                        num_warps=4, num_stages=stages)
    ir = kernel._interpreter.ir()
    assert ir.count("async_copy") == 2 * stages, ir
    assert ir.count("transpose = 1") == stages and " trans " not in ir, ir
    ref = a.astype(np.float64) @ w.astype(np.float64).T
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) <= 1e-3
