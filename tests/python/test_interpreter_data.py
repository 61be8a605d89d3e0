"""tl.sort, tl.gather, tl.histogram and int <-> pointer casts through the host interpreter,
against numpy (the kernels are tests/python/lang_kernels/data_ops.py, which test_lang_data.py
compiles for the GPU). tl.inline_asm_elementwise cannot run there: one clear error."""
import importlib.util
import pathlib

import numpy as np
import pytest

import tessera

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")

_spec = importlib.util.spec_from_file_location(
    "data_ops", pathlib.Path(__file__).parent / "lang_kernels" / "data_ops.py")
data_ops = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(data_ops)


def interpreted(kernel):
    kernel.interpret = True
    return kernel


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.float16, np.int64])
@pytest.mark.parametrize("m, n", [(1, 2), (4, 64), (8, 16), (2, 256)])
@pytest.mark.parametrize("descending", [0, 1])
def test_sort(dtype, m, n, descending):
    rs = np.random.RandomState(17)
    if np.issubdtype(dtype, np.floating):
        x = rs.randn(m, n).astype(dtype)
        x[0, 0] = x[-1, -1]  # a repeated value
    else:
        info = np.iinfo(dtype)
        x = rs.randint(max(info.min, -1000), min(info.max, 1000), size=(m, n)).astype(dtype)
    out = np.zeros_like(x)
    interpreted(data_ops.sort_kernel)[(1,)](x, out, M=m, N=n, DESCENDING=descending)
    ref = np.sort(x, axis=-1)
    np.testing.assert_array_equal(out, ref[:, ::-1] if descending else ref)


def test_sort_1d_with_dim_zero():
    x = np.random.RandomState(0).randint(-2**40, 2**40, size=256).astype(np.int64)
    out = np.zeros_like(x)
    interpreted(data_ops.sort_1d_kernel)[(1,)](x, out, N=256)
    np.testing.assert_array_equal(out, np.sort(x))


def test_sort_puts_infinities_at_the_ends():
    x = np.random.RandomState(1).randn(1, 32).astype(np.float32)
    x[0, 3], x[0, 7] = np.inf, -np.inf
    out = np.zeros_like(x)
    interpreted(data_ops.sort_kernel)[(1,)](x, out, M=1, N=32, DESCENDING=0)
    np.testing.assert_array_equal(out, np.sort(x))


@pytest.mark.parametrize("m, n, k, axis", [(16, 32, 8, 0), (32, 16, 64, 1), (4, 4, 4, 0), (8, 2, 16, 1)])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64, np.uint8])
def test_gather(m, n, k, axis, index_dtype):
    rs = np.random.RandomState(3)
    src = rs.randn(m, n).astype(np.float32)
    shape = (k, n) if axis == 0 else (m, k)
    idx = rs.randint(0, src.shape[axis], size=shape).astype(index_dtype)
    out = np.zeros(shape, np.float32)
    interpreted(data_ops.gather_kernel)[(1,)](src, idx, out, M=m, N=n, K=k, AXIS=axis)
    np.testing.assert_array_equal(out, np.take_along_axis(src, idx.astype(np.int64), axis=axis))


def test_gather_index_out_of_range_is_reported():
    src = np.zeros((4, 4), np.float32)
    idx = np.full((4, 4), 4, np.int32)
    with pytest.raises(tessera.InterpreterError, match="gather index 4 .* outside the source's axis 0 of size 4"):
        interpreted(data_ops.gather_kernel)[(1,)](src, idx, np.zeros((4, 4), np.float32), M=4, N=4, K=4, AXIS=0)


@pytest.mark.parametrize("m, n", [[2048, 2], [1024, 8], [1024, 128], [256, 512], [32, 512], [8, 512], [8, 2]])
def test_histogram(m, n):
    x = np.random.RandomState(17).randint(0, n, size=m).astype(np.int32)
    z = np.zeros(n, np.int32)
    interpreted(data_ops.histogram_kernel)[(1,)](x, z, M=m, N=n)
    np.testing.assert_array_equal(z, np.bincount(x, minlength=n))


def test_histogram_ignores_values_outside_the_bins():
    x = np.array([-1, 0, 1, 7, 8, 100, 3, 3], np.int64)
    z = np.zeros(8, np.int32)
    interpreted(data_ops.histogram_kernel)[(1,)](x, z, M=8, N=8)
    np.testing.assert_array_equal(z, [1, 1, 0, 2, 0, 0, 0, 1])


def test_histogram_of_bytes_with_more_bins_than_byte_values():
    x = np.arange(64, dtype=np.uint8) * 4
    z = np.zeros(512, np.int32)
    interpreted(data_ops.histogram_kernel)[(1,)](x, z, M=64, N=512)
    np.testing.assert_array_equal(z, np.bincount(x, minlength=512))


@pytest.mark.parametrize("m, n", [[2048, 2], [32, 512], [8, 2]])
def test_histogram_mask(m, n):
    x1 = np.random.RandomState(17).randint(0, n, size=m).astype(np.int32)
    x = np.concatenate([x1, np.full(m, n - 1, np.int32)])  # the masked-off half
    z = np.zeros(n, np.int32)
    interpreted(data_ops.histogram_mask_kernel)[(1,)](x, z, M=m, N=n)
    np.testing.assert_array_equal(z, np.bincount(x1, minlength=n))


def test_pointer_array():
    # The addresses of other arguments' rows, loaded as int64 and turned into pointers.
    n, groups = 64, 3
    data = np.random.RandomState(5).randn(groups, n).astype(np.float16)
    table = np.array([data[g].ctypes.data for g in range(groups)], np.int64)
    out = np.zeros((groups, n), np.float16)
    # `data` is passed too (unused by the kernel) so that the interpreter can check the loads.
    interpreted(data_ops.pointer_array_kernel)[(groups,)](table, out, data, N=n)
    np.testing.assert_array_equal(out, data + data)


def test_pointer_made_from_an_integer_outside_every_buffer_is_reported():
    n = 64
    data = np.zeros(n, np.float16)
    table = np.array([data.ctypes.data + 2 * n], np.int64)  # just past the end
    with pytest.raises(tessera.InterpreterError, match="inside no argument's buffer"):
        interpreted(data_ops.pointer_array_kernel)[(1,)](table, np.zeros(n, np.float16), data, N=n)


def test_inline_asm_is_an_interpreter_error():
    x = np.zeros(128, np.uint32)
    with pytest.raises(tessera.InterpreterError, match="inline_asm_elementwise cannot run in the interpreter"):
        interpreted(data_ops.asm_shift_kernel)[(1,)](x, x.copy(), x.copy(), n=17, BLOCK=128)
