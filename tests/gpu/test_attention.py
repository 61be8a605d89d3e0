"""kernels/attention.py through tessera.kernels.attention on the GPU, against
torch.nn.functional.scaled_dot_product_attention computed in float64 (K/V heads
repeated for grouped-query attention), forward (O and LSE) and backward (dQ, dK,
dV through torch autograd: the wrapper's autograd.Function).

Error measure: the norm ratio ||out - ref||_2 / ||ref||_2 over the whole tensor,
computed in float64 (gpu_helpers.rel_err; a NaN anywhere counts as infinite),
<= 1e-2 for O, dQ, dK, dV; LSE (fp32) within 1e-2 absolute. Inputs are fresh
random normals each run (the seed is in the failure message); every buffer the
wrapper allocates (O, LSE, delta, dQ, dK, dV) starts as NaN, so an element a
kernel does not write fails the check.

The memory test runs the forward at N = 65536, D = 128 (an N x N fp16 score
matrix would need 8 GiB) and asserts that the peak allocation grows by less
than 64 MiB beyond the inputs (O itself is 16 MiB)."""
import importlib
import os

import pytest

torch = pytest.importorskip("torch")

import tessera.kernels as tk  # noqa: E402
# The module (the package's `attention` attribute is the function of that name).
attention_module = importlib.import_module("tessera.kernels.attention")
from gpu_helpers import rel_err  # noqa: E402

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
TOL = 1e-2


@pytest.fixture(autouse=True)
def poison_allocations(monkeypatch):
    """Every buffer the wrapper allocates starts as NaN."""
    def empty(like, shape, dtype=None):
        return torch.full(shape, float("nan"), dtype=like.dtype if dtype is None else dtype, device=like.device)
    monkeypatch.setattr(attention_module, "_empty", empty)


def fresh_seed():
    seed = int.from_bytes(os.urandom(4), "little")
    torch.manual_seed(seed)
    return seed


def to_bhnd(x, layout):
    return x if layout == "bhnd" else x.transpose(1, 2)


def reference(q, k, v, do, causal, scale, layout):
    """(O, LSE, dQ, dK, dV) in float64, in the tensors' own layout."""
    q64, k64, v64 = (to_bhnd(x, layout).detach().double().requires_grad_() for x in (q, k, v))
    group = q64.shape[1] // k64.shape[1]
    kr, vr = k64.repeat_interleave(group, dim=1), v64.repeat_interleave(group, dim=1)
    o = torch.nn.functional.scaled_dot_product_attention(q64, kr, vr, is_causal=causal, scale=scale)
    o.backward(to_bhnd(do, layout).double())
    with torch.no_grad():
        lse = []
        for h in range(q64.shape[1]):  # one head at a time: N x N in float64
            s = q64[:, h] @ kr[:, h].transpose(-1, -2) * scale
            if causal:
                n, nk = s.shape[-2:]
                s = s.masked_fill(torch.ones(n, nk, dtype=torch.bool, device=s.device).tril().logical_not(),
                                  float("-inf"))
            lse.append(torch.logsumexp(s, dim=-1))
        lse = torch.stack(lse, dim=1)
    back = (lambda x: x) if layout == "bhnd" else (lambda x: x.transpose(1, 2))
    return back(o.detach()), lse, back(q64.grad), back(k64.grad), back(v64.grad)


def make_inputs(B, H, Hk, N, D, dtype, layout):
    def shape(h):
        return (B, h, N, D) if layout == "bhnd" else (B, N, h, D)
    q = torch.randn(shape(H), device="cuda").to(dtype).requires_grad_()
    k = torch.randn(shape(Hk), device="cuda").to(dtype).requires_grad_()
    v = torch.randn(shape(Hk), device="cuda").to(dtype).requires_grad_()
    do = torch.randn(shape(H), device="cuda").to(dtype)
    return q, k, v, do


