"""Fusion (docs/fusion.md) on the host interpreter against numpy, no GPU:
@tessera.elementwise (broadcasting, strided/transposed inputs, scalars, dtypes,
out=/out_dtype=, the generated kernel's two paths), @jit functions as constexpr
arguments (Triton's EPILOGUE: tl.constexpr) and their misuse, the fused GEMM
epilogue (bias, GELU, residual, scale, cast), the softmax prologue/epilogue, and
the attention modifiers (ALiBi, relative bias, sliding window with skipped key
blocks, document masking) against a numpy reference."""
import importlib
import math
import sys

import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))

import tessera  # noqa: E402
import tessera.kernels as tk  # noqa: E402
import tessera.language as tl  # noqa: E402
from tessera import _compose  # noqa: E402
from tessera.jit import SourceKernel, compose  # noqa: E402

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")
mm = importlib.import_module("tessera.kernels.matmul")

_erf = np.vectorize(math.erf)


def gelu_ref(y):
    y = y.astype(np.float64)
    return 0.5 * y * (1.0 + _erf(y / math.sqrt(2.0)))


# ------------------------------------------------------------------ functions

@tessera.elementwise
def bias_gelu(x, b):
    y = x + b
    return 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))


@tessera.elementwise
def axpby(x, y, a, b):
    return a * x + b * y


@tessera.fuse
def chain4(x):
    # the benchmark's 4-op chain: scale, shift, relu, square
    y = x * 2.0
    y = y + 1.0
    y = tl.maximum(y, 0.0)
    return y * y


@tessera.jit
def _half(x):
    return x * 0.5


SCALE = 3.0


@tessera.elementwise
def uses_helper_and_global(x):
    return _half(x) * SCALE


def make_scaled(factor):
    @tessera.elementwise
    def scaled(x):
        return x * factor
    return scaled


# -------------------------------------------------------------- elementwise

@pytest.mark.parametrize("xshape, bshape", [
    ((37, 70), (70,)),          # bias row
    ((37, 70), (37, 1)),        # bias column
    ((5, 6, 7), (6, 1)),        # rank 3, middle dim
    ((3, 1, 9), (4, 1)),        # both broadcast
    ((1000,), ()),              # 0-d tensor
    ((2, 3, 4, 5), (2, 3, 4, 5)),  # same shape: contiguous fast path
])
def test_elementwise_broadcasting(xshape, bshape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xshape).astype(np.float32)
    b = np.asarray(rng.standard_normal(bshape), dtype=np.float32)
    y = bias_gelu(x, b, interpret=True)
    ref = gelu_ref(x + b)
    assert y.shape == ref.shape and y.dtype == np.float32
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_elementwise_fast_path_is_chosen_for_contiguous_same_shape():
    x = np.ones((8, 16), np.float32)
    src = bias_gelu.kernel_source(x, x, interpret=True)
    assert "tl.load(X0 + offs, mask=mask)" in src and "X0_s0" not in src
    # A bias row merges nothing: rank 2, strides per operand.
    src = bias_gelu.kernel_source(x, x[0], interpret=True)
    assert "X1_s0" in src and "offs" not in src
    # ... loaded once as a [BLOCK_C] row, broadcast over the program's rows in registers (not a 2-D
    # load that fetches it again for every row); a column (M, 1) or a (B, 1, N) operand stays 2-D.
    assert "x1 = tl.load(X1 + cols * X1_s1, mask=cols < n_cols)[None, :]" in src
    assert "x0 = tl.load(X0 + (i0 * X0_s0)[:, None]" in src
    assert "x1 = tl.load(X1 + (i0 * X1_s0)[:, None]" in bias_gelu.kernel_source(x, x[:, :1], interpret=True)
    x3 = np.ones((2, 8, 16), np.float32)
    assert "x1 = tl.load(X1 + (i0 * X1_s0 + i1 * X1_s1)[:, None]" in bias_gelu.kernel_source(
        x3, x3[:, :1, :], interpret=True)
    assert "x1 = tl.load(X1 + cols * X1_s1, mask=cols < n_cols)[None, :]" in bias_gelu.kernel_source(
        x3, x3[0, 0], interpret=True)  # (2, 8, 16) + (16,): rank 2 after merging, a row
    # A contiguous (B, M, N) + (B, M, N) slice of a bigger array is not contiguous: general path.
    big = np.ones((8, 32), np.float32)
    src = bias_gelu.kernel_source(big[:, :16], x, interpret=True)
    assert "X0_s0" in src


