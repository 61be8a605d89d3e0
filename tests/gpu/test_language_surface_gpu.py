"""libdevice's arithmetic and conversions with a named rounding (add_rd, fma_rz, sqrt_ru, int2float_rd,
double2float_ru, ...) on the GPU against exact rational arithmetic, as tests/python/test_language_surface.py
checks the interpreter; and the integer helpers (mul24, sad, byte_perm) against numpy."""
from fractions import Fraction

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@tessera.jit
def math_kernel(x, y, z, out, FN: tl.constexpr, ARITY: tl.constexpr, BLOCK: tl.constexpr):
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


def want(exact, dtype, mode, square=False):
    approx = np.sqrt(float(exact)) if square else float(exact)
    key = (lambda c: Fraction(float(c)) ** 2) if square else (lambda c: Fraction(float(c)))
    cands = [c for c in neighbours(approx, dtype) if np.isfinite(c)]
    down = max((c for c in cands if key(c) <= exact), key=float)
    up = min((c for c in cands if key(c) >= exact), key=float)
    return {"rd": down, "ru": up, "rz": down if exact >= 0 else up}[mode]


OPS = {"add": (2, lambda a, b, c: a + b), "sub": (2, lambda a, b, c: a - b), "mul": (2, lambda a, b, c: a * b),
       "div": (2, lambda a, b, c: a / b), "fma": (3, lambda a, b, c: a * b + c), "rcp": (1, lambda a, b, c: 1 / a),
       "sqrt": (1, None)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("mode", ["rd", "ru", "rz"])
def test_arithmetic_with_a_named_rounding(op, mode, dtype):
    rng = np.random.default_rng(7)
    n = 128
    xs = [(rng.standard_normal(n) * rng.choice([1e-3, 1.0, 1e3], n)).astype(dtype) for _ in range(3)]
    if op == "sqrt":
        xs[0] = np.abs(xs[0])
    arity, exact_fn = OPS[op]
    dev = [torch.from_numpy(x).cuda() for x in xs]
    out = torch.zeros(n, dtype=dev[0].dtype, device="cuda")
    math_kernel[(1,)](dev[0], dev[1], dev[2], out, FN=f"{op}_{mode}", ARITY=arity, BLOCK=n)
    got = out.cpu().numpy()
    for i in range(n):
        if op == "sqrt":
            expect = want(Fraction(float(xs[0][i])), dtype, mode, square=True)
        else:
            expect = want(exact_fn(*(Fraction(float(x[i])) for x in xs)), dtype, mode)
        assert got[i] == expect, (op, mode, xs[0][i], xs[1][i], xs[2][i], got[i], expect)


@tessera.jit
def convert_kernel(x, out, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, getattr(tl.extra.cuda.libdevice, FN)(tl.load(x + offs)))


CONVERSIONS = {"int2float": (np.int32, np.float32), "ll2float": (np.int64, np.float32),
               "ll2double": (np.int64, np.float64), "double2float": (np.float64, np.float32)}


@pytest.mark.parametrize("conversion", sorted(CONVERSIONS))
@pytest.mark.parametrize("mode", ["rd", "ru", "rz"])
def test_conversions_with_a_named_rounding(conversion, mode):
    src, dst = CONVERSIONS[conversion]
    rng = np.random.default_rng(11)
    if src == np.float64:
        x = rng.standard_normal(128) * 1e3
    else:
        info = np.iinfo(src)
        x = rng.integers(info.min, info.max, 128, dtype=src, endpoint=True)
    x = x.astype(src)
    out = torch.zeros(128, dtype=torch.float32 if dst == np.float32 else torch.float64, device="cuda")
    convert_kernel[(1,)](torch.from_numpy(x).cuda(), out, FN=f"{conversion}_{mode}", BLOCK=128)
    for v, got in zip(x, out.cpu().numpy()):
        exact = Fraction(int(v)) if src != np.float64 else Fraction(float(v))
        assert got == want(exact, dst, mode), (v, got)
