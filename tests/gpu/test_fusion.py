"""Fusion on the GPU (docs/fusion.md) against torch eager in float64:
@tessera.elementwise over shapes, broadcasts, strided/transposed views, dtypes and
scalars (autotuned and fixed configs; the contiguous fast path and the general path);
the fused GEMM epilogue (bias + GELU, residual + scale, fp32 out, transposed operands,
ragged shapes) through tk.matmul; softmax with a prologue and an epilogue; attention
modifiers (ALiBi, relative bias, sliding window with kv_range, document mask) against
torch SDPA with the explicit float bias / boolean mask. Tensor cores on (TESSERA_MMA=1)
and the disk cache off, as in test_matmul.py, so that the fusion pass's rewrite of the
GEMM epilogue (the cast and the bias load moved into the mma layout) is what runs."""
import math
import os

import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.kernels as tk  # noqa: E402
import tessera.language as tl  # noqa: E402
from gpu_helpers import assert_rel_err  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def tensor_cores():
    saved = {k: os.environ.get(k) for k in ("TESSERA_MMA", "TESSERA_CACHE")}
    os.environ["TESSERA_MMA"], os.environ["TESSERA_CACHE"] = "1", "0"
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@tessera.elementwise
def bias_gelu(x, b):
    y = x + b
    return 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))


@tessera.elementwise
def axpby(x, y, a, b):
    return a * x + b * y


@tessera.elementwise
def chain4(x):
    y = x * 2.0
    y = y + 1.0
    y = tl.maximum(y, 0.0)
    return y * y


def gelu64(y):
    return torch.nn.functional.gelu(y.double())


DT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
TOL = {"fp32": 1e-5, "fp16": 2e-3, "bf16": 1e-2}


# ------------------------------------------------------------ elementwise

@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("n", [1, 1000, 4096, 1 << 20, (1 << 20) + 3])
def test_chain_contiguous(dtype, n):
    x = torch.randn(n, device="cuda", dtype=DT[dtype])
    y = chain4(x)
    assert y.dtype == x.dtype and y.shape == x.shape
    ref = torch.relu(x.double() * 2 + 1) ** 2
    assert_rel_err(y, ref, TOL[dtype], "chain4")


@pytest.mark.parametrize("xshape, bshape", [
    ((512, 1024), (1024,)), ((513, 1000), (1000,)), ((300, 77), (300, 1)), ((4, 33, 65), (33, 1)),
    ((2, 3, 4, 129), (3, 1, 129)), ((8, 1, 16), (1, 7, 1)), ((1000,), ()),
])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_bias_gelu_broadcast(xshape, bshape, dtype):
    x = torch.randn(xshape, device="cuda", dtype=DT[dtype])
    b = torch.randn(bshape, device="cuda", dtype=DT[dtype])
    y = bias_gelu(x, b)
    assert_rel_err(y, gelu64(x.double() + b.double()), TOL[dtype] * 5, "bias_gelu")


@pytest.mark.parametrize("case", ["transposed", "sliced", "expanded", "channels_last"])
def test_strided_inputs(case):
    base = torch.randn((256, 384), device="cuda")
    if case == "transposed":
        x = base.t()
    elif case == "sliced":
        x = base[1::3, 2::2]
    elif case == "expanded":
        x = base[0].expand(100, 384)
    else:
        x = torch.randn((4, 16, 8, 8), device="cuda").to(memory_format=torch.channels_last)
    b = torch.randn(x.shape[-1], device="cuda")
    y = bias_gelu(x, b)
    assert_rel_err(y, gelu64(x.double() + b.double()), 1e-5, case)
    out = torch.empty(tuple(reversed(x.shape)), device="cuda").permute(*reversed(range(x.dim())))
    bias_gelu(x, b, out=out)
    assert_rel_err(out, gelu64(x.double() + b.double()), 1e-5, case + " out=")


def test_scalars_promotion_and_fixed_config():
    x = torch.randn((1000, 300), device="cuda", dtype=torch.float16)
    z = torch.randn((1000, 300), device="cuda", dtype=torch.float32)
    for a, b in ((2.0, -1.0), (0.25, 3.0)):
        y = axpby(x, z, a, b)
        assert y.dtype == torch.float32
        assert_rel_err(y, a * x.double() + b * z.double(), 1e-5, "axpby")
    y = axpby(x, z, 2.0, 1.0, autotune=False)
    assert_rel_err(y, 2 * x.double() + z.double(), 1e-5, "axpby fixed config")
    y = axpby(x, z, 2.0, 1.0, out_dtype=torch.bfloat16)
    assert y.dtype == torch.bfloat16