@pytest.mark.parametrize("case", ["transposed", "sliced", "reversed-free step", "broadcast-view"])
def test_elementwise_strided_inputs(case):
    rng = np.random.default_rng(1)
    base = rng.standard_normal((40, 64)).astype(np.float32)
    if case == "transposed":
        x = base.T                        # (64, 40), strides (1, 64)
    elif case == "sliced":
        x = base[3:35:2, 5:60:3]          # steps in both dims
    elif case == "reversed-free step":
        x = base[:, ::4]
    else:
        x = np.broadcast_to(base[0], (7, 64))  # zero strides in the input itself
    b = rng.standard_normal(x.shape[-1]).astype(np.float32)
    y = bias_gelu(x, b, interpret=True)
    np.testing.assert_allclose(y, gelu_ref(x + b), rtol=1e-5, atol=1e-5)


def test_elementwise_scalars_and_runtime_values():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((33, 17)).astype(np.float32)
    z = rng.standard_normal((33, 17)).astype(np.float32)
    for a, b in ((2.0, -1.0), (0.5, 3.0)):
        y = axpby(x, z, a, b, interpret=True)
        np.testing.assert_allclose(y, a * x + b * z, rtol=1e-6, atol=1e-6)
    # ints and numpy scalars as scalars too
    y = axpby(x, z, 2, 1, interpret=True)
    np.testing.assert_allclose(y, 2 * x + z, rtol=1e-6, atol=1e-6)
    y = axpby(x, z, np.float32(0.5), np.int32(2), interpret=True)
    np.testing.assert_allclose(y, 0.5 * x + 2 * z, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_elementwise_dtypes(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((257,)).astype(dtype)
    y = chain4(x, interpret=True)
    assert y.dtype == dtype
    ref = np.maximum(x.astype(np.float64) * 2 + 1, 0) ** 2
    tol = 2e-3 if dtype == np.float16 else 1e-6
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=tol, atol=tol)


def test_elementwise_promotion_out_and_out_dtype():
    x = np.arange(12, dtype=np.float16).reshape(3, 4)
    b = np.ones(4, np.float32)
    y = bias_gelu(x, b, interpret=True)
    assert y.dtype == np.float32  # numpy's result_type of the tensors
    y16 = bias_gelu(x, b, out_dtype=np.float16, interpret=True)
    assert y16.dtype == np.float16
    out = np.zeros((4, 3), np.float32).T   # a strided out= view
    r = bias_gelu(x, b, out=out, interpret=True)
    assert r is out
    np.testing.assert_allclose(out, gelu_ref(x.astype(np.float32) + b), rtol=1e-3, atol=1e-3)
    with pytest.raises(ValueError, match="out has shape"):
        bias_gelu(x, b, out=np.zeros((3, 5), np.float32), interpret=True)


def test_elementwise_helpers_globals_and_closures():
    x = np.linspace(-2, 2, 50).astype(np.float32)
    np.testing.assert_allclose(uses_helper_and_global(x, interpret=True), x * 1.5, rtol=1e-6)
    for f in (2.0, 5.0):
        np.testing.assert_allclose(make_scaled(f)(x, interpret=True), x * f, rtol=1e-6)


def test_elementwise_errors():
    x = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError, match="do not broadcast"):
        bias_gelu(x, np.ones(5, np.float32), interpret=True)
    with pytest.raises(TypeError, match="at least one argument must be a tensor"):
        bias_gelu(1.0, 2.0, interpret=True)
    with pytest.raises(TypeError, match="interpret=True"):
        bias_gelu(x, x, interpret=False)


