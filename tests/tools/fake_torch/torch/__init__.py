"""A stand-in for torch, for tests and host-side benchmarks of tessera's launch
path on machines without torch or a GPU (with the fake CUDA driver,
tests/tools/fake_libcuda.c). Put tests/tools/fake_torch first on PYTHONPATH
in a process of its own: it is `torch` to that process.

Only what tessera's launch path reads exists: torch.Tensor with is_cuda,
dtype, device, data_ptr(), is_pinned(), element_size(), get_device(), transpose() and (when
given) shape and stride(); torch.empty (a fresh fake address); dtype singletons;
torch._C._cuda_getCurrentRawStream(device); and torch.cuda.is_available()
(False: tessera's autotuner then times with the runtime's own events) and
torch.cuda.synchronize(). Tensors hold no memory: a
"pointer" is any int (Tensor(0x10000)). Unlike torch's, the attributes
are Python properties, so each read costs more than torch's C getters do.
"""
__version__ = "0.0.fake"


class dtype:
    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "torch." + self._name

    __str__ = __repr__


float32 = float = dtype("float32")
float16 = half = dtype("float16")
bfloat16 = dtype("bfloat16")
float64 = double = dtype("float64")
int8 = dtype("int8")
int32 = int = dtype("int32")
int64 = long = dtype("int64")
uint8 = dtype("uint8")
int16 = short = dtype("int16")
bool = dtype("bool")
float8_e4m3fn = dtype("float8_e4m3fn")
float8_e5m2 = dtype("float8_e5m2")
complex64 = dtype("complex64")


_ITEMSIZE = {"float64": 8, "int64": 8, "complex64": 8, "float16": 2, "bfloat16": 2, "int16": 2, "int8": 1,
             "uint8": 1, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1}


class device:
    def __init__(self, type, index=None):
        self.type = type
        self.index = index

    def __repr__(self):
        return f"device(type='{self.type}'" + (f", index={self.index})" if self.index is not None else ")")

    def __eq__(self, other):
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))


class Tensor:
    def __init__(self, ptr, dtype=float32, device="cuda", index=0, shape=None, strides=None, pinned=False):
        self._ptr = ptr
        self._pinned = pinned and device == "cpu"
        self._dtype = dtype
        self._device = globals()["device"](device, index if device == "cuda" else None)
        self._shape = tuple(shape) if shape is not None else None
        if strides is None and shape is not None:  # contiguous
            strides, step = [], 1
            for n in reversed(self._shape):
                strides.insert(0, step)
                step *= n
        self._strides = tuple(strides) if strides is not None else None

    @property
    def shape(self):
        return self._shape

    def stride(self):
        return self._strides

    @property
    def is_cuda(self):
        return self._device.type == "cuda"

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._device

    def data_ptr(self):
        return self._ptr

    def is_pinned(self):
        return self._pinned

    def element_size(self):
        return _ITEMSIZE.get(self._dtype._name, 4)

    def get_device(self):
        return self._device.index if self._device.type == "cuda" else -1

    def transpose(self, dim0, dim1):
        """A view with two dims swapped (shape and strides), as torch's."""
        shape, strides = list(self._shape), list(self._strides)
        shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
        strides[dim0], strides[dim1] = strides[dim1], strides[dim0]
        return Tensor(self._ptr, self._dtype, self._device.type, self._device.index or 0, shape, strides)


_next_ptr = [0x7E0000000000]  # torch.empty's "allocations": fresh, 256-byte aligned, never dereferenced


def empty(shape, dtype=float32, device="cuda", pin_memory=False):
    """A contiguous tensor at a fresh fake address (no memory behind it); pin_memory=True marks a CPU
    tensor pinned (tests declare its range to the fake driver: FakeDriver.pin)."""
    shape = tuple(shape)
    count = 1
    for n in shape:
        count *= n
    ptr = _next_ptr[0]
    _next_ptr[0] += (count * _ITEMSIZE.get(dtype._name, 4) + 255) // 256 * 256 + 256
    kind = device.type if isinstance(device, globals()["device"]) else str(device).split(":")[0]
    index = device.index if isinstance(device, globals()["device"]) else 0
    return Tensor(ptr, dtype, kind, index or 0, shape, pinned=pin_memory)


class _CModule:
    current_stream = 0  # what _cuda_getCurrentRawStream answers (tests set it)

    def _cuda_getCurrentRawStream(self, device_index):
        return self.current_stream


_C = _CModule()


class cuda:  # a namespace, as torch.cuda is a module
    @staticmethod
    def is_available():
        return False

    @staticmethod
    def synchronize(device=None):
        pass