# ---------------------------------------------------------- GEMM epilogue

@tessera.jit
def ep_bias_gelu(acc, bias):
    y = acc + bias
    return 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))


@tessera.jit
def ep_bias_gelu_tanh(acc, bias):
    # GELU's tanh form with the hardware tanh (tl.math.fast_tanhf: tanh.approx.f32)
    y = acc + bias
    return 0.5 * y * (1.0 + tl.math.fast_tanhf(y * (0.7978845608028654 + 0.035677408136300125 * y * y)))


@tessera.jit
def ep_residual(acc, residual, alpha):
    return acc * alpha + residual


@pytest.mark.parametrize("M, N, K", [(128, 128, 64), (1000, 777, 333), (2048, 2048, 512), (1, 300, 45)])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_matmul_bias_gelu(M, N, K, dtype):
    a = torch.randn((M, K), device="cuda", dtype=DT[dtype])
    b = torch.randn((N, K), device="cuda", dtype=DT[dtype]).t()
    bias = torch.randn((N,), device="cuda", dtype=DT[dtype])
    c = tk.matmul(a, b, epilogue=ep_bias_gelu, epilogue_args=(bias,))
    ref = gelu64(a.double() @ b.double() + bias.double())
    assert_rel_err(c, ref, 1e-2, "bias+gelu")
    for config in ("128x128x32/w4/s3", "64x64x64/w4/s3"):
        c = tk.matmul(a, b, epilogue=ep_bias_gelu, epilogue_args=(bias,), config=config)
        assert_rel_err(c, ref, 1e-2, f"bias+gelu {config}")


@pytest.mark.parametrize("M, N, K", [(1000, 777, 333), (4096, 4096, 256)])
def test_matmul_bias_gelu_tanh(M, N, K):
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16)
    bias = torch.randn((N,), device="cuda", dtype=torch.float16)
    c = tk.matmul(a, b, epilogue=ep_bias_gelu_tanh, epilogue_args=(bias,))
    ref = torch.nn.functional.gelu(a.double() @ b.double() + bias.double(), approximate="tanh")
    assert_rel_err(c, ref, 1e-2, "bias+gelu(tanh)")


def test_matmul_residual_scale_fp32_out():
    M, N, K = 512, 384, 256
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16)
    res = torch.randn((N, M), device="cuda", dtype=torch.float32).t()
    out = torch.empty((M, N), device="cuda", dtype=torch.float32)
    tk.matmul(a, b, out=out, epilogue=ep_residual, epilogue_args=(res, 0.5))
    assert_rel_err(out, (a.double() @ b.double()) * 0.5 + res.double(), 1e-3, "residual")


# ---------------------------------------------------------------- softmax

@tessera.jit
def scale_causal(x, row, cols):
    return tl.where(cols <= row, x * 0.125, -float("inf"))


@tessera.jit
def square(y, row, cols):
    return y * y


@pytest.mark.parametrize("cols", [100, 1024, 5000, 40000])
def test_softmax_prologue_epilogue(cols):
    rows = 300
    x = torch.randn((rows, cols), device="cuda")
    y = tk.softmax(x, prologue=scale_causal, epilogue=square)
    r = torch.arange(rows, device="cuda")[:, None]
    c = torch.arange(cols, device="cuda")[None, :]
    ref = torch.softmax(torch.where(c <= r, x.double() * 0.125, -math.inf), dim=-1) ** 2
    assert_rel_err(y, ref, 1e-5, "softmax prologue/epilogue")


# -------------------------------------------------------------- attention

@tessera.jit
def alibi(score, b, h, q_idx, kv_idx, slopes):
    return score - tl.load(slopes + h) * tl.abs(q_idx - kv_idx).to(tl.float32)


@tessera.jit
def rel_bias(score, b, h, q_idx, kv_idx, table, n_kv):
    return score + tl.load(table + h * (2 * n_kv - 1) + (q_idx - kv_idx + n_kv - 1)).to(tl.float32)