def test_elementwise_empty():
    x = np.ones((0, 4), np.float32)
    assert bias_gelu(x, np.ones(4, np.float32), interpret=True).shape == (0, 4)


def test_elementwise_function_is_inlined_from_a_kernel():
    @tessera.jit(interpret=True)
    def k(x_ptr, y_ptr, FN: tl.constexpr, N: tl.constexpr):
        offs = tl.arange(0, N)
        tl.store(y_ptr + offs, FN(tl.load(x_ptr + offs), 1.0))
    x = np.linspace(-1, 1, 16).astype(np.float32)
    y = np.zeros_like(x)
    k[(1,)](x, y, FN=bias_gelu, N=16)
    np.testing.assert_allclose(y, gelu_ref(x + 1.0), rtol=1e-5, atol=1e-5)


# ------------------------------------------------ functions as constexprs

@tessera.jit
def times_two(x):
    return x * 2.0


@tessera.jit
def plus(x, y):
    return x + y


@tessera.jit(interpret=True)
def apply_kernel(x_ptr, y_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, OP(x), mask=mask)


@tessera.jit(interpret=True)
def apply_twice_kernel(x_ptr, y_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, _apply_helper(OP, tl.load(x_ptr + offs)))


@tessera.jit
def _apply_helper(F: tl.constexpr, x):
    return F(F(x))


def test_jit_function_as_constexpr():
    x = np.arange(10, dtype=np.float32)
    y = np.zeros_like(x)
    apply_kernel[(1,)](x, y, 10, OP=times_two, BLOCK=16)
    np.testing.assert_array_equal(y, 2 * x)
    apply_kernel[(1,)](x, y, 10, OP=chain4, BLOCK=16)   # an elementwise function works too
    np.testing.assert_allclose(y, np.maximum(2 * x + 1, 0) ** 2)
    # positional
    apply_kernel[(1,)](x, y, 10, times_two, 16)
    np.testing.assert_array_equal(y, 2 * x)
    # passed on to a helper that calls it
    y16 = np.zeros(16, np.float32)
    apply_twice_kernel[(1,)](np.arange(16, dtype=np.float32), y16, OP=times_two, BLOCK=16)
    np.testing.assert_array_equal(y16, 4 * np.arange(16))
    assert apply_kernel._function_params() == {"OP"}
    assert apply_twice_kernel._function_params() == {"OP"}
    # Kernels that call no constexpr keep the C++ fast launch path.
    from tessera.kernels import _files
    assert _files.load("matmul").matmul_kernel._function_params() == frozenset()
    assert _files.load("attention").attn_fwd_kernel._function_params() == frozenset()
    assert _files.load("attention").attn_fwd_mod_kernel._function_params() == {"SCORE_MOD", "MASK_MOD", "KV_RANGE"}


def test_jit_function_constexpr_misuse():
    x = np.arange(4, dtype=np.float32)
    y = np.zeros_like(x)
    with pytest.raises(tessera.CompilationError, match="names no @jit function"):
        apply_kernel[(1,)](x, y, 4, OP="nope", BLOCK=4)
    with pytest.raises(tessera.CompilationError, match="is the constexpr 3, not a function"):
        apply_kernel[(1,)](x, y, 4, OP=3, BLOCK=4)
    with pytest.raises(tessera.CompilationError, match="missing a value for parameter"):
        apply_kernel[(1,)](x, y, 4, OP=plus, BLOCK=4)
    with pytest.raises(_compose.CompositionError, match="must be a @tessera.jit function"):
        compose(apply_kernel, {"OP": len})


def test_composition_name_clash_is_an_error():
    @tessera.jit
    def softmax_kernel(x):  # the name of a kernel in kernels/softmax.py
        return x
    from tessera.kernels import _files
    with pytest.raises(_compose.CompositionError, match="clashes"):
        compose(_files.load("softmax").softmax_kernel, {"PROLOGUE": softmax_kernel})


# ----------------------------------------------------------- GEMM epilogue

@tessera.jit
def ep_bias_gelu(acc, bias):
    y = acc + bias
    return 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))


