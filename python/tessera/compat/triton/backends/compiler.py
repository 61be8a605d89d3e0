"""triton.backends.compiler: GPUTarget (backend, arch, warp_size), as the active driver's
get_current_target() returns it. BaseBackend exists for isinstance/issubclass probes only:
tessera compiles through tessera.compile / @jit, not through Triton's backend interface."""
import enum
import hashlib
import types

from tessera.runtime.driver import GPUTarget


class Language(enum.Enum):
    TRITON = 0
    GLUON = 1


class BaseBackend:
    """Triton's compiler back-end interface; tessera implements none of its methods."""

    def __init__(self, target):
        self.target = target


class CudaBackend(BaseBackend):
    """The back-end triton.backends.backends["nvidia"] names (tessera's CUDA compiler). hash():
    what torch keys its caches with besides triton_key() (the target and the compiler)."""

    def hash(self):
        from ..compiler.compiler import triton_key
        return hashlib.sha256(f"{triton_key()}-{tuple(self.target)}".encode()).hexdigest()

    def parse_options(self, options):
        """Triton's CUDAOptions with the defaults tessera compiles with, updated by `options`
        (torch reads num_stages from it: triton_helpers.get_backend_options())."""
        return types.SimpleNamespace(**{**CUDA_OPTION_DEFAULTS, "arch": f"sm{self.target[1]}", **dict(options)})


# The compile options, as Triton's CUDAOptions names them, and what tessera does by default.
CUDA_OPTION_DEFAULTS = {
    "num_warps": 4, "num_ctas": 1, "num_stages": 3, "maxnreg": None, "cluster_dims": (1, 1, 1),
    "ptx_version": None, "enable_fp_fusion": True, "launch_cooperative_grid": False, "launch_pdl": False,
    "supported_fp8_dtypes": ("fp8e5", "fp8e4nv"), "default_dot_input_precision": "tf32",
    "allowed_dot_input_precisions": ("tf32", "tf32x3", "ieee"), "max_num_imprecise_acc_default": 0,
    "extern_libs": None, "debug": False, "sanitize_overflow": False, "backend_name": "cuda",
}


__all__ = ["BaseBackend", "GPUTarget", "Language"]
