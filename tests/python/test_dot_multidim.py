"""tl.dot beyond 2-D/3-D and tl.trans/tl.permute on any rank, as Triton 3.6 has them:
- tl.dot of rank >= 2 with equal batch dims (core.dot: the batch dims reshaped into one,
  the 3-D dot, reshaped back), with acc and out_dtype (Triton's test_dot_multidim);
- tl.trans(x) swapping the last two dims of any rank >= 2, tl.trans / tl.permute / x.trans /
  x.permute with a permutation as a tuple or as separate ints;
- input_precision "bf16x3" / "bf16x6" on f32 operands: Triton's sum of 3 (6) bf16 dots of the
  hi/mid/lo bf16 parts of each operand (its F32DotTC pass), checked here against the same
  decomposition computed in numpy and for its accuracy class against float64.
Kernels: tests/python/lang_kernels/dot_multidim.py. Errors: tests/errors/dot_*, trans_*,
permute_*. The GPU test is tests/gpu/test_dot_multidim.py."""
import importlib.util
import itertools
import re

import numpy as np
import pytest

from conftest import ROOT
from lang_support import assemble

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

_spec = importlib.util.spec_from_file_location("dot_multidim", ROOT / "tests/python/lang_kernels/dot_multidim.py")
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)

SIG4 = "*fp32:16,*fp32:16,*fp32:16,*fp32:16"


def interpreted(kernel):
    return tessera.jit(kernel.fn, interpret=True)


# ------------------------------------------------------------------ batched dot of any rank

def run_multidim(rank, trans_a, trans_b, in_dtype=tl.bfloat16, out=tl.float32, use_acc=False, seed=0,
                 integers=True, precision="tf32"):
    shape = (2,) * (rank - 2) + (32, 32)
    rng = np.random.default_rng(seed + rank)
    if integers:
        a, b, acc = (rng.integers(-4, 5, shape).astype(np.float32) for _ in range(3))
    else:
        a, b, acc = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
    z = np.full(shape, np.nan, np.float32)
    interpreted(kernels.dot_multidim_kernel)[(1,)](
        a, b, acc, z, RANK=rank, TRANS_A=int(trans_a), TRANS_B=int(trans_b), IN=in_dtype, USE_ACC=int(use_acc),
        OUT=out, PRECISION=precision)
    x = np.swapaxes(a, -1, -2) if trans_a else a
    y = np.swapaxes(b, -1, -2) if trans_b else b
    ref = x.astype(np.float64) @ y.astype(np.float64)
    return z, ref + acc if use_acc else ref, np.abs(x.astype(np.float64)) @ np.abs(y.astype(np.float64))


@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("rank", [2, 3, 4, 5, 6])
def test_dot_multidim_as_triton(rank, trans_a, trans_b):
    # test_dot_multidim: bf16 integers in [-4, 4], so every product and sum is exact.
    z, ref, _ = run_multidim(rank, trans_a, trans_b)
    np.testing.assert_array_equal(z, ref)


@pytest.mark.parametrize("rank", [4, 5])
def test_dot_multidim_with_acc_f32(rank):
    z, ref, magnitude = run_multidim(rank, True, False, tl.float32, use_acc=True, integers=False, precision="ieee")
    assert (np.abs(z - ref) <= 1e-6 * (magnitude + 4)).all()


def test_dot_multidim_f16_out_f16_with_acc():
    z, ref, magnitude = run_multidim(4, False, True, tl.float16, tl.float16, use_acc=True)
    np.testing.assert_array_equal(z, ref)  # integers: exact in f16 too (|sums| <= 516)


@pytest.mark.parametrize("in_dtype", [tl.float32, tl.bfloat16])
def test_dot_out_dtype_f16_of_f32_and_bf16_inputs_is_f32(in_dtype):
    # Triton's semantic.dot: f32 and bf16 operands give an f32 dot whatever out_dtype says
    # (an f16 result would round every element to 11 bits).
    z, ref, magnitude = run_multidim(2, False, False, in_dtype, tl.float16, integers=False, precision="ieee")
    assert not np.array_equal(z, z.astype(np.float16).astype(np.float32))
    if in_dtype == tl.float32:
        assert (np.abs(z - ref) <= 1e-6 * magnitude).all()


