"""GPU check of the pipeline's shared rings (tests/python/test_attention_bwd_pipeline.py checks the
PTX and the IR on the CPU): the dK/dV loops of Triton's tutorial 06 attention backward
(tests/golden/software-pipeline/attn_bwd_dkdv.py), where Q^T and dO are copied into one ring each
that two wgmma dots read, one of them transposed (local_load {transpose = 1}: the same tile read
K- instead of N-major), and K, V are staged once for both loops; against float64 torch, at the
tutorial's blocks (32 x 128 / 4 warps / 5 stages, and 64 x 128) and with a second head dim."""
import pathlib
import sys

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "golden" / "software-pipeline"))
from attn_bwd_dkdv import attn_bwd_dkdv  # noqa: E402


@pytest.mark.parametrize("N", [1024, 384])
@pytest.mark.parametrize("D, BM, BN, stages", [(64, 32, 128, 5), (64, 64, 128, 3), (128, 32, 64, 3)])
def test_dkdv_loops_against_torch(N, D, BM, BN, stages):
    g = torch.Generator().manual_seed(N + D + BM)
    q, k, v, do = ((0.5 * torch.randn(N, D, generator=g)).half().cuda() for _ in range(4))
    q64, k64, v64, do64 = (x.double() for x in (q, k, v, do))
    s = (q64 @ k64.T).masked_fill(~torch.ones(N, N, dtype=torch.bool, device="cuda").tril(), float("-inf"))
    m = torch.logsumexp(s * torch.log(torch.tensor(2.0, dtype=torch.float64)), 1) / torch.log(
        torch.tensor(2.0, dtype=torch.float64))  # log2 of the row's sum of exp2
    p = torch.exp2(s - m[:, None])
    delta = (p @ v64 * do64).sum(1)
    ds = p * (do64 @ v64.T - delta[:, None])
    ref_dv, ref_dk = p.T @ do64, ds.T @ q64
    dk, dv = torch.full_like(q, float("nan")), torch.full_like(q, float("nan"))
    attn_bwd_dkdv[(N // BN,)](q, k, v, do, dk, dv, m.float(), delta.float(), D, N, BLOCK_M=BM, BLOCK_N=BN,
                              HEAD_DIM=D, num_warps=4, num_stages=stages)
    for got, ref in ((dv, ref_dv), (dk, ref_dk)):
        err = (got.double() - ref).norm() / ref.norm()
        assert err <= 1e-2, err
