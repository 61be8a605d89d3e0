"""tessera.runtime.driver: the active (CUDA) driver, as Triton names it.

`active` is the driver (created on first use); `driver` is Triton's DriverConfig
spelling of the same (driver.active, driver.default, set_active, reset_active).
do_bench's L2 flush: get_empty_cache_for_benchmark() / clear_cache(cache).
"""
import collections

from .. import _ext

GPUTarget = collections.namedtuple("GPUTarget", ["backend", "arch", "warp_size"])


def _torch():
    import torch
    return torch


class _Utils:
    def get_device_properties(self, device):
        return dict(_ext.require().device_properties(-1 if device is None else int(device)))


class CudaDriver:
    backend = "cuda"

    def __init__(self):
        self.utils = _Utils()

    @staticmethod
    def is_active():
        """Whether this back-end drives the GPU of this process (Triton's class check, which torch's
        Inductor makes through triton.backends.backends[...].driver.is_active()). As Triton's, it asks
        torch first: Inductor's compile workers are forked from a process that may hold a CUDA
        context, where cuInit fails although the device is there (and compiling needs no driver)."""
        try:
            import torch
            if torch.cuda.is_available() and getattr(getattr(torch, "version", None), "hip", None) is None:
                return True
        except ImportError:
            pass
        try:
            return bool(_ext.require().driver_available())
        except ImportError:
            return False

    def is_available(self):
        try:
            return _ext.require().driver_available() and _ext.require().device_count() > 0
        except ImportError:
            return False

    def get_current_device(self):
        try:
            return _torch().cuda.current_device()
        except ImportError:
            return _ext.require().current_device()

    def set_current_device(self, device):
        try:
            _torch().cuda.set_device(device)
        except ImportError:
            _ext.require().set_current_device(device)

    def get_active_torch_device(self):
        torch = _torch()
        return torch.device("cuda", torch.cuda.current_device())

    def get_current_stream(self, device=None):
        torch = _torch()
        if device is None:
            device = torch.cuda.current_device()
        return torch.cuda.current_stream(device).cuda_stream

    def get_current_target(self):
        props = _ext.require().device_properties(self.get_current_device())
        return GPUTarget("cuda", props["major"] * 10 + props["minor"], props["warpSize"])

    def get_device_interface(self):
        return _torch().cuda

    def get_empty_cache_for_benchmark(self):
        """A 256 MB buffer (more than any GPU's L2) that clear_cache() overwrites between timed runs."""
        torch = _torch()
        return torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device="cuda")

    def clear_cache(self, cache):
        cache.zero_()


class _Active:
    """driver.active: created on first use (importing tessera touches no driver)."""

    def __init__(self):
        self._driver = None

    def _get(self):
        if self._driver is None:
            self._driver = CudaDriver()
        return self._driver

    def __getattr__(self, name):
        return getattr(self._get(), name)


active = _Active()


class DriverConfig:
    """Triton's triton.runtime.driver object (`from triton.runtime.driver import driver`):
    .active and .default are the CUDA driver; set_active() replaces .active (a test double)."""

    def __init__(self):
        self._active = None

    @property
    def default(self):
        return active

    @property
    def active(self):
        return self._active if self._active is not None else active

    def set_active(self, driver):
        self._active = driver

    def reset_active(self):
        self._active = None


driver = DriverConfig()
