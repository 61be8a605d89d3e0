"""tl.dot_scaled (microscaled e2m1 / e4m3 / e5m2 operands with e8m0 scales; bf16 and fp16 too),
decomposed as Triton does on Hopper: each operand upcast to bf16 (fp16 when a format is fp16)
times 2^(scale - 127) per 32 elements along K, then a bf16/fp16 tensor-core dot with an f32
accumulator. Checked here: PTX and ptxas for sm_80 and sm_90a (the tensor-core instruction and
Triton's vectorisation checks), the interpreter against a numpy model of the upcast (every e2m1
code, scales 0..142 and 124..131, NaN scales, fast_math, acc, k_pack=False, 3-D), the shape of
Triton's test_scaled_dot with its reference upcast kernel, and the front-end's errors.
The kernels are tests/python/lang_kernels/dot_scaled.py; the GPU test is tests/gpu/test_dot_scaled.py."""
import importlib.util
import re
import subprocess

import numpy as np
import pytest

from conftest import PTXAS, ROOT
from lang_support import assemble, compile_error, compile_kernel
from test_dot_fp8 import fp8_values

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])
# Where the operands live in memory: bytes for e2m1/fp8, 16-bit words (bf16 bits / fp16) for the others.
STORAGE = {"e2m1": np.uint8, "e4m3": np.uint8, "e5m2": np.uint8, "bf16": np.uint16, "fp16": np.float16}
SIG = {"e2m1": "u8", "e4m3": "u8", "e5m2": "u8", "bf16": "bf16", "fp16": "fp16"}


