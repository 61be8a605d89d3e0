"""A loop-carried state updated by `h *= g; h += tl.dot(k, v)` with h starting from a loaded block
(fla's chunk_gated_delta_rule_fwd_h form): the add folds into the dot's accumulator through the
layout conversion between them (compiler/passes/AccelerateDot.cpp), so h lives in the wgmma /
mma.sync accumulator registers across the loop; v and the gates are read an iteration ahead
(SoftwarePipelinePrefetch.cpp); the B operands computed in the loop (h halves, v read by two dots)
live in their own shared buffers with one barrier before their dots
(SoftwarePipelineOperandBuffers.cpp: the fences and barriers are what only a GPU checks). Against
torch in float64, with a ragged last chunk."""
import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "lang_kernels"))
from gated_state_loop import gated_state, gated_state_halves, scaled_b_matmul  # noqa: E402


def reference(k, v, w, g, h0, T, BT):
    h = h0.double()
    states = []
    for c in range(0, T, BT):
        sl = slice(c, min(T, c + BT))
        states.append(h.to(torch.bfloat16).double())
        vn = v[sl].double() - w[sl].double() @ h.to(torch.bfloat16).double()
        last = g[sl.stop - 1].double()
        vn = vn * torch.exp2(last - g[sl].double())[:, None]
        h = h * torch.exp2(last) + k[sl].double().T @ vn.to(torch.bfloat16).double()
    return torch.stack(states), h


@pytest.mark.parametrize("K, BV", [(128, 32), (128, 64), (64, 32)])
@pytest.mark.parametrize("warps, stages", [(4, 2), (4, 3), (8, 2)])
@pytest.mark.parametrize("T", [512, 450])
def test_gated_state(K, BV, warps, stages, T):
    BT = 64
    gen = torch.Generator(device="cuda").manual_seed(K + BV + T)
    k = torch.nn.functional.normalize(torch.randn(T, K, device="cuda", generator=gen), dim=-1).to(torch.bfloat16)
    w = (torch.randn(T, K, device="cuda", generator=gen) * 0.05).to(torch.bfloat16)
    v = (torch.randn(T, BV, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
    g = torch.cumsum(-torch.rand(T, device="cuda", generator=gen) * 0.05, 0)
    h0 = torch.randn(K, BV, device="cuda", generator=gen)
    NT = (T + BT - 1) // BT
    h = torch.full((NT, K, BV), float("nan"), device="cuda", dtype=torch.bfloat16)
    ht = torch.full((K, BV), float("nan"), device="cuda")
    gated_state[(1,)](k, v, w, g, h0, h, ht, T, K=K, BV=BV, BT=BT, num_warps=warps, num_stages=stages)
    torch.cuda.synchronize()
    states, final = reference(k, v, w, g, h0, T, BT)
    assert torch.allclose(h.double(), states, rtol=2e-2, atol=2e-2)
    err = ((ht.double() - final).norm() / final.norm()).item()
    assert err < 1e-2, err


@pytest.mark.parametrize("BV", [32, 64])
@pytest.mark.parametrize("warps, stages", [(4, 2), (4, 3), (4, 4), (2, 2)])
@pytest.mark.parametrize("T", [1024, 450])
def test_gated_state_halves(BV, warps, stages, T):
    BT = 64
    gen = torch.Generator(device="cuda").manual_seed(BV + T + stages)
    k = torch.nn.functional.normalize(torch.randn(T, 128, device="cuda", generator=gen), dim=-1).to(torch.bfloat16)
    w = (torch.randn(T, 128, device="cuda", generator=gen) * 0.05).to(torch.bfloat16)
    v = (torch.randn(T, BV, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
    g = torch.cumsum(-torch.rand(T, device="cuda", generator=gen) * 0.05, 0)
    h0 = torch.randn(128, BV, device="cuda", generator=gen)
    NT = (T + BT - 1) // BT
    h = torch.full((NT, 128, BV), float("nan"), device="cuda", dtype=torch.bfloat16)
    ht = torch.full((128, BV), float("nan"), device="cuda")
    gated_state_halves[(1,)](k, v, w, g, h0, h, ht, T, BV=BV, BT=BT, num_warps=warps, num_stages=stages)
    torch.cuda.synchronize()
    states, final = reference(k, v, w, g, h0, T, BT)
    assert torch.allclose(h.double(), states, rtol=2e-2, atol=2e-2)
    err = ((ht.double() - final).norm() / final.norm()).item()
    assert err < 1e-2, err


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("K", [64, 512])
def test_scaled_b_matmul(stages, K):
    gen = torch.Generator(device="cuda").manual_seed(K + stages)
    a = torch.randn(64, K, device="cuda", generator=gen).to(torch.bfloat16)
    b = torch.randn(K, 64, device="cuda", generator=gen).to(torch.bfloat16)
    c = torch.full((64, 64), float("nan"), device="cuda")
    scaled_b_matmul[(1,)](a, b, c, K, BM=64, BN=64, BK=64, num_warps=4, num_stages=stages)
    torch.cuda.synchronize()
    ref = a.double() @ (b.double() * 2)
    assert ((c.double() - ref).norm() / ref.norm()).item() < 1e-5
