"""Launch-path argument handling without torch or a GPU: binding, Triton's
specialisation rules (computed in C++), the errors users meet, and the clear
no-driver error. Device memory is faked with objects exposing
__cuda_array_interface__, torch-like tensors and DLPack capsules."""
import ctypes
import sys

import pytest

from conftest import PTXAS, ROOT

sys.path.insert(0, str(ROOT))

import tessera  # noqa: E402
import tessera.language as tl  # noqa: E402
from kernels.vector_add import add_kernel  # noqa: E402

needs_no_driver = pytest.mark.skipif(tessera.driver_available(),
                                     reason="a CUDA driver is present: fake pointers must not be launched")


@pytest.fixture(scope="module", autouse=True)
def extension():
    if tessera._C is None:
        from tessera._loader import missing_message
        pytest.fail(missing_message(tessera._C_error))


# ------------------------------------------------------------------ fakes

class CudaArray:
    """Device memory as CuPy/Numba describe it."""

    def __init__(self, ptr, typestr="<f4", shape=(1024,)):
        self.__cuda_array_interface__ = {"data": (ptr, False), "typestr": typestr, "shape": shape,
                                         "strides": None, "version": 3}


class FakeDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


class FakeDevice:
    def __init__(self, type, index=None):
        self.type = type
        self.index = index


class FakeTensor:
    """Looks like a torch tensor to tessera (data_ptr(), dtype, device)."""
    _dtypes = {}

    def __init__(self, ptr, dtype="float32", device="cuda", index=0):
        self._ptr = ptr
        self.dtype = FakeTensor._dtypes.setdefault(dtype, FakeDtype(dtype))
        self.device = FakeDevice(device, index if device == "cuda" else None)

    def data_ptr(self):
        return self._ptr


# DLPack: a capsule holding a DLManagedTensor that describes CUDA memory.
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackArray:
    def __init__(self, ptr, code=2, bits=32, device_type=2, device_id=0, byte_offset=0):
        self._shape = (ctypes.c_int64 * 1)(256)
        self._managed = DLManagedTensor()
        t = self._managed.dl_tensor
        t.data, t.device, t.ndim = ptr, DLDevice(device_type, device_id), 1
        t.dtype, t.shape, t.byte_offset = DLDataType(code, bits, 1), self._shape, byte_offset
        self._device = (device_type, device_id)
        self.calls = []

    def __dlpack_device__(self):
        return self._device

    def __dlpack__(self, stream=None):
        self.calls.append(stream)
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self._managed), b"dltensor", None)


X, Y, OUT = 0x7f0000000000, 0x7f0000100000, 0x7f0000200000


def spec(*args, **kwargs):
    return add_kernel.specialization(*args, **kwargs)


# --------------------------------------------------------- specialisation

def test_pointers_ints_and_constexprs_specialise_like_triton():
    sig, constexprs, options, device = spec(CudaArray(X), CudaArray(Y), CudaArray(OUT), 4096, BLOCK_SIZE=1024)
    assert sig == "*fp32:16,*fp32:16,*fp32:16,i32:16"
    assert constexprs == {"BLOCK_SIZE": 1024}
    assert options == {"num_warps": 4, "num_stages": 3}
    assert device is None  # __cuda_array_interface__ does not say: the current device
    assert spec(CudaArray(X + 4), CudaArray(Y), CudaArray(OUT), 1, BLOCK_SIZE=64)[0] == "*fp32,*fp32:16,*fp32:16,i32:1"
    assert spec(CudaArray(X), CudaArray(Y), CudaArray(OUT), 17, BLOCK_SIZE=64)[0].endswith(",i32")
    assert spec(CudaArray(X), CudaArray(Y), CudaArray(OUT), -32, BLOCK_SIZE=64)[0].endswith(",i32:16")
    assert spec(CudaArray(X), CudaArray(Y), CudaArray(OUT), 2**31, BLOCK_SIZE=64)[0].endswith(",i64:16")
    assert spec(CudaArray(X), CudaArray(Y), CudaArray(OUT), -2**31 - 1, BLOCK_SIZE=64)[0].endswith(",i64")
    assert spec(CudaArray(X), CudaArray(Y), CudaArray(OUT), 2**63 + 1, BLOCK_SIZE=64)[0].endswith(",u64")
    assert spec(CudaArray(X), CudaArray(Y), CudaArray(OUT), 2.5, BLOCK_SIZE=64)[0].endswith(",fp32")
    assert spec(CudaArray(X), CudaArray(Y), CudaArray(OUT), True, BLOCK_SIZE=64)[0].endswith(",i1")


