"""tessera.TensorDescriptor: a TMA tensor descriptor kernel argument (Hopper), as
Triton's triton.tools.tensor_descriptor.TensorDescriptor.

    desc = tessera.TensorDescriptor(a, shape=[M, K], strides=[K, 1], block_shape=[128, 64])
    desc = tessera.TensorDescriptor.from_tensor(a, [128, 64])      # a.shape, a.stride()
    kernel[grid](desc, ...)        # in the kernel: desc.load([off_m, off_k]) reads one 128 x 64 block

The kernel's parameter specialises to tensordesc<DTYPE[B0,B1,...]> (e.g.
tensordesc<bf16[128,64]>: the element type and the block shape). Shape and
strides are in elements, outermost first; the innermost stride must be 1, the
others multiples of 16 bytes, the base 16-byte aligned, the block dimensions
powers of two (of at most 256 for the TMA unit: a larger block is read through
pointers and left unencoded). The first launch checks this (an error names the
argument and the rule) and encodes the 128-byte CUtensorMap with
cuTensorMapEncodeTiled; later launches pass the same bytes, and the base,
shape, strides and padding as hidden parameters (docs/tma.md), so base, shape
and strides are read-only. padding="nan" (float dtypes) reads out-of-bounds
elements as NaN. Interpret mode takes descriptors of numpy arrays and CPU
tensors. Triton's TensorDescriptor dataclass passed to a kernel is adopted:
_adopt() makes one of these from its fields. block_shape may be assigned (an autotuner's
pre_hook sets it per config, as with Triton): a new block is checked and
encoded by the next launch. The descriptor keeps `base` alive and
holds base.data_ptr() as it was when the descriptor was made. docs/runtime.md
("Tensor descriptors") has the encoding and what it costs.
"""
from . import _ext

if _ext.C is not None:
    _Base = _ext.C.TensorDescriptorBase
else:
    class _Base:
        __slots__ = ()

        def __new__(cls, *args, **kwargs):
            _ext.require()  # raises ImportError saying why the extension is missing
            raise ImportError("tessera._C is not available")


class TensorDescriptor(_Base):
    """TensorDescriptor(base, shape, strides, block_shape, padding="zero"): `base` is a CUDA tensor
    (anything with .data_ptr() and .dtype; in interpret mode a numpy array or CPU tensor), shape and
    strides are in elements (outermost first), block_shape is the block a load reads. Ranks 1 to 5.
    Out-of-bounds elements read as zero (padding="zero") or NaN (padding="nan", float dtypes).
    The first launch checks Triton's rules (the base and the strides but the last 16-byte aligned,
    the last stride 1, shape positive, block dimensions powers of two) and names the argument."""
    __slots__ = ()

    def __new__(cls, base, shape, strides, block_shape, padding="zero"):
        _check(base, shape, strides, block_shape, padding)
        return super().__new__(cls, base, shape, strides, block_shape, padding)

    @classmethod
    def from_tensor(cls, tensor, block_shape, padding="zero"):
        """A descriptor of the whole tensor: its shape and strides."""
        return cls(tensor, tuple(tensor.shape), _strides_of(tensor), block_shape, padding)

    def __repr__(self):
        return (f"TensorDescriptor(dtype={self.dtype}, shape={list(self.shape)}, strides={list(self.strides)}, "
                f"block_shape={list(self.block_shape)}" + (", padding='nan')" if self.padding == "nan" else ")"))


def _strides_of(tensor):
    if hasattr(tensor, "stride"):
        return tuple(tensor.stride())
    itemsize = tensor.dtype.itemsize  # numpy: strides in bytes
    return tuple(s // itemsize for s in tensor.strides)


def _is_float(dtype):
    flag = getattr(dtype, "is_floating_point", None)
    if isinstance(flag, bool):
        return flag
    return "float" in str(dtype)


def _check(base, shape, strides, block_shape, padding):
    """Triton's padding checks; the others (rank, shape, strides, alignment, block) are made
    by the first launch, whose error names the argument."""
    if padding not in ("zero", "nan"):
        raise ValueError(f"Illegal value for padding: {padding!r} (Triton takes 'zero' or 'nan')")
    dtype = getattr(base, "dtype", None)
    if padding == "nan" and dtype is not None and not _is_float(dtype):
        raise ValueError(f"Padding option `nan` is only supported for floating point tensors, not {dtype}")


def _adopt(desc):
    """The tessera TensorDescriptor of another library's descriptor (Triton's
    triton.tools.tensor_descriptor.TensorDescriptor dataclass: base, shape, strides,
    block_shape, padding), kept on it and made again when a field changes (an autotuner's
    pre_hook assigns block_shape). The launch path calls this for such arguments."""
    fields = (desc.base, tuple(desc.shape), tuple(desc.strides), tuple(desc.block_shape),
              getattr(desc, "padding", "zero"))
    cached = getattr(desc, "_tessera_descriptor", None)
    if cached is not None and cached[0][0] is fields[0] and cached[0][1:] == fields[1:]:
        return cached[1]
    made = TensorDescriptor(*fields)
    try:
        object.__setattr__(desc, "_tessera_descriptor", (fields, made))
    except (AttributeError, TypeError):  # no __dict__: kept here, the launch holds no other reference
        _kept.append(made)
        del _kept[:-64]
    return made


_kept = []

__all__ = ["TensorDescriptor"]
