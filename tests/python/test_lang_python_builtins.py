"""Python's builtins and tuples inside kernels, as Triton's code generator
defines them: min/max (constexprs fold; runtime values are a left fold of
tl.minimum/tl.maximum), getattr(tl, NAME), triton.cdiv / next_power_of_2 on
constexprs, and shape tuples (concatenation, repetition, comparison,
slicing, unpacking). Run by the host interpreter against numpy, and compiled
to PTX that ptxas accepts."""
import numpy as np
import pytest

import tessera
import tessera.language as tl
from lang_support import assemble
from tessera.language import constexpr_type

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


@tessera.jit(interpret=True)
def min_max_kernel(x_ptr, out_ptr, n, lo):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    a = max(x, lo)             # a block and a runtime scalar: tl.maximum
    b = min(x, 5.0, a + 1.0)   # three operands: a left fold
    c = min(n, 7)              # runtime scalar and a literal
    d: tl.constexpr = max(3, 9, 4)  # constexprs fold (a plain `d = ...` would be a scalar tensor)
    tl.static_assert(d == 9)
    tl.store(out_ptr + offs, a)
    tl.store(out_ptr + 16 + offs, b)
    tl.store(out_ptr + 32 + offs, tl.zeros([16], tl.float32) + c + d)


def test_min_max_on_runtime_values():
    x = np.linspace(-4, 8, 16).astype(np.float32)
    out = np.zeros(48, np.float32)
    min_max_kernel[(1,)](x, out, 12, 0.5)
    a = np.maximum(x, 0.5)
    np.testing.assert_array_equal(out[:16], a)
    np.testing.assert_array_equal(out[16:32], np.minimum(np.minimum(x, 5.0), a + 1.0))
    np.testing.assert_array_equal(out[32:], np.full(16, 7 + 9, np.float32))
    min_max_kernel[(1,)](x, out, 3, 0.5)
    np.testing.assert_array_equal(out[32:], np.full(16, 3 + 9, np.float32))


@tessera.jit(interpret=True)
def getattr_kernel(x_ptr, out_ptr, FN: tl.constexpr, DTYPE: tl.constexpr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    y = getattr(tl, FN)(x).to(getattr(tl, DTYPE))
    tl.static_assert(getattr(tl.int32, "fp_mantissa_width", None) is None)  # the default: no such attribute
    tl.static_assert(getattr(x.dtype, "fp_mantissa_width", None) == 23)
    tl.store(out_ptr + offs, y)


def test_getattr_with_a_constexpr_name():
    x = np.linspace(0, 3, 16).astype(np.float32)
    out = np.zeros(16, np.float32)
    getattr_kernel[(1,)](x, out, FN="exp", DTYPE="float32")
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-6)
    getattr_kernel[(1,)](x, out, FN="floor", DTYPE="int32")
    np.testing.assert_array_equal(out, np.floor(x))


@tessera.jit(interpret=True)
def cdiv_pow2_kernel(x_ptr, out_ptr, N: tl.constexpr):
    BLOCK: tl.constexpr = tessera.next_power_of_2(N)
    CHUNKS: tl.constexpr = tessera.cdiv(N, 4)
    tl.static_assert(tessera.next_power_of_2(1) == 1)
    tl.static_assert(tessera.next_power_of_2(0) == 0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < N)
    tl.store(out_ptr + offs, x + CHUNKS * 100 + BLOCK, mask=offs < N)


def test_cdiv_and_next_power_of_2_on_constexprs():
    x = np.arange(13, dtype=np.float32)
    out = np.zeros(13, np.float32)
    cdiv_pow2_kernel[(1,)](x, out, N=13)
    np.testing.assert_array_equal(out, x + 4 * 100 + 16)


