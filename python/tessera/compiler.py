"""Compiling without launching: tessera.compile() and the CompiledKernel
(_compiled_kernel.py) it (and JITFunction.warmup) returns.

    k = tessera.compile(add_kernel, signature="*fp32:16,*fp32:16,*fp32:16,i32",
                        constexprs={"BLOCK_SIZE": 1024}, num_warps=4, target="sm_90a")
    k.asm["ptx"]            # also "ast", "ir", "ir-opt", "llvm" (alias "llir"; no "ttir"/"ttgir"),
                            # "cuda" (the CUDA C++ of the nvrtc back-end: backend="nvrtc")
    k.metadata.shared       # dynamic shared memory in bytes; .num_warps, .name, .target ...
    k.n_regs                # loads it on the current GPU first (no driver: ptxas -v's count)
    k[(blocks,)](x, y, out, n)   # launch with exactly this specialisation

Compiling needs no GPU; only loading and launching do.
"""
import os

from . import _ext, _function_args
from ._compiled_kernel import CompiledKernel
from .errors import describe_value
from .jit import JITFunction, _check_backend, compose


def compile(fn, signature, constexprs=None, num_warps=4, num_stages=3, target="sm_90a", kernel=None,
            backend=None, maxnreg=None, enable_fp_fusion=None, debug=False, _assemble_for=""):
    """Compiles one specialisation of a kernel to PTX without launching it (no GPU needed).

    fn: a @tessera.jit function (also under @autotune / @heuristics: their constexprs are not applied,
    give them in `constexprs`), or the path of a kernel file (then `kernel` names the function).
    signature: "*fp32:16,*fp32:16,i32" (one entry per non-constexpr parameter) or a list of entries; a tuple
        argument's entry as Triton spells it, "(*fp32:16,(i32,None),4)" (types passed at run time, other
        elements constexprs).
    constexprs: {"BLOCK_SIZE": 1024, ...}; target: sm_80 ... sm_90a, or "" for the current GPU's.
    backend: "llvm" or "nvrtc" (docs/nvrtc.md); None: the @jit function's, else TESSERA_BACKEND, else llvm.
    maxnreg: at most this many registers a thread (PTX .maxnreg, 16..255), e.g. to keep two CTAs
    on an SM; None: ptxas's choice.
    enable_fp_fusion: a * b + c as one fused multiply-add (None: TESSERA_FP_FUSION, default on);
    debug: tl.device_assert is checked (as TESSERA_DEBUG=1).
    _assemble_for: the device architecture ("sm_90") whose ptxas run the caller asks for next
    (CompiledKernel._h.assemble): on a cache miss ptxas starts while the kernel compiles.
    Raises CompilationError for errors in the kernel, ValueError for a bad signature or option.
    """
    _check_options(signature, constexprs, num_warps, num_stages, target, kernel, maxnreg)
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
        while not isinstance(fn, JITFunction) and not hasattr(fn, "__code__") and hasattr(fn, "fn"):
            fn = fn.fn  # @autotune / @heuristics wrappers: the @jit function under them
        if not isinstance(fn, JITFunction):
            if callable(fn) and hasattr(fn, "__code__"):
                fn = JITFunction(fn)
            else:
                raise TypeError(f"tessera.compile() takes a @tessera.jit function or a file path, not {fn!r}")
        functions = {k: v for k, v in (constexprs or {}).items() if not isinstance(v, (bool, int, float, str))
                     and v is not None and _function_args.as_jit(v) is not None}
        if functions:  # @jit functions as constexprs: the kernel composed with them (_compose.py)
            fn = compose(fn, functions)
            constexprs = {**constexprs, **_function_args.function_constexprs(functions)}
        text, path, first_line = fn._source()
        name = kernel or fn.__name__
        constexprs = {**_constexpr_defaults(fn), **(constexprs or {})}
        backend = backend or fn.backend
    return CompiledKernel(C.compile(text, path, first_line, name, signature, constexprs or {},
                                    num_warps, num_stages, target or "", backend, maxnreg or 0,
                                    -1 if enable_fp_fusion is None else int(bool(enable_fp_fusion)), bool(debug),
                                    _assemble_for))



def _constexpr_defaults(fn):
    """The values of the kernel's constexpr parameters' defaults, as a launch passes them: a default
    the front-end cannot evaluate from the text (vLLM's `FP8_MIN: tl.constexpr = float8_info.min`,
    from torch.finfo) then compiles as it launches."""
    from . import language as tl
    defaults = fn._defaults()
    return {p.name: defaults[p.name] for p in fn.params if p.is_constexpr and p.name in defaults
            and isinstance(defaults[p.name], (bool, int, float, str, tl.dtype))}


def _is_int(value):
    return hasattr(type(value), "__index__") and not isinstance(value, bool)  # int, numpy ints


def _check_options(signature, constexprs, num_warps, num_stages, target, kernel, maxnreg):
    """Each argument of compile() has the type it needs, else a TypeError naming it (not the
    extension's list of overloads)."""
    def wrong(what, value):
        return TypeError(f"tessera.compile(): {what}, got {describe_value(value)}")
    if isinstance(signature, (list, tuple)):
        for i, entry in enumerate(signature):
            if not isinstance(entry, str):
                raise wrong(f'signature[{i}] must be a string like "*fp32:16" or "i32"', entry)
    elif not isinstance(signature, str):
        raise wrong('signature must be a string like "*fp32:16,i32" or a list of such entries', signature)
    if constexprs is not None:
        if not isinstance(constexprs, dict):
            raise wrong("constexprs must be a dict {name: value}", constexprs)
        for name in constexprs:
            if not isinstance(name, str):
                raise wrong("constexprs' keys must be parameter names (strings)", name)
    if not _is_int(num_warps):
        raise wrong("num_warps must be an int (a power of 2 between 1 and 32)", num_warps)
    if not 1 <= num_warps <= 32:  # (the power of 2 is checked by the compiler)
        raise ValueError(f"num_warps must be a power of 2 between 1 and 32, got {num_warps}")
    if not _is_int(num_stages):
        raise wrong("num_stages must be an int", num_stages)
    if not 1 <= num_stages < 2 ** 31:
        raise ValueError(f"tessera.compile(): num_stages must be a positive int, got {num_stages}")
    if target is not None and not isinstance(target, str):
        raise wrong('target must be a string like "sm_90a" ("" or None: the current GPU\'s)', target)
    if kernel is not None and not isinstance(kernel, str):
        raise wrong("kernel must be the name of a @jit function (a string)", kernel)
    if maxnreg is not None and not _is_int(maxnreg):
        raise wrong("maxnreg must be an int (16..255) or None", maxnreg)
    if maxnreg is not None and not (maxnreg == 0 or 16 <= maxnreg <= 255):
        raise ValueError(f"maxnreg must be between 16 and 255 registers a thread (or 0: no limit), got {maxnreg}")
