"""The C++ extension tessera._C, loaded once when tessera is imported.

    from . import _ext
    _ext.C                 # the extension module, or None when it could not be imported
    _ext.load_error        # the ImportError when it could not, else None
    _ext.require()         # the extension, or ImportError saying how to build it
    _ext.JitFunctionBase   # JITFunction's base class (kernel[grid] in C)

_loader.py says where the extension is looked for. Importing tessera never
fails because it is missing: what needs it calls require(). The package keeps
the names it always had: tessera._C and tessera._C_error.
"""
import sys

from . import _loader

C, load_error = _loader.load(sys.modules[__package__])
if C is not None:
    _loader.add_nvrtc_wheel_directories(C)
    if "torch" in sys.modules:  # the launch path's torch fast path loads with the extension, not at the
        C.load_torch_fastpath()  # first launch (~0.5 ms of dlopen: docs/runtime.md, "The torch fast path")


def require():
    """The extension module; ImportError (saying how to build it) without one."""
    if C is None:
        raise ImportError(_loader.missing_message(load_error))
    return C


if C is not None:
    JitFunctionBase = C.JitFunctionBase  # kernel[grid] in C: _subscript once, then self._direct
else:
    class JitFunctionBase:
        """Without the extension: kernel[grid] asks _subscript every time."""
        __slots__ = ()
        _direct = None

        def __getitem__(self, grid):
            return self._subscript(grid)
