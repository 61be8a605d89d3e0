"""tessera.runtime.driver: the active (CUDA) driver, as Triton names it."""
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