@tessera.jit
def ep_residual_scale(acc, residual, alpha):
    return acc * alpha + residual


@tessera.jit
def ep_relu(acc):
    return tl.maximum(acc, 0.0)


@pytest.mark.parametrize("M, N, K", [(32, 48, 32), (45, 37, 29)])
def test_matmul_epilogue_bias_gelu(M, N, K):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = (rng.standard_normal((N, K)).astype(np.float16)).T   # strided B
    bias = rng.standard_normal(N).astype(np.float16)
    c = tk.matmul(a, b, epilogue=ep_bias_gelu, epilogue_args=(bias,), config="16x16x16/w4/s2", interpret=True)
    ref = gelu_ref(a.astype(np.float64) @ b.astype(np.float64) + bias)
    assert c.dtype == np.float16
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-2, atol=2e-2)


def test_matmul_epilogue_residual_scale_and_fp32_out():
    rng = np.random.default_rng(5)
    M, N, K = 40, 24, 16
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    res = rng.standard_normal((N, M)).astype(np.float32).T    # transposed residual
    out = np.zeros((M, N), np.float32)
    tk.matmul(a, b, out=out, epilogue=ep_residual_scale, epilogue_args=(res, 0.25), config="16x16x16/w4/s2",
              interpret=True)
    ref = (a.astype(np.float64) @ b.astype(np.float64)) * 0.25 + res
    np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-3)
    # no epilogue args; a column bias broadcast
    c = tk.matmul(a, b, epilogue=ep_relu, config="16x16x16/w4/s2", interpret=True)
    np.testing.assert_allclose(c.astype(np.float64), np.maximum(a.astype(np.float64) @ b, 0), rtol=2e-2, atol=2e-2)
    col = rng.standard_normal((M, 1)).astype(np.float16)
    c = tk.matmul(a, b, epilogue=ep_bias_gelu, epilogue_args=(col,), config="16x16x16/w4/s2", interpret=True)
    np.testing.assert_allclose(c.astype(np.float64), gelu_ref(a.astype(np.float64) @ b + col), rtol=2e-2, atol=2e-2)


@tessera.jit
def ep_add2(acc, x, y):
    return acc + x * y


def test_matmul_epilogue_row_and_column_vectors():
    """Tensors constant along M (a bias (N,), (1, N), strided, 0-d) are loaded as [BLOCK_N] rows and
    tensors constant along N ((M, 1), strided) as [BLOCK_M] columns (KIND 3 and 4 of kernels/matmul.py's
    _epilogue_operand), masked at the ragged edges; also as the only rows of an M = 1 product."""
    rng = np.random.default_rng(7)
    M, N, K = 37, 45, 24  # ragged for 16 x 16 tiles
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    acc = a.astype(np.float64) @ b.astype(np.float64)

    def exact(shape):  # quarters: their products are exact in fp16
        return (rng.integers(-8, 9, shape) / 4).astype(np.float16)
    wide, cols = exact(2 * N), exact((M, 3))
    operands = [wide[:N], wide[:N].reshape(1, N), wide[::2], np.array(0.75, np.float16), cols[:, :1],
                cols[:, 1:2].copy(), exact((M, N))]
    for x in operands:
        for y in operands[::3]:
            kinds = mm._epilogue_slots((x, y), M, N, mm._Operand(a, "a"))[1]
            out = np.full((M, N), np.nan, np.float32)
            tk.matmul(a, b, out=out, epilogue=ep_add2, epilogue_args=(x, y), config="16x16x16/w4/s2", interpret=True)
            np.testing.assert_allclose(out, acc + x.astype(np.float64) * y, rtol=1e-3, atol=1e-3, err_msg=str(kinds))
    kinds = [mm._epilogue_slots((x,), M, N, mm._Operand(a, "a"))[1]["E0_KIND"] for x in operands]
    assert kinds == [3, 3, 3, 3, 4, 4, 1]
    out = np.full((1, N), np.nan, np.float32)
    res = exact((1, N))
    tk.matmul(a[:1], b, out=out, epilogue=ep_add2, epilogue_args=(res, cols[:1, :1]), config="16x16x16/w4/s2",
              interpret=True)
    np.testing.assert_allclose(out, acc[:1] + res.astype(np.float64) * cols[:1, :1], rtol=1e-3, atol=1e-3)


