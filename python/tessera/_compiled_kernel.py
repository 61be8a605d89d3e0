"""CompiledKernel: one specialisation of a kernel, compiled to PTX, as tessera.compile()
(compiler.py) and JITFunction.warmup (jit.py) return it, and as every launch returns the
specialisation it ran (`pgm = kernel[grid](...)`, `kernel.run(...)`: Triton's JITFunction.run
returns its CompiledKernel). It wraps the extension's tessera._C.CompiledKernel;
compiler.py's docstring shows what it offers.

Triton's attributes (triton/compiler/compiler.py), and how exact each one is here:
  name, asm["ptx"], asm["llir"]   the PTX that runs, the LLVM IR; tessera's own stages "ast",
      "ir", "ir-opt", "llvm", "cuda"; "cubin" (bytes) on first use. "ttir" / "ttgir" (Triton's
      MLIR dialects) have no tessera equivalent: a KeyError naming the stages.
  metadata.num_warps, .num_stages, .shared, .maxnreg, .enable_fp_fusion   exact (num_warps
      counts a producer warpgroup when the kernel has one, as Triton's does).
  metadata.hash   sha256 of the PTX (Triton's hashes its compile inputs: a different
      string, the same use: equal for the same code).
  metadata.ptx_version   from the PTX's .version line (8.4 -> 84, as Triton's).
  metadata.target   the arch string ("sm_90a"), with Triton's GPUTarget attributes
      .backend ("cuda"), .arch (90) and .warp_size (32).
  metadata.num_ctas, .warp_size, .tmem_size, .global_scratch_size, ...   the constants
      tessera's kernels have (one CTA, no cluster, tensor memory or scratch).
  packed_metadata   (num_warps, num_ctas, shared), as Triton's CUDA back-end packs it.
  n_regs, n_spills, n_max_threads   the loaded function's attributes, as Triton reads them
      (CU_FUNC_ATTRIBUTE_NUM_REGS; LOCAL_SIZE_BYTES / 4: local memory in 32-bit words,
      local arrays included, not only spills; MAX_THREADS_PER_BLOCK): exact. They load the
      kernel on the current GPU if nothing has; without a CUDA driver they come from
      `ptxas -v` for metadata.target when a ptxas is found (the same numbers when the
      runtime's JIT is ptxas, its default; the driver's JIT may allocate differently).
"""
import collections
import functools
import os
import re
import types

from . import _env
from .errors import DriverNotFoundError


class GPUTarget(str):
    """metadata.target: the arch string ("sm_90a"), with Triton's GPUTarget fields."""

    backend = "cuda"
    warp_size = 32

    @property
    def arch(self):
        """The compute capability as an int (sm_90a -> 90), as Triton's GPUTarget.arch."""
        digits = re.search(r"\d+", self)
        return int(digits.group()) if digits else 0


def _ptx_version(ptx):
    """`.version 8.4` -> 84 (Triton's metadata.ptx_version)."""
    m = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", ptx, re.M)
    return int(m.group(1)) * 10 + int(m.group(2)) if m else None


class _Stages(dict):
    """asm: the text of each stage; "cubin" is made on first use (Triton's AsmDict makes "sass"
    that way). Triton's "ttir"/"ttgir" are MLIR dialects that tessera does not have; code that
    parses them would misread tessera's IR, so they are missing, with a message."""

    def __init__(self, stages, kernel):
        super().__init__(stages)
        self._kernel = kernel

    def __missing__(self, key):
        if key == "cubin":
            value = self[key] = self._kernel._cubin()
            return value
        if key in ("ttir", "ttgir"):
            raise KeyError(f"{key!r}: Triton's MLIR dialect text has no tessera equivalent; tessera's "
                           f"stages are {', '.join(sorted(self))} ('ir' and 'ir-opt' are tessera's block IR)")
        raise KeyError(key)


