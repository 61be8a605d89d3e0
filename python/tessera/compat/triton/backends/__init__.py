"""triton.backends in tessera's compatibility mode: enough for the probes libraries make
(`from triton.backends.compiler import GPUTarget`, `"nvidia" in triton.backends.backends`).
tessera has one back-end, CUDA; there is no plug-in discovery."""
import dataclasses

from tessera.runtime.driver import CudaDriver

from . import compiler, driver
from .compiler import BaseBackend
from .driver import DriverBase


@dataclasses.dataclass(frozen=True)
class Backend:
    compiler: type
    driver: type


backends = {"nvidia": Backend(compiler=compiler.CudaBackend, driver=CudaDriver)}

__all__ = ["Backend", "BaseBackend", "DriverBase", "backends"]
