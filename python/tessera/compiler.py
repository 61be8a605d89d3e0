"""Compiling without launching: tessera.compile() and the CompiledKernel
(_compiled_kernel.py) it (and JITFunction.warmup) returns.

    k = tessera.compile(add_kernel, signature="*fp32:16,*fp32:16,*fp32:16,i32",
                        constexprs={"BLOCK_SIZE": 1024}, num_warps=4, target="sm_90a")
    k.asm["ptx"]            # also "ast", "ir", "ir-opt" (alias "ttgir"), "llvm" (alias "llir"),
                            # "cuda" (the CUDA C++ of the nvrtc back-end: backend="nvrtc")
    k.metadata.shared       # dynamic shared memory in bytes; .num_warps, .name, .target ...
    k.n_regs                # loads it on the current GPU first
    k[(blocks,)](x, y, out, n)   # launch with exactly this specialisation

Compiling needs no GPU; only loading and launching do.
"""
import os

from . import _compose, _ext
from ._compiled_kernel import CompiledKernel
from .jit import JITFunction, _check_backend, compose


def compile(fn, signature, constexprs=None, num_warps=4, num_stages=3, target="sm_90a", kernel=None,
            backend=None, maxnreg=None):
    """Compiles one specialisation of a kernel to PTX without launching it (no GPU needed).

    fn: a @tessera.jit function, or the path of a kernel file (then `kernel` names the function).
    signature: "*fp32:16,*fp32:16,i32" (one entry per non-constexpr parameter) or a list of entries.
    constexprs: {"BLOCK_SIZE": 1024, ...}; target: sm_80 ... sm_90a, or "" for the current GPU's.
    backend: "llvm" or "nvrtc" (docs/nvrtc.md); None: the @jit function's, else TESSERA_BACKEND, else llvm.
    maxnreg: at most this many registers a thread (PTX .maxnreg, 16..255), e.g. to keep two CTAs
    on an SM; None: ptxas's choice.
    Raises CompilationError for errors in the kernel, ValueError for a bad signature or option.
    """
    C = _ext.require()
    backend = _check_backend(backend)
    if isinstance(fn, (str, os.PathLike)):
        if not kernel:
            raise TypeError("tessera.compile(path, ...) needs kernel='name of the @jit function'")
        path = os.fspath(fn)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        first_line, name = 1, kernel
    else:
        if not isinstance(fn, JITFunction):
            if callable(fn) and hasattr(fn, "__code__"):
                fn = JITFunction(fn)
            else:
                raise TypeError(f"tessera.compile() takes a @tessera.jit function or a file path, not {fn!r}")
        functions = {k: v for k, v in (constexprs or {}).items() if not isinstance(v, (bool, int, float, str))
                     and v is not None and _compose.as_jit(v) is not None}
        if functions:  # @jit functions as constexprs: the kernel composed with them (_compose.py)
            fn = compose(fn, functions)
            constexprs = {**constexprs, **_compose.function_constexprs(functions)}
        text, path, first_line = fn._source()
        name = kernel or fn.__name__
        backend = backend or fn.backend
    return CompiledKernel(C.compile(text, path, first_line, name, signature, constexprs or {},
                                    num_warps, num_stages, target or "", backend, maxnreg or 0))