def kernels():
    spec = importlib.util.spec_from_file_location("dot_scaled", ROOT / "tests/python/lang_kernels/dot_scaled.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------ the numpy model

def round_to(x, compute):
    """float64 values rounded to bf16 / fp16 (to nearest even, subnormals kept)."""
    if compute == "fp16":
        with np.errstate(over="ignore"):
            return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        e = np.floor(np.log2(np.abs(x)))
        quantum = np.exp2(np.maximum(np.where(np.isfinite(e), e, -126), -126) - 7)
        return np.where(np.isfinite(x), np.round(x / quantum) * quantum, x)


def values_of(x, fmt, pack_axis):
    """The elements' values: e2m1 bytes unpacked along pack_axis (low nibble first)."""
    if fmt == "e2m1":
        both = np.stack([E2M1[x & 0xF], E2M1[x >> 4]], axis=pack_axis + 1)
        shape = list(x.shape)
        shape[pack_axis] *= 2
        return both.reshape(shape)
    if fmt in ("e4m3", "e5m2"):
        return fp8_values(fmt)[x]
    if fmt == "bf16":
        return (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return x.astype(np.float64)


def scale_factor(s, compute, fast_math):
    """e8m0 s as Triton's decomposition builds it: 2^(s - 127) from the bits (s = 0 gives 0), rounded to
    the compute type; s = 255 is NaN (fast_math: infinity)."""
    s = s.astype(np.int64)
    f = round_to(np.where(s == 0, 0.0, np.exp2(s - 127.0)), compute)
    return np.where(s == 255, np.inf if fast_math else np.nan, f)


def upcast(x, scale, fmt, compute, k_axis, pack_axis, fast_math=False):
    v = round_to(values_of(x, fmt, pack_axis), compute)
    if scale is None:
        return v
    f = np.repeat(scale_factor(scale, compute, fast_math), 32, axis=-1)  # [..., rows, K]
    if k_axis == x.ndim - 2:
        f = np.swapaxes(f, -1, -2)
    with np.errstate(all="ignore"):
        scaled = round_to(v * f, compute)
    return np.where(np.isnan(f), np.nan, scaled)


def reference(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, lhs_k_pack=True, rhs_k_pack=True,
              fast_math=False):
    """(lhs' upcast @ rhs' upcast, |lhs'| @ |rhs'|) in float64."""
    compute = "fp16" if "fp16" in (lhs_format, rhs_format) else "bf16"
    r = lhs.ndim
    a = upcast(lhs, lhs_scale, lhs_format, compute, r - 1, r - 1 if lhs_k_pack else r - 2, fast_math)
    b = upcast(rhs, rhs_scale, rhs_format, compute, r - 2, r - 2 if rhs_k_pack else r - 1, fast_math)
    with np.errstate(all="ignore"):
        return a @ b, np.abs(a) @ np.abs(b)


def operand(rng, shape, fmt, compute):
    """Fresh random storage of an operand: finite fp8 codes, every e2m1 code (in both nibbles), bf16/fp16
    normals clamped like Triton's test (2^15, or 2^6 with fp16; e5m2 codes below 12 with fp16)."""
    if fmt in ("bf16", "fp16"):
        limit = 2.0 ** (6 if compute == "fp16" else 15)
        v = np.clip(rng.standard_normal(shape), -limit, limit - 1)
        if fmt == "fp16":
            return v.astype(np.float16)
        return (round_to(v, "bf16").astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    x = rng.integers(0, 256, shape, dtype=np.uint8)
    if fmt == "e2m1":
        x.reshape(-1)[:16] = np.arange(16, dtype=np.uint8) * 0x11
    else:
        if fmt == "e5m2" and compute == "fp16":
            x &= 0xB  # as Triton's test: larger e5m2 values overflow fp16 once scaled
        finite = np.isfinite(fp8_values(fmt))[x]
        x[~finite] &= 0x80  # NaN / inf codes become (signed) zeros
    return x


def scales(rng, shape, compute):
    lo, hi = (0, 142) if compute == "bf16" else (124, 131)  # test_scaled_dot's ranges
    s = rng.integers(lo, hi + 1, shape, dtype=np.uint8)
    s.reshape(-1)[:2] = [lo, hi]
    return s


def test_the_model_knows_e2m1_and_e8m0():
    x = np.arange(256, dtype=np.uint8).reshape(1, 256)
    v = values_of(x, "e2m1", 1)
    assert v[0, :2].tolist() == [0.0, 0.0] and v[0, 2 * 0x71:2 * 0x71 + 2].tolist() == [0.5, 6.0]
    assert sorted(set(np.abs(v).ravel().tolist())) == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    f = scale_factor(np.array([0, 1, 127, 142, 255], np.uint8), "bf16", False)
    assert f[:4].tolist() == [0.0, 2.0 ** -126, 1.0, 2.0 ** 15] and np.isnan(f[4])
    assert scale_factor(np.array([124, 131, 100], np.uint8), "fp16", False).tolist() == [0.125, 16.0, 0.0]


# ------------------------------------------------------------------ PTX and ptxas

TILE_PAIRS = [("e2m1", "e4m3"), ("e4m3", "e2m1"), ("e2m1", "e2m1"), ("e5m2", "bf16"), ("bf16", "e5m2"),
              ("e2m1", "fp16"), ("fp16", "e2m1"), ("e4m3", "e5m2")]
MMA = re.compile(r"(mma|wgmma.mma_async).sync.aligned.m\d+n\d+k16(?:.row.col)?.f32.(f|bf)16.(f|bf)16")


def tile_args(lhs_format, rhs_format, rhs_scale, M, N, K, arch, backend="llvm"):
    """scaled_dot_tile's signature as test_scaled_dot launches it: strides :16 / :1 (row-major)."""
    sig = [f"*{SIG[lhs_format]}:16", "i32:16", "i32:1"]
    constexprs = {"BM": M, "BN": N, "BK": K, "LHS_FORMAT": lhs_format, "RHS_FORMAT": rhs_format}
    if rhs_scale:
        constexprs["lhs_scale_ptr"] = None
    else:
        sig.append("*u8:16")
    sig += [f"*{SIG[rhs_format]}:16", "i32:16", "i32:1"]
    if rhs_scale:
        sig.append("*u8:16")
    else:
        constexprs["rhs_scale_ptr"] = None
    sig.append("*bf16:16")
    return ",".join(sig), constexprs


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("pair", TILE_PAIRS, ids=["x".join(p) for p in TILE_PAIRS])
def test_scaled_dot_compiles_to_tensor_cores(tmp_path, pair, arch):
    rhs_scale = pair[1] == "e2m1" or pair[0] in ("bf16", "fp16")
    for M, N, K in [(32, 64, 64), (128, 128, 128)]:
        sig, constexprs = tile_args(*pair, rhs_scale, M, N, K, arch)
        ptx = compile_kernel("dot_scaled.py", "scaled_dot_tile", sig, constexprs, arch, extra=["--num-warps", "4"])
        assemble(ptx, arch, tmp_path)
        assert MMA.search(ptx), "the upcast operands must take the bf16/fp16 tensor-core dot"
        assert ("wgmma.mma_async" in ptx) == (arch == "sm_90a" and M == 128)
        assert "ld.global.v4" in ptx and "st.global.v4" in ptx  # test_scaled_dot's vectorisation checks
        compute = "f16" if "fp16" in pair else "bf16"
        assert f".f32.{compute}.{compute}" in ptx


def test_scaled_dot_compiles_with_nvrtc(tmp_path):
    sig, constexprs = tile_args("e2m1", "e4m3", False, 64, 64, 64, "sm_90a")
    ptx = compile_kernel("dot_scaled.py", "scaled_dot_tile", sig, constexprs, "sm_90a",
                         extra=["--num-warps", "4", "--backend", "nvrtc"])
    assemble(ptx, "sm_90a", tmp_path)
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16" in ptx


def general_args(lhs_format, rhs_format, B, M, N, K, lhs_scale=True, rhs_scale=True, lhs_k_pack=True,
                 rhs_k_pack=True, acc=False, fast_math=False):
    sig = [f"*{SIG[lhs_format]}:16"] + (["*u8:16"] if lhs_scale else []) + [f"*{SIG[rhs_format]}:16"]
    sig += (["*u8:16"] if rhs_scale else []) + ["*fp32:16"]
    constexprs = {"B": B, "M": M, "N": N, "K": K, "LHS_FORMAT": lhs_format, "RHS_FORMAT": rhs_format,
                  "LHS_K_PACK": int(lhs_k_pack), "RHS_K_PACK": int(rhs_k_pack), "ACC": int(acc),
                  "FAST_MATH": int(fast_math)}
    if not lhs_scale:
        constexprs["lhs_scale_ptr"] = None
    if not rhs_scale:
        constexprs["rhs_scale_ptr"] = None
    return ",".join(sig), constexprs


GENERAL = {  # name: (lhs_format, rhs_format, B, M, N, K, options)
    "both-scales": ("e2m1", "e2m1", 0, 64, 64, 64, {}),
    "no-scales": ("e4m3", "e5m2", 0, 64, 64, 64, {"lhs_scale": False, "rhs_scale": False}),
    "acc-fast-math": ("e5m2", "e2m1", 0, 64, 64, 128, {"acc": True, "fast_math": True}),
    "m-n-packed": ("e2m1", "e2m1", 0, 64, 64, 64, {"lhs_k_pack": False, "rhs_k_pack": False}),
    "3d": ("e2m1", "fp16", 2, 32, 32, 64, {"rhs_scale": False, "acc": True}),
    "3d-both-scales": ("e4m3", "e2m1", 2, 16, 16, 64, {}),
}


@pytest.mark.parametrize("backend", ["llvm", "nvrtc"])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("case", list(GENERAL))
def test_scaled_dot_forms_compile(tmp_path, case, arch, backend):
    lf, rf, B, M, N, K, options = GENERAL[case]
    sig, constexprs = general_args(lf, rf, B, M, N, K, **options)
    ptx = compile_kernel("dot_scaled.py", "scaled_dot_general", sig, constexprs, arch,
                         extra=["--num-warps", "4", "--backend", backend])
    assemble(ptx, arch, tmp_path)
    if B == 0:
        assert MMA.search(ptx)


# ------------------------------------------------------------------ the interpreter

def run_general(lhs_format, rhs_format, B, M, N, K, lhs_scale=True, rhs_scale=True, lhs_k_pack=True,
                rhs_k_pack=True, acc=False, fast_math=False, seed=0, inputs=None):
    rng = np.random.default_rng(seed)
    compute = "fp16" if "fp16" in (lhs_format, rhs_format) else "bf16"
    batch = (B,) if B else ()
    lp, rp = (2 if lhs_format == "e2m1" else 1), (2 if rhs_format == "e2m1" else 1)
    lhs_shape = batch + ((M, K // lp) if lhs_k_pack else (M // lp, K))
    rhs_shape = batch + ((K // rp, N) if rhs_k_pack else (K, N // rp))
    lhs, rhs = operand(rng, lhs_shape, lhs_format, compute), operand(rng, rhs_shape, rhs_format, compute)
    ls = scales(rng, batch + (M, K // 32), compute) if lhs_scale else None
    rs = scales(rng, batch + (N, K // 32), compute) if rhs_scale else None
    if inputs:
        lhs, ls, rhs, rs = inputs(lhs, ls, rhs, rs)
    c0 = rng.standard_normal(batch + (M, N)).astype(np.float32)
    c = c0.copy() if acc else np.full(batch + (M, N), np.nan, np.float32)
    kernel = tessera.jit(kernels().scaled_dot_general.fn, interpret=True)
    kernel[(1,)](lhs, ls, rhs, rs, c, B, M, N, K, lhs_format, rhs_format, int(lhs_k_pack), int(rhs_k_pack),
                 int(acc), int(fast_math), num_warps=4)
    ref, magnitude = reference(lhs, ls, lhs_format, rhs, rs, rhs_format, lhs_k_pack, rhs_k_pack, fast_math)
    if acc:
        ref, magnitude = ref + c0, magnitude + np.abs(c0)
    return c, ref, magnitude, kernel


def assert_matches(c, ref, magnitude):
    """f32 results against the float64 model: the upcast must be exact (one wrong element moves a
    result by far more than this), the sum is rounded to f32."""
    assert np.array_equal(np.isnan(c), np.isnan(ref)), "NaNs where the model has none, or missing"
    ok = ~np.isnan(ref)
    assert (np.abs(c[ok] - ref[ok]) <= 1e-6 * magnitude[ok] + 1e-38).all()


PAIRS = [("e2m1", "e2m1"), ("e2m1", "e4m3"), ("e5m2", "e2m1"), ("e4m3", "e5m2"), ("e2m1", "bf16"),
         ("fp16", "e2m1"), ("e4m3", "fp16"), ("bf16", "e5m2")]


@pytest.mark.parametrize("shape", [(32, 32, 64), (64, 32, 128), (16, 64, 32)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("pair", PAIRS, ids=["x".join(p) for p in PAIRS])
def test_scaled_dot_matches_numpy(pair, shape):
    c, ref, magnitude, _ = run_general(*pair, 0, *shape, seed=sum(shape))
    assert_matches(c, ref, magnitude)


@pytest.mark.parametrize("which", ["lhs", "rhs", "none"])
def test_scaled_dot_with_one_scale_or_none(which):
    c, ref, magnitude, _ = run_general("e2m1", "e4m3", 0, 32, 64, 64, lhs_scale=which == "lhs",
                                       rhs_scale=which == "rhs", seed=3)
    assert_matches(c, ref, magnitude)


def test_scaled_dot_upcast_is_exact_for_every_code_and_scale():
    # rhs = the identity in bf16: the result is lhs' upcast itself, element by element.
    K = 64
    codes = np.arange(256, dtype=np.uint8).reshape(8, 32)  # every byte: every pair of e2m1 codes
    lhs = np.tile(codes, (8, 1))  # [64, 32] bytes = [64, 64] values
    ls = np.arange(128, dtype=np.uint8).reshape(64, 2) + np.uint8(15)  # 15..142, not 255
    eye = (np.eye(K, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)

    def fixed(lhs_, ls_, rhs_, rs_):
        return lhs, ls, eye, rs_

    c, ref, magnitude, _ = run_general("e2m1", "bf16", 0, 64, 64, K, rhs_scale=False, inputs=fixed)
    np.testing.assert_array_equal(c, ref)
    np.testing.assert_array_equal(c, upcast(lhs, ls, "e2m1", "bf16", 1, 1))
    # byte 0x71 is row 3, byte 17 (values 34, 35: 0.5 and 6), in the second group (scale 3 * 2 + 1 + 15)
    assert c[3, 34] == 0.5 * 2.0 ** (22 - 127) and c[3, 35] == 6.0 * 2.0 ** (22 - 127)


@pytest.mark.parametrize("fast_math", [False, True])
def test_scaled_dot_nan_scale(fast_math):
    def with_nan(lhs, ls, rhs, rs):
        ls[3, 1] = 255
        rs[5, 0] = 255
        return lhs, ls, rhs, rs

    c, ref, magnitude, _ = run_general("e4m3", "e2m1", 0, 32, 32, 64, fast_math=fast_math, inputs=with_nan)
    if not fast_math:  # 0xFF is NaN: the row and the column it scales are NaN
        assert np.isnan(c[3]).all() and np.isnan(c[:, 5]).all()
        assert np.isnan(c).sum() == 32 + 32 - 1
    else:  # no NaN check: the scale is bf16's infinity
        assert np.isinf(c).any() or np.isnan(c).any()
    assert np.array_equal(np.isnan(c), np.isnan(ref)) and np.array_equal(np.isinf(c), np.isinf(ref))
    ok = np.isfinite(ref)
    assert (np.abs(c[ok] - ref[ok]) <= 1e-6 * magnitude[ok] + 1e-38).all()


@pytest.mark.parametrize("case", list(GENERAL))
def test_scaled_dot_forms_match_numpy(case):
    lf, rf, B, M, N, K, options = GENERAL[case]
    c, ref, magnitude, _ = run_general(lf, rf, B, M, N, K, seed=11, **options)
    assert_matches(c, ref, magnitude)


@pytest.mark.parametrize("pair", [("e2m1", "e5m2"), ("fp16", "e2m1")], ids=["e2m1xe5m2", "fp16xe2m1"])
def test_scaled_dot_after_the_pass_pipeline(monkeypatch, pair):
    monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")  # tensor cores on: the IR codegen sees
    c, ref, magnitude, kernel = run_general(*pair, 0, 64, 64, 64, acc=True, seed=5)
    assert_matches(c, ref, magnitude)
    assert "#mma<" in kernel._interpreter.ir()


# ------------------------------------------------------------------ Triton's test_scaled_dot, in our words

def mx_upcast(x, scale, fmt, compute, transposed):
    """The reference of test_scaled_dot: the upcast by a kernel of plain language ops (mx_upcast_kernel),
    the packing along K (a column-major rhs is transposed first)."""
    if scale is None:
        return values_of(x, fmt, x.ndim - 1) if fmt != "fp16" else x.astype(np.float64)
    if transposed:
        x = np.ascontiguousarray(x.T)
    e_bits, m_bits = {"e2m1": (2, 1), "e4m3": (4, 3), "e5m2": (5, 2)}[fmt]
    out = np.full(scale.size * 32, np.nan, np.float32)
    kernel = tessera.jit(kernels().mx_upcast_kernel.fn, interpret=True)
    kernel[(tessera.cdiv(out.size, 512),)](np.ascontiguousarray(x), scale, out, scale.size, e_bits, m_bits,
                                           tl.float16 if compute == "fp16" else tl.bfloat16, 512)
    out = out.astype(np.float64).reshape(scale.shape[0], -1)
    return out.T if transposed else out


@pytest.mark.parametrize("M,N,K", [(32, 64, 64), (64, 32, 128)])
@pytest.mark.parametrize("col_a,col_b", [(False, False), (True, True)])
@pytest.mark.parametrize("rhs_scale", [False, True])
@pytest.mark.parametrize("mxfp_type,normal_type", [("e2m1", "bf16"), ("e4m3", "e5m2"), ("e5m2", "fp16"),
                                                    ("e2m1", "e4m3")])
def test_scaled_dot_as_triton_tests_it(M, N, K, col_a, col_b, rhs_scale, mxfp_type, normal_type):
    compute = "fp16" if normal_type == "fp16" else "bf16"
    rng = np.random.default_rng(M + N + K + 7 * col_a)
    type_a, type_b = (normal_type, mxfp_type) if rhs_scale else (mxfp_type, normal_type)

    def make(shape, fmt, col_major):
        x = operand(rng, shape[::-1] if col_major else shape, fmt, compute)
        return x.T if col_major else x  # a transposed view: strides (1, rows)

    a = make((M, K // 2 if type_a == "e2m1" else K), type_a, col_a)
    b = make((K // 2 if type_b == "e2m1" else K, N), type_b, col_b)
    sa = None if rhs_scale else scales(rng, (M, K // 32), compute)
    sb = scales(rng, (N, K // 32), compute) if rhs_scale else None
    z = np.full((M, N), np.nan, np.float32)
    step = lambda x: [s // x.itemsize for s in x.strides]  # noqa: E731
    kernel = tessera.jit(kernels().scaled_dot_tile.fn, interpret=True)
    kernel[(1,)](a, *step(a), sa, b, *step(b), sb, z, M, N, K, type_a, type_b, num_warps=4)
    want = mx_upcast(a, sa, type_a, compute, False) @ mx_upcast(b, sb, type_b, compute, True)
    np.testing.assert_allclose(z, want, atol=1e-5, rtol=1e-2)  # test_scaled_dot's tolerance
    # and the numpy model, before the bf16 rounding of the result
    ref, magnitude = reference(a, sa, type_a, b, sb, type_b)
    assert (np.abs(z - ref) <= 2.0 ** -8 * np.abs(ref) + 1e-6 * magnitude).all()


@pytest.mark.parametrize("fmt", ["e2m1", "e4m3", "e5m2"])
@pytest.mark.parametrize("compute", ["bf16", "fp16"])
def test_reference_upcast_kernel_matches_the_model(fmt, compute):
    rng = np.random.default_rng(1)
    n = 40  # groups of 32 values; the last block is partial
    x = operand(rng, (n, 16 if fmt == "e2m1" else 32), fmt, compute)
    s = scales(rng, (n,), compute)
    got = mx_upcast(x, s, fmt, compute, False).reshape(-1)
    np.testing.assert_array_equal(got, upcast(x, s[:, None], fmt, compute, 1, 1).reshape(-1))


# ------------------------------------------------------------------ errors

ERRORS = {
    "format": "Invalid float format: e9m9.",
    "format_nyi": "NYI: lhs_format e2m3",
    "format_not_string": "tl.dot_scaled's rhs_format must be a string",
    "e2m1_not_uint8": "e2m1 format must be packed as uint8. Got int8",
    "fp8_dtype": "Unexpected dtype for e5m2. Got fp16",
    "k_pack": "only mxfp4 inputs can be packed along a dimension different than K",
    "k_mismatch": "Reduction dimension should pack the same number of elements; (lhs: [32, 32] vs rhs: [32, 32])",
    "rank": "Both inputs must be either 2D or 3D; (lhs: [32] vs rhs: [32, 32])",
    "scale_shape": "lhs_scale must be a tensor of shape [32, 1]. Got [32, 4]",
    "scale_dtype": "rhs_scale must hold uint8 (e8m0) scales, got int8",
    "scale_k": "with scales, K (16) must be a multiple of the group size 32",
    "acc": "tl.dot_scaled's acc must be a float32 block of shape [32, 32], got <32x32xf16>",
    "out_dtype": "Only float32 is supported for out_dtype at the moment",
    "batch": "tl.dot_scaled: the batch dims differ (lhs: [2, 32, 32] vs rhs: [4, 32, 32])",
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_scaled_dot_errors(case):
    err = compile_error("dot_scaled.py", "bad_scaled_dot", "*u8:16,*fp32:16", {"CASE": case})
    assert ERRORS[case] in err, err
    assert re.match(r"tests/python/lang_kernels/dot_scaled\.py:\d+:\d+: error: ", err), err
    assert err.count("error:") == 1


# ------------------------------------------------------------------ a microscaled GEMM (a K loop)

def run_matmul(monkeypatch, fmt, passes, M=128, N=64, K=256, BM=64, BN=64, BK=64):
    if passes:
        monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")  # software-pipelined, tensor cores on
    rng = np.random.default_rng(K)
    a = operand(rng, (M, K // 2 if fmt == "e2m1" else K), fmt, "bf16")
    s = scales(rng, (M, K // 32), "bf16")
    b = operand(rng, (K, N), "bf16", "bf16")
    c = np.full((M, N), np.nan, np.float32)
    kernel = tessera.jit(kernels().scaled_matmul_kernel.fn, interpret=True)
    kernel[(M // BM, N // BN)](a, s, b, c, M, N, K, fmt, BM, BN, BK, num_warps=4, num_stages=3)
    ref, magnitude = reference(a, s, fmt, b, None, "bf16")
    return c, ref, magnitude, kernel


@pytest.mark.parametrize("passes", [False, True], ids=["ir", "after-passes"])
@pytest.mark.parametrize("fmt", ["e2m1", "e4m3"])
def test_scaled_matmul_matches_numpy(monkeypatch, fmt, passes):
    c, ref, magnitude, kernel = run_matmul(monkeypatch, fmt, passes)
    assert_matches(c, ref, magnitude)
    if passes:
        assert "#mma<" in kernel._interpreter.ir()


@pytest.mark.parametrize("arch,warps,block", [("sm_90a", 8, 128), ("sm_90a", 4, 64), ("sm_80", 4, 64)])
@pytest.mark.parametrize("fmt", ["e2m1", "e4m3"])
def test_scaled_matmul_compiles_without_spills(tmp_path, fmt, arch, warps, block):
    constexprs = {"A_FORMAT": fmt, "BM": block, "BN": 128, "BK": 64}
    ptx = compile_kernel("dot_scaled.py", "scaled_matmul_kernel", "*u8:16,*u8:16,*bf16:16,*fp32:16,i32:16,i32:16,i32:16",
                         constexprs, arch, extra=["--num-warps", str(warps), "--num-stages", "3"])
    assert MMA.search(ptx) and "cp.async" in ptx  # b is pipelined into shared memory
    src, cubin = tmp_path / "k.ptx", tmp_path / "k.cubin"
    src.write_text(ptx)
    proc = subprocess.run([str(PTXAS), "-v", f"-arch={arch}", str(src), "-o", str(cubin)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "0 bytes spill stores" in proc.stderr, proc.stderr
