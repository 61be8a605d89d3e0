"""Compiling without launching: tessera.compile() and the CompiledKernel it
(and JITFunction.warmup) returns.

    k = tessera.compile(add_kernel, signature="*fp32:16,*fp32:16,*fp32:16,i32",
                        constexprs={"BLOCK_SIZE": 1024}, num_warps=4, target="sm_90a")
    k.asm["ptx"]            # also "ast", "ir", "ir-opt" (alias "ttgir"), "llvm" (alias "llir"),
                            # "cuda" (the CUDA C++ of the nvrtc back-end: backend="nvrtc")
    k.metadata.shared       # dynamic shared memory in bytes; .num_warps, .name, .target ...
    k.n_regs                # loads it on the current GPU first
    k[(blocks,)](x, y, out, n)   # launch with exactly this specialisation

Compiling needs no GPU; only loading and launching do.
"""
import collections
import os
import types

from .jit import JITFunction, _ext


class CompiledKernel:
    """One specialisation of a kernel, compiled to PTX."""

    def __init__(self, handle, name=None):
        self._h = handle  # tessera._C.CompiledKernel
        self.name = name or handle.name  # a @jit(repr=fn) kernel's name comes from fn
        self.metadata = types.SimpleNamespace(
            name=self.name, num_warps=handle.num_warps, num_stages=handle.num_stages,
            shared=handle.shared, target=handle.arch, arch=handle.arch, signature=handle.signature,
            constexprs=handle.constexprs, backend=handle.backend)
        self.backend = handle.backend
        self._asm = None
        self._attributes = None

    @property
    def asm(self):
        if self._asm is None:
            asm = dict(self._h.asm())
            asm["ttir"] = asm["ir"]
            asm["ttgir"] = asm["ir-opt"]
            asm["llir"] = asm["llvm"]
            self._asm = asm
        return self._asm

    @property
    def signature(self):
        return self._h.signature

    def _init_handles(self, device=-1):
        """Links the PTX and loads it on the (current) GPU; fills n_regs, n_spills."""
        if self._attributes is None:
            self._attributes = self._h.load(device)
        return self._attributes

    @property
    def n_regs(self):
        return self._init_handles()["n_regs"]

    @property
    def n_spills(self):
        return self._init_handles()["n_spills"]

    @property
    def cubin(self):
        self._init_handles()
        return self._h.cubin()

    def __getitem__(self, grid):
        """k[grid](*args): args are the runtime arguments, or all parameters (constexprs ignored)."""
        def launch(*args, stream=None):
            self._h.launch(grid, args, stream)
        return launch

    def run(self, grid, *args, stream=None):
        self._h.launch(grid, args, stream)

    def __repr__(self):
        return (f"CompiledKernel({self.name}, signature={self.signature!r}, constexprs={self.metadata.constexprs}, "
                f"num_warps={self.metadata.num_warps}, target={self.metadata.target})")


SpecializationProxy = collections.namedtuple("SpecializationProxy", ["constants", "signature"])


def _split_signature(text):
    """'i32,*fp32:16,tensordesc<bf16[128,64]>' -> its entries (commas inside <> and [] stay)."""
    entries, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "<[" and 1 or ch in ">]" and -1 or 0
        if ch == "," and depth == 0:
            entries.append(text[start:i])
            start = i + 1
    if text:
        entries.append(text[start:])
    return entries


def specialization_proxy(params, signature, constexprs):
    """What Triton passes to @jit(repr=fn): .signature maps each parameter to its type ("i32",
    "*fp32"; "constexpr" for constexprs and for ints specialised to 1), .constants maps the
    constexprs and the ints specialised to 1 to their values."""
    entries = iter(_split_signature(signature))
    sig, constants = {}, {}
    for name, is_constexpr, _ in params:
        if is_constexpr:
            sig[name] = "constexpr"
            if name in constexprs:
                constants[name] = constexprs[name]
            continue
        ty, _, hint = next(entries, "").partition(":")
        if hint == "1" and not ty.startswith("*"):
            sig[name], constants[name] = "constexpr", 1
        else:
            sig[name] = ty
    return SpecializationProxy(constants, sig)


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
    from .jit import _check_backend
    C = _ext()
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
                     and v is not None and _as_jit(v) is not None}
        if functions:  # @jit functions as constexprs: the kernel composed with them (_compose.py)
            from . import _compose
            fn = _compose.compose(fn, functions)
            constexprs = {**constexprs, **_compose.function_constexprs(functions)}
        text, path, first_line = fn._source()
        name = kernel or fn.__name__
        backend = backend or fn.backend
    return CompiledKernel(C.compile(text, path, first_line, name, signature, constexprs or {},
                                    num_warps, num_stages, target or "", backend, maxnreg or 0))


def _as_jit(value):
    from ._compose import as_jit
    return as_jit(value)
