"""The whole of triton.language as tessera's kernels see it: every public name of Triton 3.6's
triton.language (its __all__), triton.language.math, triton.language.extra.libdevice and
triton.language.extra.cuda exists in tessera.language (tests/python/data/triton36_language_api.txt lists
them with their parameters, read from Triton 3.6); calls that name every parameter by Triton's keyword
compile; and the functions added for it (libdevice's arithmetic and conversions with a named rounding,
mul24, sad, byte_perm, the double's halves, norms, tl.add/sub/mul, tl.philox_impl) give the right values in
the interpreter (against exact rational arithmetic) and assemble for the GPU."""
import pathlib
from fractions import Fraction

import numpy as np
import pytest

import tessera
import tessera.language as tl
import tessera.language.extra.cuda as cuda
import tessera.language.math as tlmath
from conftest import run_cli
from lang_support import assemble

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

API = pathlib.Path(__file__).parent / "data/triton36_language_api.txt"
MODULES = {"tl": tl, "math": tlmath, "libdevice": cuda.libdevice, "cuda": cuda}


def test_every_public_name_of_triton_language_exists():
    missing = []
    for line in API.read_text().splitlines():
        module, name = line.split()[:2]
        if not hasattr(MODULES[module], name):
            missing.append(f"{module}.{name}")
    assert not missing, missing


