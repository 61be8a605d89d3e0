"""tl.extra.cuda.libdevice: tl.math's functions under Triton's name."""
from ... import math as libdevice  # noqa: F401
from ..._device import _device_only  # noqa: E402

# tl.extra.cuda.num_threads() / num_warps(): constexprs (the launch's num_warps) inside kernels.
num_threads = _device_only("extra.cuda.num_threads")
num_warps = _device_only("extra.cuda.num_warps")