def test_matmul_epilogue_errors():
    a = np.zeros((16, 16), np.float16)
    with pytest.raises(ValueError, match="does not broadcast"):
        tk.matmul(a, a, epilogue=ep_bias_gelu, epilogue_args=(np.zeros(5, np.float16),), interpret=True)
    with pytest.raises(ValueError, match="at most 4"):
        tk.matmul(a, a, epilogue=ep_relu, epilogue_args=(1.0,) * 5, interpret=True)
    with pytest.raises(TypeError, match="epilogue must be"):
        tk.matmul(a, a, epilogue=lambda acc: acc, interpret=True)
    with pytest.raises(ValueError, match="without an epilogue"):
        tk.matmul(a, a, epilogue_args=(1.0,), interpret=True)


def test_matmul_without_epilogue_is_unchanged():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((20, 16)).astype(np.float16)
    b = rng.standard_normal((16, 24)).astype(np.float16)
    c = tk.matmul(a, b, config="16x16x16/w4/s2", interpret=True)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b, rtol=2e-2, atol=2e-2)


# ------------------------------------------------- softmax prologue/epilogue

@tessera.jit
def scale_causal(x, row, cols):
    return tl.where(cols <= row, x * 0.125, -float("inf"))


@tessera.jit
def times_cols(y, row, cols):
    return y * (cols + 1).to(tl.float32)


@pytest.mark.parametrize("online", [False, True])
def test_softmax_prologue_epilogue(online):
    from tessera.kernels import _files
    module = _files.load("softmax")
    kernel = module.softmax_online_kernel if online else module.softmax_kernel
    kernel = tessera.jit(kernel.fn, interpret=True)
    rng = np.random.default_rng(7)
    rows, cols = 6, 40
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    y = np.zeros_like(x)
    block = 16 if online else 64
    kernel[(rows,)](y, x, cols, cols, rows, cols, BLOCK_SIZE=block, PROLOGUE=scale_causal, EPILOGUE=times_cols)
    s = np.where(np.arange(cols)[None, :] <= np.arange(rows)[:, None], x * 0.125, -np.inf)
    p = np.exp(s - s.max(1, keepdims=True))
    ref = p / p.sum(1, keepdims=True) * (np.arange(cols) + 1)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    # Without functions: the plain softmax.
    kernel[(rows,)](y, x, cols, cols, rows, cols, BLOCK_SIZE=block)
    p = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, p / p.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------ attention modifiers

@tessera.jit
def alibi(score, b, h, q_idx, kv_idx, slopes):
    slope = tl.load(slopes + h)
    return score - slope * tl.abs(q_idx - kv_idx).to(tl.float32)


@tessera.jit
def rel_bias(score, b, h, q_idx, kv_idx, table, n_kv):
    # a learned bias per (head, relative position), table[h, q - kv + n_kv - 1]
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


def attention_ref(q, k, v, scale, bias=None, keep=None):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = q @ k.transpose(0, 1, 3, 2) * scale
    if bias is not None:
        s = s + bias
    if keep is not None:
        s = np.where(keep, s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    p = np.exp(s - m)
    l = p.sum(-1, keepdims=True)
    return np.where(l > 0, (p @ v) / np.where(l > 0, l, 1), 0)


SMALL = dict(BLOCK_M=32, BLOCK_N=16)


def qkv(B=1, H=2, N=48, D=16, seed=8):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((B, H, N, D)).astype(np.float16) for _ in range(3))


