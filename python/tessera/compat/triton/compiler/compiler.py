"""triton.compiler.compiler in tessera's compatibility mode: Triton's compiler API, as torch.compile's
Inductor drives it (docs/torch-compile.md has the whole contract and what is not supported).

    src = ASTSource(fn, {"in_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"},
                    {"XBLOCK": 1024}, {(0,): [["tt.divisibility", 16]]})
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_stages": 1})
    k.run(grid_0, grid_1, grid_2, stream, k.function, k.packed_metadata, None, None, None, *all_args)

compile() translates Triton's specialisation into tessera's (one signature entry a runtime
parameter, `:16` for tt.divisibility, `i32:1` for an int specialised to 1, None as the constexpr
None) and compiles with tessera.compile. The CompiledKernel keeps only picklable state in its
__dict__ (Inductor pickles that dict from its compile workers, with `module`, `function` and `run`
set to None, and rebuilds the object with CompiledKernel.__new__ + __dict__.update): the recipe
to compile again, which the kernel cache answers, and _init_handles() loads it on the GPU.
"""
import collections
import functools
import hashlib

from tessera import _ext
from tessera import compiler as _compiler
from tessera._compiled_kernel import CompiledKernel as _TesseraKernel
from tessera._compiled_kernel import _ptxas_attributes
from tessera.errors import TesseraError
from tessera.runtime.driver import GPUTarget

from .. import knobs
from ..runtime.errors import PTXASError

# Triton's metadata fields (CUDAOptions and the compiler's additions) that Inductor and libraries read.
KernelMetadata = collections.namedtuple("KernelMetadata", [
    "name", "hash", "target", "num_warps", "num_ctas", "num_stages", "cluster_dims", "maxnreg",
    "enable_fp_fusion", "launch_cooperative_grid", "launch_pdl", "debug", "sanitize_overflow", "arch",
    "ptx_version", "backend_name", "shared", "tmem_size", "global_scratch_size", "global_scratch_align",
    "profile_scratch_size", "profile_scratch_align", "warp_size"])


class ASTSource:
    """A @jit function and its specialisation, as Triton's ASTSource holds them: `signature` maps
    every parameter's name to its type ("*fp32", "i32", "constexpr"), `constants` the constexprs
    (keys given as names become Triton's `(index,)` tuples), `attrs` the properties by index
    (`{(0,): [["tt.divisibility", 16]]}`)."""

    def __init__(self, fn, signature, constexprs=None, attrs=None):
        self.fn = fn
        self.name = fn.__name__
        self.signature = dict(signature)
        for key in self.signature:
            if not isinstance(key, str):
                raise TypeError(f"ASTSource({self.name}): signature keys must be parameter names (strings), "
                                f"got {key!r}")
        self.constants = {}
        for key, value in (constexprs or {}).items():
            if isinstance(key, str):
                if key not in fn.arg_names:
                    raise ValueError(f"ASTSource({self.name}): constexpr '{key}' is not a parameter "
                                     f"(parameters: {', '.join(fn.arg_names)})")
                key = (fn.arg_names.index(key),)
            if not isinstance(key, tuple):
                raise TypeError(f"ASTSource({self.name}): constexpr keys must be names or (index,) tuples, "
                                f"got {key!r}")
            self.constants[key] = value
        self.attrs = dict(attrs or {})

    def hash(self):
        text = f"{self.fn.cache_key}-{sorted(self.signature.items())}-{sorted(self.constants.items(), key=str)}" \
               f"-{sorted(self.attrs.items(), key=str)}"
        return hashlib.sha256(text.encode()).hexdigest()

    def parse_options(self):
        return {}


def _arch_of(target):
    """GPUTarget("cuda", 90, 32) -> "sm_90a" (Triton compiles capability 9.0 for sm_90a); None: the
    current GPU's."""
    if target is None:
        return ""
    backend, arch = target[0], target[1]
    if backend not in ("cuda", "nvidia"):
        raise ValueError(f"triton.compile(): tessera compiles for CUDA GPUs, not for target {target!r}")
    if isinstance(arch, str):
        return arch if arch.startswith("sm_") else f"sm_{arch}"
    return "sm_90a" if int(arch) == 90 else f"sm_{int(arch)}"


