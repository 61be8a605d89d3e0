"""Integer semantics against Triton's rules (semantic.py, core.py): the type and
signedness of every mixed-signedness binary op, arithmetic vs logical shifts,
Python literals next to blocks and in comparisons, exact constant folding
beyond 64 bits, and float atomic_max/min on -0.0 and NaN. The interpreter is
the executable reference; the PTX and CUDA tests check that both back-ends
emit the instructions of the same semantics."""
import re

import numpy as np
import pytest

import tessera
import tessera.language as tl
from lang_support import compile_kernel

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

N = 64
SIGNED = ["int8", "int16", "int32", "int64"]
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]


def bits(dtype):
    return np.dtype(dtype).itemsize * 8


def promoted(a, b):
    """semantic.py integer_promote_impl: C's usual arithmetic conversions."""
    sa, sb = a.startswith("int"), b.startswith("int")
    if sa == sb:
        return a if bits(a) >= bits(b) else b
    u, s = (b, a) if sa else (a, b)
    return u if bits(u) >= bits(s) else s


def values(dtype, rng, low=None, high=None):
    info = np.iinfo(dtype)
    low = info.min if low is None else low
    high = info.max if high is None else high
    return rng.integers(low, high, N, dtype=dtype, endpoint=True)


@tessera.jit(interpret=True)
def binary_kernel(x_ptr, y_ptr, z_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "+":
        z = x + y
    elif OP == "-":
        z = x - y
    elif OP == "*":
        z = x * y
    elif OP == "&":
        z = x & y
    elif OP == "|":
        z = x | y
    elif OP == "^":
        z = x ^ y
    elif OP == "<<":
        z = x << y
    elif OP == ">>":
        z = x >> y
    elif OP == "<":
        z = x < y
    elif OP == ">=":
        z = x >= y
    elif OP == "==":
        z = x == y
    elif OP == "min":
        z = tl.minimum(x, y)
    elif OP == "max":
        z = tl.maximum(x, y)
    elif OP == "where":
        z = tl.where(offs % 2 == 0, x, y)
    tl.store(z_ptr + offs, z)


MIXED = [(s, u) for s in SIGNED for u in UNSIGNED] + [(u, s) for s in SIGNED for u in UNSIGNED]


@pytest.mark.parametrize("op", ["+", "-", "*", "&", "|", "^", "<", ">=", "==", "min", "max", "where"])
@pytest.mark.parametrize("dx, dy", MIXED, ids=lambda d: d if isinstance(d, str) else None)
def test_mixed_signedness_binary_ops(dx, dy, op):
    """Both operands convert to the promoted type (test_core.py's
    _binary_op_dtype_override table) and the op runs with its signedness."""
    rng = np.random.default_rng(bits(dx) * 7 + bits(dy))
    x, y = values(dx, rng), values(dy, rng)
    z_type = promoted(dx, dy)
    xz, yz = x.astype(z_type), y.astype(z_type)
    want = {
        "+": lambda: xz + yz, "-": lambda: xz - yz, "*": lambda: xz * yz,
        "&": lambda: xz & yz, "|": lambda: xz | yz, "^": lambda: xz ^ yz,
        "<": lambda: xz < yz, ">=": lambda: xz >= yz, "==": lambda: xz == yz,
        "min": lambda: np.minimum(xz, yz), "max": lambda: np.maximum(xz, yz),
        "where": lambda: np.where(np.arange(N) % 2 == 0, xz, yz),
    }[op]()
    z = np.zeros(N, bool if want.dtype == bool else z_type)
    with np.errstate(over="ignore"):
        binary_kernel[(1,)](x, y, z, OP=op, BLOCK=N)
    assert z.dtype == want.dtype
    np.testing.assert_array_equal(z, want)


@pytest.mark.parametrize("op", [">>", "<<"])
@pytest.mark.parametrize("dx", SIGNED + UNSIGNED)
@pytest.mark.parametrize("dy", UNSIGNED)
def test_shift_by_unsigned(dx, dy, op):
    """test_core.py test_shift_op: the result has the promoted type's width and
    the shift is arithmetic exactly when x's own type is signed (core.py
    __rshift__), so int8 >> uint16 shifts the sign-extended bits arithmetically."""
    rng = np.random.default_rng(bits(dx) + bits(dy))
    bw = max(bits(dx), bits(dy))
    x, y = values(dx, rng), values(dy, rng, 0, bw - 1)
    z_type = f"int{bw}" if dx.startswith("int") else f"uint{bw}"
    want = (x.astype(z_type) >> y.astype(z_type)) if op == ">>" else (x.astype(z_type) << y.astype(z_type))
    z = np.zeros(N, z_type)
    binary_kernel[(1,)](x, y, z, OP=op, BLOCK=N)
    np.testing.assert_array_equal(z, want)


def test_int8_shifted_right_by_uint16_keeps_the_sign():
    x = np.full(N, -8, np.int8)
    y = np.ones(N, np.uint16)
    z = np.zeros(N, np.int16)
    binary_kernel[(1,)](x, y, z, OP=">>", BLOCK=N)
    assert (z == -4).all(), z[:4]


@tessera.jit(interpret=True)
def divide_kernel(x_ptr, y_ptr, z_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "//":
        z = x // y
    elif OP == "%":
        z = x % y
    else:
        z = x / y
    tl.store(z_ptr + offs, z)


@pytest.mark.parametrize("op", ["/", "//", "%"])
@pytest.mark.parametrize("dx, dy", [("int32", "uint32"), ("uint8", "int64"), ("int16", "uint8")])
def test_division_of_mixed_signedness_is_an_error(dx, dy, op):
    """semantic.py computation_type_impl: 'Cannot use /, #, or % with ... because
    they have different signedness'."""
    x, y = np.ones(N, dx), np.ones(N, dy)
    with pytest.raises(tessera.CompilationError, match="Cannot use .* because they have different signedness"):
        divide_kernel[(1,)](x, y, np.zeros(N, np.float32 if op == "/" else dx), OP=op, BLOCK=N)


@pytest.mark.parametrize("dtype", SIGNED + UNSIGNED)
def test_division_of_one_signedness_truncates(dtype):
    rng = np.random.default_rng(3)
    x, y = values(dtype, rng), values(dtype, rng, 1, 100)
    for op, want in (("//", np.fix(x / y).astype(dtype) if dtype.startswith("int") else x // y),
                     ("%", np.fmod(x, y))):
        z = np.zeros(N, dtype)
        divide_kernel[(1,)](x, y, z, OP=op, BLOCK=N)
        if dtype in ("int64", "uint64"):  # np.fix on float64 loses the low bits
            want = (x - np.fmod(x, y)) // y if op == "//" else want
        np.testing.assert_array_equal(z, want)


# ----------------------------------------------------------- Python literals

@tessera.jit(interpret=True)
def literal_kernel(x_ptr, z_ptr, CASE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if CASE == "lt300":
        z = x < 300
    elif CASE == "eq_minus_one":
        z = x == -1
    elif CASE == "lt_tenth":
        z = x < 0.1
    elif CASE == "bf16_ge_257":
        z = x.to(tl.bfloat16) >= 257
    elif CASE == "add_255":
        z = x + 255
    tl.store(z_ptr + offs, z)


def test_comparison_with_a_literal_outside_the_blocks_type():
    """core.py __lt__ turns 300 into an int32 value first: uint8 < 300 holds
    everywhere, and uint8 == -1 nowhere (not 255 == 255)."""
    x = np.arange(256 - N, 256, dtype=np.uint8)
    z = np.zeros(N, bool)
    literal_kernel[(1,)](x, z, CASE="lt300", BLOCK=N)
    assert z.all()
    literal_kernel[(1,)](x, z, CASE="eq_minus_one", BLOCK=N)
    assert not z.any()


def test_comparison_of_halves_with_a_float_literal_is_in_float32():
    """0.1 is an f32 value (to_tensor), and f16 < f32 compares in f32: the f16
    nearest 0.1 (0.0999755859375) is below it."""
    x = np.full(N, 0.1, np.float16)
    z = np.zeros(N, bool)
    literal_kernel[(1,)](x, z, CASE="lt_tenth", BLOCK=N)
    assert z.all()


def test_bfloat16_compared_with_an_int_literal_is_in_float32():
    """bf16 with int32 promotes to f32 (computation_type_impl): 256 >= 257 is
    false, though 257 rounds to 256 in bf16."""
    x = np.full(N, 256.0, np.float32)
    z = np.ones(N, bool)
    literal_kernel[(1,)](x, z, CASE="bf16_ge_257", BLOCK=N)
    assert not z.any()


def test_literal_in_arithmetic_takes_the_blocks_type():
    x = np.full(N, 7, np.uint8)
    z = np.zeros(N, np.uint8)
    literal_kernel[(1,)](x, z, CASE="add_255", BLOCK=N)
    assert (z == 6).all()  # uint8 arithmetic wraps, as in Triton


@pytest.mark.parametrize("dtype, literal, message", [
    ("int32", "0xFFFFFFFFFFFFFF", "the constant 72057594037927935 is out of range for type i32"),
    ("int8", "128", "the constant 128 is out of range for type i8"),
    ("uint16", "-1", "cannot combine the negative constant -1 with a value of unsigned type u16"),
])
def test_literal_out_of_the_blocks_range_is_an_error(tmp_path, dtype, literal, message):
    """test_core.py test_scalar_overflow: 'Scalar ... is out of range for type'."""
    src = tmp_path / "k.py"
    src.write_text(
        "import tessera\nimport tessera.language as tl\n\n"
        "@tessera.jit\n"
        "def k(x_ptr):\n"
        "    x = tl.load(x_ptr)\n"
        f"    tl.store(x_ptr, x + {literal})\n")
    sig = {"int32": "*i32", "int8": "*i8", "uint16": "*u16"}[dtype]
    from conftest import run_cli
    proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", sig, "--emit", "ir"])
    assert proc.returncode == 1
    assert f"k.py:7:21: error: {message}" in proc.stderr, proc.stderr


# ---------------------------------------------------------- constant folding

@tessera.jit(interpret=True)
def constant_kernel(z_ptr, CASE: tl.constexpr):
    if CASE == "pow_floordiv":
        v = 2**100 // 2**90
    elif CASE == "big_quotient":
        v = 10**30 // 10**29
    elif CASE == "big_difference":
        v = (2**64 + 5) - 2**64
    elif CASE == "big_shift":
        v = (1 << 100) >> 98
    elif CASE == "big_compare":
        v = (2**63 + 1 > 2**63) * 1
    elif CASE == "uint64_max":
        v = 2**64 - 1
    tl.store(z_ptr, v)


@pytest.mark.parametrize("case, want", [("pow_floordiv", 1024), ("big_quotient", 10), ("big_difference", 5),
                                        ("big_shift", 4), ("big_compare", 1)])
def test_constant_folding_is_exact_beyond_64_bits(case, want):
    z = np.zeros(1, np.int64)
    constant_kernel[(1,)](z, CASE=case)
    assert z[0] == want


def test_a_literal_in_the_uint64_range_is_uint64():
    z = np.zeros(1, np.uint64)
    constant_kernel[(1,)](z, CASE="uint64_max")
    assert z[0] == np.iinfo(np.uint64).max


@pytest.mark.parametrize("literal, ty", [("5", "i32"), ("3000000000", "u32"), ("2**40", "i64"), ("2**63", "u64"),
                                         ("-2**63", "i64"), ("1e+50", "f64"), ("1e+10", "f32"), ("0.0", "f32")])
def test_literal_types_follow_to_tensor(tmp_path, literal, ty):
    """semantic.py to_tensor (test_core.py test_constexpr): ints take i32, u32,
    i64, u64 by range; floats are f32 unless only f64 holds them."""
    src = tmp_path / "k.py"
    src.write_text(
        "import tessera\nimport tessera.language as tl\n\n"
        "@tessera.jit\n"
        "def k(out_ptr):\n"
        f"    v = tl.where(tl.program_id(0) == 0, {literal}, {literal})\n"
        "    tl.store(out_ptr, v.to(tl.float64))\n")
    from conftest import run_cli
    proc = run_cli(["compile", str(src), "--kernel", "k", "--signature", "*fp64", "--emit", "ir"])
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"select .*: " + ty + r"\b", proc.stdout), proc.stdout


def test_pid_axis_outside_0_to_2_is_an_error():
    @tessera.jit(interpret=True)
    def k(dst):
        pid = tl.program_id(20)
        tl.store(dst + pid, 1.0)

    with pytest.raises(tessera.CompilationError, match="program_id axis must be 0, 1, or 2 but got 20"):
        k[(1,)](np.zeros(4, np.float32))


# ------------------------------------------------------- float atomic min/max

@tessera.jit(interpret=True)
def atomic_kernel(inp, out_max, out_min):
    idx = tl.program_id(0)
    x = tl.load(inp + idx)
    tl.atomic_max(out_max + idx, x)
    tl.atomic_min(out_min + idx, x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_atomic_min_max_of_negative_zero(dtype):
    """test_core.py test_atomic_min_max_neg_zero: -0.0 has the sign bit set, so
    it goes to the unsigned side of the sign-bit trick, and is stored."""
    info = np.finfo(dtype)
    inp = np.array([-0.0, -0.0, 0.0], dtype)
    out_max = np.array([info.min, 0.0, -0.0], dtype)
    out_min = np.array([info.max, 0.0, -0.0], dtype)
    atomic_kernel[(3,)](inp, out_max, out_min)
    assert np.signbit(out_max[0]) and out_max[0] == 0
    assert np.signbit(out_min[0]) and out_min[0] == 0
    assert not np.signbit(out_max[1]) and np.signbit(out_min[1])  # max(+0, -0) = +0, min = -0
    assert not np.signbit(out_max[2]) and np.signbit(out_min[2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_atomic_min_max_with_nan_follow_the_bits(dtype):
    """A NaN is ordered by its bits like any value (Triton lowers float
    atomic_max/min to integer atomics): +NaN is above +inf, -NaN below -inf."""
    nan = np.array([np.nan], dtype)
    neg_nan = -nan
    inp = np.concatenate([nan, neg_nan])
    out_max = np.array([1.0, 1.0], dtype)
    out_min = np.array([1.0, 1.0], dtype)
    atomic_kernel[(2,)](inp, out_max, out_min)
    assert np.isnan(out_max[0]) and out_max[1] == 1.0
    assert out_min[0] == 1.0 and np.isnan(out_min[1])


# ------------------------------------------------------- through the back-ends

BACKENDS = ["llvm", "nvrtc"]


def emitted(kernel, signature, emit, backend):
    return compile_kernel("integer_ops.py", kernel, signature, {"BLOCK": 128}, emit=emit,
                          extra=["--backend", backend])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("signature, shift", [("*i8,*u16,*i16", r"shr\.s(16|32)"),
                                              ("*i32,*u32,*i32", r"shr\.s32"),
                                              ("*u32,*i64,*i64", r"shr\.(s|u)64"),
                                              ("*u8,*u16,*u16", r"shr\.u(16|32)")])
def test_shift_instruction_follows_the_left_operands_type(backend, signature, shift):
    ptx = emitted("shift_right", signature, "ptx", backend)
    assert re.search(shift, ptx), ptx
    if signature.startswith("*i"):
        assert not re.search(r"shr\.u", ptx)


def test_cuda_source_shifts_the_signed_bits():
    cuda = emitted("shift_right", "*i8,*u16,*i16", "cuda", "nvrtc")
    assert re.search(r"\(short\)\w+ >> ", cuda), cuda


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("signature, bits", [("*fp32,*fp32,*fp32", "32"), ("*fp64,*fp64,*fp64", "64")])
def test_float_atomic_max_min_split_on_the_sign_bit(backend, signature, bits):
    """The split is an integer test of the bits (the sign bit), never a float
    comparison with 0.0, which sends -0.0 to the wrong side and NaN to neither."""
    ptx = emitted("atomic_float_max_min", signature, "ptx", backend)
    assert not re.search(r"setp\.\w+\.f" + bits, ptx), "a float comparison decides the side"
    for op in ("max.s", "min.u", "min.s", "max.u"):
        assert re.search(r"atom\.\w+\.gpu\.global\." + op.replace(".", r"\.") + bits, ptx), op


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("signature, suffix", [("*i32,*u32,*i1,*u32,*u32", "u32"),
                                               ("*i8,*u16,*i1,*u16,*u16", "u16"),
                                               ("*u8,*i32,*i1,*i32,*i32", "s32"),
                                               ("*i64,*u32,*i1,*i64,*i64", "s64")])
def test_comparison_and_max_use_the_promoted_signedness(backend, signature, suffix):
    ptx = emitted("compare_min_max", signature, "ptx", backend)
    assert re.search(r"setp\.(lt|gt)\." + suffix, ptx), ptx
    assert re.search(r"max\." + suffix, ptx), ptx
    other = ("s" if suffix[0] == "u" else "u") + suffix[1:]
    assert not re.search(r"(setp\.\w+|max|min)\." + other, ptx), ptx


@tessera.jit(interpret=True)
def constexpr_kernel(z_ptr, BIG: tl.constexpr, SHIFT: tl.constexpr):
    tl.store(z_ptr, BIG >> SHIFT)


def test_constexprs_from_python_beyond_64_bits():
    """Python passes unbounded ints; the launcher keeps 128 bits of them."""
    z = np.zeros(1, np.uint64)
    constexpr_kernel[(1,)](z, BIG=2**100 + 2**64 - 1, SHIFT=40)
    assert z[0] == (2**100 + 2**64 - 1) >> 40
    constexpr_kernel[(1,)](z, BIG=2**64 - 1, SHIFT=0)
    assert z[0] == 2**64 - 1
    with pytest.raises(ValueError, match="does not fit in 128 bits"):
        constexpr_kernel[(1,)](z, BIG=2**200, SHIFT=0)
