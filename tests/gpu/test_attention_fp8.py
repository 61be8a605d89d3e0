"""tessera.kernels.attention_fp8 (kernels/attention.py attn_fwd_fp8_kernel) on the GPU against
torch's scaled_dot_product_attention in float64 of the dequantised inputs (q * q_descale,
k * k_descale, v * v_descale; K/V heads repeated for grouped-query attention).

Error measure: ||O - ref||_2 / ||ref||_2 over the tensor in float64 (gpu_helpers.rel_err),
<= FP8_TOL: P is rounded to e4m3 for P V (3 mantissa bits, unbiased), Hopper's fp8 wgmma sums
in reduced precision, O is bf16. LSE (fp32, computed from the fp32 row sums) within 2e-2
absolute. Every buffer the wrapper allocates starts as NaN. Covered: D 64 / 128, causal and
not, N a multiple of the blocks (sm_90a: K and V^T through TMA with a producer warpgroup) and
ragged (pointers), GQA, N_Q != N_KV, v_layout 'bhnd', descales as numbers and as tensors,
other blocks (BLOCK_N 64 / 256, 2 stages, no warp specialisation), and the dtype errors."""
import importlib
import math
import os

import pytest

torch = pytest.importorskip("torch")

import tessera.kernels as tk  # noqa: E402
from gpu_helpers import rel_err  # noqa: E402

attention_module = importlib.import_module("tessera.kernels.attention")
FP8_TOL = 3.5e-2


@pytest.fixture(autouse=True)
def poison_allocations(monkeypatch):
    def empty(like, shape, dtype=None):
        return torch.full(shape, float("nan"), dtype=like.dtype if dtype is None else dtype, device=like.device)
    monkeypatch.setattr(attention_module, "_empty", empty)


def fresh_seed():
    seed = int.from_bytes(os.urandom(4), "little")
    torch.manual_seed(seed)
    return seed


def quantise(x):
    descale = (x.abs().amax().float() / 448.0).reshape(1)
    return (x.float() / descale).to(torch.float8_e4m3fn), descale


def reference(q, k, v, causal, scale):
    """(O, LSE) in float64; q (B, H, N, D), k and v (B, H_KV, N_KV, D), dequantised."""
    group = q.shape[1] // k.shape[1]
    kr, vr = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    o = torch.nn.functional.scaled_dot_product_attention(q, kr, vr, is_causal=causal, scale=scale)
    lse = []
    for h in range(q.shape[1]):  # one head at a time: N x N in float64
        s = q[:, h] @ kr[:, h].transpose(-1, -2) * scale
        if causal:
            n, nk = s.shape[-2:]
            s = s.masked_fill(torch.ones(n, nk, dtype=torch.bool, device=s.device).triu(1), -math.inf)
        lse.append(torch.logsumexp(s, dim=-1))
    return o, torch.stack(lse, dim=1)


def run_case(B, H, Hk, N, Nk, D, causal, v_layout="vt", config=None, descale_as="tensor", spread=1.0):
    seed = fresh_seed()
    dev = "cuda"
    q = torch.randn(B, H, N, D, device=dev) * spread
    k = torch.randn(B, Hk, Nk, D, device=dev)
    v = torch.randn(B, Hk, Nk, D, device=dev)
    (q8, qd), (k8, kd), (v8, vd) = (quantise(x) for x in (q, k, v))
    v_in = v8.transpose(2, 3).contiguous() if v_layout == "vt" else v8
    ds = (qd, kd, vd) if descale_as == "tensor" else tuple(float(d) for d in (qd, kd, vd))
    o, lse = tk.attention_fp8(q8, k8, v_in, *ds, causal=causal, v_layout=v_layout, return_lse=True, config=config)
    torch.cuda.synchronize()
    assert o.dtype == torch.bfloat16 and o.shape == (B, H, N, D)
    scale = 1 / math.sqrt(D)
    ro, rlse = reference(*(x.double() * d.double() for x, d in ((q8, qd), (k8, kd), (v8, vd))), causal, scale)
    err = rel_err(o, ro)
    print(f"fp8 attention D{D} N{N}/{Nk} causal={causal} {v_layout} {config}: ||O - ref|| / ||ref|| = {err:.2e}")
    assert err <= FP8_TOL, f"seed {seed}: relative error {err:.3e}"
    assert not torch.isnan(lse).any(), f"seed {seed}"
    assert (lse.double() - rlse).abs().max().item() <= 2e-2, f"seed {seed}"
    return err


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("N", [1024, 1000])
def test_matches_float64_of_the_dequantised_inputs(N, D, causal):
    run_case(B=2, H=4, Hk=4, N=N, Nk=N, D=D, causal=causal)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_grouped_query_attention_and_lengths(causal):
    run_case(B=1, H=8, Hk=2, N=384, Nk=512, D=128, causal=causal)
    run_case(B=1, H=4, Hk=1, N=700, Nk=333, D=64, causal=causal, descale_as="float")


@pytest.mark.parametrize("D", [64, 128])
def test_v_not_transposed(D):
    run_case(B=1, H=4, Hk=2, N=512, Nk=512, D=D, causal=False, v_layout="bhnd")


@pytest.mark.parametrize("config", [
    {"BLOCK_N": 64}, {"BLOCK_N": 256, "num_stages": 2}, {"num_stages": 2}, {"WARP_SPECIALIZE": False},
    {"TMA": False}, {"BLOCK_M": 64, "num_warps": 4}, {"PINGPONG": True}, {"PINGPONG": True, "WARP_SPECIALIZE": False},
], ids=["n64", "n256s2", "s2", "nows", "pointers", "m64w4", "pingpong", "pingpong-nows"])
@pytest.mark.parametrize("D", [64, 128])
def test_other_blocks(config, D):
    run_case(B=1, H=4, Hk=4, N=1024, Nk=1024, D=D, causal=True, config=config)


def test_peaked_scores():
    run_case(B=1, H=4, Hk=4, N=1024, Nk=1024, D=128, causal=False, spread=4.0)


def test_long_sequence():
    run_case(B=1, H=1, Hk=1, N=16384, Nk=16384, D=128, causal=True)


def test_dtype_errors():
    x = torch.zeros(1, 2, 128, 64, device="cuda")
    a = x.to(torch.float8_e4m3fn)
    for dtype in (torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz):
        with pytest.raises(TypeError, match="attention_fp8 takes float8_e4m3fn only"):
            tk.attention_fp8(a, x.to(dtype), a.transpose(2, 3).contiguous())
    with pytest.raises(TypeError, match="q has dtype bfloat16"):
        tk.attention_fp8(x.bfloat16(), a, a.transpose(2, 3).contiguous())
