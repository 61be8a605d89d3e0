"""triton.language.target_info on the host: what the active driver's GPU is (None without one).
Inside kernels the front-end folds the same functions on the compile target (docs/language.md)."""


def current_target():
    """The active driver's GPUTarget, or None when there is no usable driver (as Triton's)."""
    from ..runtime.driver import driver
    try:
        return driver.active.get_current_target()
    except Exception:  # noqa: BLE001 - no driver / no GPU: Triton's RuntimeError case
        return None


def is_cuda():
    target = current_target()
    return target is not None and target.backend == "cuda"


def cuda_capability_geq(major, minor=0):
    target = current_target()
    if target is None or target.backend != "cuda":
        return False
    return target.arch >= major * 10 + minor


def is_hip():
    target = current_target()
    return target is not None and target.backend == "hip"


def is_hip_cdna3():
    target = current_target()
    return target is not None and target.arch == "gfx942"


def is_hip_cdna4():
    target = current_target()
    return target is not None and target.arch == "gfx950"