def check(q, k, v, do, causal, layout, what, sm_scale=None, config=None):
    D = q.shape[-1]
    scale = D ** -0.5 if sm_scale is None else sm_scale
    o, lse = tk.attention(q, k, v, causal=causal, sm_scale=sm_scale, layout=layout, return_lse=True, config=config)
    o.backward(do)
    torch.cuda.synchronize()
    ro, rlse, rdq, rdk, rdv = reference(q, k, v, do, causal, scale, layout)
    assert o.shape == q.shape and o.dtype == q.dtype
    errors = {"O": rel_err(o, ro), "dQ": rel_err(q.grad, rdq), "dK": rel_err(k.grad, rdk), "dV": rel_err(v.grad, rdv)}
    lse_err = (lse.double() - rlse).abs().max().item() if not torch.isnan(lse).any() else float("inf")
    bad = {name: e for name, e in errors.items() if not e <= TOL}
    assert not bad and lse_err <= 1e-2, f"{what}: relative errors {errors}, LSE max abs error {lse_err:.2e}"


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("layout", ["bhnd", "bnhd"])
@pytest.mark.parametrize("Hk", [4, 2], ids=["mha", "gqa"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("N", [128, 1000, 4096])
def test_attention_forward_backward(N, D, causal, Hk, layout, dtype):
    seed = fresh_seed()
    B = 1 if N >= 4096 else 2
    q, k, v, do = make_inputs(B, 4, Hk, N, D, DTYPES[dtype], layout)
    check(q, k, v, do, causal, layout, f"N={N} D={D} causal={causal} H=4 Hk={Hk} {layout} {dtype} seed={seed}")


FUSED = {"BWD_FUSED": True}


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("layout", ["bhnd", "bnhd"])
@pytest.mark.parametrize("Hk", [4, 2, 1], ids=["mha", "gqa", "mqa"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("N", [128, 1000, 4096])
def test_fused_backward(N, D, causal, Hk, layout, dtype):
    """The one-pass backward (BWD_FUSED: attn_bwd_fused_kernel, dQ summed by fp32 atomics from
    every key block and, with GQA, from every program of the group's K/V head)."""
    seed = fresh_seed()
    B = 1 if N >= 4096 else 2
    q, k, v, do = make_inputs(B, 4, Hk, N, D, DTYPES[dtype], layout)
    check(q, k, v, do, causal, layout, f"fused N={N} D={D} causal={causal} H=4 Hk={Hk} {layout} {dtype} seed={seed}",
          config=FUSED)


@pytest.mark.parametrize("Hk", [4, 1], ids=["mha", "mqa"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("N", [1000, 4096])
def test_fused_backward_staggered(N, D, causal, Hk):
    """FUSED_STAGGER: the key blocks' programs start their query sweeps at different blocks."""
    seed = fresh_seed()
    q, k, v, do = make_inputs(1, 4, Hk, N, D, torch.bfloat16, "bhnd")
    check(q, k, v, do, causal, "bhnd", f"fused staggered N={N} D={D} causal={causal} Hk={Hk} seed={seed}",
          config=dict(FUSED, FUSED_STAGGER=True))


FUSED_BLOCKS = [(64, 128, 8, 2), (64, 128, 8, 3), (64, 64, 4, 2), (32, 128, 8, 2)]


@pytest.mark.parametrize("blocks", FUSED_BLOCKS, ids=["x".join(map(str, b)) for b in FUSED_BLOCKS])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("NQ, NKV", [(1000, 1000), (300, 700), (700, 300), (17, 17)])
def test_fused_backward_blocks(NQ, NKV, D, causal, blocks):
    """The fused blocks bench/attention.py --sweep times (SWEEP_BWD_FUSED), ragged lengths,
    N_Q != N_KV, fewer rows than one block; bf16, GQA."""
    seed = fresh_seed()
    bm, bn, w, st = blocks
    q = torch.randn((2, 4, NQ, D), device="cuda").bfloat16().requires_grad_()
    k, v = (torch.randn((2, 2, NKV, D), device="cuda").bfloat16().requires_grad_() for _ in range(2))
    do = torch.randn_like(q)
    config = dict(FUSED, FUSED_BLOCK_M=bm, FUSED_BLOCK_N=bn, fused_num_warps=w, bwd_num_stages=st)
    check(q, k, v, do, causal, "bhnd", f"fused {blocks} NQ={NQ} NKV={NKV} D={D} causal={causal} seed={seed}",
          config=config)


OVERLAP_SHAPES = [(128, 128), (1000, 1000), (4096, 4096), (300, 700), (700, 300), (17, 17), (1000, 60)]


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("layout", ["bhnd", "bnhd"])
@pytest.mark.parametrize("Hk", [4, 2], ids=["mha", "gqa"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("NQ, NKV", OVERLAP_SHAPES, ids=[f"{a}x{b}" for a, b in OVERLAP_SHAPES])
def test_overlapped_forward(NQ, NKV, D, causal, Hk, layout, dtype):
    """OVERLAP: each key step issues S_j and P_{j-1} V_{j-1} before reading S_j (the first
    step's P is zeros, the last block's P V follows the loop), on wgmma with the waits deferred.
    Ragged lengths, fewer keys than one block and empty causal sweeps (N_Q > N_KV) included."""
    seed = fresh_seed()
    B = 1 if NQ >= 4096 else 2
    H = 4

    def shape(h, n):
        return (B, h, n, D) if layout == "bhnd" else (B, n, h, D)
    q = torch.randn(shape(H, NQ), device="cuda").to(DTYPES[dtype])
    k, v = (torch.randn(shape(Hk, NKV), device="cuda").to(DTYPES[dtype]) for _ in range(2))
    c = tk.attention_config(D, causal)
    o, lse = tk.attention_forward(q, k, v, causal, layout=layout, config={"OVERLAP": True})
    torch.cuda.synchronize()
    ro, rlse, *_ = reference(q, k, v, torch.zeros_like(q), causal, D ** -0.5, layout)
    what = f"NQ={NQ} NKV={NKV} D={D} causal={causal} Hk={Hk} {layout} {dtype} {c['BLOCK_M']}x{c['BLOCK_N']} seed={seed}"
    err = rel_err(o, ro)
    # Causal rows with no key (N_Q > N_KV: rows past the keys) have LSE -inf in both.
    finite = torch.isfinite(rlse)
    lse_err = (lse.double() - rlse)[finite].abs().max().item() if finite.any() else 0.0
    assert err <= TOL and lse_err <= 1e-2, f"{what}: O rel err {err:.2e}, LSE max abs err {lse_err:.2e}"


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D, BLOCK_N", [(64, 64), (128, 128)])
@pytest.mark.parametrize("NQ, NKV", OVERLAP_SHAPES, ids=[f"{a}x{b}" for a, b in OVERLAP_SHAPES])
def test_pingpong_forward(NQ, NKV, D, BLOCK_N, causal):
    """PINGPONG: 128-row blocks of 8 warps, the two warpgroups taking turns to issue their dots
    (named barriers 1 and 2): ragged lengths, fewer keys than a block, empty causal sweeps."""
    seed = fresh_seed()
    q = torch.randn((2, 4, NQ, D), device="cuda").to(torch.bfloat16)
    k, v = (torch.randn((2, 2, NKV, D), device="cuda").to(torch.bfloat16) for _ in range(2))
    config = {"PINGPONG": True, "BLOCK_M": 128, "BLOCK_N": BLOCK_N, "num_warps": 8, "maxnreg": None}
    o, lse = tk.attention_forward(q, k, v, causal, config=config)
    torch.cuda.synchronize()
    ro, rlse, *_ = reference(q, k, v, torch.zeros_like(q), causal, D ** -0.5, "bhnd")
    finite = torch.isfinite(rlse)
    lse_err = (lse.double() - rlse)[finite].abs().max().item() if finite.any() else 0.0
    err = rel_err(o, ro)
    assert err <= TOL and lse_err <= 1e-2, f"NQ={NQ} NKV={NKV} D={D}: O rel err {err:.2e}, LSE {lse_err:.2e} (seed {seed})"


TMA_CASES = [(64, 64, 4, 128, 3), (64, 128, 4, None, 2), (128, 128, 8, None, 3), (128, 64, 8, 128, 3)]


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0),
                    reason="TMA needs sm_90")
@pytest.mark.parametrize("BLOCK_M, BLOCK_N, warps, maxnreg, stages", TMA_CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("NQ, NKV, H, H_KV", [(1000, 1024, 4, 2), (256, 256, 2, 2), (4096, 4096, 2, 1),
                                              (700, 256, 2, 1)])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("overlap", [False, True], ids=["", "overlap"])
def test_tma_forward(NQ, NKV, H, H_KV, D, BLOCK_M, BLOCK_N, warps, maxnreg, stages, causal, overlap):
    """TMA: K and V read through tensor descriptors over their (B * H_KV * N_KV, D) view into an
    mbarrier ring (compiler/passes/SoftwarePipeline.cpp; K's block transposed into wgmma's K-major
    B tile): ragged query blocks, GQA (the rows of another head start at (b * H_KV + h) * N_KV),
    more queries than keys (causal: empty sweeps), key steps wider than the query block (a
    query block starts inside a key block). OVERLAP with TMA: V of the block before."""
    check_tma_forward(NQ, NKV, H, H_KV, D, causal, {
        "BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "num_warps": warps, "maxnreg": maxnreg, "num_stages": stages,
        "OVERLAP": overlap, "WARP_SPECIALIZE": False})


def check_tma_forward(NQ, NKV, H, H_KV, D, causal, config):
    """The TMA forward with `config` on fresh bf16 inputs (B = 2) against the float64 reference."""
    seed = fresh_seed()
    q = torch.randn((2, H, NQ, D), device="cuda").to(torch.bfloat16)
    k, v = (torch.randn((2, H_KV, NKV, D), device="cuda").to(torch.bfloat16) for _ in range(2))
    o, lse = tk.attention_forward(q, k, v, causal, config=dict(config, TMA=True))
    torch.cuda.synchronize()
    ro, rlse, *_ = reference(q, k, v, torch.zeros_like(q), causal, D ** -0.5, "bhnd")
    err = rel_err(o, ro)
    lse_err = (lse.double() - rlse).abs().max().item()
    assert err <= TOL and lse_err <= 1e-2, f"NQ={NQ} NKV={NKV} D={D}: O rel err {err:.2e}, LSE {lse_err:.2e} (seed {seed})"


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0),
                    reason="warp specialisation needs sm_90a")
@pytest.mark.parametrize("BLOCK_M, BLOCK_N, warps, maxnreg, stages, pingpong",
                         [c + (False,) for c in TMA_CASES] + [c + (True,) for c in TMA_CASES if c[2] == 8],
                         ids=lambda c: str(c))
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("NQ, NKV, H, H_KV", [(1000, 1024, 4, 2), (4096, 4096, 2, 1), (700, 256, 2, 1)])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_warp_specialized_forward(NQ, NKV, H, H_KV, D, BLOCK_M, BLOCK_N, warps, maxnreg, stages, pingpong, causal):
    """WARP_SPECIALIZE with TMA: a producer warpgroup issues the unmasked sweep's copies (4 more
    warps; two consumer warpgroups take its registers), the consumers wait on the full mbarriers
    and release stages on the empty ones; PINGPONG (8 warps: two consumer warpgroups) adds its
    named barriers among the consumers."""
    check_tma_forward(NQ, NKV, H, H_KV, D, causal, {
        "BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "num_warps": warps, "maxnreg": maxnreg, "num_stages": stages,
        "WARP_SPECIALIZE": True, "PINGPONG": pingpong})


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0),
                    reason="the autotuned forward's candidates are sm_90a's")
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("N", [1000, 1024])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_autotuned_forward(N, D, causal):
    """autotune=True: every candidate left after pruning (TMA: whole blocks of keys) is timed on
    this GPU, and the winner's output matches the reference (1000 keys: the pointer kernel)."""
    seed = fresh_seed()
    q, k, v = (torch.randn((2, 4, N, D), device="cuda").to(torch.bfloat16) for _ in range(3))
    o, lse = tk.attention_forward(q, k, v, causal, autotune=True)
    torch.cuda.synchronize()
    tuner = tk.attention_forward_autotuner(N % 64 == 0, D, causal)
    assert tuner.best_config in tuner.configs and not tuner.failures, tuner.failures
    assert set(tuner.configs_timings) == set(tuner.configs)  # 1024 keys: whole blocks for every candidate
    ro, rlse, *_ = reference(q, k, v, torch.zeros_like(q), causal, D ** -0.5, "bhnd")
    err, lse_err = rel_err(o, ro), (lse.double() - rlse).abs().max().item()
    assert err <= TOL and lse_err <= 1e-2, f"N={N} D={D}: O rel err {err:.2e}, LSE {lse_err:.2e} (seed {seed})"


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0),
                    reason="TMA needs sm_90")
def test_tma_forward_refuses_what_it_cannot_read():
    """TMA=True asked for K/V it cannot read through a (rows, D) descriptor: one error saying why."""
    q = torch.randn((1, 2, 256, 64), device="cuda").to(torch.bfloat16)
    kv = torch.randn((1, 256, 2, 64), device="cuda").to(torch.bfloat16)
    with pytest.raises(ValueError, match="packed as"):  # a (B, N, H, D) buffer seen as (B, H, N, D)
        tk.attention_forward(q, kv.transpose(1, 2), kv.transpose(1, 2), config={"TMA": True})
    k = torch.randn((1, 2, 200, 64), device="cuda").to(torch.bfloat16)
    with pytest.raises(ValueError, match="multiple of BLOCK_N"):
        tk.attention_forward(q, k, k, config={"TMA": True})


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_default_forward_takes_the_by_keys_entries(causal):
    """D128 with 1000 keys takes HOPPER_FORWARD_BY_KEYS's 64 x 64 blocks on sm_90a (the
    wrapper's own choice, not a config override), 4096 keys HOPPER_FORWARD's, and both match
    float64 SDPA."""
    import tessera
    seed = fresh_seed()
    hopper = tessera._C.target_arch(0) == "sm_90a"
    for n, block_m in ((1000, 64), (4096, 128)):
        c = tk.attention_config(128, causal, keys=n)
        assert c["BLOCK_M"] == (block_m if hopper else tk.attention_config(128, causal, wgmma=False)["BLOCK_M"])
        q, k, v = (torch.randn((1, 2, n, 128), device="cuda").to(torch.bfloat16) for _ in range(3))
        o, lse = tk.attention_forward(q, k, v, causal)
        torch.cuda.synchronize()
        ro, rlse, *_ = reference(q, k, v, torch.zeros_like(q), causal, 128 ** -0.5, "bhnd")
        err, lse_err = rel_err(o, ro), (lse.double() - rlse).abs().max().item()
        assert err <= TOL and lse_err <= 1e-2, f"N {n}: O rel err {err:.2e}, LSE err {lse_err:.2e} (seed {seed})"


@pytest.mark.parametrize("config", [None, FUSED], ids=["default", "fused"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_strided_views_of_a_packed_qkv_buffer(causal, config):
    """q, k, v as views into one (B, N, 3, H, D) buffer (no copy); gradients flow back into it."""
    seed = fresh_seed()
    B, N, H, D = 2, 333, 4, 64
    packed = torch.randn((B, N, 3, H, D), device="cuda").half().requires_grad_()
    q, k, v = packed[:, :, 0], packed[:, :, 1], packed[:, :, 2]
    do = torch.randn((B, N, H, D), device="cuda").half()
    o = tk.attention(q, k, v, causal=causal, layout="bnhd", sm_scale=0.1, config=config)
    o.backward(do)
    ro, _, rdq, rdk, rdv = reference(q, k, v, do, causal, 0.1, "bnhd")
    what = f"packed qkv causal={causal} seed={seed}"
    assert rel_err(o, ro) <= TOL, what
    for i, ref in enumerate((rdq, rdk, rdv)):
        assert rel_err(packed.grad[:, :, i], ref) <= TOL, f"{what}: grad of {'qkv'[i]}"


@pytest.mark.parametrize("config", [None, FUSED], ids=["default", "fused"])
def test_different_query_and_key_lengths(config):
    seed = fresh_seed()
    q = torch.randn((1, 4, 300, 64), device="cuda").half().requires_grad_()
    k = torch.randn((1, 2, 700, 64), device="cuda").half().requires_grad_()
    v = torch.randn((1, 2, 700, 64), device="cuda").half().requires_grad_()
    do = torch.randn_like(q)
    check(q, k, v, do, False, "bhnd", f"N_Q=300 N_KV=700 seed={seed}", config=config)


@pytest.mark.parametrize("config", [None, FUSED], ids=["default", "fused"])
def test_backward_of_a_sum_gets_a_broadcast_gradient(config):
    """o.sum().backward() hands the backward a dO of stride 0 everywhere (an expanded scalar)."""
    seed = fresh_seed()
    q, k, v = (torch.randn((2, 2, 200, 64), device="cuda").half().requires_grad_() for _ in range(3))
    o = tk.attention(q, k, v, causal=True, config=config)
    o.float().sum().backward()
    ones = torch.ones_like(q)
    _, _, rdq, rdk, rdv = reference(q, k, v, ones, True, 64 ** -0.5, "bhnd")
    for name, got, ref in (("dQ", q.grad, rdq), ("dK", k.grad, rdk), ("dV", v.grad, rdv)):
        assert rel_err(got, ref) <= TOL, f"{name} seed={seed}"


def test_no_grad_returns_plain_tensors():
    q = torch.randn((1, 2, 256, 64), device="cuda").half()
    with torch.no_grad():
        o = tk.attention(q, q, q)
    assert o.grad_fn is None and not torch.isnan(o).any()


def test_memory_is_linear_in_sequence_length():
    """N = 65536, D = 128, fp16: a materialised N x N matrix per head would be 8 GiB."""
    seed = fresh_seed()
    N, D = 65536, 128
    q, k, v = (torch.randn((1, 1, N, D), device="cuda").half() for _ in range(3))
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    o, lse = tk.attention(q, k, v, causal=False, return_lse=True)
    torch.cuda.synchronize()
    growth = torch.cuda.max_memory_allocated() - before
    assert growth < 64 * 2**20, f"forward at N={N} allocated {growth / 2**20:.1f} MiB beyond its inputs"
    # Spot-check some rows against a float64 reference (one row of scores is only N long).
    rows = torch.tensor([0, 1, 4097, N // 2, N - 1], device="cuda")
    s = q[0, 0, rows].double() @ k[0, 0].double().T * D ** -0.5
    ref = torch.softmax(s, dim=-1) @ v[0, 0].double()
    assert rel_err(o[0, 0, rows], ref) <= TOL, f"seed={seed}"
    assert (lse[0, 0, rows].double() - torch.logsumexp(s, -1)).abs().max().item() <= 1e-2
    # Backward too: dQ, dK, dV (48 MiB) and delta are all it allocates.
    do = torch.randn_like(q)
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    dq, dk, dv = tk.attention_backward(do, q, k, v, o, lse, causal=False)
    torch.cuda.synchronize()
    growth = torch.cuda.max_memory_allocated() - before
    assert growth < 112 * 2**20, f"backward at N={N} allocated {growth / 2**20:.1f} MiB"
    assert not any(torch.isnan(t).any() for t in (dq, dk, dv))
    # The one-pass backward adds dQ's fp32 sums (32 MiB).
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    fused = tk.attention_backward(do, q, k, v, o, lse, causal=False, config=FUSED)
    torch.cuda.synchronize()
    growth = torch.cuda.max_memory_allocated() - before
    assert growth < 144 * 2**20, f"fused backward at N={N} allocated {growth / 2**20:.1f} MiB"
    for got, ref in zip(fused, (dq, dk, dv)):
        assert rel_err(got, ref.double()) <= TOL, f"fused vs split, seed={seed}"


def test_kernels_run_on_tensor_cores():
    q = torch.randn((1, 1, 128, 64), device="cuda").half()
    from tessera.kernels import _files
    kern = _files.load("attention").attn_fwd_kernel
    o = torch.empty_like(q)
    lse = torch.empty((1, 1, 128), device="cuda")
    c = tk.attention_config(64)
    compiled = kern.warmup(q, q, q, o, lse, *q.stride(), *q.stride(), *q.stride(), *o.stride(), 1, 1, 128, 128,
                           0.125, HEAD_DIM=64, BLOCK_M=c["BLOCK_M"], BLOCK_N=c["BLOCK_N"], CAUSAL=False,
                           num_warps=c["num_warps"], grid=(1, 1))
    ptx = compiled.asm["ptx"]
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx or "wgmma.mma_async" in ptx


# ------------------------------------------------ both tensor-core paths on one GPU

def forward_signature(kernel):
    """What a launch on contiguous bf16 (B, H, N, D) tensors specialises to."""
    import inspect
    sig = []
    for name, p in inspect.signature(kernel.fn).parameters.items():
        if "constexpr" in str(p.annotation):
            continue
        if name in ("Q", "K", "V", "O"):
            sig.append("*bf16:16")
        elif name == "LSE":
            sig.append("*fp32:16")
        elif name == "sm_scale":
            sig.append("fp32")
        elif name.startswith("stride_"):
            sig.append("i32:1" if name.endswith("d") else "i32:16")
        else:
            sig.append("i32")
    return ",".join(sig)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D", [64, 128])
def test_forward_kernel_on_each_tensor_core_path(target, causal, D):
    """attn_fwd_kernel compiled as sm_80 PTX (mma.sync, CONFIGS' blocks) and as sm_90a
    (wgmma, HOPPER_FORWARD's blocks), launched directly on this GPU, ragged N, bf16, against
    float64 SDPA (issue 8: the mma.sync path still runs, on the Hopper GPU)."""
    import tessera
    from tessera.kernels import _files
    if target == "sm_90a" and tessera._C.target_arch(0) != "sm_90a":
        pytest.skip("needs a Hopper GPU (sm_90a)")
    seed = fresh_seed()
    B, H, N = 2, 4, 1000
    q, k, v = (torch.randn((B, H, N, D), device="cuda").to(torch.bfloat16) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    lse = torch.full((B, H, N), float("nan"), device="cuda")
    c = tk.attention_config(D, causal, wgmma=target == "sm_90a")
    fwd = _files.load("attention").attn_fwd_kernel
    kernel = tessera.compile(fwd, signature=forward_signature(fwd), target=target,
                             constexprs={"HEAD_DIM": D, "BLOCK_M": c["BLOCK_M"], "BLOCK_N": c["BLOCK_N"],
                                         "CAUSAL": causal},
                             num_warps=c["num_warps"], num_stages=c["num_stages"])
    ptx = kernel.asm["ptx"]
    assert ("wgmma.mma_async" in ptx) == (target == "sm_90a")
    assert target == "sm_90a" or "mma.sync.aligned.m16n8k16" in ptx
    scale = D ** -0.5
    kernel[(tessera.cdiv(N, c["BLOCK_M"]), B * H)](q, k, v, o, lse, *q.stride(), *k.stride(), *v.stride(),
                                                   *o.stride(), H, H, N, N, scale)
    torch.cuda.synchronize()
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal,
                                                           scale=scale)
    err = rel_err(o, ref)
    assert err <= TOL, f"{target} D{D} causal={causal}: rel err {err:.2e} (seed {seed})"
