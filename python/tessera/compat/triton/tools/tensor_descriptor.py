"""triton.tools.tensor_descriptor: tessera's TensorDescriptor (a TMA descriptor argument), which
takes Triton's constructor and from_tensor (the tutorials' and libraries' host-side descriptors)."""
from tessera.tensor_descriptor import TensorDescriptor

__all__ = ["TensorDescriptor"]
