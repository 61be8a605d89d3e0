"""kernels/matmul.py through the host interpreter against numpy (no GPU):
ragged M, N, K (not multiples of the block), the GROUP_M program order,
strided (transposed) B."""
import sys

import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))

import tessera  # noqa: E402
from kernels import matmul  # noqa: E402

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


@pytest.mark.parametrize("M, N, K", [(32, 32, 32), (45, 37, 29), (70, 16, 50), (1, 33, 17)])
def test_matmul_interpreted(M, N, K):
    kernel = tessera.jit(matmul.matmul_kernel.fn, interpret=True)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    bt = rng.standard_normal((N, K)).astype(np.float16)
    b = bt.T  # strides (1, K): K-major B
    c = np.full((M, N), np.nan, np.float32)
    BM, BN, BK = 16, 16, 16
    grid = (tessera.cdiv(M, BM) * tessera.cdiv(N, BN),)
    es = a.itemsize
    kernel[grid](a, b, c, M, N, K, a.strides[0] // es, a.strides[1] // es, b.strides[0] // es,
                 b.strides[1] // es, c.strides[0] // 4, c.strides[1] // 4,
                 BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=2)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = np.linalg.norm(c - ref) / np.linalg.norm(ref)
    assert err <= 1e-3, err
