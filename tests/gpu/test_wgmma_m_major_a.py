"""wgmma with an M-major A: a dot's A read along its dim 0 (fla's chunk_gated_delta_rule_fwd_h
reads k as [K, T] with K contiguous) is staged by the pipeline as a transposed tile ([K][M] in
the wgmma swizzle) and read with the instruction's "transpose A" (compiler/codegen/WgmmaDot.cpp).
Against torch, for one and two warpgroups, several slabs, masked tails and a loop-carried
value the body does not change (the canonicalize fix that let the pipeliner in)."""
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402
from gpu_helpers import poisoned  # noqa: E402


@tessera.jit
def m_major_a_matmul(a_ptr, b_ptr, c_ptr, M, N, K, USE_G: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr):
    # a: [K, M] row-major, i.e. A = a.T is read down its columns
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        if USE_G:
            offs_k = (offs_k + BK) % BK
        rk = k + offs_k
        a = tl.load(a_ptr + offs_m[:, None] + rk[None, :] * M, mask=(offs_m[:, None] < M) & (rk[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + offs_n[None, :], mask=(rk[:, None] < K) & (offs_n[None, :] < N),
                    other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@pytest.mark.parametrize("use_g", [False, True])
@pytest.mark.parametrize("bm, bn, bk, warps, stages", [(64, 64, 32, 4, 3), (64, 32, 64, 4, 2), (128, 64, 64, 8, 3),
                                                       (128, 128, 32, 4, 4), (64, 256, 64, 4, 3)])
@pytest.mark.parametrize("M, N, K", [(256, 256, 256), (192, 160, 200)])
def test_m_major_a_matmul(M, N, K, bm, bn, bk, warps, stages, use_g):
    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    a = torch.randn(K, M, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(K, N, device="cuda", generator=g).to(torch.bfloat16)
    c = poisoned((M, N), torch.float32)
    grid = (triton_cdiv(M, bm), triton_cdiv(N, bn))
    m_major_a_matmul[grid](a, b, c, M, N, K, USE_G=use_g, BM=bm, BN=bn, BK=bk, num_warps=warps, num_stages=stages)
    torch.cuda.synchronize()
    ref = a.double().T @ b.double()
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 1e-5, err


def triton_cdiv(a, b):
    return (a + b - 1) // b