def test_all_arguments_by_keyword_and_options():
    sig, constexprs, options, _ = spec(x_ptr=CudaArray(X), y_ptr=CudaArray(Y), out_ptr=CudaArray(OUT),
                                       n_elements=10, BLOCK_SIZE=128, num_warps=8, num_stages=2)
    assert sig == "*fp32:16,*fp32:16,*fp32:16,i32"
    assert options == {"num_warps": 8, "num_stages": 2}
    # maxnreg (PTX .maxnreg) is a launch option too, reported when set; None is no cap.
    assert spec(CudaArray(X), CudaArray(Y), CudaArray(OUT), 10, BLOCK_SIZE=128, maxnreg=128)[2] == {
        "num_warps": 4, "num_stages": 3, "maxnreg": 128}
    assert spec(CudaArray(X), CudaArray(Y), CudaArray(OUT), 10, BLOCK_SIZE=128, maxnreg=None)[2] == {
        "num_warps": 4, "num_stages": 3}
    # Constexprs may be given positionally too.
    assert spec(CudaArray(X), CudaArray(Y), CudaArray(OUT), 10, 128)[1] == {"BLOCK_SIZE": 128}


@pytest.mark.parametrize("typestr,expected", [
    ("<f2", "*fp16"), ("<f4", "*fp32"), ("<f8", "*fp64"), ("|i1", "*i8"), ("<i2", "*i16"), ("<i4", "*i32"),
    ("<i8", "*i64"), ("|u1", "*u8"), ("<u2", "*u16"), ("<u4", "*u32"), ("<u8", "*u64"), ("|b1", "*i1"),
])
def test_cuda_array_interface_dtypes(typestr, expected):
    sig = spec(CudaArray(X, typestr), CudaArray(Y), CudaArray(OUT), 16, BLOCK_SIZE=64)[0]
    assert sig.split(",")[0] == expected + ":16"


@pytest.mark.parametrize("dtype,expected", [
    ("float32", "*fp32"), ("float16", "*fp16"), ("bfloat16", "*bf16"), ("float64", "*fp64"), ("int8", "*i8"),
    ("int32", "*i32"), ("int64", "*i64"), ("uint8", "*u8"), ("bool", "*i1"), ("float8_e4m3fn", "*fp8e4nv"),
    ("float8_e5m2", "*fp8e5"),
])
def test_torch_like_tensor_dtypes_and_device(dtype, expected):
    sig, _, _, device = spec(FakeTensor(X, dtype, index=3), FakeTensor(Y, index=3), FakeTensor(OUT, index=3),
                             16, BLOCK_SIZE=64)
    assert sig.split(",")[0] == expected + ":16"
    assert device == 3


