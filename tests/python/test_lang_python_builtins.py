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


def test_builtins_compile_to_ptx(tmp_path):
    # The same kernels through the GPU pipeline (tessera.compile needs no GPU).
    for fn, signature, constexprs in [
            (min_max_kernel, "*fp32:16,*fp32:16,i32,fp32", {}),
            (getattr_kernel, "*fp32:16,*fp32:16", {"FN": "exp", "DTYPE": "float16"}),
            (cdiv_pow2_kernel, "*fp32:16,*fp32:16", {"N": 13}),
            (tuple_kernel, "*fp32:16,*fp32:16", {"RANK": 2})]:
        ptx = tessera.compile(fn, signature=signature, constexprs=constexprs, target="sm_90a").asm["ptx"]
        assemble(ptx, "sm_90a", tmp_path)


@pytest.mark.parametrize("body, message", [
    ("y = getattr(tl, NAME)", "getattr()'s name must be a string, got 3"),
    ("y = min(x)", "min() takes two or more arguments"),
    ("y = [1, 2] * x", "unsupported operand types for *: a tuple of 2 and a block of type <16xf32>"),
    ("tl.static_assert(x.shape < (x, 2))", "tuples are compared at compile time, but element 0 is a runtime value"),
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
