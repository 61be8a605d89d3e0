"""tl.extra.cuda.libdevice: tl.math's functions under Triton's name."""
from ... import math as libdevice  # noqa: F401
from ..._device import _device_only  # noqa: E402

# tl.extra.cuda.num_threads() / num_warps(): constexprs (the launch's num_warps) inside kernels.
num_threads = _device_only("extra.cuda.num_threads")
num_warps = _device_only("extra.cuda.num_warps")
# tl.extra.cuda.smid() (i32: the SM the program runs on) and globaltimer() (i64: the GPU's
# nanosecond timer, read where the kernel reads it); interpreted: 0 and the host's monotonic clock.
smid = _device_only("extra.cuda.smid")
globaltimer = _device_only("extra.cuda.globaltimer")
# Triton's fp8e4b15 conversions (the casts to and from tl.float8e4b15 inside kernels).
convert_custom_float8_sm80 = _device_only("extra.cuda.convert_custom_float8_sm80")
convert_custom_float8_sm70 = _device_only("extra.cuda.convert_custom_float8_sm70")
# tl.extra.cuda.gdc_wait() / gdc_launch_dependents(): programmatic dependent launch (docs/language.md).
gdc_wait = _device_only("extra.cuda.gdc_wait")
gdc_launch_dependents = _device_only("extra.cuda.gdc_launch_dependents")
