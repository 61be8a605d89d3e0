"""Errors the host interpreter reports and the GPU cannot: out-of-bounds,
misaligned and read-only accesses, with the kernel's source line, the
element, the argument and the program; plus argument errors of interpret
mode."""
import re

import numpy as np
import pytest

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


@tessera.jit(interpret=True)
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x, mask=offs < n)


@tessera.jit(interpret=True)
def store_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs.to(tl.float32))


@tessera.jit(interpret=True)
def scalar_load_kernel(x_ptr, out_ptr, i):
    tl.store(out_ptr, tl.load(x_ptr + i))


def line_of(fn, text):
    """(line, col) of `text` in the source of fn, as the diagnostics count them."""
    import inspect
    lines, first = inspect.getsourcelines(fn.fn)
    for k, line in enumerate(lines):
        if text in line:
            return first + k, line
    raise AssertionError(text)


def test_out_of_bounds_load_message():
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(32, np.float32)
    with pytest.raises(tessera.CompilationError) as info:
        copy_kernel[(2,)](x, out, 16, BLOCK=16)
    e = info.value
    line, text = line_of(copy_kernel, "x = tl.load(x_ptr + offs)")
    col = len(text) - len(text.lstrip()) + 1
    assert type(e).__name__ == "InterpreterError" and isinstance(e, tessera._C.InterpreterError)
    assert str(e) == (
        f"{__file__}:{line}:{col}: error: out-of-bounds load: element 0 of the block reads bytes [64, 68) of "
        "argument 'x_ptr', a float32 array of shape (16,) (64 bytes) (program (1, 0, 0); 16 of the block's 16 "
        "elements are out of bounds)\n"
        f"{text.rstrip()}\n" + " " * (col - 1) + "^")
    assert (e.path, e.line, e.col) == (__file__, line, col)
    # Program 0 ran before the error and stored its half.
    np.testing.assert_array_equal(out[:16], x)


def test_masked_elements_are_not_checked():
    x = np.arange(20, dtype=np.float32)
    out = np.zeros(20, np.float32)
    with pytest.raises(tessera.CompilationError, match=r"element 4 of the block reads bytes \[80, 84\)"):
        copy_kernel[(2,)](x, out, 20, BLOCK=16)  # the load is unmasked: 12 elements past the end
    with pytest.raises(tessera.CompilationError, match=r"12 of the block's 16 elements are out of bounds"):
        copy_kernel[(2,)](x, out, 20, BLOCK=16)


def test_out_of_bounds_store_and_before_the_start():
    out = np.zeros(10, np.float32)
    with pytest.raises(tessera.CompilationError,
                       match=r"out-of-bounds store: element 10 of the block writes bytes \[40, 44\) of argument "
                             r"'out_ptr', a float32 array of shape \(10,\) \(40 bytes\) \(program \(0, 0, 0\); 6 of"):
        store_kernel[(1,)](out, 10, BLOCK=16)
    x = np.arange(4, dtype=np.int64)
    o = np.zeros(1, np.int64)
    with pytest.raises(tessera.CompilationError,
                       match=r"out-of-bounds load: the load reads bytes \[-8, 0\) of argument 'x_ptr'"):
        scalar_load_kernel[(1,)](x, o, -1)
    scalar_load_kernel[(1,)](x, o, 3)
    assert o[0] == 3


def test_reading_a_neighbouring_array_is_still_out_of_bounds():
    """Two views of one buffer: running past the first one lands in the second, which
    the GPU would silently read; the interpreter knows which argument the pointer
    came from."""
    big = np.arange(32, dtype=np.float32)
    a, b = big[:16], big[16:]
    with pytest.raises(tessera.CompilationError, match=r"argument 'x_ptr', a float32 array of shape \(16,\)"):
        copy_kernel[(2,)](a, b, 16, BLOCK=16)