class TritonDtype:
    """A Triton dtype (str() is its name, as tl.float8e5 prints "fp8e5")."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name


@pytest.mark.parametrize("dtype,expected", [
    ("fp8e5", "*fp8e5"), ("fp8e4nv", "*fp8e4nv"), ("fp16", "*fp16"), ("bf16", "*bf16"), ("fp32", "*fp32"),
])
def test_tensors_wrapped_with_a_triton_dtype(dtype, expected):
    # triton's TensorWrapper / reinterpret(): a torch tensor's memory seen with a Triton dtype
    # (test_core.py passes fp8 data as uint8 tensors wrapped with tl.float8e5 / tl.float8e4nv).
    wrapped = FakeTensor(X)
    wrapped.dtype = TritonDtype(dtype)
    sig = spec(wrapped, FakeTensor(Y), FakeTensor(OUT), 16, BLOCK_SIZE=64)[0]
    assert sig.split(",")[0] == expected + ":16"


def test_dlpack_arrays():
    a = DLPackArray(X, code=4, bits=16, device_id=1)  # bfloat16
    y = DLPackArray(Y, byte_offset=8, device_id=1)
    out = DLPackArray(OUT, code=0, bits=64, device_id=1)  # int64
    sig, _, _, device = spec(a, y, out, 16, BLOCK_SIZE=64)
    assert sig == "*bf16:16,*fp32,*i64:16,i32:16"  # Y + 8 bytes: not 16-byte aligned
    assert device == 1
    assert a.calls == [-1]  # asked not to synchronise


def test_mixed_devices_are_refused():
    with pytest.raises(ValueError, match=r"arguments are on different devices: 'x_ptr' on cuda:0, 'y_ptr' on cuda:1"):
        spec(FakeTensor(X, index=0), FakeTensor(Y, index=1), FakeTensor(OUT, index=0), 16, BLOCK_SIZE=64)


def test_numpy_scalars_and_constexpr_wrappers():
    np = pytest.importorskip("numpy")
    sig, constexprs, _, _ = spec(CudaArray(X), CudaArray(Y), CudaArray(OUT), np.int64(48),
                                 BLOCK_SIZE=tl.constexpr(256))
    assert sig.endswith(",i32:16") and constexprs == {"BLOCK_SIZE": 256}


def test_do_not_specialize_and_defaults():
    @tessera.jit(do_not_specialize=["n"])
    def k(x_ptr, n, scale=2.0, HAS_BIAS: tl.constexpr = False, BLOCK: tl.constexpr = 128):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * scale, mask=offs < n)

    sig, constexprs, _, _ = k.specialization(CudaArray(X), 16)
    assert sig == "*fp32:16,i32,fp32"  # n not specialised; scale from its default
    assert constexprs == {"BLOCK": 128, "HAS_BIAS": False}  # Python evaluated the defaults, as Triton binds them
    assert k.specialization(CudaArray(X), 1, 3, HAS_BIAS=True)[0:2] == ("*fp32:16,i32,i32", {"HAS_BIAS": True, "BLOCK": 128})
    c = k.warmup(CudaArray(X), 100)
    assert ".visible .entry k(" in c.asm["ptx"]


# ----------------------------------------------------------------- errors

def test_wrong_number_of_arguments():
    with pytest.raises(TypeError) as e:
        add_kernel[(1,)](CudaArray(X), CudaArray(Y), CudaArray(OUT), BLOCK_SIZE=64)
    assert str(e.value) == ("add_kernel() takes 4 arguments (x_ptr, y_ptr, out_ptr, n_elements) but 3 were given; "
                            "missing 'n_elements'")
    with pytest.raises(TypeError, match=r"add_kernel\(\) takes 5 arguments \(x_ptr, y_ptr, out_ptr, n_elements, "
                                        r"BLOCK_SIZE\) but 6 were given"):
        add_kernel[(1,)](CudaArray(X), CudaArray(Y), CudaArray(OUT), 10, 64, 7)


def test_missing_constexpr():
    with pytest.raises(TypeError, match=r"add_kernel\(\) missing a value for constexpr parameter 'BLOCK_SIZE' "
                                        r"\(pass BLOCK_SIZE=\.\.\.\)"):
        add_kernel[(1,)](CudaArray(X), CudaArray(Y), CudaArray(OUT), 10)


def test_unexpected_and_repeated_keywords():
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'BLOK'"):
        add_kernel[(1,)](CudaArray(X), CudaArray(Y), CudaArray(OUT), 10, BLOK=64)
    with pytest.raises(TypeError, match="got multiple values for argument 'x_ptr'"):
        add_kernel[(1,)](CudaArray(X), CudaArray(Y), CudaArray(OUT), 10, BLOCK_SIZE=64, x_ptr=CudaArray(X))


def test_host_tensors_are_refused():
    # Triton's ValueError (and the TypeError tessera raised before): pageable host memory.
    with pytest.raises(ValueError) as e:
        add_kernel[(1,)](FakeTensor(X, device="cpu"), CudaArray(Y), CudaArray(OUT), 10, BLOCK_SIZE=64)
    assert isinstance(e.value, TypeError) and isinstance(e.value, tessera.errors.HostTensorError)
    assert str(e.value) == ("add_kernel(): argument 'x_ptr' is a CPU tensor; tessera kernels need CUDA tensors or "
                            "pinned host memory (Pointer argument (at 0) cannot be accessed from Triton (cpu tensor?))")
    np = pytest.importorskip("numpy")
    with pytest.raises(TypeError, match=r"argument 'y_ptr' is a CPU array \(numpy.ndarray\); tessera kernels need "
                                        r"CUDA memory"):
        add_kernel[(1,)](CudaArray(X), np.zeros(4, np.float32), CudaArray(OUT), 10, BLOCK_SIZE=64)
    with pytest.raises(TypeError, match="argument 'out_ptr' is a CPU array"):
        add_kernel[(1,)](CudaArray(X), CudaArray(Y), DLPackArray(OUT, device_type=1), 10, BLOCK_SIZE=64)


def test_unsupported_dtypes_are_refused():
    with pytest.raises(TypeError, match=r"argument 'x_ptr' has dtype torch.complex64, which tessera kernels do not "
                                        r"support \(supported: float16, bfloat16, float32"):
        add_kernel[(1,)](FakeTensor(X, "complex64"), CudaArray(Y), CudaArray(OUT), 10, BLOCK_SIZE=64)
    with pytest.raises(TypeError, match=r"argument 'y_ptr' has dtype '<c8'"):
        add_kernel[(1,)](CudaArray(X), CudaArray(Y, "<c8"), CudaArray(OUT), 10, BLOCK_SIZE=64)
    with pytest.raises(TypeError, match=r"argument 'out_ptr' has a DLPack dtype \(code 5"):
        add_kernel[(1,)](CudaArray(X), CudaArray(Y), DLPackArray(OUT, code=5, bits=64), 10, BLOCK_SIZE=64)


def test_unsupported_values_are_refused():
    with pytest.raises(TypeError, match=r"argument 'n_elements' has unsupported type 'list'"):
        add_kernel[(1,)](CudaArray(X), CudaArray(Y), CudaArray(OUT), [10], BLOCK_SIZE=64)
    # None is the constexpr None (as in Triton): the kernel's arithmetic on it is the error.
    with pytest.raises(tessera.CompilationError, match=r"vector_add.py:12:17: error: unsupported operand types for \+: "
                                                       r"None and a block of type <64xi32>"):
        add_kernel.warmup(None, CudaArray(Y), CudaArray(OUT), 10, BLOCK_SIZE=64, grid=(1,))
    with pytest.raises(ValueError, match=r"argument 'n_elements' = 36893488147419103232 does not fit in 64 bits"):
        add_kernel[(1,)](CudaArray(X), CudaArray(Y), CudaArray(OUT), 2**65, BLOCK_SIZE=64)
    with pytest.raises(TypeError, match=r"constexpr 'BLOCK_SIZE' is a tensor"):
        add_kernel[(1,)](CudaArray(X), CudaArray(Y), CudaArray(OUT), 10, BLOCK_SIZE=CudaArray(X))
    with pytest.raises(TypeError, match=r"num_warps must be an int"):
        add_kernel[(1,)](CudaArray(X), CudaArray(Y), CudaArray(OUT), 10, BLOCK_SIZE=64, num_warps="4")


def test_bad_grids():
    args = (CudaArray(X), CudaArray(Y), CudaArray(OUT), 10)
    with pytest.raises(TypeError, match=r"add_kernel\[grid\]: the grid must be a tuple of 1 to 3 ints"):
        add_kernel["big"](*args, BLOCK_SIZE=64)
    with pytest.raises(ValueError, match="the grid must have 1 to 3 dimensions, got 4"):
        add_kernel[(1, 1, 1, 1)](*args, BLOCK_SIZE=64)
    with pytest.raises(ValueError, match="grid dimension 0 = -1 is out of range"):
        add_kernel[(-1,)](*args, BLOCK_SIZE=64)


def test_grid_callable_gets_the_meta_parameters():
    seen = {}

    class Stop(Exception):
        pass

    def grid(meta):
        seen.update(meta)
        raise Stop()

    x = CudaArray(X)
    with pytest.raises(Stop):
        add_kernel[grid](x, CudaArray(Y), CudaArray(OUT), 1000, BLOCK_SIZE=256, num_warps=8)
    assert seen["BLOCK_SIZE"] == 256 and seen["n_elements"] == 1000 and seen["x_ptr"] is x
    assert seen["num_warps"] == 8 and seen["num_stages"] == 3


@needs_no_driver
def test_launch_without_a_driver_raises_a_clear_error():
    with pytest.raises(tessera.DriverError, match="no CUDA driver found") as e:
        add_kernel[lambda meta: (tessera.cdiv(1000, meta["BLOCK_SIZE"]),)](
            CudaArray(X), CudaArray(Y), CudaArray(OUT), 1000, BLOCK_SIZE=256)
    assert isinstance(e.value, RuntimeError)
    assert isinstance(e.value, tessera.DriverNotFoundError)
    # Also via run(), with a torch-like tensor, and for an empty grid.
    with pytest.raises(tessera.DriverError, match="no CUDA driver found"):
        add_kernel.run(FakeTensor(X), FakeTensor(Y), FakeTensor(OUT), 1000, BLOCK_SIZE=256, grid=(4,))
    with pytest.raises(tessera.DriverError, match="no CUDA driver found"):
        add_kernel[(0,)](CudaArray(X), CudaArray(Y), CudaArray(OUT), 0, BLOCK_SIZE=256)


@needs_no_driver
def test_compiled_kernel_launch_without_a_driver():
    k = tessera.compile(add_kernel, signature="*fp32:16,*fp32:16,*fp32:16,i32", constexprs={"BLOCK_SIZE": 64})
    with pytest.raises(TypeError, match=r"add_kernel\(\): argument 'x_ptr' is a fp16 tensor but the kernel was "
                                        r"compiled for \*fp32"):
        k[(1,)](CudaArray(X, "<f2"), CudaArray(Y), CudaArray(OUT), 10)
    with pytest.raises(ValueError, match="does not fit in i32"):
        k[(1,)](CudaArray(X), CudaArray(Y), CudaArray(OUT), 2**40)
    with pytest.raises(TypeError, match=r"takes 4 arguments \(x_ptr, y_ptr, out_ptr, n_elements\), or all its "
                                        r"parameters with the constexprs, but 2 were given"):
        k[(1,)](CudaArray(X), CudaArray(Y))
    with pytest.raises(tessera.DriverNotFoundError, match="no CUDA driver found"):
        k[(1,)](CudaArray(X), CudaArray(Y), CudaArray(OUT), 10, 64)  # constexprs given too: ignored
    # Loading needs the driver; n_regs then comes from ptxas -v (docs/compatibility.md).
    with pytest.raises(tessera.DriverNotFoundError):
        k._h.load()
    if PTXAS.exists():
        assert 0 < k.n_regs <= 255 and k.n_spills == 0


def test_calling_a_kernel_directly_explains_how_to_launch():
    with pytest.raises(RuntimeError, match=r"launch it with add_kernel\[grid\]"):
        add_kernel(1, 2)


@pytest.mark.parametrize("dtype,expected", [(tl.float8e5, "*fp8e5"), (tl.float8e4nv, "*fp8e4nv"), (tl.bfloat16, "*bf16")])
def test_tensors_wrapped_with_a_tessera_language_dtype(dtype, expected):
    # str() of tessera.language's dtypes is Triton's name ("fp8e5"), which the launcher reads.
    wrapped = FakeTensor(X)
    wrapped.dtype = dtype
    sig = spec(wrapped, FakeTensor(Y), FakeTensor(OUT), 16, BLOCK_SIZE=64)[0]
    assert sig.split(",")[0] == expected + ":16"


@pytest.mark.parametrize("dtype,expected", [(tl.float8e5, "*fp8e5"), (tl.float8e4nv, "*fp8e4nv")])
def test_reinterpreted_tensors_bind_as_their_new_dtype(dtype, expected):
    # tessera.reinterpret (Triton's triton.reinterpret): the same memory, read as `dtype`.
    base = FakeTensor(X)
    wrapped = tessera.reinterpret(base, dtype)
    assert wrapped.data_ptr() == base.data_ptr() and wrapped.base is base and wrapped.dtype == dtype
    sig = spec(wrapped, FakeTensor(Y), FakeTensor(OUT), 16, BLOCK_SIZE=64)[0]
    assert sig.split(",")[0] == expected + ":16"
    assert tessera.reinterpret(wrapped, base.dtype) is base  # back to the base's own dtype: the base
    assert tessera.reinterpret(wrapped, tl.float16).base is base


def test_reinterpret_needs_a_tensor():
    with pytest.raises(TypeError, match=r"reinterpret\(\) takes a tensor"):
        tessera.reinterpret([1, 2, 3], tl.float8e5)
