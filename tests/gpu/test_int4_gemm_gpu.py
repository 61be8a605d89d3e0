"""On the GPU: the int4 weight-only GEMMs of tests/python/lang_kernels/int4_gemm.py (AWQ-shaped GEMM with
fp16 accumulation on mma.sync, split-K with vector atomics, gemlite-shaped GEMV, GPTQ-shaped small-M GEMM
on repeated warps) and tests/python/lang_kernels/small_dots.py, against torch in float64. The CPU checks
(PTX properties, the PTX emulator) are tests/python/test_int4_gemm.py and test_mma_repeated_warps.py."""
import pathlib
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python" / "lang_kernels"))

from int4_gemm import int4_gemm, int4_gemm_small_m, int4_gemv  # noqa: E402
from small_dots import small_gemm  # noqa: E402

AWQ_ORDER = [0, 4, 1, 5, 2, 6, 3, 7]


def packed(q, order):
    words = sum(q[:, j::8].long() << (4 * order[j]) for j in range(8))
    return torch.where(words < 2**31, words, words - 2**32).int().contiguous()


@pytest.mark.parametrize("M, split_k", [(256, 1), (16, 8), (40, 1), (16, 4)])
def test_awq_shaped_gemm(M, split_k):
    K = N = 1024
    group = 128
    g = torch.Generator(device="cuda").manual_seed(M + split_k)
    q = torch.randint(0, 16, (K, N), device="cuda", generator=g)
    z = torch.randint(0, 16, (K // group, N), device="cuda", generator=g)
    s = (torch.rand(K // group, N, device="cuda", generator=g) * 0.02 + 0.005).half()
    a = (torch.randn(M, K, device="cuda", generator=g) * 0.1).half()
    c = torch.zeros(M, N, device="cuda", dtype=torch.float16)
    grid = (triton_cdiv(M, 32) * (N // 32), split_k)
    int4_gemm[grid](a, packed(q, AWQ_ORDER), c, packed(z, AWQ_ORDER), s, M, N, K, group,
                    BM=32, BN=32, BK=32, SPLIT_K=split_k, num_warps=4, num_stages=3)
    w = ((q - z.repeat_interleave(group, 0)).half() * s.repeat_interleave(group, 0)).double()
    torch.testing.assert_close(c.double(), a.double() @ w, rtol=2e-2, atol=5e-2)


def triton_cdiv(a, b):
    return (a + b - 1) // b


def test_gemlite_shaped_gemv():
    K = N = 2048
    group = 128
    g = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randint(0, 16, (K, N), device="cuda", generator=g)
    z = torch.randint(0, 16, (K // group, N), device="cuda", generator=g).half()
    s = (torch.rand(K // group, N, device="cuda", generator=g) * 0.02 + 0.005).half()
    a = (torch.randn(K, device="cuda", generator=g) * 0.5).half()
    words = sum(q[i::8].long() << (4 * i) for i in range(8))
    words = torch.where(words < 2**31, words, words - 2**32).int().contiguous()
    c = torch.zeros(N, device="cuda", dtype=torch.float16)
    int4_gemv[(N // 64, K // 32)](a, words, c, s, z, N, K, group_size=group, BN=64, BK=32, num_warps=1, num_stages=1)
    w = ((q.half() - z.repeat_interleave(group, 0)) * s.repeat_interleave(group, 0)).double()
    torch.testing.assert_close(c.double(), a.double() @ w, rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("m", [1, 8, 16])
def test_gptq_shaped_small_m_gemm(m):
    K = N = 2048
    group = 128
    ng = K // group
    g = torch.Generator(device="cuda").manual_seed(m)
    q = torch.randint(0, 16, (K, N), device="cuda", generator=g)
    z = torch.randint(0, 16, (ng, N), device="cuda", generator=g)
    s = (torch.rand(ng, N, device="cuda", generator=g) * 0.02 + 0.005).half()
    g_idx = (torch.arange(K, device="cuda") // group).int()[torch.randperm(K, device="cuda", generator=g)].contiguous()
    qw = sum(q[i::8].long() << (4 * i) for i in range(8))
    qz = sum(z[:, i::8].long() << (4 * i) for i in range(8))
    to32 = lambda t: torch.where(t < 2**31, t, t - 2**32).int().contiguous()  # noqa: E731
    x = (torch.randn(m, K, device="cuda", generator=g) * 0.5).half()
    out = torch.empty(m, N, device="cuda", dtype=torch.float16)
    int4_gemm_small_m[(1, N // 16)](x, to32(qw), s, to32(qz), g_idx, out, m, K=K, N=N, GROUPS=ng, BM=16, BN=16,
                                    BK=256, num_warps=4, num_stages=2)
    w = ((q - z[g_idx.long()]).float() * s[g_idx.long()].float()).half().double()
    torch.testing.assert_close(out.double(), x.double() @ w, rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("bm, bn, warps", [(16, 16, 4), (16, 8, 4), (32, 16, 8), (16, 32, 8)])
@pytest.mark.parametrize("stages", [1, 3])
def test_small_blocks_on_repeated_warps(bm, bn, warps, stages):
    K = 256
    a = torch.randn(bm, K, device="cuda").half()
    b = torch.randn(K, bn, device="cuda").half()
    c = torch.empty(bm, bn, device="cuda")
    small_gemm[(1,)](a, b, c, K, BM=bm, BN=bn, BK=32, num_warps=warps, num_stages=stages)
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-3, atol=1e-3)
