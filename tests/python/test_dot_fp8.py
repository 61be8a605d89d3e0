"""tl.dot with fp8 operands (float8e4nv = e4m3fn, float8e5 = e5m2, mixed too), as Triton
accepts them: the operands are widened to f16 (exactly) and take the f16 tensor-core
dot with the accumulator of out_dtype (f32 by default, or f16). Checked here: PTX and
ptxas for sm_80 and sm_90a with both back-ends, the interpreter (with and without the
pass pipeline) against numpy on every fp8 code, and the front-end's errors.
The GPU test against torch is tests/gpu/test_dot_fp8.py."""
import math

import numpy as np
import pytest

from conftest import ROOT
from lang_support import assemble, compile_error, compile_kernel

import tessera  # noqa: E402

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

FP8 = {"e4m3": "fp8e4nv", "e5m2": "fp8e5"}
PAIRS = [("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2"), ("e5m2", "e4m3")]


def fp8_values(kind):
    """The value of each of the 256 codes: e4m3fn (bias 7, S.1111.111 NaN, no inf), e5m2 (IEEE-like)."""
    exp_bits, man_bits = (4, 3) if kind == "e4m3" else (5, 2)
    bias = (1 << (exp_bits - 1)) - 1
    values = np.empty(256)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        e, m = (code >> man_bits) & ((1 << exp_bits) - 1), code & ((1 << man_bits) - 1)
        if kind == "e5m2" and e == 31:
            values[code] = sign * math.inf if m == 0 else math.nan
        elif kind == "e4m3" and e == 15 and m == 7:
            values[code] = math.nan
        elif e == 0:
            values[code] = sign * m * 2.0 ** (1 - bias - man_bits)
        else:
            values[code] = sign * (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)
    return values


def finite_codes(kind, rng, shape, limit):
    """Random codes of finite values with |v| <= limit (so sums stay in range)."""
    values = fp8_values(kind)
    ok = np.flatnonzero(np.isfinite(values) & (np.abs(values) <= limit))
    return rng.choice(ok, size=shape).astype(np.uint8)


