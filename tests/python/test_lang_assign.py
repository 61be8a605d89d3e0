"""Triton's assignment rule (code_generator.py visit_Assign / _sanitize_value):
a plain `x = <number>` in a kernel makes x a scalar tensor of the number's
to_tensor type (ints by range int32/uint32/int64/uint64, floats fp32 or fp64,
bools int1); `x: tl.constexpr = ...` keeps a compile-time constant. The
interpreter runs the kernels; the PTX tests check both back-ends; the error
for a scalar tensor where a constexpr is needed is in tests/errors."""
import math

import numpy as np
import pytest

import tessera
import tessera.language as tl
from lang_support import ARCHS, assemble, compile_error, compile_kernel

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

N = 64


# ------------------------------------------------------------ the types (to_tensor)

@tessera.jit(interpret=True)
def store_assigned(out_ptr, VALUE: tl.constexpr, WANT: tl.constexpr):
    value = VALUE
    tl.static_assert(value.dtype == WANT)
    tl.store(out_ptr.to(tl.pointer_type(value.dtype)), value)


@pytest.mark.parametrize("value, want, np_dtype", [
    (5, tl.int32, np.int32), (-2**31, tl.int32, np.int32), (2**31, tl.uint32, np.uint32),
    (2**40, tl.int64, np.int64), (2**63, tl.uint64, np.uint64), (True, tl.int1, np.bool_),
    (1.0, tl.float32, np.float32), (0.0, tl.float32, np.float32), (float("inf"), tl.float32, np.float32),
    (1e+50, tl.float64, np.float64), (1e-50, tl.float64, np.float64)])
def test_assigned_number_takes_its_to_tensor_type(value, want, np_dtype):
    out = np.zeros(1, np_dtype)
    store_assigned[(1,)](out, VALUE=value, WANT=want)
    assert out[0] == np_dtype(value)


# Triton's test_constexpr: `val = 1e+50; val.dtype` is fp64.
@tessera.jit(interpret=True)
def store_big_float(out_ptr):
    val = 1e+50
    tl.store(out_ptr.to(tl.pointer_type(val.dtype)), val)


def test_big_float_is_fp64():
    out = np.zeros(1, np.float64)
    store_big_float[(1,)](out)
    assert out[0] == 1e+50


# ------------------------------------------------------------ tensor methods on a name

# Triton's test_for_iv.
@tessera.jit(interpret=True)
def sum_range_int64(out_ptr, lo, hi, IV: tl.constexpr):
    acc = 0
    acc = acc.to(tl.int64)
    for i in range(lo, hi, IV):
        acc += i
    tl.store(out_ptr, acc)


@pytest.mark.parametrize("iv", [1, 2, 3])
def test_for_iv(iv):
    lo, hi = 2**35, 2**35 + 20
    out = np.zeros(1, np.int64)
    sum_range_int64[(1,)](out, lo, hi, IV=iv)
    assert out[0] == sum(range(lo, hi, iv))


# Triton's test_store_constant: `value.dtype`, and `mask = False` a scalar int1 mask.
@tessera.jit(interpret=True)
def store_constant(out_ptr, n, BLOCK: tl.constexpr, FIELD: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if FIELD == "value":
        value = 1
        output = tl.full([BLOCK], value=value, dtype=value.dtype)
        mask = offs < n
    else:
        output = offs < n
        mask = False
    tl.store(out_ptr + offs, output, mask=mask)


@pytest.mark.parametrize("field", ["value", "mask"])
def test_store_constant(field):
    out = np.zeros(N, np.int32)
    store_constant[(1,)](out, N, BLOCK=N, FIELD=field)
    np.testing.assert_array_equal(out, np.ones(N, np.int32) if field == "value" else np.zeros(N, np.int32))


# ------------------------------------------------------------ promotion

@tessera.jit(interpret=True)
def scale_int8(x_ptr, y_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    a = 100
    y = x * a                   # int8 block x int32 scalar tensor: int32
    tl.static_assert(y.dtype == tl.int32)
    tl.store(y_ptr + offs, y)
    b: tl.constexpr = 100
    z = x * b                   # a constexpr is a weak literal: int8, wraps
    tl.static_assert(z.dtype == tl.int8)
    tl.store(z_ptr + offs, z)


def test_assigned_int_promotes_an_int8_block():
    x = np.arange(-N // 2, N // 2, dtype=np.int8)
    y = np.zeros(N, np.int32)
    z = np.zeros(N, np.int8)
    scale_int8[(1,)](x, y, z, BLOCK=N)
    np.testing.assert_array_equal(y, x.astype(np.int32) * 100)
    np.testing.assert_array_equal(z, (x.astype(np.int32) * 100).astype(np.int8))
    assert (y != z).any()


@tessera.jit(interpret=True)
def scale_fp16(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    s = 0.5
    y = tl.load(x_ptr + offs) * s   # fp16 block x fp32 scalar tensor: fp32 (as in Triton)
    tl.static_assert(y.dtype == tl.float32)
    tl.store(y_ptr + offs, y)


def test_assigned_float_promotes_an_fp16_block():
    x = np.linspace(-4, 4, N).astype(np.float16)
    y = np.zeros(N, np.float32)
    scale_fp16[(1,)](x, y, BLOCK=N)
    np.testing.assert_array_equal(y, x.astype(np.float32) * 0.5)


# ------------------------------------------------------------ loop-carried values

@tessera.jit(interpret=True)
def sum_rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = 0.0                   # an fp32 scalar tensor carried by the loop
    for i in range(0, n):
        acc += tl.sum(tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK)), axis=0)
    tl.static_assert(acc.dtype == tl.float32)
    tl.store(out_ptr, acc)


def test_loop_carried_float_accumulator():
    x = np.arange(4 * N, dtype=np.float32)
    out = np.zeros(1, np.float32)
    sum_rows[(1,)](x, out, 4, BLOCK=N)
    assert out[0] == x.sum()


# ------------------------------------------------------------ PTX

def test_ptx_assigned_int_widens_int8(tmp_path):
    for arch in ARCHS:
        for backend in ["llvm", "nvrtc"]:
            ptx = compile_kernel("assign.py", "scale_by_assigned", "*i8,*i32", {"BLOCK": 128}, arch=arch,
                                 extra=["--backend", backend])
            assemble(ptx, arch, tmp_path)
            assert "st.global.b32" in ptx or "st.global.v4.b32" in ptx or "st.global.u32" in ptx or \
                "st.global.v4.u32" in ptx, ptx
            assert "mul.lo.s16" not in ptx


def test_ptx_constexpr_annotation_keeps_a_literal(tmp_path):
    for arch in ARCHS:
        ptx = compile_kernel("assign.py", "scale_by_constexpr", "*i8,*i8", {"BLOCK": 128}, arch=arch)
        assemble(ptx, arch, tmp_path)


def test_ptx_for_iv(tmp_path):
    for arch in ARCHS:
        ptx = compile_kernel("assign.py", "sum_range_int64", "*i64", {"LO": 0, "HI": 100, "STEP": 3}, arch=arch)
        assemble(ptx, arch, tmp_path)


# ------------------------------------------------------------ what must stay constexpr

def test_arange_of_an_assigned_number_is_an_error():
    err = compile_error("assign.py", "arange_of_assigned", "*fp32")
    assert "'B' is a scalar tensor" in err and "B: tl.constexpr = 128" in err, err


def test_constexpr_annotation_of_a_tensor_is_an_error():
    err = compile_error("assign.py", "constexpr_of_tensor", "*fp32")
    assert "annotated tl.constexpr needs a compile-time value" in err, err