class CompiledKernel:
    """One specialisation of a kernel, compiled to PTX."""

    def __init__(self, handle, name=None):
        # Made by a specialisation's first launch, a warm start's included: everything else
        # (metadata's PTX hash and regex, asm, the cubin) is computed on first use.
        self._h = handle  # tessera._C.CompiledKernel
        self.name = name or handle.name  # a @jit(repr=fn) kernel's name comes from fn
        self.backend = handle.backend
        self._asm = None
        self._attributes = None

    @functools.cached_property
    def metadata(self):
        import hashlib
        handle = self._h
        ptx = handle.ptx
        fp_fusion = handle.enable_fp_fusion
        return types.SimpleNamespace(
            name=self.name, hash=hashlib.sha256(ptx.encode()).hexdigest(),
            num_warps=handle.num_warps, num_ctas=1, num_stages=handle.num_stages, warp_size=32,
            maxnreg=handle.maxnreg, shared=handle.shared, target=GPUTarget(handle.arch), arch=handle.arch,
            ptx_version=_ptx_version(ptx),
            enable_fp_fusion=_env.on_unless_zero("TESSERA_FP_FUSION") if fp_fusion is None else fp_fusion,
            backend_name="cuda", tmem_size=0, global_scratch_size=0, global_scratch_align=1,
            profile_scratch_size=0, profile_scratch_align=1, launch_cooperative_grid=False, launch_pdl=False,
            signature=handle.signature, constexprs=handle.constexprs, backend=handle.backend)

    @functools.cached_property
    def hash(self):
        return self.metadata.hash

    @functools.cached_property
    def packed_metadata(self):
        return (self.metadata.num_warps, self.metadata.num_ctas, self.metadata.shared)

    @property
    def asm(self):
        if self._asm is None:
            asm = _Stages(self._h.asm(), self)
            asm["llir"] = asm["llvm"]  # Triton's name for the LLVM IR
            self._asm = asm
        return self._asm

    @property
    def signature(self):
        return self._h.signature

    def _init_handles(self, device=-1):
        """Links the PTX and loads it on the (current) GPU; fills n_regs, n_spills.
        Without a CUDA driver: ptxas -v's numbers (see the module's docstring)."""
        if self._attributes is None:
            try:
                self._attributes = self._h.load(device)
            except DriverNotFoundError:
                self._attributes = _ptxas_attributes(self._h.ptx, self._h.arch, self.name)
        return self._attributes

    @property
    def n_regs(self):
        return self._init_handles()["n_regs"]

    @property
    def n_spills(self):
        """Local memory per thread in 32-bit words (Triton's n_spills: LOCAL_SIZE_BYTES / 4)."""
        return self._init_handles()["n_spills"] // 4

    @property
    def n_max_threads(self):
        return self._init_handles()["max_threads_per_block"]

    def _cubin(self):
        attributes = self._init_handles()
        cubin = attributes.get("cubin") or self._h.cubin()  # ptxas's without a driver, else the loaded one
        if not cubin:  # the driver compiled the PTX itself (TESSERA_JIT=whole): none was kept
            cubin = _ptxas_attributes(self._h.ptx, self._h.arch, self.name)["cubin"]
        return cubin

    @property
    def cubin(self):
        return self._cubin()

    @property
    def kernel(self):
        """The binary (Triton's CompiledKernel.kernel: asm["cubin"])."""
        return self.asm["cubin"]

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


def _ptxas_attributes(ptx, arch, name):
    """n_regs and local bytes of `ptx` from `ptxas -v` (no driver to load it); the cubin too."""
    import shutil  # here: `import tessera` does not pay for what only machines without a driver use
    import subprocess
    import tempfile
    homes = [home for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda") if home]
    tool = os.environ.get("TESSERA_PTXAS") or next(
        (p for p in (os.path.join(home, "bin", "ptxas") for home in homes) if os.access(p, os.X_OK)), None) or \
        shutil.which("ptxas")
    if not tool:
        raise RuntimeError(f"{name}: n_regs and n_spills need a CUDA driver (to load the kernel) or a ptxas "
                           "(TESSERA_PTXAS, CUDA_HOME/bin, /usr/local/cuda/bin or PATH); neither was found")
    with tempfile.TemporaryDirectory(prefix="tessera-ptxas-") as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        proc = subprocess.run([tool, "-v", f"-arch={arch}", src, "-o", out], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{name}: ptxas -arch={arch} failed ({proc.returncode}): {proc.stderr.strip()}")
        with open(out, "rb") as f:
            cubin = f.read()
    info = proc.stdout + proc.stderr
    regs, stack = re.search(r"Used (\d+) registers", info), re.search(r"(\d+) bytes stack frame", info)
    return {"device": None, "n_regs": int(regs.group(1)) if regs else 0,
            "n_spills": int(stack.group(1)) if stack else 0, "max_threads_per_block": 1024, "cubin": cubin,
            "source": "ptxas"}


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

    def entry():
        ty, _, hint = next(entries, "").partition(":")
        return ("constexpr", 1) if hint == "1" and not ty.startswith("*") else (ty, None)

    def leaves(value):
        """A tuple argument's types: its runtime leaves (... in its shape) take entries, others are constexprs."""
        if isinstance(value, tuple):
            return tuple(leaves(v) for v in value)
        return entry()[0] if value is ... else "constexpr"

    sig, constants = {}, {}
    for name, is_constexpr, _ in params:
        if is_constexpr:
            sig[name] = "constexpr"
            if name in constexprs:
                constants[name] = constexprs[name]
            continue
        if name in constexprs:  # a runtime parameter given None (no entry) or a tuple (an entry per runtime leaf)
            value = constexprs[name]
            sig[name] = leaves(value) if isinstance(value, tuple) else "constexpr"
            if value is None:
                constants[name] = None
            continue
        ty, constant = entry()
        sig[name] = ty
        if constant is not None:
            constants[name] = constant
    return SpecializationProxy(constants, sig)