def kernels():
    import importlib.util
    spec = importlib.util.spec_from_file_location("dot_fp8", ROOT / "tests/python/lang_kernels/dot_fp8.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def signature(a, b, out):
    return f"*{FP8[a]}:16,*{FP8[b]}:16,*{out}:16,i32,i32,i32,i32:16,i32:16,i32:16"


# ------------------------------------------------------------------ PTX and ptxas

@pytest.mark.parametrize("backend", ["llvm", "nvrtc"])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("out", ["fp32", "fp16"])
@pytest.mark.parametrize("pair", PAIRS, ids=["x".join(p) for p in PAIRS])
def test_fp8_dot_compiles(tmp_path, pair, out, arch, backend):
    a, b = pair
    constexprs = {"A_E5": int(a == "e5m2"), "B_E5": int(b == "e5m2"), "OUT_F16": int(out == "fp16"),
                  "IMPRECISE": 32, "BM": 128, "BN": 128, "BK": 64}
    ptx = compile_kernel("dot_fp8.py", "dot_fp8_kernel", signature(a, b, out), constexprs, arch,
                         extra=["--num-warps", "4", "--backend", backend])
    assemble(ptx, arch, tmp_path)
    if out == "fp32":  # the f16 tensor-core dot (an f16 accumulator keeps the FMA loop)
        if arch == "sm_80":
            assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
        else:
            assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in ptx
    if arch == "sm_80":  # widened from the bits: no fp8 cvt before sm_90
        assert "e4m3x2" not in ptx and "e5m2x2" not in ptx


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_fp8_widening_compiles(tmp_path, arch):
    for e5 in [0, 1]:
        ptx = compile_kernel("dot_fp8.py", "widen_fp8_kernel", "*u8:16,*fp16:16,*fp32:16",
                             {"E5": e5, "BLOCK": 256}, arch)
        assemble(ptx, arch, tmp_path)
        assert ("cvt.rn.f16x2" in ptx) == (arch == "sm_90a")


# ------------------------------------------------------------------ the interpreter

def run_dot(monkeypatch, pair, out, passes, M, N, K, imprecise=None, BK=32):
    if passes:
        monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")
    kernel = tessera.jit(kernels().dot_fp8_kernel.fn, interpret=True)
    rng = np.random.default_rng(M * N + K)
    limit = 8.0 if out == np.float16 else 1e4
    a = finite_codes(pair[0], rng, (M, K), limit)
    b = finite_codes(pair[1], rng, (K, N), limit)
    c = np.full((M, N), np.nan, out)
    kernel[(tessera.cdiv(M, 32), tessera.cdiv(N, 32))](
        a, b, c, M, N, K, K, N, N, A_E5=int(pair[0] == "e5m2"), B_E5=int(pair[1] == "e5m2"),
        OUT_F16=int(out == np.float16), IMPRECISE=imprecise, BM=32, BN=32, BK=BK,
        num_warps=4, num_stages=3)
    va, vb = fp8_values(pair[0])[a], fp8_values(pair[1])[b]
    return c, va @ vb, np.abs(va) @ np.abs(vb), kernel


@pytest.mark.parametrize("passes", [False, True], ids=["ir", "after-passes"])
@pytest.mark.parametrize("pair", PAIRS, ids=["x".join(p) for p in PAIRS])
def test_fp8_dot_matches_numpy(monkeypatch, pair, passes):
    c, ref, magnitude, kernel = run_dot(monkeypatch, pair, np.float32, passes, 45, 37, 100)
    # Products of fp8 values are exact; the sum is rounded to f32 once per k-block (4 here).
    assert (np.abs(c - ref) <= 1e-6 * magnitude).all()
    if passes:
        assert "#mma<" in kernel._interpreter.ir()


@pytest.mark.parametrize("imprecise", [None, 0, 32])
def test_fp8_dot_max_num_imprecise_acc(monkeypatch, imprecise):
    c, ref, magnitude, _ = run_dot(monkeypatch, ("e4m3", "e4m3"), np.float32, True, 64, 64, 128, imprecise)
    assert (np.abs(c - ref) <= 1e-6 * magnitude).all()  # full precision whatever the value


@pytest.mark.parametrize("pair", [("e4m3", "e5m2"), ("e5m2", "e5m2")], ids=["e4m3xe5m2", "e5m2xe5m2"])
def test_fp8_dot_out_fp16(monkeypatch, pair):
    c, ref, magnitude, _ = run_dot(monkeypatch, pair, np.float16, False, 32, 32, 64)
    assert (np.abs(c.astype(np.float64) - ref) <= 2e-3 * magnitude + 1e-3).all()  # f16 per k-block


@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_fp8_widening_every_code(kind):
    kernel = tessera.jit(kernels().widen_fp8_kernel.fn, interpret=True)
    x = np.arange(256, dtype=np.uint8)
    h, f = np.zeros(256, np.float16), np.zeros(256, np.float32)
    kernel[(1,)](x, h, f, E5=int(kind == "e5m2"), BLOCK=256)
    want = fp8_values(kind)
    np.testing.assert_array_equal(h.astype(np.float64), want)
    np.testing.assert_array_equal(f.astype(np.float64), want)
    assert np.signbit(h[0x80]) and np.signbit(f[0x80])  # -0.0


# ------------------------------------------------------------------ errors

def test_max_num_imprecise_acc_above_k_is_an_error():
    err = compile_error("dot_fp8.py", "dot_fp8_kernel", signature("e4m3", "e4m3", "fp32"),
                        {"A_E5": 0, "B_E5": 1, "OUT_F16": 0, "IMPRECISE": 128, "BM": 64, "BN": 64, "BK": 64})
    assert "max_num_imprecise_acc (128) must be <= K (64)" in err


def test_fp8_dot_out_bf16_is_an_error():
    err = compile_error("dot_fp8.py", "dot_out_bf16_kernel", "*u8,*u8,*fp32", {"BLOCK": 32})
    assert "out_dtype=bfloat16 is unsupported" in err


# ------------------------------------------------------------------ Triton's chain-dot case

def round_to_fp8(x, kind):
    """numpy's f64 values rounded to the nearest fp8 value, ties to even, saturating (cvt.rn.satfinite)."""
    values = fp8_values(kind)
    codes = np.flatnonzero(np.isfinite(values[:128]))  # the positive codes: ascending values
    grid = values[codes]
    a = np.minimum(np.abs(x), grid[-1])
    hi = np.clip(np.searchsorted(grid, a), 1, len(grid) - 1)
    lo = hi - 1
    d_lo, d_hi = a - grid[lo], grid[hi] - a
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (codes[hi] % 2 == 0))
    return np.copysign(np.where(pick_hi, grid[hi], grid[lo]), x)


@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_fp8_chain_dot_as_triton(tmp_path, kind):
    M, N, K = 128, 128, 64  # get_test_dot_fp8_output_cases: 4 warps, 'chain-dot', 'ieee'
    rng = np.random.default_rng(17)
    x, y, w = (finite_codes(kind, rng, shape, 2.0) for shape in [(M, K), (K, N), (N, N)])
    z = np.full((M, N), np.nan, np.float32)
    kernel = tessera.jit(kernels().chain_dot_fp8_kernel.fn, interpret=True)
    kernel[(1,)](x, y, w, z, E5=int(kind == "e5m2"), BLOCK_M=M, BLOCK_N=N, BLOCK_K=K, num_warps=4)
    v = fp8_values(kind)
    ref = round_to_fp8(v[x] @ v[y], kind) @ v[w]
    np.testing.assert_allclose(z, ref, rtol=0.01, atol=1e-3)  # test_dot's tolerance
    # On the GPU (sm_90a only: z.to(fp8) needs sm_90): both dots on wgmma.
    ptx = compile_kernel("dot_fp8.py", "chain_dot_fp8_kernel", "*u8:16,*u8:16,*u8:16,*fp32:16",
                         {"E5": int(kind == "e5m2"), "BLOCK_M": M, "BLOCK_N": N, "BLOCK_K": K}, "sm_90a",
                         extra=["--num-warps", "4"])
    assemble(ptx, "sm_90a", tmp_path)
    assert "cvt.rn.satfinite" in ptx and ptx.count("wgmma.mma_async") >= 2


def test_round_to_fp8_matches_the_table():
    for kind in ["e4m3", "e5m2"]:
        v = fp8_values(kind)
        finite = v[np.isfinite(v)]
        np.testing.assert_array_equal(round_to_fp8(finite, kind), finite)
    assert round_to_fp8(np.array([1.0625, 1.1875, 1e9, -1e9]), "e4m3").tolist() == [1.0, 1.25, 448.0, -448.0]
