"""What the current GPU's kernels compile for, as the kernel wrappers' tables need it."""
import os


def wgmma_target():
    """Dots run on wgmma: the current device compiles for sm_90a and TESSERA_WGMMA is not 0.
    False without a driver or the extension (the portable tables)."""
    if os.environ.get("TESSERA_WGMMA", "1") == "0":
        return False
    try:
        from .. import _C
        return bool(_C.driver_available() and _C.target_arch(0) == "sm_90a")
    except Exception:  # noqa: BLE001 -- no driver / no extension
        return False
