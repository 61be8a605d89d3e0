"""Every op through the host interpreter, against numpy (no GPU): binary and
unary operators on int/uint/float/bool with Triton's promotion, comparisons,
broadcasting, tl.where, casts, math, integer division with C semantics,
NaN/inf, and reductions along each axis. The interpreter is the reference
semantics of the block IR (compiler/interp/Interpreter.h)."""
import math

import numpy as np
import pytest

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

N = 32  # elements per test block


def bf16_round(x):
    """float32 → nearest bfloat16 (ties to even), returned as float32."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = rounded.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), np.float32(np.nan), out)


def c_div(a, b):
    """C's truncating integer division (Python's // floors)."""
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return np.where((a < 0) != (b < 0), -q, q)


def c_rem(a, b):
    return a.astype(np.int64) - b.astype(np.int64) * c_div(a, b)


# ------------------------------------------------------------------ kernels

@tessera.jit(interpret=True)
def binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "truediv":
        r = x / y
    elif OP == "floordiv":
        r = x // y
    elif OP == "mod":
        r = x % y
    elif OP == "and":
        r = x & y
    elif OP == "or":
        r = x | y
    elif OP == "xor":
        r = x ^ y
    elif OP == "shl":
        r = x << y
    elif OP == "shr":
        r = x >> y
    elif OP == "maximum":
        r = tl.maximum(x, y)
    elif OP == "minimum":
        r = tl.minimum(x, y)
    elif OP == "eq":
        r = x == y
    elif OP == "ne":
        r = x != y
    elif OP == "lt":
        r = x < y
    elif OP == "le":
        r = x <= y
    elif OP == "gt":
        r = x > y
    elif OP == "ge":
        r = x >= y
    elif OP == "logical_and":
        r = (x > 0) & (y > 0)
    tl.store(out_ptr + offs, r, mask=mask)


@tessera.jit(interpret=True)
def unary_kernel(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if OP == "neg":
        r = -x
    elif OP == "invert":
        r = ~x
    elif OP == "not":
        r = not x
    elif OP == "abs":
        r = tl.abs(x)
    elif OP == "exp":
        r = tl.exp(x)
    elif OP == "exp2":
        r = tl.exp2(x)
    elif OP == "log":
        r = tl.log(x)
    elif OP == "log2":
        r = tl.log2(x)
    elif OP == "sqrt":
        r = tl.sqrt(x)
    elif OP == "pos":
        r = +x
    tl.store(out_ptr + offs, r, mask=mask)


@tessera.jit(interpret=True)
def cast_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x, mask=mask)  # tl.store casts to the pointee type


@tessera.jit(interpret=True)
def cast_to_kernel(x_ptr, out_ptr, n, DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if DTYPE == "f16":
        y = x.to(tl.float16)
    elif DTYPE == "bf16":
        y = x.to(tl.bfloat16)
    else:
        y = x.to(tl.float32)
    tl.store(out_ptr + offs, y.to(tl.float64), mask=mask)


@tessera.jit(interpret=True)
def scalar_kernel(out_ptr, a, b, OP: tl.constexpr):
    if OP == "add":
        r = a + b
    elif OP == "floordiv":
        r = a // b
    elif OP == "mod":
        r = a % b
    elif OP == "truediv":
        r = a / b
    elif OP == "mul":
        r = a * b
    tl.store(out_ptr, r)


def run_binary(op, x, y, out_dtype):
    out = np.zeros(N, out_dtype)
    binary_kernel[(1,)](x, y, out, len(x), OP=op, BLOCK=N)
    return out[:len(x)]


def ints(dtype, lo, hi, seed=0):
    return np.random.default_rng(seed).integers(lo, hi, N, dtype=dtype)


def floats(dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(N).astype(dtype)


# ------------------------------------------------------------------ binary ops

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "and", "or", "xor", "maximum", "minimum"])
def test_integer_binary_ops_wrap_like_numpy(op, dtype):
    info = np.iinfo(dtype)
    x = ints(dtype, info.min, int(info.max) + 1, 1)
    y = ints(dtype, info.min, int(info.max) + 1, 2)
    ref = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "and": np.bitwise_and, "or": np.bitwise_or,
           "xor": np.bitwise_xor, "maximum": np.maximum, "minimum": np.minimum}[op]
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(run_binary(op, x, y, dtype), ref(x, y))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64], ids=lambda d: np.dtype(d).name)
def test_signed_division_and_modulo_truncate_like_c(dtype):
    x = ints(dtype, -100, 100, 3)
    y = ints(dtype, 1, 9, 4) * np.where(ints(np.int8, 0, 2, 5) == 0, 1, -1).astype(dtype)
    np.testing.assert_array_equal(run_binary("floordiv", x, y, dtype), c_div(x, y))
    np.testing.assert_array_equal(run_binary("mod", x, y, dtype), c_rem(x, y))