def test_dot_multidim_after_passes(monkeypatch):
    monkeypatch.setenv("TESSERA_INTERPRET_PASSES", "1")
    z, ref, _ = run_multidim(5, True, True, use_acc=True)
    np.testing.assert_array_equal(z, ref)


@pytest.mark.parametrize("backend", ["llvm", "nvrtc"])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("rank", [4, 6])
def test_dot_multidim_compiles(tmp_path, rank, arch, backend):
    k = tessera.compile(kernels.dot_multidim_kernel, signature=SIG4, target=arch, backend=backend,
                        constexprs=dict(RANK=rank, TRANS_A=1, TRANS_B=0, IN=tl.bfloat16, USE_ACC=1, OUT=tl.float32,
                                        PRECISION="tf32"))
    assemble(k.asm["ptx"], arch, tmp_path)


# ------------------------------------------------------------------ trans / permute of any rank

@pytest.mark.parametrize("form", [0, 1, 2, 3], ids=["x.permute(tuple)", "tl.permute(ints)", "tl.trans(tuple)",
                                                   "x.trans(ints)"])
@pytest.mark.parametrize("shape", [(2, 2, 8, 64), (4, 4, 4, 16)])
def test_permute_4d_every_order(shape, form):
    # test_trans_4d's shapes and all 24 orders, through the interpreter.
    x = np.arange(np.prod(shape), dtype=np.int32)
    kernel = interpreted(kernels.permute_kernel)
    for perm in itertools.permutations(range(4)):
        out = np.zeros_like(x)
        kernel[(1,)](x, out, *shape, *perm, FORM=form)
        np.testing.assert_array_equal(out, x.reshape(shape).transpose(perm).ravel(), err_msg=str(perm))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_permute_4d_compiles(tmp_path, arch):
    for perm in [(3, 1, 0, 2), (0, 2, 1, 3), (3, 2, 1, 0)]:
        k = tessera.compile(kernels.permute_kernel, signature="*i32:16,*i32:16", target=arch, num_warps=8,
                            constexprs=dict(S0=2, S1=2, S2=8, S3=64, P0=perm[0], P1=perm[1], P2=perm[2], P3=perm[3],
                                            FORM=perm[0] % 4))
        assemble(k.asm["ptx"], arch, tmp_path)


@pytest.mark.parametrize("perm", [None] + list(itertools.permutations(range(3))))
def test_trans_3d(perm):
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    p = perm or (0, 0, 0)
    interpreted(kernels.trans3_kernel)[(1,)](x, out, *p, DEFAULT=int(perm is None))
    want = x.reshape(2, 4, 8).transpose(perm or (0, 2, 1))  # tl.trans(x): the last two dims swapped
    np.testing.assert_array_equal(out, want.ravel())


def test_transpose_attr_2d():
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    interpreted(kernels.transpose_attr_kernel)[(1,)](x, out, RANK=2)
    np.testing.assert_array_equal(out, x.reshape(8, 8).T.ravel())
    # x.T of a 3-D block is Triton's error (tests/errors/transpose_attr_of_3d), not tl.trans(x).
    with pytest.raises(tessera.CompilationError, match="permute dims must have the same length as input shape"):
        interpreted(kernels.transpose_attr_kernel)[(1,)](x, out, RANK=3)


# ------------------------------------------------------------------ bf16x3 / bf16x6

