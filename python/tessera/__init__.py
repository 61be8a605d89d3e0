"""tessera: a JIT compiler for block-level GPU kernels written in Triton's syntax.

Kernels are compiled by tessera's C++ front-end (no Python in the compile
path). This package gives kernel files the names they import; the compiled
extension (tessera._C) adds compilation and launching.
"""
from . import language
from .jit import JITFunction, jit

__all__ = ["jit", "JITFunction", "language", "cdiv"]
__version__ = "0.1.0"


def cdiv(x, y):
    """Ceiling division, usable on the host (e.g. in grid lambdas) and in kernels."""
    return (x + y - 1) // y