def test_negative_integer_division_is_c_division_not_python():
    x = np.array([-7, 7, -7, 7, -1, 0], np.int32)
    y = np.array([2, -2, -2, 2, 3, -5], np.int32)
    np.testing.assert_array_equal(run_binary("floordiv", x, y, np.int32), [-3, -3, 3, 3, 0, 0])
    np.testing.assert_array_equal(run_binary("mod", x, y, np.int32), [-1, 1, -1, 1, -1, 0])
    # INT_MIN / -1 wraps (the GPU's div.s32), INT_MIN % -1 == 0.
    imin = np.array([np.iinfo(np.int32).min], np.int32)
    np.testing.assert_array_equal(run_binary("floordiv", imin, np.array([-1], np.int32), np.int32), imin)
    np.testing.assert_array_equal(run_binary("mod", imin, np.array([-1], np.int32), np.int32), [0])


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.uint64], ids=lambda d: np.dtype(d).name)
def test_unsigned_division_and_modulo(dtype):
    info = np.iinfo(dtype)
    x = ints(dtype, 0, int(info.max) + 1 if dtype != np.uint64 else 2**62, 6)
    y = ints(dtype, 1, 1000 if dtype != np.uint8 else 255, 7)
    np.testing.assert_array_equal(run_binary("floordiv", x, y, dtype), x // y)
    np.testing.assert_array_equal(run_binary("mod", x, y, dtype), x % y)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32], ids=lambda d: np.dtype(d).name)
def test_shifts(dtype):
    bits = np.iinfo(dtype).bits
    info = np.iinfo(dtype)
    x = ints(dtype, info.min, int(info.max) + 1, 8)
    s = ints(dtype, 0, bits, 9)
    np.testing.assert_array_equal(run_binary("shl", x, s, dtype), np.left_shift(x, s))
    np.testing.assert_array_equal(run_binary("shr", x, s, dtype), np.right_shift(x, s))  # arithmetic when signed


def test_shift_amounts_past_the_width_clamp_like_ptx():
    x = np.array([5, -5, 1, -1], np.int32)
    s = np.array([32, 40, 33, 99], np.int32)
    np.testing.assert_array_equal(run_binary("shl", x, s, np.int32), [0, 0, 0, 0])
    np.testing.assert_array_equal(run_binary("shr", x, s, np.int32), [0, -1, 0, -1])
    u = np.array([0xFFFFFFFF, 1], np.uint32)
    np.testing.assert_array_equal(run_binary("shr", u, np.array([32, 31], np.uint32), np.uint32), [0, 0])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "mod", "maximum", "minimum"])
def test_float_binary_ops_are_rounded_to_the_element_type(op, dtype):
    x, y = floats(dtype, 10), floats(dtype, 11)
    ref = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.divide, "mod": np.fmod,
           "maximum": np.fmax, "minimum": np.fmin}[op]
    got = run_binary(op, x, y, dtype)
    # f16 arithmetic is rounded once per op, like numpy's float16 (and the GPU's f16 instructions).
    np.testing.assert_array_equal(got, ref(x, y))


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint32, np.uint64, np.float16, np.float32, np.bool_],
                         ids=lambda d: np.dtype(d).name)
