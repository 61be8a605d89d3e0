"""The `triton` package of tessera's compatibility mode (tessera.compat, docs/compatibility.md).

Triton's top-level names, each one tessera's own object: triton.jit is tessera.jit,
triton.language is tessera.language, triton.testing is tessera.testing, ...
"""
from tessera import (Config, JITFunction, TensorWrapper, autotune, cdiv, heuristics, jit, language, next_power_of_2,
                     reinterpret, set_allocator, testing)
from tessera.autotune import KernelInterface
from tessera.errors import CompilationError, InterpreterError, OutOfResources
from tessera.errors import TesseraError as TritonError

from . import backends, compiler, errors, knobs, runtime
from .compiler import compile

# The Triton release whose language and API tessera follows.
__version__ = "3.6.0"

__all__ = [
    "autotune", "cdiv", "compile", "CompilationError", "Config", "heuristics", "InterpreterError", "jit", "JITFunction",
    "KernelInterface", "knobs", "language", "next_power_of_2", "OutOfResources", "reinterpret", "runtime", "set_allocator",
    "TensorWrapper",
    "TritonError", "testing",
]
