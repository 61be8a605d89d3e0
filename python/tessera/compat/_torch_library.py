"""torch.library.wrap_triton in the compatibility mode.

Libraries register their kernels as torch custom ops the way torch documents it
(`@torch.library.triton_op(...)` around a function that launches
`wrap_triton(kernel)[grid](...)`; torchao does so throughout). torch's wrap_triton
accepts only the installed Triton's JITFunction / Autotuner (its own `import triton`
keeps the installed Triton, docs/compatibility.md): a tessera kernel was a RuntimeError,
or an ImportError without an installed Triton. wrap_triton gets a front that returns
a tessera kernel as it is (what torch's wrap_triton returns outside tracing, where
`wrap_triton(k)[grid](...)` is `k[grid](...)`) and passes anything else to torch's.
Under torch.compile the kernel is then not a traceable Triton kernel: torch compiles
around the call.
"""
import sys

_MODULES = ("torch._library.triton", "torch.library")
_patched = {}  # module name -> torch's own wrap_triton


def _is_tessera_kernel(obj):
    from ..autotune import Autotuner, Heuristics
    from ..jit import JITFunction
    return isinstance(obj, (JITFunction, Autotuner, Heuristics))


def _front(original):
    def wrap_triton(triton_kernel, /):
        if _is_tessera_kernel(triton_kernel):
            return triton_kernel
        return original(triton_kernel)

    wrap_triton.__doc__ = original.__doc__
    wrap_triton.__wrapped__ = original
    wrap_triton.__tessera_front__ = True
    return wrap_triton


def patch_loaded():
    """Puts the front on the torch modules loaded by now; True once every one of them has it."""
    for name in _MODULES:
        module = sys.modules.get(name)
        if module is None or name in _patched:
            continue
        original = getattr(module, "wrap_triton", None)
        if original is None:
            continue
        if getattr(original, "__tessera_front__", False):
            _patched[name] = original.__wrapped__
            continue
        _patched[name] = original
        module.wrap_triton = _front(original)
    return len(_patched) == len(_MODULES)


def unpatch():
    """Gives torch its own wrap_triton back (uninstall())."""
    for name, original in _patched.items():
        module = sys.modules.get(name)
        if module is not None and getattr(getattr(module, "wrap_triton", None), "__wrapped__", None) is original:
            module.wrap_triton = original
    _patched.clear()
