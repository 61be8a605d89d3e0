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
    # written in the language (dsl/LanguagePrelude.cpp)
    "isnan", "isinf", "finitef", "isfinited", "signbit", "float_as_int", "float_as_uint",
    "int_as_float", "uint_as_float", "double_as_longlong", "longlong_as_double", "llrint", "llround",
    "ilogb", "ldexp", "scalbn", "popc", "clz", "brev", "ffs", "mulhi", "hadd", "rhadd",
    "add_rn", "sub_rn", "mul_rn", "fma_rn", "rcp_rn", "int2float_rn", "uint2float_rn", "ll2float_rn",
    "ull2float_rn", "int2double_rn", "uint2double_rn", "ll2double_rn", "ull2double_rn", "double2float_rn",
    "mul24", "sad", "byte_perm", "double2hiint", "double2loint", "hiloint2double", "rcp64h",
    # libdevice calls: arithmetic with a named rounding, norms
    "rsqrt_rn", "saturatef", "norm3d", "norm4d", "rnorm3d", "rnorm4d",
    # names only: Bessel functions of integer order (a kernel calling them gets a compile error)
    "jn", "yn",
] + [f"{src}2{dst}_{r}" for src in ("float", "double") for dst in ("int", "uint", "ll", "ull")
     for r in ("rn", "rz", "rd", "ru")] + [
    f"{op}_{r}" for op in ("add", "sub", "mul", "div", "fma", "rcp", "sqrt") for r in ("rd", "ru", "rz")] + [
    f"{c}_{r}" for c in ("int2float", "uint2float", "ll2float", "ull2float", "ll2double", "ull2double",
                         "double2float") for r in ("rd", "ru", "rz")]

for _name in NAMES:
    globals()[_name] = _device_only(_name)
del _name