def test_attention_alibi_and_relative_bias():
    q, k, v = qkv()
    B, H, N, D = q.shape
    scale = 1 / math.sqrt(D)
    slopes = np.array([0.5, 0.25], np.float32)
    o = tk.attention(q, k, v, score_mod=alibi, mod_args=(slopes,), config=SMALL)
    qi, ki = np.arange(N)[:, None], np.arange(N)[None, :]
    bias = -slopes[None, :, None, None] * np.abs(qi - ki)[None, None]
    np.testing.assert_allclose(o, attention_ref(q, k, v, scale, bias=bias), atol=1e-2)
    table = np.random.default_rng(9).standard_normal((H, 2 * N - 1)).astype(np.float16)
    o = tk.attention(q, k, v, score_mod=rel_bias, mod_args=(table, N), config=SMALL)
    bias = table[:, (qi - ki + N - 1)].astype(np.float64)[None]
    np.testing.assert_allclose(o, attention_ref(q, k, v, scale, bias=bias), atol=1e-2)


@pytest.mark.parametrize("window", [1, 5, 16, 100])
def test_attention_sliding_window(window):
    q, k, v = qkv(N=70)
    N, D = q.shape[2], q.shape[3]
    qi, ki = np.arange(N)[:, None], np.arange(N)[None, :]
    keep = (ki <= qi) & (qi - ki < window)
    ref = attention_ref(q, k, v, 1 / math.sqrt(D), keep=keep)
    o = tk.attention(q, k, v, mask_mod=window_mask, mod_args=(window,), config=SMALL)
    np.testing.assert_allclose(o, ref, atol=1e-2)
    # The same with the key range: blocks outside the window are skipped, same result.
    o2, lse = tk.attention(q, k, v, mask_mod=window_mask, kv_range=window_range, mod_args=(window,),
                           config=SMALL, return_lse=True)
    np.testing.assert_allclose(o2, ref, atol=1e-2)
    assert np.isfinite(lse).all()
    # causal=True combines with a mask.
    o3 = tk.attention(q, k, v, causal=True, mask_mod=window_mask, kv_range=window_range, mod_args=(window,),
                      config=SMALL)
    np.testing.assert_allclose(o3, ref, atol=1e-2)