def test_comparisons(op, dtype):
    if dtype == np.bool_:
        x, y = ints(np.int8, 0, 2, 12).astype(bool), ints(np.int8, 0, 2, 13).astype(bool)
    elif np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        x = ints(dtype, info.min, int(info.max) + 1, 12)
        y = x.copy()
        y[::2] = ints(dtype, info.min, int(info.max) + 1, 13)[::2]
    else:
        x, y = floats(dtype, 12), floats(dtype, 13)
        y[::3] = x[::3]
    ref = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
           "ge": np.greater_equal}[op]
    np.testing.assert_array_equal(run_binary(op, x, y, np.bool_), ref(x, y))


def test_nan_comparisons_are_ordered_except_ne():
    x = np.array([np.nan, np.nan, 1.0, np.inf, -np.inf], np.float32)
    y = np.array([np.nan, 1.0, np.nan, np.inf, np.inf], np.float32)
    for op, ref in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                    ("gt", np.greater), ("ge", np.greater_equal)]:
        np.testing.assert_array_equal(run_binary(op, x, y, np.bool_), ref(x, y), err_msg=op)


@pytest.mark.parametrize("xdtype,ydtype,want", [
    (np.int8, np.int32, np.int32),
    (np.int32, np.int8, np.int32),
    (np.uint32, np.int32, np.uint32),
    (np.int64, np.uint32, np.int64),
    (np.uint8, np.int16, np.int16),
    (np.float16, np.float32, np.float32),
    (np.float32, np.float64, np.float64),
    (np.int32, np.float16, np.float16),
    (np.bool_, np.int16, np.int16),
    (np.bool_, np.float32, np.float32),
], ids=lambda d: np.dtype(d).name)
def test_promotion(xdtype, ydtype, want):
    x = (ints(np.int8, 0, 100, 14) if xdtype != np.bool_ else ints(np.int8, 0, 2, 14)).astype(xdtype)
    y = (ints(np.int8, 0, 100, 15) if ydtype != np.bool_ else ints(np.int8, 0, 2, 15)).astype(ydtype)
    out = np.zeros(N, want)
    binary_kernel[(1,)](x, y, out, N, OP="add", BLOCK=N)
    np.testing.assert_array_equal(out, x.astype(want) + y.astype(want))
    # The result type itself: storing into a wider float shows no extra precision.
    wide = np.zeros(N, np.float64)
    binary_kernel[(1,)](x, y, wide, N, OP="add", BLOCK=N)
    np.testing.assert_array_equal(wide, (x.astype(want) + y.astype(want)).astype(np.float64))


def test_unsigned_wins_over_signed_of_the_same_width():
    x = np.array([-1] * N, np.int32)
    y = np.array([0] * N, np.uint32)
    out = np.zeros(N, np.bool_)
    binary_kernel[(1,)](x, y, out, N, OP="gt", BLOCK=N)  # -1 as u32 is 0xffffffff > 0
    assert out.all()


def test_integer_true_division_is_f32():
    x = np.arange(1, N + 1, dtype=np.int32)
    y = np.full(N, 3, np.int32)
    out = np.zeros(N, np.float64)
    binary_kernel[(1,)](x, y, out, N, OP="truediv", BLOCK=N)
    np.testing.assert_array_equal(out, (x.astype(np.float32) / y.astype(np.float32)).astype(np.float64))


def test_bool_operators():
    x = ints(np.int8, -2, 3, 16).astype(np.int32)
    y = ints(np.int8, -2, 3, 17).astype(np.int32)
    np.testing.assert_array_equal(run_binary("logical_and", x, y, np.bool_), (x > 0) & (y > 0))
    b, c = x > 0, y > 0
    np.testing.assert_array_equal(run_binary("xor", b, c, np.bool_), b ^ c)
    np.testing.assert_array_equal(run_binary("add", b, c, np.bool_), b ^ c)  # i1 arithmetic wraps


@pytest.mark.parametrize("op,a,b,want", [
    ("add", 2**31 - 1, 1, -2**31),   # i32 + i32 wraps
    ("floordiv", -7, 2, -3),
    ("mod", -7, 2, -1),
    ("mod", 7, -2, 1),
    ("truediv", 7, 2, 3.5),
    ("mul", 3, 2.5, 7.5),            # i32 * f32 -> f32
])
def test_scalar_arithmetic(op, a, b, want):
    out = np.zeros(1, np.float64 if isinstance(want, float) else np.int64)
    scalar_kernel[(1,)](out, a, b, OP=op)
    assert out[0] == want