def test_strided_views_allow_exactly_their_elements():
    @tessera.jit(interpret=True)
    def column(x_ptr, out_ptr, stride, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride, mask=offs < n), mask=offs < n)

    m = np.arange(40, dtype=np.float32).reshape(8, 5)
    col = m[:, 2]
    out = np.zeros(8, np.float32)
    column[(1,)](col, out, 5, 8, BLOCK=8)
    np.testing.assert_array_equal(out, col)
    with pytest.raises(tessera.CompilationError, match=r"element 8 of the block reads bytes \[160, 164\)"):
        column[(1,)](col, out, 5, 9, BLOCK=16)  # row 8 does not exist
    rev = np.arange(8, dtype=np.float32)[::-1]
    column[(1,)](rev, out, -1, 8, BLOCK=8)
    np.testing.assert_array_equal(out, rev)
    with pytest.raises(tessera.CompilationError,
                       match=r"reads bytes \[4, 8\) of argument 'x_ptr', a float32 array of shape \(8,\) "
                             r"\(32 bytes at byte offsets \[-28, 4\)\)"):
        column[(1,)](rev, out, 1, 2, BLOCK=2)


def test_store_to_read_only_array():
    out = np.zeros(16, np.float32)
    out.flags.writeable = False
    with pytest.raises(tessera.CompilationError,
                       match=r"store to read-only memory: element 0 of the block writes bytes \[0, 4\) of "
                             r"argument 'out_ptr', .* which is not writable"):
        store_kernel[(1,)](out, 16, BLOCK=16)


def test_misaligned_access():
    raw = np.zeros(80, np.uint8)
    x = np.frombuffer(raw.data, dtype=np.float32, count=16, offset=1)  # 1 byte off
    out = np.zeros(16, np.float32)
    with pytest.raises(tessera.CompilationError, match=r"misaligned load: element 0 of the block .* not a multiple "
                                                       r"of 4 bytes"):
        copy_kernel[(1,)](x, out, 16, BLOCK=16)


def test_interpret_mode_rejects_device_memory():
    class CudaArray:
        __cuda_array_interface__ = {"data": (0x7F0000000000, False), "typestr": "<f4", "shape": (4,),
                                    "strides": None, "version": 3}

    out = np.zeros(16, np.float32)
    with pytest.raises(TypeError, match="argument 'x_ptr' is device memory .* interpret mode runs on the host"):
        copy_kernel[(1,)](CudaArray(), out, 4, BLOCK=16)


def test_unsupported_dtype_and_missing_arguments():
    out = np.zeros(16, np.complex64)
    with pytest.raises(TypeError, match="argument 'out_ptr' has dtype complex64"):
        store_kernel[(1,)](out, 16, BLOCK=16)
    with pytest.raises(TypeError, match="missing a value for constexpr parameter 'BLOCK'"):
        store_kernel[(1,)](np.zeros(4, np.float32), 4)
    with pytest.raises(TypeError, match="missing argument 'n'"):
        store_kernel[(1,)](np.zeros(4, np.float32), BLOCK=4)


def test_compile_errors_still_name_the_source():
    @tessera.jit(interpret=True)
    def bad(x_ptr):
        tl.store(x_ptr, undefined_name)  # noqa: F821

    with pytest.raises(tessera.CompilationError, match=re.escape("name 'undefined_name' is not defined")):
        bad[(1,)](np.zeros(1, np.float32))



def test_a_loop_whose_runtime_step_is_not_positive_is_an_error():
    @tessera.jit(interpret=True)
    def loop(out_ptr, n, step):
        total = 0
        for i in range(0, n, step):
            total += i
        tl.store(out_ptr, total)

    out = np.zeros(1, np.int32)
    loop[(1,)](out, 10, 3)
    assert out[0] == 0 + 3 + 6 + 9
    loop[(1,)](out, 0, 0)  # never runs: fine
    with pytest.raises(tessera.CompilationError, match=r"the loop's step is 0 at run time \(program \(0, 0, 0\)\)"):
        loop[(1,)](out, 10, 0)
    with pytest.raises(tessera.CompilationError, match=r"the loop's step is -2 at run time"):
        loop[(1,)](out, 10, -2)
