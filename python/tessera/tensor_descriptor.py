"""tessera.TensorDescriptor: a TMA tensor descriptor kernel argument (Hopper), as
Triton's triton.tools.tensor_descriptor.TensorDescriptor.

    desc = tessera.TensorDescriptor(a, shape=[M, K], strides=[K, 1], block_shape=[128, 64])
    desc = tessera.TensorDescriptor.from_tensor(a, [128, 64])      # a.shape, a.stride()
    kernel[grid](desc, ...)        # in the kernel: desc.load([off_m, off_k]) reads one 128 x 64 block

The kernel's parameter specialises to tensordesc<DTYPE[B0,B1,...]> (e.g.
tensordesc<bf16[128,64]>: the element type and the block shape). Shape and
strides are in elements, outermost first; the innermost stride must be 1, the
others multiples of 16 bytes, the base 16-byte aligned, the block dimensions
powers of two of at most 256. The first launch checks this (an error names the
argument and the rule) and encodes the 128-byte CUtensorMap with
cuTensorMapEncodeTiled; later launches pass the same bytes, so base, shape
and strides are read-only. block_shape may be assigned (an autotuner's
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
    (anything with .data_ptr() and .dtype), shape and strides are in elements (outermost first),
    block_shape is the block a load reads. Ranks 1 to 5. Out-of-bounds elements read as zero
    (Triton's padding="zero"; its "nan" is refused, not ignored)."""
    __slots__ = ()

    def __new__(cls, base, shape, strides, block_shape, padding="zero"):
        _check_padding(padding)
        return super().__new__(cls, base, shape, strides, block_shape)

    @classmethod
    def from_tensor(cls, tensor, block_shape, padding="zero"):
        """A descriptor of the whole tensor: its shape and strides."""
        return cls(tensor, tuple(tensor.shape), tuple(tensor.stride()), block_shape, padding)

    def __repr__(self):
        return (f"TensorDescriptor(dtype={self.dtype}, shape={list(self.shape)}, strides={list(self.strides)}, "
                f"block_shape={list(self.block_shape)})")


def _check_padding(padding):
    if padding == "nan":
        raise NotImplementedError("TensorDescriptor(padding='nan') is not supported: tessera's descriptors read "
                                  "out-of-bounds elements as zero (padding='zero')")
    if padding != "zero":
        raise ValueError(f"Illegal value for padding: {padding!r} (Triton takes 'zero' or 'nan')")


__all__ = ["TensorDescriptor"]