# ------------------------------------------------------------------ unary ops and math

@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32], ids=lambda d: np.dtype(d).name)
def test_integer_unary_ops(dtype):
    info = np.iinfo(dtype)
    x = ints(dtype, info.min, int(info.max) + 1, 18)
    x[0] = info.min
    out = np.zeros(N, dtype)
    with np.errstate(over="ignore"):
        unary_kernel[(1,)](x, out, N, OP="neg", BLOCK=N)
        np.testing.assert_array_equal(out, (0 - x.astype(np.uint64)).astype(dtype))
        unary_kernel[(1,)](x, out, N, OP="invert", BLOCK=N)
        np.testing.assert_array_equal(out, ~x)
        unary_kernel[(1,)](x, out, N, OP="abs", BLOCK=N)
        np.testing.assert_array_equal(out, np.abs(x))  # abs(INT_MIN) stays INT_MIN, as numpy
        unary_kernel[(1,)](x, out, N, OP="pos", BLOCK=N)
        np.testing.assert_array_equal(out, x)


def test_logical_not():
    x = ints(np.int8, -2, 3, 19).astype(np.int32)
    out = np.zeros(N, np.bool_)
    unary_kernel[(1,)](x, out, N, OP="not", BLOCK=N)
    np.testing.assert_array_equal(out, x == 0)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["neg", "abs", "exp", "exp2", "log", "log2", "sqrt"])
def test_float_unary_ops(op, dtype):
    x = floats(dtype, 20)
    if op in ("log", "log2", "sqrt"):
        x = np.abs(x) + dtype(0.25)
    out = np.zeros(N, dtype)
    unary_kernel[(1,)](x, out, N, OP=op, BLOCK=N)
    ref = {"neg": np.negative, "abs": np.abs, "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2,
           "sqrt": np.sqrt}[op](x.astype(np.float64)).astype(dtype)
    if op in ("neg", "abs", "sqrt"):
        np.testing.assert_array_equal(out, ref)  # exact (sqrt is IEEE on the GPU too)
    else:
        # The GPU's f32 exp/log are approximate (ex2.approx); the interpreter rounds the exact value.
        np.testing.assert_allclose(out, ref, rtol={np.float16: 2e-3, np.float32: 1e-6, np.float64: 1e-15}[dtype])


def test_int_operands_of_math_become_f32():
    x = np.arange(1, N + 1, dtype=np.int32)
    out = np.zeros(N, np.float64)
    unary_kernel[(1,)](x, out, N, OP="sqrt", BLOCK=N)
    np.testing.assert_array_equal(out, np.sqrt(x.astype(np.float32)).astype(np.float64))


def test_nan_and_inf_through_math_and_max_min():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, np.nan, 3.0], np.float32)
    y = np.array([1.0, np.nan, 5.0, -0.0, np.nan, np.inf, np.nan, -np.inf], np.float32)
    # maxnum/minnum: a NaN operand yields the other one (NaN only if both are).
    np.testing.assert_array_equal(run_binary("maximum", x, y, np.float32), np.fmax(x, y))
    np.testing.assert_array_equal(run_binary("minimum", x, y, np.float32), np.fmin(x, y))
    out = np.zeros(N, np.float32)
    unary_kernel[(1,)](x, out, len(x), OP="exp", BLOCK=N)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(out[:len(x)], np.exp(x), rtol=1e-6)
        unary_kernel[(1,)](x, out, len(x), OP="log", BLOCK=N)
        np.testing.assert_allclose(out[:len(x)], np.log(x), rtol=1e-6)
        np.testing.assert_array_equal(run_binary("truediv", x, y, np.float32), x / y)
        np.testing.assert_array_equal(run_binary("mod", x, y, np.float32), np.fmod(x, y))


# ------------------------------------------------------------------ casts

