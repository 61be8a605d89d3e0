"""What the current GPU's kernels compile for, as the kernel wrappers' tables need it."""
from .. import _env, _ext


def wgmma_target():
    """Dots run on wgmma: the current device compiles for sm_90a and TESSERA_WGMMA is not 0.
    False without a driver or the extension (the portable tables)."""
    if not _env.on_unless_zero("TESSERA_WGMMA"):
        return False
    C = _ext.C
    if C is None:
        return False
    try:
        return bool(C.driver_available() and C.target_arch(0) == "sm_90a")
    except Exception:  # noqa: BLE001 -- no driver
        return False
