"""On the GPU: reshape / permute / split / join that pick registers (compiler/ir/ShapeOpLayouts.h;
the CPU checks are tests/python/test_shape_ops_in_registers.py and tests/unit/ShapeOpLayoutsTest.cpp):
Triton tutorial 09's subtiled epilogue of a dot accumulator, the attention tutorial's rescale by halves,
and the ops on loaded (blocked) tiles, each against torch."""
import pathlib
import sys

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python" / "lang_kernels"))

from subtiled_epilogue import matmul_epilogue, rescaled_halves, shape_chain  # noqa: E402


@pytest.mark.parametrize("sub", [0, 1])
@pytest.mark.parametrize("bm,bn,bk,warps", [(128, 256, 64, 8), (128, 128, 32, 4), (64, 64, 32, 4), (64, 128, 64, 4)])
def test_subtiled_epilogue(sub, bm, bn, bk, warps):
    K = 4 * bk
    a = torch.randn(bm, K, device="cuda").half()
    b = torch.randn(K, bn, device="cuda").half()
    c = torch.empty(bm, bn, device="cuda", dtype=torch.float16)
    matmul_epilogue[(1,)](a, b, c, K, SUB=sub, BM=bm, BN=bn, BK=bk, num_warps=warps)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("split", [0, 1])
@pytest.mark.parametrize("bm,d,warps", [(128, 128, 8), (64, 64, 4)])
def test_attention_rescale_by_halves(split, bm, d, warps):
    q = torch.randn(bm, d, device="cuda").half()
    k = torch.randn(d, d, device="cuda").half()
    v = torch.randn(d, d, device="cuda").half()
    alpha = torch.rand(bm, device="cuda")
    o = torch.empty(bm, d, device="cuda")
    rescaled_halves[(1,)](q, k, v, alpha, o, SPLIT=split, BM=bm, D=d, num_warps=warps)
    want = (q.float() @ k.float()) * alpha[:, None] + q.float() @ v.float()
    torch.testing.assert_close(o, want, rtol=1e-2, atol=5e-2)


@pytest.mark.parametrize("op", [0, 1, 2, 3])
@pytest.mark.parametrize("m,n,warps", [(64, 64, 4), (16, 128, 4), (128, 32, 8), (8, 16, 1)])
def test_shape_chain(op, m, n, warps):
    x = torch.randn(m, n, device="cuda")
    out = torch.empty({0: (m, n // 2), 1: (m, 2 * n), 2: (n, m), 3: (m * n,)}[op], device="cuda")
    shape_chain[(1,)](x, out, OP=op, M=m, N=n, num_warps=warps)
    want = {0: lambda: x[:, :n // 2] + 2 * x[:, n // 2:], 1: lambda: torch.stack([x, 2 * x], -1).reshape(m, 2 * n),
            2: lambda: x.t(), 3: lambda: x.reshape(-1) + 1}[op]()
    torch.testing.assert_close(out, want, rtol=0, atol=0)
