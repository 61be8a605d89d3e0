"""CompiledKernel: one specialisation of a kernel, compiled to PTX, as tessera.compile()
(compiler.py) and JITFunction.warmup (jit.py) return it. It wraps the extension's
tessera._C.CompiledKernel; compiler.py's docstring shows what it offers."""
import collections
import types


class _Stages(dict):
    """asm: the text of each stage. Triton's "ttir"/"ttgir" are MLIR dialects that tessera does not
    have; code that parses them would misread tessera's IR, so they are missing, with a message."""

    def __missing__(self, key):
        if key in ("ttir", "ttgir"):
            raise KeyError(f"{key!r}: Triton's MLIR dialect text has no tessera equivalent; tessera's "
                           f"stages are {', '.join(sorted(self))} ('ir' and 'ir-opt' are tessera's block IR)")
        raise KeyError(key)


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
            asm = _Stages(self._h.asm())
            asm["llir"] = asm["llvm"]  # Triton's name for the LLVM IR
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
