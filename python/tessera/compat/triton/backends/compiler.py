"""triton.backends.compiler: GPUTarget (backend, arch, warp_size), as the active driver's
get_current_target() returns it. BaseBackend exists for isinstance/issubclass probes only:
tessera compiles through tessera.compile / @jit, not through Triton's backend interface."""
import enum
import hashlib

from tessera.runtime.driver import GPUTarget


class Language(enum.Enum):
    TRITON = 0
    GLUON = 1


class BaseBackend:
    """Triton's compiler back-end interface; tessera implements none of its methods."""

    def __init__(self, target):
        self.target = target


class CudaBackend(BaseBackend):
    """The back-end triton.backends.backends["nvidia"] names (tessera's CUDA compiler). hash():
    what torch keys its caches with besides triton_key() (the target and the compiler)."""

    def hash(self):
        from ..compiler.compiler import triton_key
        return hashlib.sha256(f"{triton_key()}-{tuple(self.target)}".encode()).hexdigest()


__all__ = ["BaseBackend", "GPUTarget", "Language"]