@tessera.jit(interpret=True)
def tuple_kernel(x_ptr, out_ptr, RANK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 8)[:, None] * 4 + tl.arange(0, 4)[None, :])
    M, N = x.shape                       # unpacking
    ones = [1] * RANK                    # repetition
    tl.static_assert(len(ones) == RANK)
    tl.static_assert(x.shape == [8, 4])  # a list equals the tuple with the same elements
    tl.static_assert(x.shape != (8,))
    tl.static_assert(x.shape[0] == 8 and x.shape[-1] == 4)
    tl.static_assert(x.shape + (2,) == [8, 4, 2])
    tl.static_assert(x.shape[1:] == [4] and x.shape[::-1] == (4, 8) and x.shape[:-1] == (8,))
    tl.static_assert((1, 2) < (1, 3) and (1, 2) < (1, 2, 0) and not ((2,) <= (1, 9)))
    tl.static_assert([tl.float32, 2] == (tl.float32, 2))
    y = tl.reshape(x, [2] * 2 + [M * N // 4])
    tl.static_assert(y.shape == (2, 2, 8))
    tl.store(out_ptr + tl.arange(0, 32), tl.reshape(y, [M * N]) + len(x.shape) * 1000 + N)


def test_tuples_in_shape_code():
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    tuple_kernel[(1,)](x, out, RANK=3)
    np.testing.assert_array_equal(out, x + 2000 + 4)


@tessera.jit(interpret=True)
def hasattr_kernel(x):
    # test_core.py's test_short_circuiting: hasattr as on Triton's objects, and `and` stops at
    # the first constexpr False (x.dtype of a constexpr would be an error)
    if (x is not None) and hasattr(x, "dtype") and isinstance(
            x.dtype, tl.pointer_type) and (x.dtype.element_ty == tl.int32) and (tl.load(x) > 42):
        tl.store(x, 42)


@pytest.mark.parametrize("value, dtype, expected", [(37, np.float32, 37), (84, np.float32, 84),
                                                     (-76893, np.int32, -76893), (100000, np.int32, 42),
                                                     (100000, np.int64, 100000)])
def test_hasattr_short_circuit(value, dtype, expected):
    hasattr_kernel[(1,)](None)  # None and Python ints: constexprs, no dtype
    hasattr_kernel[(1,)](1)
    hasattr_kernel[(1,)](2)
    x = np.full(1, value, dtype)
    hasattr_kernel[(1,)](x)
    assert x[0] == expected


@tessera.jit(interpret=True)
def hasattr_table_kernel(x_ptr, out_ptr, C: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    flags = (hasattr(x, "dtype"), hasattr(x, "shape"), hasattr(x, "reshape"), hasattr(x, "value"),
             hasattr(C, "value"), hasattr(C, "type"), hasattr(C, "dtype"), hasattr(x.dtype, "primitive_bitwidth"),
             hasattr(x.dtype, "nope"), hasattr(x.shape, "nope"), hasattr(None, "dtype"))
    for i in tl.static_range(len(flags)):
        tl.store(out_ptr + i, flags[i])


def test_hasattr_table():
    out = np.zeros(11, np.int32)
    hasattr_table_kernel[(1,)](np.zeros(4, np.float32), out, 3)
    assert list(out) == [1, 1, 1, 0, 1, 1, 0, 1, 0, 0, 0]


@tessera.jit(interpret=True)
def tuple_constexpr_kernel(z_ptr, x_ptr, OUT_SHAPE: tl.constexpr, N: tl.constexpr):
    # test_core.py's test_reshape: a tuple constexpr as a shape; indexable, len()
    x = tl.load(x_ptr + tl.arange(0, N))
    z = tl.reshape(x, OUT_SHAPE)
    tl.static_assert(len(OUT_SHAPE) == 2 and z.shape[0] == OUT_SHAPE[0])
    rows = tl.arange(0, OUT_SHAPE[0])[:, None]
    cols = tl.arange(0, OUT_SHAPE[1])[None, :]
    tl.store(z_ptr + rows * OUT_SHAPE[1] + cols, z)


@pytest.mark.parametrize("shape", [(8, 8), [16, 4], (2, 32)])
def test_tuple_constexpr_shapes(shape):
    x = np.arange(64, dtype=np.int32)
    z = np.zeros(64, np.int32)
    tuple_constexpr_kernel[(1,)](z, x, shape, 64)
    np.testing.assert_array_equal(z, x)  # row-major reshape keeps the order


def test_tuple_constexpr_is_in_the_cache_key():
    ptx_a = tessera.compile(tuple_constexpr_kernel, signature="*i32,*i32", constexprs={"OUT_SHAPE": (8, 8), "N": 64},
                            target="sm_80").asm["ir"]
    ptx_b = tessera.compile(tuple_constexpr_kernel, signature="*i32,*i32", constexprs={"OUT_SHAPE": (16, 4), "N": 64},
                            target="sm_80").asm["ir"]
    assert "16x4" in ptx_b and "16x4" not in ptx_a
    # the launch cache: the second shape is a new specialisation, not the first's kernel
    x = np.arange(64, dtype=np.int32)
    for shape in [(8, 8), (16, 4), (8, 8)]:
        z = np.zeros(64, np.int32)
        tuple_constexpr_kernel[(1,)](z, x, shape, 64)
        np.testing.assert_array_equal(z, x)


def test_tuple_constexpr_bad_element():
    with pytest.raises(TypeError, match="constexpr 'OUT_SHAPE' has unsupported type 'object'"):
        tuple_constexpr_kernel[(1,)](np.zeros(64, np.int32), np.zeros(64, np.int32), (8, object()), 64)


def test_builtins_compile_to_ptx(tmp_path):
    # The same kernels through the GPU pipeline (tessera.compile needs no GPU).
    for fn, signature, constexprs in [
            (min_max_kernel, "*fp32:16,*fp32:16,i32,fp32", {}),
            (getattr_kernel, "*fp32:16,*fp32:16", {"FN": "exp", "DTYPE": "float16"}),
            (cdiv_pow2_kernel, "*fp32:16,*fp32:16", {"N": 13}),
            (tuple_kernel, "*fp32:16,*fp32:16", {"RANK": 2}),
            (tuple_constexpr_kernel, "*i32:16,*i32:16", {"OUT_SHAPE": (4, 16), "N": 64})]:
        ptx = tessera.compile(fn, signature=signature, constexprs=constexprs, target="sm_90a").asm["ptx"]
        assemble(ptx, "sm_90a", tmp_path)


@pytest.mark.parametrize("body, message", [
    ("y = getattr(tl, NAME)", "getattr()'s name must be a string, got 3"),
    ("y = min(x)", "min() takes two or more arguments"),
    ("y = [1, 2] * x", "unsupported operand types for *: a tuple of 2 and a block of type <16xf32>"),
    ("tl.static_assert(x.shape < (x, 2))", "tuples are compared at compile time, but element 0 is a runtime value"),
    ("y = hasattr(tl, 'dot')", "hasattr() on a module is not supported"),
    ("y = hasattr(x, NAME)", "hasattr()'s name must be a string, got 3"),
])
def test_errors(tmp_path, body, message):
    source = ("import tessera\nimport tessera.language as tl\n\n@tessera.jit\n"
              "def k(x_ptr, NAME: tl.constexpr):\n    x = tl.load(x_ptr + tl.arange(0, 16))\n"
              f"    {body}\n")
    path = tmp_path / "k.py"
    path.write_text(source)
    with pytest.raises(tessera.CompilationError) as info:
        tessera.compile(str(path), kernel="k", signature="*fp32", constexprs={"NAME": 3}, target="sm_90a")
    assert f"k.py:7:" in str(info.value) and message in str(info.value), str(info.value)


@pytest.mark.parametrize("text, shape", [("(16, 4)", "16x4"), ("[2,32]", "2x32"), ("(8,8)", "8x8")])
def test_tuple_constexpr_from_the_cli(text, shape):
    from lang_support import compile_kernel
    ir = compile_kernel("tuple_constexpr.py", "k", "*i32,*i32", {"OUT_SHAPE": text}, emit="ir")
    assert f"<{shape}xi32>" in ir


@tessera.jit(interpret=True)
def slice_kernel(out_ptr, XBLOCK: tl.constexpr):
    # test_core.py's test_slice: ':' spelled with None parts, and None indices, on blocks and scalars
    data = tl.arange(0, XBLOCK)
    tl.static_assert(data[None, :].shape == [1, XBLOCK])
    tl.static_assert(data[None, None:].shape == [1, XBLOCK])
    tl.static_assert(data[None, :None].shape == [1, XBLOCK])
    tl.static_assert(data[None, :, None].shape == [1, XBLOCK, 1])
    tl.static_assert(data[None, None:None, None].shape == [1, XBLOCK, 1])
    tl.static_assert(data[None, None:None:None, None].shape == [1, XBLOCK, 1])
    tl.static_assert(data[None, ::None, None].shape == [1, XBLOCK, 1])
    NOTHING: tl.constexpr = None
    t = data[NOTHING, NOTHING:NOTHING]  # constexpr Nones count as None
    tl.static_assert(t.shape == [1, XBLOCK])
    scalar = tl.full([], 1, tl.int32)
    tl.static_assert(scalar[None].shape == [1])
    tl.static_assert(scalar[None, None].shape == [1, 1])
    tl.store(out_ptr + tl.arange(0, XBLOCK)[None, :], t)


def test_slices_with_none_parts():
    out = np.zeros(32, np.int32)
    slice_kernel[(1,)](out, XBLOCK=32)
    np.testing.assert_array_equal(out, np.arange(32))


@tessera.jit(interpret=True)
def constexpr_type_kernel(out_ptr, C: tl.constexpr, SHAPE: tl.constexpr):
    # Triton's constexpr.type and triton.language.core.constexpr_type (test_constexpr_assignment)
    local: tl.constexpr = 10
    tl.static_assert(local.type == constexpr_type(10) and C.type == tl.core.constexpr_type(C))
    tl.static_assert(local.type != constexpr_type(11) and local.type != constexpr_type("10"))
    tl.static_assert(SHAPE.type == constexpr_type((4, 8)))
    n = C  # a plain assignment: a scalar tensor, whose .type is its dtype
    tl.static_assert(n.type == tl.int32)
    tl.store(out_ptr, n)


def test_constexpr_type():
    assert tl.constexpr(10).type == constexpr_type(10) and repr(constexpr_type(10)) == "constexpr_type[10]"
    out = np.zeros(1, np.int32)
    constexpr_type_kernel[(1,)](out, 7, (4, 8))
    assert out[0] == 7
    with pytest.raises(tessera.CompilationError, match="static_assert"):
        constexpr_type_kernel[(1,)](out, 7, (4, 9))
