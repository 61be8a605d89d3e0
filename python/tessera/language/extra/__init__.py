"""tl.extra: `from tessera.language.extra import libdevice` or
`from tessera.language.extra.cuda import libdevice`, as in Triton. The
functions are tl.math's (see language/math.py and docs/language.md)."""
from .. import math as libdevice  # noqa: F401
from . import cuda  # noqa: F401,E402