def _divisible_and_unit(src):
    """The parameter indices that attrs say are multiples of 16 and equal to 1."""
    divisible, unit = set(), set()
    for key, properties in src.attrs.items():
        if len(key) != 1:
            raise NotImplementedError(f"triton.compile({src.name}): attrs for tuple parameters ({key!r}) are not "
                                      "supported by tessera")
        for name, value in properties:
            if name == "tt.divisibility" and value == 16:
                divisible.add(key[0])
            elif name == "tt.equal_to" and value == 1:
                unit.add(key[0])
            # Other properties (tt.pointer_range) only hint the compiler: tessera ignores them.
    return divisible, unit


def specialisation(src):
    """(tessera signature entries, constexprs) of an ASTSource."""
    fn = src.fn
    names = fn.arg_names
    declared = set(fn.constexprs)
    constants = {}
    for key, value in src.constants.items():
        if len(key) != 1:
            raise NotImplementedError(f"triton.compile({src.name}): constexprs inside tuple parameters ({key!r}) "
                                      "are not supported by tessera")
        constants[names[key[0]]] = value
    divisible, unit = _divisible_and_unit(src)
    entries, constexprs = [], {}
    for i, name in enumerate(names):
        if i in declared:
            if name in constants:
                constexprs[name] = constants[name]
            continue
        ty = src.signature.get(name)
        if ty is None:
            raise ValueError(f"triton.compile({src.name}): the signature has no type for parameter '{name}'")
        if ty == "constexpr":  # a runtime parameter specialised as a constant: None or the int 1
            if name not in constants:
                raise ValueError(f"triton.compile({src.name}): '{name}' is 'constexpr' in the signature but has "
                                 "no value in the constexprs")
            value = constants[name]
            if value is None:
                constexprs[name] = None
            elif value == 1 and isinstance(value, int) and not isinstance(value, bool):
                entries.append("i32:1")
            else:
                raise NotImplementedError(f"triton.compile({src.name}): parameter '{name}' is not a tl.constexpr; "
                                          f"tessera specialises such a parameter to None or 1, not to {value!r}")
            continue
        if ty == "nvTmaDesc":
            raise NotImplementedError(f"triton.compile({src.name}): '{name}' is an nvTmaDesc (Triton's "
                                      "experimental host TMA descriptor), which tessera does not take")
        if i in unit and not ty.startswith("*"):
            entries.append(f"{ty}:1")
        else:
            entries.append(f"{ty}:16" if i in divisible else ty)
    return entries, constexprs


# Options Triton's CUDA back-end knows that change nothing in tessera's kernels (tessera runs every
# program as one CTA; launch_pdl and sanitize_overflow are accepted and have no effect, as for launches).
_NEUTRAL_OPTIONS = {"sanitize_overflow", "launch_pdl", "num_ctas", "cluster_dims", "num_consumer_groups",
                    "num_buffers_warp_spec", "extern_libs"}


def _check_options(name, options):
    if options.get("launch_cooperative_grid"):
        raise NotImplementedError(f"triton.compile({name}): launch_cooperative_grid=True is not supported by the "
                                  "compiled kernel's run() (tessera's kernel[grid](..., "
                                  "launch_cooperative_grid=True) launches cooperatively)")
    if options.get("extern_libs"):
        raise NotImplementedError(f"triton.compile({name}): extern_libs are not supported by tessera")


