"""Every libdevice function of tl.math (tanh, erfinv, lgamma, j0, fast_expf,
nextafter, ...) through the host interpreter, against numpy/math (f32, f64)."""
import math

import numpy as np
import pytest

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

N = 32
@tessera.jit(interpret=True)
def libdevice_kernel(x_ptr, y_ptr, out_ptr, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    r = x
    if FN == "sinh":
        r = tl.math.sinh(x)
    elif FN == "cosh":
        r = tl.math.cosh(x)
    elif FN == "tan":
        r = tl.math.tan(x)
    elif FN == "asin":
        r = tl.math.asin(x)
    elif FN == "acos":
        r = tl.math.acos(x)
    elif FN == "atan":
        r = tl.math.atan(x)
    elif FN == "asinh":
        r = tl.math.asinh(x)
    elif FN == "acosh":
        r = tl.math.acosh(x)
    elif FN == "atanh":
        r = tl.math.atanh(x)
    elif FN == "expm1":
        r = tl.math.expm1(x)
    elif FN == "log10":
        r = tl.math.log10(x)
    elif FN == "exp10":
        r = tl.math.exp10(x)
    elif FN == "cbrt":
        r = tl.math.cbrt(x)
    elif FN == "rcbrt":
        r = tl.math.rcbrt(x)
    elif FN == "erfc":
        r = tl.math.erfc(x)
    elif FN == "erfinv":
        r = tl.math.erfinv(x)
    elif FN == "erfcinv":
        r = tl.math.erfcinv(x)
    elif FN == "erfcx":
        r = tl.math.erfcx(x)
    elif FN == "lgamma":
        r = tl.math.lgamma(x)
    elif FN == "tgamma":
        r = tl.math.tgamma(x)
    elif FN == "trunc":
        r = tl.math.trunc(x)
    elif FN == "rint":
        r = tl.math.rint(x)
    elif FN == "nearbyint":
        r = tl.math.nearbyint(x)
    elif FN == "j0":
        r = tl.math.j0(x)
    elif FN == "j1":
        r = tl.math.j1(x)
    elif FN == "y0":
        r = tl.math.y0(x)
    elif FN == "y1":
        r = tl.math.y1(x)
    elif FN == "cyl_bessel_i0":
        r = tl.math.cyl_bessel_i0(x)
    elif FN == "cyl_bessel_i1":
        r = tl.math.cyl_bessel_i1(x)
    elif FN == "normcdf":
        r = tl.math.normcdf(x)
    elif FN == "normcdfinv":
        r = tl.math.normcdfinv(x)
    elif FN == "sinpi":
        r = tl.math.sinpi(x)
    elif FN == "cospi":
        r = tl.math.cospi(x)
    elif FN == "logb":
        r = tl.math.logb(x)
    elif FN == "saturate":
        r = tl.math.saturate(x)
    elif FN == "fabs":
        r = tl.math.fabs(x)
    elif FN == "fast_expf":
        r = tl.math.fast_expf(x)
    elif FN == "fast_exp10f":
        r = tl.math.fast_exp10f(x)
    elif FN == "fast_logf":
        r = tl.math.fast_logf(x)
    elif FN == "fast_log2f":
        r = tl.math.fast_log2f(x)
    elif FN == "fast_log10f":
        r = tl.math.fast_log10f(x)
    elif FN == "fast_sinf":
        r = tl.math.fast_sinf(x)
    elif FN == "fast_cosf":
        r = tl.math.fast_cosf(x)
    elif FN == "fast_tanf":
        r = tl.math.fast_tanf(x)
    elif FN == "fmod":
        r = tl.math.fmod(x, y)
    elif FN == "hypot":
        r = tl.math.hypot(x, y)
    elif FN == "fmin":
        r = tl.math.fmin(x, y)
    elif FN == "fmax":
        r = tl.math.fmax(x, y)
    elif FN == "copysign":
        r = tl.math.copysign(x, y)
    elif FN == "nextafter":
        r = tl.math.nextafter(x, y)
    elif FN == "fdim":
        r = tl.math.fdim(x, y)
    elif FN == "remainder":
        r = tl.math.remainder(x, y)
    elif FN == "fast_powf":
        r = tl.math.fast_powf(x, y)
    elif FN == "fast_dividef":
        r = tl.math.fast_dividef(x, y)
    tl.store(out_ptr + offs, r)


def _vec(f):
    return np.vectorize(f, otypes=[np.float64])


def _erfinv(y):
    lo, hi = -10.0, 10.0  # bisection on math.erf
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
    return (lo + hi) / 2


# (reference, x range, y range); x in [lo, hi)
LIBDEVICE = {
    "sinh": (np.sinh, (-3, 3)), "cosh": (np.cosh, (-3, 3)), "tan": (np.tan, (-1.2, 1.2)),
    "asin": (np.arcsin, (-1, 1)), "acos": (np.arccos, (-1, 1)), "atan": (np.arctan, (-5, 5)),
    "asinh": (np.arcsinh, (-5, 5)), "acosh": (np.arccosh, (1, 6)), "atanh": (np.arctanh, (-0.99, 0.99)),
    "expm1": (np.expm1, (-2, 2)), "log10": (np.log10, (0.1, 100)), "exp10": (lambda x: 10.0 ** x, (-3, 3)),
    "cbrt": (np.cbrt, (-8, 8)), "rcbrt": (lambda x: 1 / np.cbrt(x), (0.1, 8)),
    "erfc": (_vec(math.erfc), (-3, 3)), "erfinv": (_vec(_erfinv), (-0.99, 0.99)),
    "erfcinv": (_vec(lambda v: _erfinv(1 - v)), (0.01, 1.99)),
    "erfcx": (_vec(lambda v: math.exp(v * v) * math.erfc(v)), (-2, 5)),
    "lgamma": (_vec(math.lgamma), (0.1, 10)), "tgamma": (_vec(math.gamma), (0.1, 6)),
    "trunc": (np.trunc, (-9, 9)), "rint": (np.rint, (-9, 9)), "nearbyint": (np.rint, (-9, 9)),
    "normcdf": (_vec(lambda v: 0.5 * math.erfc(-v / math.sqrt(2))), (-4, 4)),
    "normcdfinv": (_vec(lambda p: -math.sqrt(2) * _erfinv(1 - 2 * p)), (0.01, 0.99)),
    "sinpi": (lambda x: np.sin(np.pi * x), (-2, 2)), "cospi": (lambda x: np.cos(np.pi * x), (-2, 2)),
    "logb": (lambda x: np.floor(np.log2(np.abs(x))), (0.1, 1000)), "saturate": (lambda x: np.clip(x, 0, 1), (-2, 2)),
    "fabs": (np.abs, (-5, 5)), "fast_expf": (np.exp, (-5, 5)), "fast_exp10f": (lambda x: 10.0 ** x, (-3, 3)),
    "fast_logf": (np.log, (0.1, 100)), "fast_log2f": (np.log2, (0.1, 100)), "fast_log10f": (np.log10, (0.1, 100)),
    "fast_sinf": (np.sin, (-3, 3)), "fast_cosf": (np.cos, (-3, 3)), "fast_tanf": (np.tan, (-1.2, 1.2)),
    "fmod": (np.fmod, (-9, 9)), "hypot": (np.hypot, (-9, 9)), "fmin": (np.fmin, (-9, 9)), "fmax": (np.fmax, (-9, 9)),
    "copysign": (np.copysign, (-9, 9)), "fdim": (lambda x, y: np.maximum(x - y, 0), (-9, 9)),
    "remainder": (np.remainder, (-9, 9)), "fast_powf": (np.power, (0.1, 4)), "fast_dividef": (np.divide, (1, 9)),
}
BESSEL = {"j0": (0.7651976865579666, 0.22389077914123567), "j1": (0.44005058574493355, 0.5767248077568734),
          "y0": (0.08825696421567696, 0.5103756726497451), "y1": (-0.7812128213002887, -0.10703243154093754)}


@pytest.mark.parametrize("fn,dtype", [(fn, dtype) for fn in sorted(LIBDEVICE) for dtype in (np.float32, np.float64)
                                      if dtype == np.float32 or not fn.startswith("fast_")],  # fast_*: f32 only
                         ids=lambda v: v if isinstance(v, str) else np.dtype(v).name)
def test_libdevice_functions(fn, dtype):
    ref, (lo, hi) = LIBDEVICE[fn]
    rng = np.random.default_rng(7)
    x = rng.uniform(lo, hi, N).astype(dtype)
    y = rng.uniform(lo, hi, N).astype(dtype)
    if fn == "remainder":
        y = np.where(np.abs(y) < 0.5, 1.5, y).astype(dtype)
        ref = lambda a, b: a - b * np.rint(a / b)  # noqa: E731 (IEEE remainder)
    out = np.zeros(N, dtype)
    libdevice_kernel[(1,)](x, y, out, FN=fn, BLOCK=N)
    binary = fn in ("fmod", "hypot", "fmin", "fmax", "copysign", "fdim", "remainder", "fast_powf", "fast_dividef")
    want = ref(x.astype(np.float64), y.astype(np.float64)) if binary else ref(x.astype(np.float64))
    rtol = 1e-5 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("fn", sorted(BESSEL))
def test_bessel_functions(fn):
    x = np.array([1.0, 2.0] * (N // 2), np.float64)
    out = np.zeros(N, np.float64)
    libdevice_kernel[(1,)](x, x, out, FN=fn, BLOCK=N)
    np.testing.assert_allclose(out[:2], BESSEL[fn], rtol=1e-12)


# Modified Bessel functions of the first kind (Triton's test_libdevice.py test_bessel): I0 is even, I1 odd.
CYL_BESSEL_I = {"cyl_bessel_i0": (1.2660658777520082, 2.2795853023360673, 1.2660658777520082, 2.2795853023360673),
                "cyl_bessel_i1": (0.5651591039924851, 1.5906368546373291, -0.5651591039924851, -1.5906368546373291)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fn", sorted(CYL_BESSEL_I))
def test_modified_bessel_functions(fn, dtype):
    x = np.array([1.0, 2.0, -1.0, -2.0] * (N // 4), dtype)
    out = np.zeros(N, dtype)
    libdevice_kernel[(1,)](x, x, out, FN=fn, BLOCK=N)
    np.testing.assert_allclose(out[:4], CYL_BESSEL_I[fn], rtol=1e-6 if dtype == np.float32 else 1e-12)


def test_nextafter_steps_in_the_element_type():
    x = np.ones(N, np.float32)
    y = np.full(N, 2, np.float32)
    out = np.zeros(N, np.float32)
    libdevice_kernel[(1,)](x, y, out, FN="nextafter", BLOCK=N)
    np.testing.assert_array_equal(out, np.nextafter(x, y))
    out64 = np.zeros(N, np.float64)
    libdevice_kernel[(1,)](x.astype(np.float64), y.astype(np.float64), out64, FN="nextafter", BLOCK=N)
    np.testing.assert_array_equal(out64, np.nextafter(1.0, 2.0))