@pytest.mark.parametrize("src,dst", [
    (np.float32, np.int32), (np.float32, np.int8), (np.float64, np.int64), (np.float16, np.int16),
    (np.float32, np.uint8), (np.float32, np.uint32),
    (np.int32, np.float32), (np.int64, np.float32), (np.uint32, np.float32), (np.int8, np.float16),
    (np.int32, np.int8), (np.int8, np.int64), (np.uint8, np.int32), (np.int32, np.uint16), (np.int64, np.uint32),
    (np.float32, np.float16), (np.float64, np.float32), (np.float16, np.float64),
    (np.int32, np.bool_), (np.float32, np.bool_), (np.bool_, np.int32), (np.bool_, np.float32),
], ids=lambda d: np.dtype(d).name)
def test_casts_match_numpy_within_range(src, dst):
    rng = np.random.default_rng(21)
    if np.issubdtype(src, np.floating):
        x = (rng.standard_normal(N) * 50).astype(src)
        if np.issubdtype(dst, np.unsignedinteger):
            x = np.abs(x)
    elif src == np.bool_:
        x = rng.integers(0, 2, N).astype(bool)
    else:
        info = np.iinfo(src)
        x = rng.integers(info.min, int(info.max) + 1, N, dtype=src)
    x[0] = 0
    out = np.zeros(N, dst)
    cast_kernel[(1,)](x, out, N, BLOCK=N)
    with np.errstate(invalid="ignore"):
        want = x.astype(dst)  # float -> int truncates toward zero; int -> int wraps; -> bool is != 0
    np.testing.assert_array_equal(out, want)


def test_float_to_int_saturates_and_nan_is_zero():
    x = np.array([1e10, -1e10, np.nan, np.inf, -np.inf, -3.7, 3.7, 127.9, -128.9, 300.0], np.float32)
    out = np.zeros(len(x), np.int8)
    cast_kernel[(1,)](x, out, len(x), BLOCK=16)
    np.testing.assert_array_equal(out, [127, -128, 0, 127, -128, -3, 3, 127, -128, 127])
    out32 = np.zeros(len(x), np.int32)
    cast_kernel[(1,)](x, out32, len(x), BLOCK=16)
    imax, imin = np.iinfo(np.int32).max, np.iinfo(np.int32).min
    np.testing.assert_array_equal(out32, [imax, imin, 0, imax, imin, -3, 3, 127, -128, 300])
    outu = np.zeros(len(x), np.uint8)
    cast_kernel[(1,)](x, outu, len(x), BLOCK=16)
    np.testing.assert_array_equal(outu, [255, 0, 0, 255, 0, 0, 3, 127, 0, 255])


def test_nan_to_bool_is_true():
    x = np.array([np.nan, 0.0, -0.0, 1e-30], np.float32)
    out = np.zeros(4, np.bool_)
    cast_kernel[(1,)](x, out, 4, BLOCK=4)
    np.testing.assert_array_equal(out, [True, False, False, True])


def test_signed_to_wider_sign_extends_and_unsigned_zero_extends():
    x = np.array([-1, -128, 127, 0], np.int8)
    out = np.zeros(4, np.int64)
    cast_kernel[(1,)](x, out, 4, BLOCK=4)
    np.testing.assert_array_equal(out, [-1, -128, 127, 0])
    u = x.view(np.uint8)
    cast_kernel[(1,)](u, out, 4, BLOCK=4)
    np.testing.assert_array_equal(out, [255, 128, 127, 0])


def test_int_to_float_rounds_to_nearest_even():
    x = np.array([2**24 + 1, 2**24 + 3, 2**53 + 1, -(2**63), 2**62 + 2**38 + 1], np.int64)
    out = np.zeros(len(x), np.float32)
    cast_kernel[(1,)](x, out, len(x), BLOCK=8)
    np.testing.assert_array_equal(out, x.astype(np.float32))
    u = np.array([2**64 - 1, 2**63 + 2**39 + 1], np.uint64)
    cast_kernel[(1,)](u, out, 2, BLOCK=2)
    np.testing.assert_array_equal(out[:2], u.astype(np.float32))


@pytest.mark.parametrize("dtype,rounding", [("f16", lambda v: v.astype(np.float16).astype(np.float64)),
                                            ("bf16", lambda v: bf16_round(v).astype(np.float64)),
                                            ("f32", lambda v: v.astype(np.float64))],
                         ids=["f16", "bf16", "f32"])
