"""wgmma with warpgroups split over N (#mma<version=3, wpc=[4, 2]>: a 64-row block on 8 warps,
Unsloth's MoE grouped GEMM's 64 x 128 x 64 tiles; compiler/ir/Layout.h): B's tile stores each
warpgroup's columns together, staged by cp.async (K-major B of a @ w.T, N-major B of a @ b) or
by the dot itself. Against torch, with masked tails. (Passed on an H100 on 2026-11-28.)"""
import os
import sys

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
from gpu_helpers import poisoned  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "lang_kernels"))
import split_n_wgmma as kernels  # noqa: E402


def cdiv(a, b):
    return (a + b - 1) // b


@pytest.mark.parametrize("rows_are_n", [True, False])
@pytest.mark.parametrize("bn, stages", [(128, 3), (256, 2)])
@pytest.mark.parametrize("M, N, K", [(256, 256, 256), (200, 328, 192)])
def test_split_n_matmul(M, N, K, bn, stages, rows_are_n):
    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    a = torch.randn(M, K, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(N, K, device="cuda", generator=g).to(torch.bfloat16)
    if not rows_are_n:
        b = b.T.contiguous()  # [K, N]
    c = poisoned((M, N), torch.float32)
    grid = (cdiv(M, 64), cdiv(N, bn))
    kernels.split_n_matmul[grid](a, b, c, M, N, K, B_ROWS_ARE_N=rows_are_n, BM=64, BN=bn, BK=64, num_warps=8,
                                 num_stages=stages)
    torch.cuda.synchronize()
    ref = a.double() @ (b.double().T if rows_are_n else b.double())
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 1e-5, err


def test_split_n_matmul_unpipelined():
    g = torch.Generator(device="cuda").manual_seed(5)
    N, K = 256, 64
    a = torch.randn(64, K, device="cuda", generator=g).to(torch.bfloat16)
    w = torch.randn(N, K, device="cuda", generator=g).to(torch.bfloat16)
    c = poisoned((64, N), torch.float32)
    kernels.split_n_matmul_unpipelined[(N // 128,)](a, w, c, N, K, BM=64, BN=128, BK=64, num_warps=8)
    torch.cuda.synchronize()
    ref = a.double() @ w.double().T
    assert ((c.double() - ref).norm() / ref.norm()).item() < 1e-5


def test_split_n_matmul_with_a_computed_b():
    # B computed in the loop (scaled after loading) goes through its own buffer, which stores each
    # warpgroup's columns together (tests/python/test_operand_buffers.py); GPTQ's quant_matmul_248 shape.
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "lang_kernels"))
    from gated_state_loop import scaled_b_matmul
    g = torch.Generator(device="cuda").manual_seed(9)
    K = 256
    a = torch.randn(64, K, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(K, 128, device="cuda", generator=g).to(torch.bfloat16)
    c = poisoned((64, 128), torch.float32)
    scaled_b_matmul[(1,)](a, b, c, K, BM=64, BN=128, BK=32, num_warps=8, num_stages=2)
    torch.cuda.synchronize()
    ref = a.double() @ (b.double() * 2)
    assert ((c.double() - ref).norm() / ref.norm()).item() < 1e-5
