"""wgmma with an M-major A: a dot's A read along its dim 0 (fla's chunk_gated_delta_rule_fwd_h
reads k as [K, T] with K contiguous) is staged by the pipeline as a transposed tile ([K][M] in
the wgmma swizzle) and read with the instruction's "transpose A" (compiler/codegen/WgmmaDot.cpp).
Against torch, for one and two warpgroups, several slabs, masked tails and a loop-carried
value the body does not change (the canonicalize fix that let the pipeliner in)."""
import importlib.util
import pathlib

import pytest

torch = pytest.importorskip("torch")

from gpu_helpers import poisoned  # noqa: E402


# The kernel is tests/python/lang_kernels/m_major_a.py's (its CPU tests: test_recarried_loop_values.py).
_spec = importlib.util.spec_from_file_location(
    "lang_m_major_a", pathlib.Path(__file__).resolve().parents[1] / "python" / "lang_kernels" / "m_major_a.py")
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
m_major_a_matmul = _module.m_major_a_matmul


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
