"""kernels/attention.py (forward, and the backward's three kernels) through the host
interpreter against a numpy float64 reference, via tessera.kernels.attention_forward /
attention_backward, which run numpy arrays on the interpreter (no GPU, no torch).

Covered: sequence lengths 16, 40 (ragged: not a multiple of the blocks) and 64; head
dims 16, 32, 64; causal and not; grouped-query attention (4 query heads on 2 and on 1
K/V heads); both layouts (bhnd, bnhd) and non-contiguous views; N_Q != N_KV; BLOCK_M >
BLOCK_N; the default (GPU) block sizes; bf16 when ml_dtypes is installed.
Error measure: max |out - ref| / max |ref| per tensor, <= 1e-2 (fp16 inputs, fp16
outputs: observed ~5e-4)."""
import math

import numpy as np
import pytest

import tessera
import tessera.kernels as tk

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

TOL = 1e-2
# Small blocks keep the interpreter quick and make every test cover several blocks
# (ragged ones too). DKDV_BLOCK_M < DKDV_BLOCK_N and BLOCK_M > BLOCK_N on purpose.
SMALL = dict(BLOCK_M=32, BLOCK_N=16, DKDV_BLOCK_M=16, DKDV_BLOCK_N=32, DQ_BLOCK_M=16, DQ_BLOCK_N=16)


def reference(q, k, v, do, causal, scale):
    """(O, LSE, dQ, dK, dV) in float64, q/k/v/do in (B, H, N, D)."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    H, Hk = q.shape[1], k.shape[1]
    g = H // Hk
    kr, vr = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    s = q @ kr.transpose(0, 1, 3, 2) * scale
    if causal:
        n, nk = s.shape[-2:]
        s = np.where(np.arange(n)[:, None] >= np.arange(nk)[None, :], s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(-1, keepdims=True)
    p /= l
    o = p @ vr
    lse = (m + np.log(l))[..., 0]
    if do is None:
        return o, lse, None, None, None
    do = do.astype(np.float64)
    dv = p.transpose(0, 1, 3, 2) @ do
    ds = p * (do @ vr.transpose(0, 1, 3, 2) - (do * o).sum(-1, keepdims=True))
    dq = ds @ kr * scale
    dk = ds.transpose(0, 1, 3, 2) @ q * scale
    B, _, nk, D = k.shape
    return o, lse, dq, dk.reshape(B, Hk, g, nk, D).sum(2), dv.reshape(B, Hk, g, nk, D).sum(2)


def rel(out, ref):
    out = np.asarray(out, dtype=np.float64)
    assert not np.isnan(out).any(), "NaN in the output (an element was not written?)"
    return float(np.abs(out - ref).max() / np.abs(ref).max())


def to_layout(x, layout):
    """x in (B, H, N, D) -> an array of the layout's shape (contiguous in it)."""
    return np.ascontiguousarray(x) if layout == "bhnd" else np.ascontiguousarray(x.transpose(0, 2, 1, 3))


def from_layout(x, layout):
    return x if layout == "bhnd" else x.transpose(0, 2, 1, 3)


def make(rng, shape, dtype=np.float16):
    return rng.standard_normal(shape).astype(dtype)