def to_bf16(x):
    """f32 rounded to bf16 (nearest, ties to even; finite values), as f32."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def emulated_dot(x, y, acc, parts):
    """Triton's BF16xN dot as the interpreter computes it: every bf16 dot's products and sum
    in float64, rounded to f32 once (acc included); the hi*hi dot after the NaN mask."""
    def split(v):
        out = []
        for i in range(parts):
            p = to_bf16(v)
            if i + 1 < parts:
                v = (v - p).astype(np.float32)
            out.append(p)
        return out

    def dot(a, b, c):
        return (a.astype(np.float64) @ b.astype(np.float64) + c).astype(np.float32)

    xs, ys = split(x), split(y)
    s = np.zeros((x.shape[0], y.shape[1]), np.float32)
    terms = [(1, 1), (2, 0), (0, 2)] if parts == 3 else []
    for i, j in terms + [(1, 0), (0, 1)]:
        s = dot(xs[i], ys[j], s)
    s = np.where(np.isnan(s), np.float32(0), s)
    s = dot(xs[0], ys[0], s)
    return (s + acc).astype(np.float32)


def run_precision(precision, M=32, N=32, K=64, use_acc=False, chain=False, x=None, y=None, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, K)).astype(np.float32) if x is None else x
    y = rng.standard_normal((K, N)).astype(np.float32) if y is None else y
    acc = rng.standard_normal((M, N)).astype(np.float32) if use_acc else np.zeros((M, N), np.float32)
    z = np.full((M, N), np.nan, np.float32)
    interpreted(kernels.dot_precision_kernel)[(1,)](x, y, acc, z, M=M, N=N, K=K, PRECISION=precision,
                                                    USE_ACC=int(use_acc), CHAIN=int(chain))
    return x, y, acc, z


@pytest.mark.parametrize("use_acc", [False, True])
@pytest.mark.parametrize("precision", ["bf16x3", "bf16x6"])
def test_bf16xn_is_tritons_decomposition(precision, use_acc):
    x, y, acc, z = run_precision(precision, use_acc=use_acc)
    np.testing.assert_array_equal(z, emulated_dot(x, y, acc, 2 if precision == "bf16x3" else 3))


@pytest.mark.parametrize("precision, bound, floor", [("bf16x3", 3e-5, 1e-7), ("bf16x6", 3e-7, 0.0)])
def test_bf16xn_accuracy_class(precision, bound, floor):
    # bf16x3 drops the mid*mid and lo terms (~2^-16 of each product); bf16x6 keeps all but the
    # lo*mid and lo*lo terms (~2^-24): an f32 dot's accuracy. One bf16 dot is off by ~2^-8.
    x, y, acc, z = run_precision(precision, M=64, N=64, K=64)
    ref = x.astype(np.float64) @ y.astype(np.float64)
    magnitude = np.abs(x.astype(np.float64)) @ np.abs(y.astype(np.float64))
    err = np.abs(z - ref) / magnitude
    assert err.max() <= bound
    assert err.max() >= floor  # bf16x3 is an emulation, not an f32 dot
    one_pass = np.abs(to_bf16(x).astype(np.float64) @ to_bf16(y) - ref) / magnitude
    assert err.max() < one_pass.max() / 50


@pytest.mark.parametrize("precision", ["bf16x3", "bf16x6"])
def test_bf16xn_batched_rank_4(precision):
    shape = (2, 2, 32, 32)
    rng = np.random.default_rng(4)
    a, b, acc = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
    z = np.full(shape, np.nan, np.float32)
    interpreted(kernels.dot_multidim_kernel)[(1,)](a, b, acc, z, RANK=4, TRANS_A=0, TRANS_B=1, IN=tl.float32,
                                                   USE_ACC=1, OUT=tl.float32, PRECISION=precision)
    parts = 2 if precision == "bf16x3" else 3
    for i, j in itertools.product(range(2), range(2)):
        want = emulated_dot(a[i, j], np.ascontiguousarray(b[i, j].T), acc[i, j], parts)
        np.testing.assert_array_equal(z[i, j], want)


@pytest.mark.parametrize("precision", ["bf16x3", "bf16x6"])
def test_bf16xn_k_loop(precision):
    # The accumulator goes through every k-block's emulated dot (added last, as Triton does).
    M, N, K, BK = 40, 24, 96, 32
    rng = np.random.default_rng(9)
    x, y = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    z = np.full((M, N), np.nan, np.float32)
    interpreted(kernels.matmul_precision_kernel)[(2, 2)](x, y, z, M, N, K, PRECISION=precision, BM=32, BN=16, BK=BK)
    want = np.zeros((M, N), np.float32)
    for k0 in range(0, K, BK):
        want = emulated_dot(x[:, k0:k0 + BK], y[k0:k0 + BK], want, 2 if precision == "bf16x3" else 3)
    np.testing.assert_array_equal(z, want)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_bf16xn_k_loop_compiles(tmp_path, arch):
    for precision in ["bf16x3", "bf16x6"]:
        k = tessera.compile(kernels.matmul_precision_kernel, signature="*fp32:16,*fp32:16,*fp32:16,i32,i32,i32",
                            target=arch, num_warps=4, num_stages=3,
                            constexprs=dict(PRECISION=precision, BM=128, BN=128, BK=32))
        assemble(k.asm["ptx"], arch, tmp_path)
        assert re.search(r'(mma|wgmma.mma_async).sync.aligned.m\d+n\d+k16(?:.row.col)?.f32.bf16.bf16', k.asm["ptx"])


def test_bf16xn_chain_dot_as_test_dot():
    # test_dot's 'chain-dot' epilogue and its tolerance, for both precisions.
    rng = np.random.default_rng(17)
    x, y = (rng.standard_normal((32, 32)).astype(np.float32) * np.float32(0.1) for _ in range(2))
    for precision in ["bf16x3", "bf16x6"]:
        _, _, _, z = run_precision(precision, M=32, N=32, K=32, chain=True, x=x, y=y)
        ref = (x.astype(np.float64) @ y) @ y.astype(np.float64)  # w: the first 32 rows of y
        np.testing.assert_allclose(z, ref, rtol=0.01, atol=1e-3)


def test_bf16xn_infinite_operand():
    # An infinite x: hi = inf, mid = NaN; the NaN among the small terms is dropped, so the row is inf.
    x = np.ones((16, 16), np.float32)
    x[3, 5] = np.inf
    y = np.full((16, 16), 0.5, np.float32)
    for precision in ["bf16x3", "bf16x6"]:
        _, _, _, z = run_precision(precision, M=16, N=16, K=16, x=x, y=y)
        assert np.isposinf(z[3]).all()
        np.testing.assert_array_equal(np.delete(z, 3, axis=0), 8.0)


def test_bf16xn_on_other_dtypes_is_the_plain_dot():
    # Triton applies bf16x3/bf16x6 to f32 operands only: f16 operands keep one f16 dot.
    z, ref, _ = run_multidim(2, False, False, tl.float16, precision="bf16x3")
    np.testing.assert_array_equal(z, ref)


@pytest.mark.parametrize("precision", ["BF16x3", "Tf32", "IEEE"])
def test_input_precision_any_case(precision):
    _, _, _, z = run_precision(precision, M=16, N=16, K=16, x=np.eye(16, dtype=np.float32),
                               y=np.arange(256, dtype=np.float32).reshape(16, 16))
    np.testing.assert_array_equal(z, np.arange(256).reshape(16, 16))


@pytest.mark.parametrize("backend", ["llvm", "nvrtc"])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("precision", ["bf16x3", "bf16x6"])
def test_bf16xn_takes_bf16_tensor_cores(tmp_path, precision, arch, backend):
    # test_dot's PTX check: [mma|wgmma.mma_async].sync.aligned.m*n*k16*.f32.bf16.bf16 for f32 inputs.
    k = tessera.compile(kernels.dot_precision_kernel, signature=SIG4, target=arch, backend=backend, num_warps=4,
                        constexprs=dict(M=64, N=64, K=64, PRECISION=precision, USE_ACC=1, CHAIN=1))
    ptx = k.asm["ptx"]
    assemble(ptx, arch, tmp_path)
    assert re.search(r'(mma|wgmma.mma_async).sync.aligned.m\d+n\d+k16(?:.row.col)?.f32.bf16.bf16', ptx)
    assert "tf32" not in ptx
