"""reinterpret(tensor, dtype): a tensor's memory seen as another element type (Triton's
triton.reinterpret / TensorWrapper), e.g. uint8 storage passed to a kernel as fp8e5.

The launcher takes any object with .data_ptr(), .dtype and .device as a tensor, and reads a
tessera.language dtype by its name (str(tl.float8e5) is "fp8e5"), so the wrapper only has to
carry the base tensor and the dtype it is read as."""


class TensorWrapper:
    """`base` (a torch tensor or look-alike) read as the tessera.language dtype `dtype`."""

    def __init__(self, base, dtype):
        self.base = base
        self.dtype = dtype
        self.device = base.device
        self.data = getattr(base, "data", None)  # look-alikes (CUDA arrays) may have neither
        self.shape = getattr(base, "shape", None)

    def data_ptr(self):
        return self.base.data_ptr()

    def stride(self, *args):
        return self.base.stride(*args)

    def element_size(self):
        return self.base.element_size()

    def cpu(self):
        return TensorWrapper(self.base.cpu(), self.dtype)

    def to(self, device):
        return TensorWrapper(self.base.to(device), self.dtype)

    def clone(self):
        return TensorWrapper(self.base.clone(), self.dtype)

    def copy_(self, other):
        self.base.copy_(other.base if isinstance(other, TensorWrapper) else other)

    def new_empty(self, sizes):
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    def __str__(self):
        return f"TensorWrapper[{self.dtype}]({self.base})"


def reinterpret(tensor, dtype):
    """`tensor` read as `dtype`: a TensorWrapper, or the base tensor again when a wrapper is
    reinterpreted as its base's own dtype."""
    if isinstance(tensor, TensorWrapper):
        return tensor.base if dtype == tensor.base.dtype else TensorWrapper(tensor.base, dtype)
    if not hasattr(tensor, "data_ptr"):
        raise TypeError(f"reinterpret() takes a tensor (an object with data_ptr()), got {type(tensor).__name__}")
    return TensorWrapper(tensor, dtype)