def compile(src, target=None, options=None, _env_vars=None):
    """Compiles an ASTSource with tessera; returns the compatibility mode's CompiledKernel.
    options: num_warps (4), num_stages (3), maxnreg, enable_fp_fusion, debug; launch_pdl,
    sanitize_overflow, num_ctas are accepted (no effect); other keys are ignored, as Triton does."""
    if not isinstance(src, ASTSource):
        raise TypeError(f"triton.compile() takes an ASTSource (tessera compiles from the kernel's Python source, "
                        f"not from IR files), got {type(src).__name__}")
    options = dict(options or {})
    _check_options(src.name, options)
    entries, constexprs = specialisation(src)
    num_warps = int(options.get("num_warps", 4))
    num_stages = int(options.get("num_stages", 3))
    maxnreg = options.get("maxnreg")
    fp_fusion = options.get("enable_fp_fusion")
    debug = bool(options.get("debug", False))
    arch = _arch_of(target)
    compiled = _compiler.compile(src.fn, signature=entries, constexprs=constexprs, num_warps=num_warps,
                                 num_stages=num_stages, target=arch, maxnreg=maxnreg, enable_fp_fusion=fp_fusion,
                                 debug=debug, _assemble_for=_device_arch(arch))
    text, path, first_line = src.fn._source()
    recipe = {"source": text, "path": path, "first_line": first_line, "name": src.fn.__name__,
              "signature": ",".join(entries), "constexprs": constexprs, "num_warps": num_warps,
              "num_stages": num_stages, "arch": compiled.metadata.arch, "backend": compiled.backend,
              "maxnreg": maxnreg or 0, "fp_fusion": -1 if fp_fusion is None else int(bool(fp_fusion)),
              "debug": debug}
    _assemble(compiled)
    # The PTX itself, not compiled.asm (all stages: a kernel from the disk cache is compiled again for them).
    kernel = CompiledKernel(src, _metadata(compiled, options, debug), compiled._h.ptx, recipe)
    kernel._compiled = compiled
    return kernel


def _device_arch(arch):
    """The GPUs a kernel compiled for `arch` runs on: sm_90 for sm_90a PTX ("": the current GPU's,
    known once compiled)."""
    return arch[:-1] if arch.endswith("a") else arch


def _assemble(compiled):
    """ptxas now, as Triton's compile ends with a cubin: in Inductor's compile workers, in parallel, so
    that the parent process's _init_handles() only loads what the kernel cache holds (ptxas started
    while the kernel compiled: compile()'s _assemble_for). A ptxas failure is Triton's PTXASError
    (Inductor drops that config)."""
    device_arch = _device_arch(compiled.metadata.arch)
    try:
        compiled._h.assemble(device_arch)
    except (RuntimeError, TesseraError) as e:
        raise PTXASError(f"{compiled.name}: {e}") from e


def _metadata(compiled, options, debug):
    md = compiled.metadata
    return KernelMetadata(
        name=md.name, hash=md.hash, target=GPUTarget("cuda", md.target.arch, 32), num_warps=md.num_warps,
        num_ctas=1, num_stages=md.num_stages, cluster_dims=(1, 1, 1), maxnreg=md.maxnreg,
        enable_fp_fusion=md.enable_fp_fusion, launch_cooperative_grid=False,
        launch_pdl=bool(options.get("launch_pdl", False)), debug=debug,
        sanitize_overflow=bool(options.get("sanitize_overflow", False)), arch=md.arch,
        ptx_version=md.ptx_version, backend_name="cuda", shared=md.shared, tmem_size=0, global_scratch_size=0,
        global_scratch_align=1, profile_scratch_size=0, profile_scratch_align=1, warp_size=32)


class _Asm(dict):
    """CompiledKernel.asm: {"ptx": text}; "cubin" is made on first use by ptxas (the binary the
    runtime's JIT makes too). Plain data, so that it pickles."""

    def __init__(self, ptx, arch, name):
        super().__init__(ptx=ptx)
        self.arch, self.name = arch, name

    def __missing__(self, key):
        if key == "cubin":
            value = self[key] = _ptxas_attributes(self["ptx"], self.arch, self.name)["cubin"]
            return value
        raise KeyError(f"{key!r}: the compatibility mode's CompiledKernel.asm has 'ptx' and 'cubin' "
                       "(tessera.compile() gives the other stages)")


