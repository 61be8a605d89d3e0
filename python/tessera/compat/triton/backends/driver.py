"""triton.backends.driver: DriverBase, which tessera's CUDA driver (tessera.runtime.driver) stands for."""
from tessera.runtime.driver import CudaDriver as GPUDriver

DriverBase = GPUDriver

__all__ = ["DriverBase", "GPUDriver"]
