"""tl.math: the math functions (same names as triton.language.math)."""


def _device_only(name):
    def fn(*args, **kwargs):
        raise RuntimeError(f"tessera.language.math.{name} can only be called inside a @tessera.jit kernel")
    fn.__name__ = name
    return fn


# Names shared with triton.language.math and extra.cuda.libdevice (docs/language.md).
NAMES = [
    "exp", "exp2", "log", "log2", "sqrt", "abs", "sin", "cos", "rsqrt", "erf", "floor", "ceil",
    "fma", "fdiv", "div_rn", "sqrt_rn", "umulhi", "cdiv",
    "tanh", "sinh", "cosh", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh", "log1p",
    "expm1", "log10", "exp10", "cbrt", "rcbrt", "erfc", "erfinv", "erfcinv", "erfcx", "lgamma",
    "tgamma", "trunc", "round", "rint", "nearbyint", "j0", "j1", "y0", "y1", "normcdf",
    "normcdfinv", "sinpi", "cospi", "logb", "saturate", "fabs", "cyl_bessel_i0", "cyl_bessel_i1",
    "fast_expf", "fast_exp10f", "fast_logf", "fast_log2f", "fast_log10f", "fast_sinf",
    "fast_cosf", "fast_tanf", "fast_tanhf",
    "pow", "atan2", "fmod", "hypot", "rhypot", "fmin", "fmax", "copysign", "nextafter", "fdim",
    "remainder", "fast_powf", "fast_dividef",
]

for _name in NAMES:
    globals()[_name] = _device_only(_name)
del _name