class CompiledKernel:
    """A kernel compiled by triton.compile(), with the attributes and the launcher of Triton's
    CompiledKernel that Inductor uses: name, hash, src, metadata (KernelMetadata), packed_metadata
    (num_warps, num_ctas, shared), asm["ptx"] / ["cubin"], kernel (the cubin), function, n_regs,
    n_spills, n_max_threads (after _init_handles()), launch_metadata(grid, stream, *args) and
    run(grid_0, grid_1, grid_2, stream, function, packed_metadata, launch_metadata,
    launch_enter_hook, launch_exit_hook, *args), where args are every parameter of the kernel
    (constexprs included, ignored) or only the runtime ones."""

    # Triton's class attributes, read by code written before triton.knobs (knobs.runtime is read first).
    launch_enter_hook = None
    launch_exit_hook = None

    __slots__ = ("__dict__", "_compiled", "_launch", "_run")

    def __init__(self, src, metadata, ptx, recipe):
        self.src = src
        self.name = metadata.name
        self.hash = metadata.hash
        self.metadata = metadata
        self.packed_metadata = (metadata.num_warps, metadata.num_ctas, metadata.shared)
        self.asm = _Asm(ptx, metadata.arch, metadata.name)
        self._recipe = recipe
        self.module = None  # Triton's handles: None until _init_handles() (Inductor pickles them as None)
        self.function = None

    # Only __dict__ is state: the tessera kernel (_compiled) is made again from the recipe.
    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _tessera_kernel(self):
        try:
            return self._compiled
        except AttributeError:
            pass
        r = self._recipe
        handle = _ext.require().compile(r["source"], r["path"], r["first_line"], r["name"], r["signature"],
                                        r["constexprs"], r["num_warps"], r["num_stages"], r["arch"], r["backend"],
                                        r["maxnreg"], r["fp_fusion"], r["debug"])
        self._compiled = _TesseraKernel(handle)
        return self._compiled

    def _init_handles(self):
        """Loads the kernel on the current GPU (once) and sets n_regs, n_spills, n_max_threads and
        function, as Triton's does; an unpickled kernel is compiled again first (from tessera's kernel
        cache: the compile worker stored it)."""
        try:
            self._launch
            return
        except AttributeError:
            pass
        kernel = self._tessera_kernel()
        self.n_regs = kernel.n_regs
        self.n_spills = kernel.n_spills
        self.n_max_threads = kernel.n_max_threads
        self.function = 0  # run() takes it and ignores it: tessera's launch finds the loaded function itself
        self._run = kernel._h.run_triton_order
        self._launch = kernel._h.launch

    @property
    def run(self):
        """The launcher, with Triton's argument order (the class docstring): one C++ call."""
        self._init_handles()
        return self._run

    @property
    def kernel(self):
        """The binary: asm["cubin"]."""
        return self.asm["cubin"]

    @property
    def num_warps(self):
        return self.metadata.num_warps

    @property
    def shared(self):
        return self.metadata.shared

    def launch_metadata(self, grid, stream, *args):
        """What launch hooks receive (None without a hook, as Triton's)."""
        if knobs.runtime.launch_enter_hook is None and type(self).launch_enter_hook is None:
            return None
        return {"name": self.name, "grid": tuple(grid), "stream": stream, "num_warps": self.metadata.num_warps,
                "shared": self.metadata.shared}

    def __getitem__(self, grid):
        """kernel[grid](*args): launches with the runtime arguments (or all parameters)."""
        def launch(*args, stream=None):
            self._init_handles()
            self._launch(tuple(grid) + (1,) * (3 - len(grid)), args, stream)
        return launch

    def __repr__(self):
        return f"CompiledKernel({self.name}, hash={self.hash[:12]}, metadata={self.metadata})"


@functools.lru_cache(None)
def triton_key():
    """What identifies the compiler (Triton's triton_key(); torch keys its caches with it): tessera's
    version and build."""
    return _ext.require().cache_versions()["compiler"]


def make_backend(target):
    """The back-end for a GPUTarget (torch hashes it into its cache keys: backend.hash())."""
    from ..backends.compiler import CudaBackend
    return CudaBackend(target)


__all__ = ["ASTSource", "CompiledKernel", "KernelMetadata", "compile", "make_backend", "specialisation",
           "triton_key"]
