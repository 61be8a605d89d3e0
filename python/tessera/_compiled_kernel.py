"""CompiledKernel: one specialisation of a kernel, compiled to PTX, as tessera.compile()
(compiler.py) and JITFunction.warmup (jit.py) return it. It wraps the extension's
tessera._C.CompiledKernel; compiler.py's docstring shows what it offers."""
import types


class CompiledKernel:
    """One specialisation of a kernel, compiled to PTX."""

    def __init__(self, handle):
        self._h = handle  # tessera._C.CompiledKernel
        self.name = handle.name
        self.metadata = types.SimpleNamespace(
            name=handle.name, num_warps=handle.num_warps, num_stages=handle.num_stages,
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
