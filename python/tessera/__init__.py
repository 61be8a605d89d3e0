"""tessera: a JIT compiler for block-level GPU kernels written in Triton's syntax.

Kernels are compiled by tessera's C++ front-end (no Python in the compile
path). This package gives kernel files the names they import; the compiled
extension (tessera._C, loaded by _ext.py; _loader.py says where it is looked
for) adds compilation and launching:

    @tessera.jit                      # jit.py
    kernel[grid](*args, **meta)       # launch (C++: bind, specialise, cache, launch) -> its CompiledKernel
    kernel.warmup(*args, **meta)      # compile only
    tessera.compile(kernel, signature="*fp32:16,i32", constexprs={...})   # compiler.py
    tessera.TensorDescriptor(x, shape, strides, block_shape)   # a TMA descriptor argument (tensor_descriptor.py)

Errors: errors.py (CompilationError, DriverError, ...).
Benchmarks: testing.py (Triton's triton.testing: do_bench, perf_report, assert_close).
Running programs written for Triton unchanged: compat/ (`import triton` gives tessera).
"""
from . import errors
from .errors import (CompilationError, DriverError, DriverNotFoundError, InterpreterError, LaunchError,
                     OutOfResources, TesseraError)
from . import _ext
from ._ext import C as _C, load_error as _C_error  # tessera._C: the extension, or None without it

from .jit import JITFunction, jit
# @autotune / @heuristics / Config (autotune.py; `from tessera.autotune import do_bench` for the timer).
# Imported now: `tessera.autotune` names the decorator, which a lazy name would lose to the
# submodule the first time something imports tessera.autotune.
from .autotune import Autotuner, Config, Heuristics, autotune, heuristics  # noqa: E402

# The rest is imported on first use (a module __getattr__), so that `import tessera` costs what a
# kernel's launch needs and no more (a warm start in a new process pays for every import):
# name -> (module, attribute in it; None: the module itself). No name here may be a submodule's
# name unless it is that submodule.
_LAZY = {
    "language": (".language", None),
    "runtime": (".runtime", None),  # Triton's triton.runtime.driver spellings
    "testing": (".testing", None),  # Triton's triton.testing: do_bench, perf_report, assert_close
    "compile": (".compiler", "compile"),
    "CompiledKernel": (".compiler", "CompiledKernel"),
    # @tessera.elementwise / tessera.fuse: fused elementwise kernels (fusion.py, docs/fusion.md)
    "ElementwiseFunction": (".fusion", "ElementwiseFunction"),
    "elementwise": (".fusion", "elementwise"),
    "fuse": (".fusion", "fuse"),
    # TMA tensor descriptor arguments: tensordesc<DTYPE[block]> parameters (docs/runtime.md)
    "TensorDescriptor": (".tensor_descriptor", "TensorDescriptor"),
    "TensorWrapper": (".tensor_wrapper", "TensorWrapper"),  # Triton's triton.reinterpret
    "reinterpret": (".tensor_wrapper", "reinterpret"),
}


def __getattr__(name):
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'tessera' has no attribute {name!r}")
    import importlib
    module = importlib.import_module(where[0], __name__)
    value = module if where[1] is None else getattr(module, where[1])
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "jit", "JITFunction", "language", "cdiv", "next_power_of_2", "compile", "CompiledKernel",
    "CompilationError", "InterpreterError", "DriverError", "DriverNotFoundError", "LaunchError", "TesseraError",
    "OutOfResources", "runtime", "testing", "driver_available", "device_count", "synchronize",
    "autotune", "heuristics", "Config", "Autotuner", "Heuristics", "elementwise", "fuse", "ElementwiseFunction",
    "TensorDescriptor", "TensorWrapper", "reinterpret", "set_allocator",
]
__version__ = "0.1.0"


def cdiv(x, y):
    """Ceiling division, usable on the host (e.g. in grid lambdas) and in kernels."""
    return (x + y - 1) // y


def next_power_of_2(n):
    """The smallest power of 2 >= n (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


_allocator = [None]


def set_allocator(allocator):
    """Triton's hook for the global scratch memory some kernels ask for (allocator(size, alignment,
    stream) -> a tensor; triton.set_allocator is this function). tessera's kernels need no global
    scratch (tl.make_tensor_descriptor becomes masked loads and stores, docs/tma.md): it is kept,
    never called."""
    _allocator[0] = allocator


def driver_available():
    """True when a CUDA driver is loaded and initialised (never raises)."""
    return _C is not None and _C.driver_available()


def device_count():
    return _ext.require().device_count()


def synchronize(device=-1):
    """Waits for all work on the device (the current one by default)."""
    _ext.require().synchronize(device)