# One call per function, every parameter named by Triton's keyword (its parameters: the data file).
HEAD = '''import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language.extra import cuda


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _add2(a, i, b, j):
    return a + b, i + j


@triton.jit
def k(xp, ip, out, iout, dp):
    r = tl.arange(0, 16)
    x = tl.load(xp + r)
    i = tl.load(ip + r)
    d = tl.load(dp + r)
    x2 = tl.reshape(tl.load(xp + tl.arange(0, 64)), (8, 8))
'''
KEYWORD_CALLS = {
    "sort": "y = tl.sort(x=x, dim=0, descending=True)",
    "flip": "y = tl.flip(x=x2, dim=1)",
    "argmax": "y = tl.argmax(input=x, axis=0, tie_break_left=True, keep_dims=False)",
    "argmin": "y = tl.argmin(input=x, axis=0, tie_break_left=False, keep_dims=True)",
    "max": "y, j = tl.max(input=x, axis=0, return_indices=True, return_indices_tie_break_left=True, keep_dims=False)",
    "min": "y, j = tl.min(input=x, axis=0, return_indices=True, return_indices_tie_break_left=True, keep_dims=False)",
    "reduce": "y, j = tl.reduce(input=(x, i), axis=0, combine_fn=_add2, keep_dims=False)",
    "associative_scan": "y = tl.associative_scan(input=x, axis=0, combine_fn=_add, reverse=True)",
    "cumsum": "y = tl.cumsum(input=x, axis=0, reverse=True, dtype=tl.float32)",
    "cumprod": "y = tl.cumprod(input=x, axis=0, reverse=True)",
    "device_assert": "tl.device_assert(cond=x == x, msg='bad', mask=None)",
    "static_assert": "tl.static_assert(True, 'bad')",
    "range": "y = x\n    for j in tl.range(arg1=0, arg2=4, step=1, num_stages=2, loop_unroll_factor=2, "
             "disallow_acc_multi_buffer=True, flatten=False, warp_specialize=False, disable_licm=False):\n"
             "        y = y + 1",
    "static_range": "y = x\n    for j in tl.static_range(arg1=0, arg2=4, step=1):\n        y = y + 1",
    "multiple_of": "y = tl.multiple_of(input=i, values=16)",
    "max_contiguous": "y = tl.max_contiguous(input=i, values=16)",
    "max_constancy": "y = tl.max_constancy(input=i, values=16)",
    "assume": "tl.assume(cond=tl.sum(i) > 0)",
    "swizzle2d": "a, b = tl.swizzle2d(i=1, j=2, size_i=4, size_j=4, size_g=2)",
    "clamp": "y = tl.clamp(x=x, min=0.0, max=1.0, propagate_nan=tl.PropagateNan.ALL)",
    "minimum": "y = tl.minimum(x=x, y=x, propagate_nan=tl.PropagateNan.NONE)",
    "maximum": "y = tl.maximum(x=x, y=x, propagate_nan=tl.PropagateNan.ALL)",
    "fma": "y = tl.fma(x=x, y=x, z=x)",
    "umulhi": "y = tl.umulhi(x=i, y=i)",
    "join": "y = tl.join(a=x, b=x)",
    "split": "a, b = tl.split(a=tl.join(x, x))",
    "interleave": "y = tl.interleave(a=x, b=x)",
    "debug_barrier": "tl.debug_barrier()",
    "inline_asm_elementwise": "y = tl.inline_asm_elementwise(asm='mov.b32 $0, $1;', constraints='=r,r', args=[i], "
                              "dtype=tl.int32, is_pure=True, pack=1)",
    "cast": "y = tl.cast(input=x, dtype=tl.float16, fp_downcast_rounding='rtz', bitcast=False)",
    "topk": "y = tl.topk(x=x, k=4, dim=0)",
    "bitonic_merge": "y = tl.bitonic_merge(x=x, dim=0, descending=1)",
    "gather": "y = tl.gather(src=x, index=i & 15, axis=0)",
    "histogram": "y = tl.histogram(input=i & 7, num_bins=8, mask=None)",
    "where": "y = tl.where(condition=x > 0, x=x, y=x)",
    "sum": "y = tl.sum(input=x, axis=0, keep_dims=False, dtype=tl.float32)",
    "xor_sum": "y = tl.xor_sum(input=i, axis=0, keep_dims=False)",
    "reduce_or": "y = tl.reduce_or(input=i, axis=0, keep_dims=False)",
    "softmax": "y = tl.softmax(x=x, dim=0, keep_dims=False, ieee_rounding=False)",
    "sigmoid": "y = tl.sigmoid(x=x)",
    "trans": "y = tl.trans(input=x2)",
    "permute": "y = tl.permute(x2, 1, 0)",
    "reshape": "y = tl.reshape(x, 4, 4, can_reorder=False)",
    "view": "y = tl.view(x, 4, 4)",
    "expand_dims": "y = tl.expand_dims(input=x, axis=0)",
    "broadcast": "a, b = tl.broadcast(input=x[None, :], other=x[:, None])",
    "cat": "y = tl.cat(input=x, other=x, can_reorder=True)",
    "full": "y = tl.full(shape=(16,), value=1.0, dtype=tl.float32)",
    "zeros": "y = tl.zeros(shape=(16,), dtype=tl.float32)",
    "zeros_like": "y = tl.zeros_like(input=x)",
    "ravel": "y = tl.ravel(x=x2, can_reorder=False)",
    "load": "y = tl.load(pointer=xp + r, mask=r < 16, other=0.0, boundary_check=(), padding_option='', "
            "cache_modifier='.ca', eviction_policy='evict_last', volatile=False)",
    "store": "tl.store(pointer=out + r, value=x, mask=r < 16, boundary_check=(), cache_modifier='.wb', "
             "eviction_policy='evict_first')",
    "atomic_add": "y = tl.atomic_add(pointer=out + r, val=x, mask=r < 16, sem='relaxed', scope='gpu')",
    "atomic_cas": "y = tl.atomic_cas(pointer=iout + r, cmp=i, val=i, sem='acq_rel', scope='cta')",
    "fdiv": "y = tl.fdiv(x=x, y=x, ieee_rounding=True)",
    "div_rn": "y = tl.div_rn(x=x, y=x)",
    "sqrt_rn": "y = tl.sqrt_rn(x=x)",
    "cdiv": "y = tl.cdiv(x=10, div=3)",
    "rand": "y = tl.rand(seed=1, offset=r, n_rounds=10)",
    "randn": "y = tl.randn(seed=1, offset=r, n_rounds=10)",
    "randint": "y = tl.randint(seed=1, offset=r, n_rounds=10)",
    "randint4x": "a, b, c, e = tl.randint4x(seed=1, offset=r, n_rounds=10)",
    "philox": "u = r.to(tl.uint32)\n    a, b, c, e = tl.philox(seed=1, c0=u, c1=u, c2=u, c3=u, n_rounds=10)",
    "philox_impl": "u = r.to(tl.uint32)\n    a, b, c, e = tl.philox_impl(c0=u, c1=u, c2=u, c3=u, k0=1, k1=2, n_rounds=10)",
    "uint_to_uniform_float": "y = tl.uint_to_uniform_float(x=i.to(tl.uint32))",
    "pair_uniform_to_normal": "a, b = tl.pair_uniform_to_normal(u1=x, u2=x)",
    "add": "y = tl.add(x=x, y=x, sanitize_overflow=True)",
    "sub": "y = tl.sub(x=x, y=x, sanitize_overflow=False)",
    "mul": "y = tl.mul(x=i, y=i, sanitize_overflow=True)",
    "program_id": "y = tl.program_id(axis=0)",
    "num_programs": "y = tl.num_programs(axis=0)",
    "device_print": "tl.device_print('x', x, i, hex=True)",
    "static_print": "tl.static_print('x', 1, sep=' ', end='', file=None, flush=False)",
    "make_block_ptr": "p = tl.make_block_ptr(base=xp, shape=(16,), strides=(1,), offsets=(0,), block_shape=(16,), "
                      "order=(0,))\n    p = tl.advance(base=p, offsets=(0,))\n"
                      "    y = tl.load(p, boundary_check=(0,), padding_option='zero')",
    "condition": "j = 0\n    while tl.condition(arg1=j < 2, disable_licm=True):\n        j += 1",
    "dot": "y = tl.dot(input=x2, other=x2, acc=None, input_precision='ieee', allow_tf32=None, "
           "max_num_imprecise_acc=None, out_dtype=tl.float32)",
    "to_tensor": "y = tl.to_tensor(x=1.0)",
    "tuple": "t = tl.tuple([x, x])",
    "extra.cuda": "y = cuda.smid() + cuda.globaltimer() + cuda.num_threads() + cuda.num_warps()\n"
                  "    cuda.gdc_wait()\n    cuda.gdc_launch_dependents()",
    "libdevice": "y = libdevice.add_rd(arg0=x, arg1=x) + libdevice.fma_rz(arg0=x, arg1=x, arg2=x) + "
                 "libdevice.sqrt_ru(arg0=x) + libdevice.norm4d(x, x, x, x) + libdevice.saturatef(arg0=x)",
}


