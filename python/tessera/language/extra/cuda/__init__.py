"""tl.extra.cuda.libdevice: tl.math's functions under Triton's name."""
from ... import math as libdevice  # noqa: F401