@tessera.jit
def window_mask(b, h, q_idx, kv_idx, window):
    return (kv_idx <= q_idx) & (q_idx - kv_idx < window)


@tessera.jit
def window_range(q_lo, q_hi, n_kv, window):
    return q_lo - window + 1, q_hi


@tessera.jit
def document_mask(b, h, q_idx, kv_idx, docs):
    return tl.load(docs + q_idx) == tl.load(docs + kv_idx)


def sdpa(q, k, v, mask):
    return torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mask)


def qkv(B, H, N, D, dtype):
    return tuple(torch.randn((B, H, N, D), device="cuda", dtype=DT[dtype]) for _ in range(3))


@pytest.mark.parametrize("N, D", [(256, 64), (1000, 128), (2048, 64)])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_attention_alibi_and_relative_bias(N, D, dtype):
    B, H = 2, 4
    q, k, v = qkv(B, H, N, D, dtype)
    slopes = torch.tensor([2 ** -(i + 1) for i in range(H)], device="cuda", dtype=torch.float32)
    idx = torch.arange(N, device="cuda")
    dist = (idx[:, None] - idx[None, :]).abs().double()
    o = tk.attention(q, k, v, score_mod=alibi, mod_args=(slopes,))
    assert_rel_err(o, sdpa(q, k, v, -slopes.double()[None, :, None, None] * dist), 1e-2, "alibi")
    table = torch.randn((H, 2 * N - 1), device="cuda", dtype=DT[dtype])
    o = tk.attention(q, k, v, score_mod=rel_bias, mod_args=(table, N))
    bias = table.double()[:, (idx[:, None] - idx[None, :] + N - 1)][None]
    assert_rel_err(o, sdpa(q, k, v, bias), 1e-2, "relative bias")


@pytest.mark.parametrize("N, window", [(1024, 128), (4096, 1024), (1000, 77)])
@pytest.mark.parametrize("D", [64, 128])
def test_attention_sliding_window(N, window, D):
    q, k, v = qkv(1, 4, N, D, "fp16")
    idx = torch.arange(N, device="cuda")
    mask = (idx[None, :] <= idx[:, None]) & (idx[:, None] - idx[None, :] < window)
    ref = sdpa(q, k, v, mask)
    o = tk.attention(q, k, v, mask_mod=window_mask, kv_range=window_range, mod_args=(window,))
    assert_rel_err(o, ref, 1e-2, "window with kv_range")
    o = tk.attention(q, k, v, mask_mod=window_mask, mod_args=(window,))
    assert_rel_err(o, ref, 1e-2, "window, no skipping")
    o = tk.attention(q, k, v, causal=True, mask_mod=window_mask, kv_range=window_range, mod_args=(window,))
    assert_rel_err(o, ref, 1e-2, "window + causal")


def test_attention_document_mask_gqa_bnhd():
    B, H, Hk, N, D = 2, 8, 2, 777, 64
    q = torch.randn((B, N, H, D), device="cuda", dtype=torch.float16)
    k = torch.randn((B, N, Hk, D), device="cuda", dtype=torch.float16)
    v = torch.randn((B, N, Hk, D), device="cuda", dtype=torch.float16)
    docs = torch.sort(torch.randint(0, 5, (N,), device="cuda", dtype=torch.int32)).values
    o = tk.attention(q, k, v, layout="bnhd", mask_mod=document_mask, mod_args=(docs,))
    mask = docs[:, None] == docs[None, :]
    qb, kb, vb = (t.transpose(1, 2) for t in (q, k, v))
    kb, vb = (t.repeat_interleave(H // Hk, dim=1) for t in (kb, vb))
    assert_rel_err(o.transpose(1, 2), sdpa(qb, kb, vb, mask), 1e-2, "document mask")


def test_attention_mods_are_forward_only():
    q, k, v = (t.requires_grad_() for t in qkv(1, 2, 128, 64, "fp16"))
    with pytest.raises(NotImplementedError, match="forward-only"):
        tk.attention(q, k, v, mask_mod=window_mask, mod_args=(16,))
    with torch.no_grad():
        tk.attention(q, k, v, mask_mod=window_mask, mod_args=(16,))