@pytest.mark.parametrize("name", sorted(KEYWORD_CALLS))
def test_calls_with_tritons_keywords_compile(name, tmp_path):
    src = tmp_path / "k.py"
    src.write_text(HEAD + "    " + KEYWORD_CALLS[name] + "\n")
    proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", "*fp32,*i32,*fp32,*i32,*fp64",
                    "--emit", "ir"])
    assert proc.returncode == 0, proc.stderr


def test_static_assert_takes_positional_arguments_only(tmp_path):
    # Triton's code generator: a TypeError for keywords (test_core.py's static_assert cases pass them positionally).
    src = tmp_path / "k.py"
    src.write_text(HEAD + "    tl.static_assert(cond=True, msg='bad')\n")
    proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", "*fp32,*i32,*fp32,*i32,*fp64"])
    assert proc.returncode == 1
    assert f"{src}:24:5: error: `static_assert` requires one or two positional arguments only" in proc.stderr


def test_jn_is_a_located_error(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(HEAD + "    y = libdevice.jn(2, x)\n")
    proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", "*fp32,*i32,*fp32,*i32,*fp64"])
    assert proc.returncode == 1 and f"{src}:24:9: error: tl.jn is not supported yet" in proc.stderr, proc.stderr


# --------------------------------------------------------------- values

@tessera.jit(interpret=True)
def binary_kernel(x, y, z, out, FN: tl.constexpr, ARITY: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x + offs)
    if ARITY == 1:
        r = getattr(tl.extra.cuda.libdevice, FN)(a)
    elif ARITY == 2:
        r = getattr(tl.extra.cuda.libdevice, FN)(a, tl.load(y + offs))
    else:
        r = getattr(tl.extra.cuda.libdevice, FN)(a, tl.load(y + offs), tl.load(z + offs))
    tl.store(out + offs, r)


def neighbours(value, dtype):
    v = dtype(value)
    return [np.nextafter(v, dtype(-np.inf)), v, np.nextafter(v, dtype(np.inf))]


def rounded(exact, dtype, mode, below=None):
    """`exact` (a Fraction, or a callable saying whether a candidate is <= the exact value) rounded by mode."""
    le = below or (lambda c: Fraction(float(c)) <= exact)
    approx = float(exact) if below is None else below.approx
    cands = neighbours(approx, dtype)
    down = max((c for c in cands if le(c)), key=float)
    up = min((c for c in cands if not le(c) or Fraction(float(c)) == (exact if below is None else below.exact(c))),
             key=float)
    if mode == "rd":
        return down
    if mode == "ru":
        return down if (below is None and Fraction(float(down)) == exact) else up
    return down if float(down) >= 0 else up  # toward zero


OPS = {"add": (2, lambda a, b, c: a + b), "sub": (2, lambda a, b, c: a - b), "mul": (2, lambda a, b, c: a * b),
       "div": (2, lambda a, b, c: a / b), "fma": (3, lambda a, b, c: a * b + c), "rcp": (1, lambda a, b, c: 1 / a)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("mode", ["rd", "ru", "rz"])
def test_arithmetic_with_a_named_rounding(op, mode, dtype):
    rng = np.random.default_rng(hash((op, mode)) % 2 ** 32)
    n = 64
    xs = [(rng.standard_normal(n) * rng.choice([1e-3, 1.0, 1e3], n)).astype(dtype) for _ in range(3)]
    arity, exact_fn = OPS[op]
    out = np.zeros(n, dtype)
    binary_kernel[(1,)](xs[0], xs[1], xs[2], out, FN=f"{op}_{mode}", ARITY=arity, BLOCK=n)
    for i in range(n):
        exact = exact_fn(*(Fraction(float(x[i])) for x in xs))
        cands = neighbours(float(exact), dtype)
        down = max((c for c in cands if Fraction(float(c)) <= exact), key=float)
        up = min((c for c in cands if Fraction(float(c)) >= exact), key=float)
        want = {"rd": down, "ru": up, "rz": down if exact >= 0 else up}[mode]
        assert out[i] == want, (op, mode, xs[0][i], xs[1][i], xs[2][i], out[i], want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["rd", "ru", "rz"])
def test_sqrt_with_a_named_rounding(mode, dtype):
    x = np.random.default_rng(5).uniform(0.01, 1000, 64).astype(dtype)
    out = np.zeros(64, dtype)
    binary_kernel[(1,)](x, x, x, out, FN=f"sqrt_{mode}", ARITY=1, BLOCK=64)
    for v, got in zip(x, out):
        exact = Fraction(float(v))
        cands = neighbours(np.sqrt(float(v)), dtype)
        down = max((c for c in cands if Fraction(float(c)) ** 2 <= exact), key=float)
        up = min((c for c in cands if Fraction(float(c)) ** 2 >= exact), key=float)
        assert got == (up if mode == "ru" else down), (v, got)


CONVERSIONS = {"int2float": (np.int32, np.float32), "uint2float": (np.uint32, np.float32),
               "ll2float": (np.int64, np.float32), "ull2float": (np.uint64, np.float32),
               "ll2double": (np.int64, np.float64), "ull2double": (np.uint64, np.float64),
               "double2float": (np.float64, np.float32)}


@tessera.jit(interpret=True)
def convert_kernel(x, out, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, getattr(tl.extra.cuda.libdevice, FN)(tl.load(x + offs)))


@pytest.mark.parametrize("conversion", sorted(CONVERSIONS))
@pytest.mark.parametrize("mode", ["rd", "ru", "rz"])
def test_conversions_with_a_named_rounding(conversion, mode):
    src, dst = CONVERSIONS[conversion]
    rng = np.random.default_rng(11)
    if src == np.float64:
        x = rng.standard_normal(64) * 1e3
    else:
        info = np.iinfo(src)
        x = rng.integers(info.min, info.max, 60, dtype=src, endpoint=True)
        x = np.concatenate([x, np.array([info.max, info.min, 0, 16777217 if info.max > 2 ** 25 else 1], src)])
    x = x.astype(src)
    out = np.zeros(64, dst)
    convert_kernel[(1,)](x, out, FN=f"{conversion}_{mode}", BLOCK=64)
    for v, got in zip(x, out):
        exact = Fraction(int(v)) if src != np.float64 else Fraction(float(v))
        cands = neighbours(float(exact), dst)
        down = max((c for c in cands if np.isfinite(c) and Fraction(float(c)) <= exact), key=float)
        up = min((c for c in cands if np.isfinite(c) and Fraction(float(c)) >= exact), key=float)
        assert got == {"rd": down, "ru": up, "rz": down if exact >= 0 else up}[mode], (v, got)


@tessera.jit(interpret=True)
def int_helpers_kernel(a, b, s, d, o24, osad, operm, ohi, olo, oback, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x, y, sel, v = tl.load(a + offs), tl.load(b + offs), tl.load(s + offs), tl.load(d + offs)
    tl.store(o24 + offs, tl.extra.cuda.libdevice.mul24(x, y))
    tl.store(osad + offs, tl.extra.cuda.libdevice.sad(x, y, (sel & 0xFFFF).to(tl.uint32)))
    tl.store(operm + offs, tl.extra.cuda.libdevice.byte_perm(x, y, sel))
    hi = tl.extra.cuda.libdevice.double2hiint(v)
    lo = tl.extra.cuda.libdevice.double2loint(v)
    tl.store(ohi + offs, hi)
    tl.store(olo + offs, lo)
    tl.store(oback + offs, tl.extra.cuda.libdevice.hiloint2double(hi, lo))


def test_integer_helpers():
    rng = np.random.default_rng(2)
    n = 64
    a = rng.integers(-2 ** 31, 2 ** 31, n).astype(np.int32)
    b = rng.integers(-2 ** 31, 2 ** 31, n).astype(np.int32)
    s = rng.integers(0, 2 ** 16, n).astype(np.int32)
    d = rng.standard_normal(n)
    outs = [np.zeros(n, np.int32) for _ in range(5)] + [np.zeros(n, np.float64)]
    int_helpers_kernel[(1,)](a, b, s, d, *outs, BLOCK=n)
    sext24 = lambda v: ((v.astype(np.int64) & 0xFFFFFF) ^ 0x800000) - 0x800000  # noqa: E731
    np.testing.assert_array_equal(outs[0], (sext24(a) * sext24(b)).astype(np.int64).astype(np.uint64)
                                  .astype(np.uint32).view(np.int32))
    np.testing.assert_array_equal(outs[1], (np.abs(a.astype(np.int64) - b) + (s & 0xFFFF)).astype(np.uint64)
                                  .astype(np.uint32).view(np.int32))
    both = (b.view(np.uint32).astype(np.uint64) << np.uint64(32)) | a.view(np.uint32).astype(np.uint64)
    perm = np.zeros(n, np.uint64)
    for i in range(4):
        pick = ((s.astype(np.uint64) >> np.uint64(4 * i)) & np.uint64(7)) * np.uint64(8)
        perm |= ((both >> pick) & np.uint64(0xFF)) << np.uint64(8 * i)
    np.testing.assert_array_equal(outs[2], perm.astype(np.uint32).view(np.int32))
    np.testing.assert_array_equal(outs[3], (d.view(np.uint64) >> np.uint64(32)).astype(np.uint32).view(np.int32))
    np.testing.assert_array_equal(outs[4], d.view(np.uint64).astype(np.uint32).view(np.int32))
    np.testing.assert_array_equal(outs[5], d)


@tessera.jit(interpret=True)
def arith_kernel(x, i, out, iout, u, ku, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a, n = tl.load(x + offs), tl.load(i + offs)
    tl.store(out + offs, tl.add(a, a) - tl.sub(a, 1.0, sanitize_overflow=False) + tl.mul(a, 2.0))
    tl.store(iout + offs, tl.mul(n, n, sanitize_overflow=False))
    c = tl.load(u + offs)
    w0, w1, w2, w3 = tl.philox_impl(c, c, c, c, 12345, 0, n_rounds=10)
    v0, v1, v2, v3 = tl.philox(12345, c, c, c, c, n_rounds=10)  # the same stream: key = the seed's halves
    tl.store(ku + offs, tl.where((w0 == v0) & (w1 == v1) & (w2 == v2) & (w3 == v3), 1, 0))


def test_add_sub_mul_and_philox_impl():
    x = np.linspace(-3, 3, 32).astype(np.float32)
    i = np.arange(-16, 16).astype(np.int32) * 99991
    out, iout, same = np.zeros(32, np.float32), np.zeros(32, np.int32), np.zeros(32, np.int32)
    arith_kernel[(1,)](x, i, out, iout, np.arange(32).astype(np.uint32) * 7919, same, BLOCK=32)
    np.testing.assert_allclose(out, 2 * x - (x - 1) + 2 * x, rtol=1e-6)
    np.testing.assert_array_equal(iout, (i.astype(np.int64) * i).astype(np.uint64).astype(np.uint32).view(np.int32))
    assert same.all()


def test_directed_rounding_assembles(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(HEAD + "    y = libdevice.add_rd(x, x) + libdevice.div_ru(x, x) + libdevice.fma_rz(x, x, x) + "
                   "libdevice.rcp_rd(x) + libdevice.sqrt_rz(x) + libdevice.rsqrt_rn(x) + libdevice.norm3d(x, x, x)"
                   " + libdevice.int2float_rd(i) + libdevice.double2float_ru(d)\n"
                   "    e = libdevice.mul_rz(d, d) + libdevice.fma_ru(d, d, d) + libdevice.rcp64h(d)\n"
                   "    tl.store(out + r, y)\n    tl.store(dp + r, e)\n")
    proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", "*fp32,*i32,*fp32,*i32,*fp64",
                    "--arch", "sm_90a"])
    assert proc.returncode == 0, proc.stderr
    for instruction in ["add.rm.f32", "div.rp.f32", "fma.rz.f32", "rcp.rm.f32", "sqrt.rz.f32", "mul.rz.f64",
                        "fma.rp.f64"]:
        assert instruction in proc.stdout, instruction
    assemble(proc.stdout, "sm_90a", tmp_path)