def run_case(B, H, Hk, N, Nk, D, causal, layout="bhnd", config=SMALL, backward=True, dtype=np.float16,
             sm_scale=None, seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = make(rng, (B, H, N, D), dtype), make(rng, (B, Hk, Nk, D), dtype), make(rng, (B, Hk, Nk, D), dtype)
    do = make(rng, (B, H, N, D), dtype)
    scale = 1 / math.sqrt(D) if sm_scale is None else sm_scale
    ql, kl, vl, dol = (to_layout(x, layout) for x in (q, k, v, do))
    o, lse = tk.attention_forward(ql, kl, vl, causal=causal, sm_scale=sm_scale, layout=layout, config=config)
    assert o.shape == ql.shape and o.dtype == ql.dtype
    assert lse.shape == (B, H, N) and lse.dtype == np.float32
    ro, rlse, rdq, rdk, rdv = reference(q, k, v, do if backward else None, causal, scale)
    assert rel(from_layout(o, layout), ro) <= TOL
    assert np.abs(lse - rlse).max() <= 1e-3
    if not backward:
        return
    dq, dk, dv = tk.attention_backward(dol, ql, kl, vl, o, lse, causal=causal, sm_scale=sm_scale, layout=layout,
                                       config=config)
    for name, out, ref in (("dq", dq, rdq), ("dk", dk, rdk), ("dv", dv, rdv)):
        assert out.shape == ref.shape if layout == "bhnd" else True
        err = rel(from_layout(out, layout), ref)
        assert err <= TOL, f"{name}: relative error {err:.2e}"


@pytest.mark.parametrize("layout", ["bhnd", "bnhd"])
@pytest.mark.parametrize("Hk", [2, 1], ids=["mha", "gqa"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D", [16, 32, 64])
@pytest.mark.parametrize("N", [16, 40, 64])
def test_forward_and_backward(N, D, causal, Hk, layout):
    run_case(B=2, H=2, Hk=Hk, N=N, Nk=N, D=D, causal=causal, layout=layout)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("Hk", [2, 1])
def test_grouped_query_attention(Hk, causal):
    run_case(B=1, H=4, Hk=Hk, N=40, Nk=40, D=32, causal=causal)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("layout", ["bhnd", "bnhd"])
def test_layouts(layout, causal):
    run_case(B=2, H=4, Hk=2, N=40, Nk=40, D=16, causal=causal, layout=layout)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("N, Nk", [(40, 24), (24, 56)])
def test_different_query_and_key_lengths(N, Nk, causal):
    run_case(B=1, H=2, Hk=1, N=N, Nk=Nk, D=16, causal=causal)


def test_non_contiguous_views_and_scale():
    """A (B, H, N, D) view of a (B, N, H, D) buffer, K/V sliced out of a packed KV buffer,
    dO with odd strides; an explicit sm_scale."""
    rng = np.random.default_rng(3)
    B, H, N, D = 1, 2, 40, 32
    q = make(rng, (B, N, H, D)).transpose(0, 2, 1, 3)          # strides (N*H*D, D, H*D, 1)
    kv = make(rng, (B, H, N, 2, D))                            # packed K and V
    k, v = kv[:, :, :, 0, :], kv[:, :, :, 1, :]
    do = make(rng, (B, H, D, N)).transpose(0, 1, 3, 2)          # d-stride N
    scale = 0.3
    o, lse = tk.attention_forward(q, k, v, causal=True, sm_scale=scale, config=SMALL)
    dq, dk, dv = tk.attention_backward(do, q, k, v, o, lse, causal=True, sm_scale=scale, config=SMALL)
    ro, rlse, rdq, rdk, rdv = reference(q, k, v, do, True, scale)
    assert rel(o, ro) <= TOL
    for out, ref in ((dq, rdq), (dk, rdk), (dv, rdv)):
        assert rel(out, ref) <= TOL


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_other_block_shapes(causal):
    """dK/dV's key blocks narrower than its query steps (causal: query steps start at the key
    block, not at a multiple of the query block), dQ's key steps wider than its query block;
    square forward blocks."""
    config = dict(BLOCK_M=16, BLOCK_N=16, DKDV_BLOCK_M=32, DKDV_BLOCK_N=16, DQ_BLOCK_M=16, DQ_BLOCK_N=32)
    run_case(B=1, H=2, Hk=1, N=72, Nk=72, D=16, causal=causal, config=config)


@pytest.mark.parametrize("overlap", [False, True], ids=["plain", "overlap"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_key_steps_wider_than_the_query_block(causal, overlap):
    """Forward key steps wider than its query block (BLOCK_N > BLOCK_M): causal, a query block
    starts inside a key block, so the unmasked sweep stops at the key block before it and the
    masked one covers the rest; ragged keys, fewer queries than keys and more."""
    config = dict(BLOCK_M=16, BLOCK_N=32, OVERLAP=overlap)
    for n, nk in ((72, 72), (40, 88), (88, 40)):
        run_case(B=1, H=2, Hk=1, N=n, Nk=nk, D=16, causal=causal, config=config, backward=False)


# The one-pass backward (attn_bwd_fused_kernel: dK, dV in registers, dQ by fp32 atomics, then
# attn_bwd_dq_convert_kernel): 16 queries a step, 32 keys a program.
FUSED = dict(SMALL, BWD_FUSED=True, FUSED_BLOCK_M=16, FUSED_BLOCK_N=32)


def fused_launches(monkeypatch):
    """The names of the kernels attention_backward launches from now on (interpreter)."""
    import importlib
    module = importlib.import_module("tessera.kernels.attention")
    launched = []
    kernels = module._kernels

    class Recorder:
        def __init__(self, name, kernel):
            self.name, self.kernel = name, kernel

        def __getitem__(self, grid):
            launched.append(self.name)
            return self.kernel[grid]

    monkeypatch.setattr(module, "_kernels",
                        lambda interpret: {n: Recorder(n, k) for n, k in kernels(interpret).items()})
    return launched


@pytest.mark.parametrize("layout", ["bhnd", "bnhd"])
@pytest.mark.parametrize("Hk", [2, 1], ids=["mha", "gqa"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("N", [16, 40, 64])
def test_fused_backward(N, causal, Hk, layout, monkeypatch):
    """Ragged N (40: neither blocks' multiple), one key block (16), several whole ones (64);
    GQA sums dK/dV over the group and each query head's dQ from every key block."""
    launched = fused_launches(monkeypatch)
    run_case(B=2, H=2 if Hk == 2 else 4, Hk=Hk if Hk == 2 else 1, N=N, Nk=N, D=32, causal=causal,
             layout=layout, config=FUSED)
    assert launched == ["attn_fwd_kernel", "attn_bwd_fused_preprocess_kernel", "attn_bwd_fused_kernel",
                        "attn_bwd_dq_convert_kernel"]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("N, Nk", [(40, 24), (24, 56), (72, 40)])
def test_fused_backward_query_and_key_lengths(N, Nk, causal):
    """N_Q != N_KV: causal rows past the last key see them all, keys past the last row none."""
    run_case(B=1, H=2, Hk=1, N=N, Nk=Nk, D=16, causal=causal, config=FUSED)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("Hk", [2, 1], ids=["mha", "gqa"])
def test_fused_backward_staggered(Hk, causal):
    """FUSED_STAGGER: each key block's program starts its steps at its own (head, query block)
    and wraps around; every step still runs once (GQA: across the group's heads)."""
    run_case(B=1, H=2 if Hk == 2 else 4, Hk=Hk if Hk == 2 else 1, N=72, Nk=72, D=16, causal=causal,
             config=dict(FUSED, FUSED_STAGGER=True))


@pytest.mark.parametrize("blocks", [(32, 16), (16, 16), (16, 64)])
def test_fused_backward_block_shapes(blocks):
    """Query steps wider than the key block (causal: they start at the key block, not at a
    multiple of BLOCK_M), equal, and narrower."""
    config = dict(FUSED, FUSED_BLOCK_M=blocks[0], FUSED_BLOCK_N=blocks[1])
    for causal in (False, True):
        run_case(B=1, H=2, Hk=1, N=72, Nk=72, D=16, causal=causal, config=config)


def test_fused_backward_keys_past_the_end_add_nothing_to_dq():
    """Scores far below zero make LSE very negative; a ragged key block's padding keys (K = 0,
    score 0) would get P = exp(-LSE) = inf, and inf * 0 = NaN in dQ, unless masked."""
    rng = np.random.default_rng(5)
    B, H, N, D = 1, 1, 40, 16
    q, k, v, do = (make(rng, (B, H, N, D)) for _ in range(4))
    q[..., 0], k[..., 0] = 20.0, -20.0  # every score about -100
    o, lse = tk.attention_forward(q, k, v, config=FUSED)
    assert lse.max() < -89  # exp(-LSE) overflows fp32
    dq, dk, dv = tk.attention_backward(do, q, k, v, o, lse, config=FUSED)
    _, _, rdq, rdk, rdv = reference(q, k, v, do, False, 0.25)
    for out, ref in ((dq, rdq), (dk, rdk), (dv, rdv)):
        assert rel(out, ref) <= TOL


def test_fused_backward_non_contiguous_views_and_scale():
    rng = np.random.default_rng(3)
    B, H, N, D = 1, 2, 40, 32
    q = make(rng, (B, N, H, D)).transpose(0, 2, 1, 3)
    kv = make(rng, (B, H, N, 2, D))
    k, v = kv[:, :, :, 0, :], kv[:, :, :, 1, :]
    do = make(rng, (B, H, D, N)).transpose(0, 1, 3, 2)
    scale = 0.3
    o, lse = tk.attention_forward(q, k, v, causal=True, sm_scale=scale, config=FUSED)
    dq, dk, dv = tk.attention_backward(do, q, k, v, o, lse, causal=True, sm_scale=scale, config=FUSED)
    _, _, rdq, rdk, rdv = reference(q, k, v, do, True, scale)
    for out, ref in ((dq, rdq), (dk, rdk), (dv, rdv)):
        assert rel(out, ref) <= TOL


def test_fused_backward_bfloat16():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    run_case(B=1, H=2, Hk=1, N=40, Nk=40, D=32, causal=True, dtype=ml_dtypes.bfloat16, config=FUSED)


@pytest.mark.parametrize("D", [32, 64])
def test_fused_backward_default_gpu_blocks(D):
    """attention_config's fused blocks (the interpreter's table), ragged."""
    run_case(B=1, H=2, Hk=1, N=150, Nk=150, D=D, causal=True, config={"BWD_FUSED": True})


@pytest.mark.parametrize("D", [32, 64])
def test_default_gpu_blocks(D):
    """The configuration the GPU uses (attention_config), in the interpreter."""
    run_case(B=1, H=2, Hk=1, N=150, Nk=150, D=D, causal=True, config=None)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_pingpong_schedule(causal):
    """PINGPONG (two warpgroups taking turns: named barriers, nothing on the host) keeps the
    results; 8 warps, ragged keys (both sweeps run)."""
    config = dict(BLOCK_M=32, BLOCK_N=16, num_warps=8, PINGPONG=True)
    run_case(B=1, H=2, Hk=1, N=70, Nk=70, D=32, causal=causal, config=config, backward=False)


def test_forward_only_many_heads():
    run_case(B=3, H=6, Hk=3, N=33, Nk=33, D=16, causal=False, backward=False)


def test_bfloat16():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    run_case(B=1, H=2, Hk=1, N=40, Nk=40, D=32, causal=True, dtype=ml_dtypes.bfloat16)


def test_public_entry_point_returns_lse():
    rng = np.random.default_rng(1)
    q, k, v = make(rng, (1, 2, 16, 16)), make(rng, (1, 2, 16, 16)), make(rng, (1, 2, 16, 16))
    o = tk.attention(q, k, v, config=SMALL)
    o2, lse = tk.attention(q, k, v, return_lse=True, config=SMALL)
    np.testing.assert_array_equal(o, o2)
    ro, rlse, *_ = reference(q, k, v, None, False, 0.25)
    assert rel(o, ro) <= TOL and np.abs(lse - rlse).max() <= 1e-3


def test_config_table():
    for d in (16, 32, 64, 128):
        for causal in (False, True):
            c = tk.attention_config(d, causal)
            assert c["BLOCK_M"] % 16 == 0 and c["BLOCK_N"] % 16 == 0
    with pytest.raises(ValueError, match="head dim"):
        tk.attention_config(96)
    # On sm_90a the D = 64 forward is capped at 128 registers (two 8-warp CTAs an SM).
    assert tk.attention_config(64, wgmma=True)["maxnreg"] == 128
    assert tk.attention_config(64, wgmma=False)["maxnreg"] is None
    # The one-pass backward is the default where it measured faster: sm_90a, D = 128, causal.
    fused = {(d, causal, w) for d in (16, 32, 64, 128) for causal in (False, True) for w in (False, True)
             if tk.attention_config(d, causal, wgmma=w)["BWD_FUSED"]}
    assert fused == {(128, True, True)}


@pytest.mark.parametrize("sm_scale", [0.0, -0.125, float("nan")])
def test_sm_scale_must_be_positive(sm_scale):
    # The forward takes each row's maximum of the raw scores and scales it (one fma per score).
    q = np.zeros((1, 1, 16, 16), np.float16)
    with pytest.raises(ValueError, match="sm_scale must be positive"):
        tk.attention_forward(q, q, q, sm_scale=sm_scale)


@pytest.mark.parametrize("bad, match", [
    (dict(layout="nbhd"), "layout"),
    (dict(k_heads=4), "multiple"),
    (dict(D=24), "head dim"),
    (dict(config={"BLOCK_Q": 64}), "unknown config"),
    (dict(config={"BLOCK_M": 48, "BLOCK_N": 32}), "BLOCK_M must be a power of two"),
])
def test_bad_arguments(bad, match):
    D = bad.get("D", 16)
    q = np.zeros((1, 6, 16, D), np.float16)
    k = np.zeros((1, bad.get("k_heads", 2), 16, D), np.float16)
    with pytest.raises(ValueError, match=match):
        tk.attention_forward(q, k, k, layout=bad.get("layout", "bhnd"), config=bad.get("config"))
