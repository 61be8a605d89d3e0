"""triton.reinterpret (tessera.reinterpret): a tensor's memory read as another dtype. Interpreted, a
wrapped CPU tensor reports Triton's dtype name (fp8e5, bf16, fp8e4b15, ...), which interpret mode now reads;
AMD's fp8 types (fp8e4b8, fp8e5b16) are Triton's CompilationError "type
... not supported in this architecture" (Triton's test_conversions.py test_typeconvert_upcast), in
interpret mode and on the GPU launch path alike."""
import numpy as np
import pytest

import ml_dtypes

import tessera
import tessera.language as tl

pytestmark = pytest.mark.skipif(tessera._C is None, reason="tessera._C is not built")


class CpuTensor:
    """What the launch paths read from a torch CPU tensor, backed by a numpy array."""

    class Dtype:
        def __init__(self, name):
            self.name = name

        def __str__(self):
            return "torch." + self.name

    class Device:
        type = "cpu"

        def __str__(self):
            return "cpu"

    def __init__(self, array):
        self.array = array
        self.dtype = self.Dtype(array.dtype.name)
        self.device = self.Device()
        self.shape = array.shape

    def data_ptr(self):
        return self.array.__array_interface__["data"][0]

    def stride(self, *dim):
        strides = tuple(s // self.array.itemsize for s in self.array.strides)
        return strides[dim[0]] if dim else strides

    def element_size(self):
        return self.array.itemsize


@tessera.jit(interpret=True)
def widen_kernel(src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs).to(tl.float32))


@pytest.mark.parametrize("dtype, np_dtype", [(tl.float8e5, ml_dtypes.float8_e5m2),
                                             (tl.float8e4nv, ml_dtypes.float8_e4m3fn),
                                             (tl.bfloat16, ml_dtypes.bfloat16), (tl.float16, np.float16)])
def test_reinterpreted_cpu_tensor_in_interpret_mode(dtype, np_dtype):
    values = np.array([0.5, -1.0, 2.0, 3.0, -0.25, 4.0, 1.5, -6.0], np_dtype)
    storage = values.view({1: np.uint8, 2: np.uint16}[values.itemsize])
    out = np.zeros(8, np.float32)
    widen_kernel[(1,)](tessera.reinterpret(CpuTensor(storage), dtype), out, BLOCK=8)
    np.testing.assert_array_equal(out, values.astype(np.float32))


@pytest.mark.parametrize("dtype", [tl.float8e4b8, tl.float8e5b16])
def test_fp8_types_tessera_does_not_have_are_triton_compilation_errors(dtype):
    storage = np.zeros(8, np.uint8)
    with pytest.raises(tessera.CompilationError, match=f"type {dtype} not supported in this architecture"):
        widen_kernel[(1,)](tessera.reinterpret(CpuTensor(storage), dtype), np.zeros(8, np.float32), BLOCK=8)
