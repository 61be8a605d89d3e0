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
@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90a"])
@pytest.mark.parametrize("out", ["fp32", "fp16"])
@pytest.mark.parametrize("pair", PAIRS, ids=["x".join(p) for p in PAIRS])
def test_fp8_dot_compiles(tmp_path, pair, out, arch, backend):
    a, b = pair
    constexprs = {"A_E5": int(a == "e5m2"), "B_E5": int(b == "e5m2"), "OUT_F16": int(out == "fp16"),
                  "IMPRECISE": 32, "BM": 128, "BN": 128, "BK": 64}
    ptx = compile_kernel("dot_fp8.py", "dot_fp8_kernel", signature(a, b, out), constexprs, arch,
                         extra=["--num-warps", "4", "--backend", backend])
    assemble(ptx, arch, tmp_path)
    if out == "fp32":  # tensor cores (an f16 accumulator keeps the FMA loop)
        if arch == "sm_80":  # the f16 mma.sync on the widened operands
            assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
        elif arch == "sm_89":  # mma.sync's fp8 form (PTX 8.4), mixed pairs as they are
            assert f"mma.sync.aligned.m16n8k32.row.col.f32.{a}.{b}.f32 " in ptx
            assert "f16.f16" not in ptx and (backend == "nvrtc" or ".version 8.4" in ptx)
        else:  # Hopper's native fp8 wgmma, k = 32, mixed pairs as they are
            assert f"wgmma.mma_async.sync.aligned.m64n128k32.f32.{a}.{b} " in ptx
            assert "k16.f32.f16.f16" not in ptx
    if arch == "sm_80":  # widened from the bits: no fp8 cvt before sm_90
        assert "e4m3x2" not in ptx and "e5m2x2" not in ptx


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_fp8_widening_compiles(tmp_path, arch):
    for e5 in [0, 1]:
        ptx = compile_kernel("dot_fp8.py", "widen_fp8_kernel", "*u8:16,*fp16:16,*fp32:16",
                             {"E5": e5, "BLOCK": 256}, arch)
        assemble(ptx, arch, tmp_path)
        assert ("cvt.rn.f16x2" in ptx) == (arch == "sm_90a")


# ------------------------------------------------------------------ native fp8 wgmma (sm_90a)

MATMUL_SIG = "*{a}:16,*{b}:16,*fp16:16,i32,i32,i32:16,i32:16,i32:1,i32:16,i32:1,i32:16,i32:1"
# B column-major (stride_bk = 1): the K-major tile fp8 wgmma reads, copied as it is.
MATMUL_SIG_COL_B = "*{a}:16,*{b}:16,*fp16:16,i32,i32,i32:16,i32:16,i32:1,i32:1,i32:16,i32:16,i32:1"
MATMUL_SIG_COL_A = "*{a}:16,*{b}:16,*fp16:16,i32,i32,i32:16,i32:1,i32:16,i32:16,i32:1,i32:16,i32:1"


