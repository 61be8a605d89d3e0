"""A stand-in for torch's torch/_inductor/runtime/triton_helpers.py, written here in its style: the
libdevice / math aliases chosen by what `triton.language` offers, and @triton.jit helpers that the
generated kernels call through the module (triton_helpers.maximum(...), triton_helpers.max2(...))."""
import triton
import triton.language as tl

try:
    from triton.language.extra import libdevice

    libdevice = tl.extra.libdevice  # noqa: F811
    math = tl.math
except ImportError:
    libdevice = tl.math
    math = tl


@triton.jit
def maximum(a, b):
    mask = a > b
    mask |= a != a  # NaN wins, as torch.maximum
    return tl.where(mask, a, b)


@triton.jit
def minimum(a, b):
    mask = a < b
    mask |= a != a
    return tl.where(mask, a, b)


@triton.jit
def max2(a, dim):
    return tl.reduce(a, dim, maximum)


@triton.jit
def min2(a, dim):
    return tl.reduce(a, dim, minimum)