def test_attention_kv_range_skips_blocks():
    """A range that excludes keys the mask would keep shows that blocks outside it are not read:
    the result equals attention over the range's keys only."""
    q, k, v = qkv(N=64)
    N, D = q.shape[2], q.shape[3]

    # keys [q_lo - 16, q_hi): with BLOCK_N=16 and BLOCK_M=32 the lower bound is block-aligned.
    o = tk.attention(q, k, v, kv_range=window_range, mod_args=(17,), config=SMALL)
    qi, ki = np.arange(N)[:, None], np.arange(N)[None, :]
    lo = (qi // 32) * 32 - 16
    hi = (qi // 32) * 32 + 32
    keep = (ki >= lo) & (ki < hi)
    np.testing.assert_allclose(o, attention_ref(q, k, v, 1 / math.sqrt(D), keep=keep), atol=1e-2)


def test_attention_document_mask_and_empty_rows():
    q, k, v = qkv(N=40)
    N, D = q.shape[2], q.shape[3]
    docs = np.repeat(np.arange(4, dtype=np.int32), 10)
    o = tk.attention(q, k, v, mask_mod=document_mask, mod_args=(docs,), config=SMALL)
    keep = docs[:, None] == docs[None, :]
    np.testing.assert_allclose(o, attention_ref(q, k, v, 1 / math.sqrt(D), keep=keep), atol=1e-2)
    # A mask that hides every key of the first rows: those rows are 0, LSE -inf.
    o, lse = tk.attention(q, k, v, mask_mod=window_mask, mod_args=(0,), config=SMALL, return_lse=True)
    assert (o == 0).all() and np.isneginf(lse).all()


def test_attention_mod_errors_and_plain_path():
    q, k, v = qkv(N=16)
    with pytest.raises(TypeError, match="must be a @tessera.jit function"):
        tk.attention(q, k, v, mask_mod=lambda *a: True)
    with pytest.raises(ValueError, match="mod_args without"):
        tk.attention(q, k, v, mod_args=(1,))
    with pytest.raises(ValueError, match="at most 4"):
        tk.attention(q, k, v, mask_mod=window_mask, mod_args=(1,) * 5)
    o = tk.attention(q, k, v, config=SMALL)
    np.testing.assert_allclose(o, attention_ref(q, k, v, 0.25), atol=1e-2)


# ------------------------------------------------------ PTX of the fused kernels

MM_SIG = ("*{t}:16,*{t}:16,*{t}:16,i32,i32,i32:16,i32:16,i32:1,i32:16,i32:1,i32:16,i32:1,"
          "*{t}:16,i32,i32:1,*{t}:16,i32:16,i32:1,fp32,i32,i32,i32,i32,i32")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_fused_gemm_ptx_assembles(tmp_path, arch, dtype, monkeypatch):
    """The fused GEMM (bias tile + residual tile + scalar) compiles on tensor cores and ptxas
    accepts it; the fusion pass left one 16-bit conversion for the accumulator."""
    import subprocess
    from conftest import PTXAS
    from tessera.kernels import _files
    monkeypatch.setenv("TESSERA_MMA", "1")

    @tessera.jit
    def ep3(acc, bias, res, alpha):
        y = (acc + bias) * alpha
        return 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476)) + res
    kernel = _files.load("matmul").matmul_epilogue_kernel
    k = tessera.compile(kernel, signature=MM_SIG.format(t=dtype), target=arch, num_warps=8,
                        constexprs={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "EPILOGUE": ep3,
                                    "NUM_EPI": 3, "E0_KIND": 1, "E1_KIND": 1, "E2_KIND": 2})
    ptx = tmp_path / "ep.ptx"
    ptx.write_text(k.asm["ptx"])
    proc = subprocess.run([str(PTXAS), f"-arch={arch}", str(ptx), "-o", str(tmp_path / "ep.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert ("wgmma.mma_async" if arch == "sm_90a" else "mma.sync") in k.asm["ptx"]


def test_attention_mod_kernel_ptx_assembles(tmp_path, monkeypatch):
    import subprocess
    from conftest import PTXAS
    from tessera.kernels import _files
    monkeypatch.setenv("TESSERA_MMA", "1")
    sig = ",".join(["*fp16:16"] * 4 + ["*fp32:16"] + ["i32:16", "i32:16", "i32:16", "i32:1"] * 4
                   + ["i32", "i32", "i32", "i32", "fp32", "*fp32:16", "i32", "i32", "i32"])
    k = tessera.compile(_files.load("attention").attn_fwd_mod_kernel, signature=sig, target="sm_90a", num_warps=8,
                        constexprs={"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": True,
                                    "SCORE_MOD": alibi_window, "MASK_MOD": mask_sw, "KV_RANGE": range_sw,
                                    "NUM_ARGS": 2})
    ptx = tmp_path / "att.ptx"
    ptx.write_text(k.asm["ptx"])
    proc = subprocess.run([str(PTXAS), "-arch=sm_90a", str(ptx), "-o", str(tmp_path / "att.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@tessera.jit
def alibi_window(score, b, h, q_idx, kv_idx, slopes, window):
    return score - tl.load(slopes + h) * tl.abs(q_idx - kv_idx).to(tl.float32)


@tessera.jit
def mask_sw(b, h, q_idx, kv_idx, slopes, window):
    return (kv_idx <= q_idx) & (q_idx - kv_idx < window)


@tessera.jit
def range_sw(q_lo, q_hi, n_kv, slopes, window):
    return q_lo - window + 1, q_hi


def test_elementwise_ptx_vectorises(tmp_path):
    """The contiguous fast path's loads and stores are 16-byte vectors."""
    x = np.ones(1 << 12, np.float32)
    text = chain4.kernel_source(x, interpret=True)
    kernel = SourceKernel(text, "_elementwise_chain4", "<chain4>")
    k = tessera.compile(kernel, signature="*fp32:16,*fp32:16,i32:16", constexprs={"BLOCK": 1024}, target="sm_90a")
    ptx = k.asm["ptx"]
    assert "ld.global.v4.f32" in ptx or "ld.global.v4.b32" in ptx, ptx[:2000]
    assert "st.global.v4" in ptx