def test_float_rounding_through_to(dtype, rounding):
    x = np.concatenate([np.random.default_rng(22).standard_normal(N - 8) * 1000,
                        [65504.0, 65520.0, 1e-8, -1e-8, 3.0e38, np.inf, -np.inf, np.nan]]).astype(np.float32)
    out = np.zeros(N, np.float64)
    cast_to_kernel[(1,)](x, out, N, DTYPE=dtype, BLOCK=N)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, rounding(x))


# ------------------------------------------------------------------ broadcasting, where, masks

@tessera.jit(interpret=True)
def outer_kernel(x_ptr, y_ptr, out_ptr, M: tl.constexpr, N_: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N_)
    x = tl.load(x_ptr + rows)            # <M>
    y = tl.load(y_ptr + cols)            # <N>
    r = x[:, None] * 10 + y[None, :]     # <M x N>, literals take the block's type
    r = tl.where(r > 20, r, -1)          # scalar other side
    tl.store(out_ptr + rows[:, None] * N_ + cols[None, :], r)


def test_broadcasting_and_where():
    x = np.arange(4, dtype=np.int32)
    y = np.arange(8, dtype=np.int32)
    out = np.zeros((4, 8), np.int32)
    outer_kernel[(1,)](x, y, out, M=4, N_=8)
    r = x[:, None] * 10 + y[None, :]
    np.testing.assert_array_equal(out, np.where(r > 20, r, -1))


@tessera.jit(interpret=True)
def masked_other_kernel(x_ptr, out_ptr, n, OTHER: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=OTHER)
    tl.store(out_ptr + offs, x)


@tessera.jit(interpret=True)
def masked_no_other_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x)


def test_masked_loads_use_other_or_zero_and_touch_nothing():
    x = np.arange(5, dtype=np.float32) + 1  # 5 elements; the block has 16
    out = np.zeros(16, np.float32)
    masked_other_kernel[(1,)](x, out, 5, OTHER=-float("inf"), BLOCK=16)
    np.testing.assert_array_equal(out, np.concatenate([x, np.full(11, -np.inf, np.float32)]))
    masked_other_kernel[(1,)](x, out, 5, OTHER=7, BLOCK=16)
    np.testing.assert_array_equal(out, np.concatenate([x, np.full(11, 7, np.float32)]))
    out[:] = 99
    masked_no_other_kernel[(1,)](x, out, 5, BLOCK=16)
    np.testing.assert_array_equal(out, np.concatenate([x, np.zeros(11, np.float32)]))


