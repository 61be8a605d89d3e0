"""triton.runtime.jit: tessera's @jit and JITFunction (tessera/jit.py) under Triton's names."""
from tessera.autotune import KernelInterface
from tessera.jit import JITFunction, jit
from tessera.tensor_wrapper import TensorWrapper, reinterpret

__all__ = ["JITFunction", "KernelInterface", "TensorWrapper", "jit", "reinterpret"]