def compile_matmul_fp8(tmp_path, a, b, config, sig=MATMUL_SIG, env=None):
    """kernels/matmul.py's matmul_kernel on fp8 operands for sm_90a: (PTX, ptxas -v's report)."""
    import os
    import subprocess
    from conftest import PTXAS, run_cli
    bm, bn, bk, warps, stages = config
    args = ["compile", "kernels/matmul.py", "--kernel", "matmul_kernel", "--signature",
            sig.format(a=FP8[a], b=FP8[b]), "--constexpr", f"BLOCK_M={bm}", "--constexpr", f"BLOCK_N={bn}",
            "--constexpr", f"BLOCK_K={bk}", "--constexpr", "GROUP_M=8", "--num-warps", str(warps),
            "--num-stages", str(stages), "--arch", "sm_90a"]
    proc = run_cli(args) if env is None else subprocess.run(
        [str(__import__("conftest").CLI)] + args, cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    src = tmp_path / "mm.ptx"
    src.write_text(proc.stdout)
    info = subprocess.run([str(PTXAS), "-arch=sm_90a", "-v", str(src), "-o", str(tmp_path / "mm.cubin")],
                          capture_output=True, text=True)
    assert info.returncode == 0, info.stderr
    return proc.stdout, info.stderr


# tessera.kernels' Hopper configurations (BM, BN, BK, warps, stages): HOPPER_MATMUL_CONFIGS
HOPPER_CONFIGS = [(128, 256, 64, 8, 4), (256, 128, 64, 8, 4), (128, 128, 64, 4, 3), (64, 64, 64, 4, 3)]


@pytest.mark.parametrize("config", HOPPER_CONFIGS, ids=lambda c: "x".join(map(str, c[:3])) + f"w{c[3]}s{c[4]}")
@pytest.mark.parametrize("pair", [("e4m3", "e4m3"), ("e5m2", "e4m3")], ids=["e4m3xe4m3", "e5m2xe4m3"])
def test_fp8_matmul_takes_native_wgmma(tmp_path, pair, config):
    ptx, report = compile_matmul_fp8(tmp_path, *pair, config)
    bn = config[1] if config[1] <= 256 else 256
    assert f"wgmma.mma_async.sync.aligned.m64n{bn}k32.f32.{pair[0]}.{pair[1]} " in ptx
    assert ".f16.f16" not in ptx and "cvt.rn.f16x2.e4m3x2" not in ptx  # no widening left
    assert "cp.async.cg.shared.global" in ptx  # A software-pipelined (B: staged transposed by the dot)
    assert " 0 bytes spill stores" in report and " 0 bytes spill loads" in report, report


def test_fp8_matmul_column_major_b_is_pipelined(tmp_path):
    # A column-major B is K-major already: both operands go through cp.async, no byte-wise transpose.
    ptx, report = compile_matmul_fp8(tmp_path, "e4m3", "e5m2", (128, 256, 64, 8, 4), sig=MATMUL_SIG_COL_B)
    assert "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e5m2 " in ptx
    assert "st.shared.b8" not in ptx and "st.shared.u8" not in ptx
    assert " 0 bytes spill stores" in report


@pytest.mark.parametrize("config", HOPPER_CONFIGS, ids=lambda c: "x".join(map(str, c[:3])) + f"w{c[3]}s{c[4]}")
def test_fp8_matmul_column_major_a_is_staged_k_major(tmp_path, config):
    # fp8 wgmma cannot transpose A (only 16-bit wgmma can): a column-major A is staged K-major, as
    # before the 16-bit "transpose A" path, never handed to wgmma as an M-major tile (that gave wrong
    # results, and "an M-major A needs line blocks that divide 64 rows" at 64x64).
    ptx, report = compile_matmul_fp8(tmp_path, "e4m3", "e4m3", config, sig=MATMUL_SIG_COL_A)
    bn = config[1] if config[1] <= 256 else 256
    assert f"wgmma.mma_async.sync.aligned.m64n{bn}k32.f32.e4m3.e4m3 " in ptx


def test_fp8_wgmma_off_takes_fp8_mma_sync(tmp_path):
    # TESSERA_WGMMA=0 on sm_90a: mma.sync's fp8 form (sm_89+), not the widened f16 one.
    ptx, _ = compile_matmul_fp8(tmp_path, "e4m3", "e4m3", (128, 128, 64, 4, 3), env={"TESSERA_WGMMA": "0"})
    assert "wgmma" not in ptx and "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 " in ptx
    assert ".version 8.4" in ptx and "f16.f16" not in ptx


@pytest.mark.parametrize("pair", [("e4m3", "e4m3"), ("e5m2", "e4m3")], ids=["e4m3xe4m3", "e5m2xe4m3"])
def test_fp8_matmul_sm89_mma_sync(tmp_path, pair):
    # sm_89's default configuration (128x128x32, 4 warps, 3 stages): fp8 mma.sync, both operands
    # software-pipelined, no spills; the module says PTX 8.4 (the fp8 mma.sync's), others stay 8.0.
    import subprocess
    from conftest import PTXAS, run_cli
    args = ["compile", "kernels/matmul.py", "--kernel", "matmul_kernel", "--signature",
            MATMUL_SIG.format(a=FP8[pair[0]], b=FP8[pair[1]]), "--constexpr", "BLOCK_M=128", "--constexpr",
            "BLOCK_N=128", "--constexpr", "BLOCK_K=32", "--constexpr", "GROUP_M=8", "--num-warps", "4",
            "--num-stages", "3", "--arch", "sm_89"]
    proc = run_cli(args)
    assert proc.returncode == 0, proc.stderr
    ptx = proc.stdout
    assert f"mma.sync.aligned.m16n8k32.row.col.f32.{pair[0]}.{pair[1]}.f32 " in ptx and ".version 8.4" in ptx
    assert "cp.async.cg.shared.global" in ptx and "f16.f16" not in ptx
    src = tmp_path / "mm.ptx"
    src.write_text(ptx)
    info = subprocess.run([str(PTXAS), "-arch=sm_89", "-v", str(src), "-o", str(tmp_path / "mm.cubin")],
                          capture_output=True, text=True)
    assert info.returncode == 0 and " 0 bytes spill stores" in info.stderr, info.stderr
    f16 = compile_kernel("dot_fp8.py", "widen_fp8_kernel", "*u8:16,*fp16:16,*fp32:16", {"E5": 0, "BLOCK": 256},
                         "sm_89")
    assert ".version 8.0" in f16


def test_fp8_block_k_below_32_keeps_the_f16_wgmma(tmp_path):
    # K = 16 fits no fp8 wgmma (k = 32): the widened operands take the f16 one.
    ptx = compile_kernel("dot_fp8.py", "dot_fp8_kernel", signature("e4m3", "e4m3", "fp32"),
                         {"A_E5": 0, "B_E5": 0, "OUT_F16": 0, "IMPRECISE": None, "BM": 64, "BN": 64, "BK": 16},
                         "sm_90a", extra=["--num-warps", "4"])
    assemble(ptx, "sm_90a", tmp_path)
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " in ptx and "e4m3.e4m3" not in ptx


@pytest.mark.parametrize("low_precision_acc", [None, 0, 32, 64, 128])
def test_fp8_max_num_imprecise_acc_promotions_as_triton(tmp_path, low_precision_acc):
    # test_dot_max_num_imprecise_acc's Hopper check: one add.f32 per accumulator register every
    # max_num_imprecise_acc K elements, none without the argument (2^30 on sm_90). 0 asks for no
    # reduced-precision accumulation: as Triton (which upcasts to f16 mma there), the widened f16 dot.
    BM, BN, BK, warps = 128, 128, 128, 8
    ptx = compile_kernel("dot_fp8.py", "dot_fp8_kernel", signature("e4m3", "e5m2", "fp32"),
                         {"A_E5": 0, "B_E5": 1, "OUT_F16": 0, "IMPRECISE": low_precision_acc,
                          "BM": BM, "BN": BN, "BK": BK}, "sm_90a", extra=["--num-warps", str(warps)])
    assemble(ptx, "sm_90a", tmp_path)
    if low_precision_acc == 0:
        assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " in ptx and "k32.f32.e4m3" not in ptx
        assert ptx.count("add.f32") == 0
        return
    assert "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2 " in ptx
    regs = BM * BN // (32 * warps)
    promotions = 0 if low_precision_acc is None else BK // max(low_precision_acc, 32)
    assert ptx.count("add.f32") == regs * promotions


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


@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
def test_fp8_chain_dot_own_p_after_passes(monkeypatch, tmp_path, kind):
    # The kernel of the GPU test that checks the second dot against the P the kernel stored
    # (tests/gpu/test_dot_fp8.py::test_fp8_chain_dot_on_its_own_p): after the pass pipeline
    # (sm_90a: both dots fp8 wgmma, P staged through shared memory) on signed data.
    monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")
    M, N, K = 128, 128, 64
    rng = np.random.default_rng(5)
    x, y, w = (finite_codes(kind, rng, shape, 2.0) for shape in [(M, K), (K, N), (N, N)])
    p = np.full((M, N), np.nan, np.float32)
    z = np.full((M, N), np.nan, np.float32)
    kernel = tessera.jit(kernels().chain_dot_fp8_p_kernel.fn, interpret=True)
    kernel[(1,)](x, y, w, p, z, E5=int(kind == "e5m2"), BLOCK_M=M, BLOCK_N=N, BLOCK_K=K, num_warps=4)
    assert kernel._interpreter.ir().count("#mma<version=3") >= 1
    v = fp8_values(kind)
    np.testing.assert_array_equal(p, round_to_fp8(v[x] @ v[y], kind))  # exact products, small sums: exact
    np.testing.assert_allclose(z, p.astype(np.float64) @ v[w], rtol=1e-6, atol=1e-6)
    ptx = compile_kernel("dot_fp8.py", "chain_dot_fp8_p_kernel", "*u8:16,*u8:16,*u8:16,*fp32:16,*fp32:16",
                         {"E5": int(kind == "e5m2"), "BLOCK_M": M, "BLOCK_N": N, "BLOCK_K": K}, "sm_90a",
                         extra=["--num-warps", "4"])
    assemble(ptx, "sm_90a", tmp_path)
    assert f"k32.f32.{kind}.{kind} " in ptx and "fence.proxy.async" in ptx


def test_round_to_fp8_matches_the_table():
    for kind in ["e4m3", "e5m2"]:
        v = fp8_values(kind)
        finite = v[np.isfinite(v)]
        np.testing.assert_array_equal(round_to_fp8(finite, kind), finite)
    assert round_to_fp8(np.array([1.0625, 1.1875, 1e9, -1e9]), "e4m3").tolist() == [1.0, 1.25, 448.0, -448.0]