@tessera.jit(interpret=True)
def creation_kernel(out_ptr, v, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.zeros([BLOCK], dtype=tl.float32)
    b = tl.full([BLOCK], 2.5, tl.float32)
    c = tl.full([BLOCK], v, tl.int32)
    d = tl.zeros_like(c) + offs
    tl.store(out_ptr + offs, a + b * c + d)


def test_creation_ops():
    out = np.zeros(8, np.float32)
    creation_kernel[(1,)](out, 3, BLOCK=8)
    np.testing.assert_array_equal(out, 7.5 + np.arange(8))


# ------------------------------------------------------------------ reductions

@tessera.jit(interpret=True)
def reduce_kernel(x_ptr, out_ptr, KIND: tl.constexpr, AXIS: tl.constexpr, KEEP: tl.constexpr,
                  M: tl.constexpr, N_: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N_)
    x = tl.load(x_ptr + rows[:, None] * N_ + cols[None, :])
    if KIND == "sum":
        r = tl.sum(x, axis=AXIS, keep_dims=KEEP)
    elif KIND == "max":
        r = tl.max(x, axis=AXIS, keep_dims=KEEP)
    else:
        r = tl.min(x, axis=AXIS, keep_dims=KEEP)
    if AXIS == 0:
        if KEEP:
            tl.store(out_ptr + cols[None, :], r)
        else:
            tl.store(out_ptr + cols, r)
    elif AXIS == 1:
        if KEEP:
            tl.store(out_ptr + rows[:, None], r)
        else:
            tl.store(out_ptr + rows, r)
    else:
        tl.store(out_ptr, r)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int8, np.uint32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("axis,keep", [(0, False), (1, False), (0, True), (1, True), (None, False)],
                         ids=["axis0", "axis1", "axis0-keep", "axis1-keep", "all"])
def test_reductions(dtype, kind, axis, keep):
    M, N_ = 8, 16
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        x = np.random.default_rng(23).integers(max(info.min, -100), min(info.max, 100), (M, N_)).astype(dtype)
    else:
        x = np.random.default_rng(23).standard_normal((M, N_)).astype(dtype)
    # Sums of small ints are done in i32 (Triton's rule); results stored into a wide array.
    out_dtype = np.float64 if np.issubdtype(dtype, np.floating) else np.int64
    size = {0: N_, 1: M, None: 1}[axis]
    out = np.zeros(size, out_dtype)
    reduce_kernel[(1,)](x, out, KIND=kind, AXIS=axis, KEEP=keep, M=M, N_=N_)
    ref = {"sum": np.sum, "max": np.max, "min": np.min}[kind]
    want = ref(x.astype(np.float64 if out_dtype == np.float64 else np.int64), axis=axis)
    if kind == "sum" and np.issubdtype(dtype, np.floating):
        np.testing.assert_allclose(out, np.reshape(want, size), rtol=1e-2 if dtype == np.float16 else 1e-5,
                                   atol=1e-2 if dtype == np.float16 else 1e-5)
    else:
        np.testing.assert_array_equal(out, np.reshape(want, size))


def test_max_ignores_nan_like_maxnum():
    x = np.random.default_rng(24).standard_normal((8, 16)).astype(np.float32)
    x[0, 3] = np.nan
    x[2, :] = np.nan
    out = np.zeros(8, np.float64)
    reduce_kernel[(1,)](x, out, KIND="max", AXIS=1, KEEP=False, M=8, N_=16)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(out, np.fmax.reduce(x, axis=1))
    x[1, 5] = np.inf
    reduce_kernel[(1,)](x, out, KIND="min", AXIS=1, KEEP=False, M=8, N_=16)
    np.testing.assert_array_equal(out, np.fmin.reduce(x, axis=1))


def test_sum_of_int8_is_done_in_i32():
    x = np.full((8, 16), 100, np.int8)
    out = np.zeros(8, np.int64)
    reduce_kernel[(1,)](x, out, KIND="sum", AXIS=1, KEEP=False, M=8, N_=16)
    np.testing.assert_array_equal(out, np.full(8, 1600))


def test_float_sum_is_accurate():
    x = (np.random.default_rng(25).standard_normal((8, 16)) * 1e3).astype(np.float32)
    out = np.zeros(1, np.float64)
    reduce_kernel[(1,)](x, out, KIND="sum", AXIS=None, KEEP=False, M=8, N_=16)
    assert math.isclose(out[0], float(x.astype(np.float64).sum()), rel_tol=1e-5, abs_tol=1e-2)


@tessera.jit(interpret=True)
def bits_roundtrip_kernel(x_ptr, out_ptr, BF16: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    bits = tl.load(x_ptr + offs)
    if BF16:
        f = bits.to(tl.bfloat16, bitcast=True)
    else:
        f = bits.to(tl.float16, bitcast=True)
    tl.store(out_ptr + offs, f.to(tl.uint16, bitcast=True))


@pytest.mark.parametrize("bf16", [False, True], ids=["f16", "bf16"])
def test_every_16_bit_pattern_survives_bitcasts(bf16):
    x = np.arange(2**16, dtype=np.uint32).astype(np.uint16)  # NaN payloads and signs included
    out = np.zeros_like(x)
    bits_roundtrip_kernel[(64,)](x, out, BF16=bf16, BLOCK=1024)
    np.testing.assert_array_equal(out, x)


def test_f16_values_load_and_store_exactly():
    x = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    out = np.zeros_like(x)
    cast_kernel[(1,)](x, out, len(x), BLOCK=2**16)
    np.testing.assert_array_equal(out.view(np.uint16), x.view(np.uint16))
