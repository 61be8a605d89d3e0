"""@tessera.jit: marks a function as a kernel (or a device function it calls).

    @tessera.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr): ...

    add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)            # launch
    add_kernel[lambda meta: (tessera.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, out, n, BLOCK_SIZE=1024)
    add_kernel.warmup(x, y, out, n, BLOCK_SIZE=1024, grid=(1,))  # compile only -> CompiledKernel
    pgm = add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)       # pgm.asm["ptx"], pgm.n_regs, ...

Every launch returns the CompiledKernel (_compiled_kernel.py) of the specialisation it ran,
as Triton's JITFunction.run does: one object per specialisation, made by its first launch
(or warmup) and held by the C++ cache, so a launch returns it without allocating.

`kernel[grid](...)` runs no Python: JITFunction's base class
(tessera._C.JitFunctionBase, python/bindings/FastLaunch.cpp) implements
kernel[grid] in C and the call goes straight to C++, which binds the
arguments, specialises them as Triton does, looks the key up in a per-device
cache, compiles and loads on a miss, and launches on torch's current stream
(when the arguments are torch tensors) on the tensors' device. Python is
asked (JITFunction._subscript) only until the first launch, and always for
interpreted kernels and kernels given @jit functions as constexprs.
Launch options: num_warps (default 4), num_stages (default 3), maxnreg (at most
this many registers a thread, 16..255: PTX .maxnreg; default: ptxas's choice),
stream (an int CUstream or an object with .cuda_stream; default: torch's current
stream, or the legacy default stream without torch).

Back-end: @tessera.jit(backend="nvrtc") makes the kernel's PTX with NVRTC from
generated CUDA C++ instead of LLVM's NVPTX back-end (docs/nvrtc.md); the
default is TESSERA_BACKEND, else "llvm". kernel.backend can be changed later
(compiled specialisations are then dropped).

Interpret mode: @tessera.jit(interpret=True), or TESSERA_INTERPRET=1 in the
environment when the kernel is decorated (interpret=False overrides it), or
setting kernel.interpret = True, makes kernel[grid](...) run the kernel on
the host (tessera._C.Interpreter, compiler/interp/): numpy arrays and torch
CPU tensors are the pointer arguments (written in place), scalars and the
grid are as for GPU launches; no GPU or driver is needed. Out-of-bounds,
misaligned and read-only accesses raise tessera.InterpreterError (a
CompilationError) naming the kernel's line; tl.device_assert is checked
unless the kernel says debug=False.

Kernels from text: SourceKernel(text, name, path) is a JITFunction compiled
from a given source (tessera.elementwise's generated kernels); compose(kernel,
{param: fn}) is a SourceKernel of the kernel's text with @jit functions
appended (_compose.py finds their text), what a launch runs when a constexpr
argument is a @jit function.
"""
import collections
import itertools
import functools
import weakref
import sys

from . import _env, _ext, _function_args, _source_cache
from ._compiled_kernel import CompiledKernel, specialization_proxy
from .errors import describe_value

# A warm start (the kernel's reduction and parameters read from the disk cache) needs neither
# ast nor inspect: what reads a function's source (_compose.py, _source.py, inspect, textwrap)
# is imported by the functions that use it, in the processes that use it.

BACKENDS = ("llvm", "nvrtc")


def _check_backend(backend):
    if backend in (None, ""):
        return ""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)} (or None for TESSERA_BACKEND), "
                         f"got {backend!r}")
    return backend


_patch_counter = itertools.count(1)


def _split_decorators(lines):
    """(the decorator lines, the lines from `def` on) of a function's source lines."""
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("def ", "async def ")):
            return lines[:i], lines[i:]
    return [], lines


def _check_function(fn):
    # The front-end compiles the function's source text, which only a Python function has.
    if not callable(fn) or not hasattr(fn, "__code__"):
        raise TypeError("tessera.jit() takes a Python function (write @tessera.jit above a def), "
                        f"got {describe_value(fn)}")


class JITFunction(_ext.JitFunctionBase):
    def __init__(self, fn, **options):
        _check_function(fn)
        self.fn = fn
        self.options = options
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self._handle = None
        self._launch = None
        self._entry = None  # _source_entry()
        self._reduced = None  # _source_and_dependencies()
        interpret = options.get("interpret")
        self.interpret = _env.flag("TESSERA_INTERPRET") if interpret is None else bool(interpret)
        self._interpreter = None
        self._backend = _check_backend(options.get("backend"))
        # Triton's JITFunction attribute: the global values a kernel read, which Triton checks before
        # reusing a compile. tessera compiles from the file's text, whose globals the source rule hashes.
        self.used_global_vals = {}

    @property
    def interpret(self):
        """Run kernel[grid](...) on the host interpreter instead of the GPU."""
        return self._interpret

    @interpret.setter
    def interpret(self, value):
        self._interpret = bool(value)
        self._direct = None  # the next kernel[grid] asks _subscript again

    @property
    def backend(self):
        """The back-end asked for: "llvm", "nvrtc", or "" (TESSERA_BACKEND, else llvm)."""
        return self._backend

    @backend.setter
    def backend(self, value):
        self._backend = _check_backend(value)
        if self._handle is not None:
            self._handle.backend = self._backend

    @property
    def src(self):
        """The function's source lines as they stand in its file (decorators and indentation included);
        in the compatibility mode Triton's spelling: dedented, from `def` on (code written for Triton
        parses it with ast, or substitutes multi-line text at its indentation). _unsafe_update_src takes
        either. tessera's own spelling stays the file's text: the conformance harness's adapter finds
        these lines in the file to patch kernels."""
        import inspect
        text = inspect.getsource(self.fn)
        compat = sys.modules.get("tessera.compat")
        if compat is not None and compat.installed():
            import re
            import textwrap
            text = textwrap.dedent(text)
            start = re.search(r"^def\s+\w+\s*\(", text, re.MULTILINE)
            text = text[start.start():] if start else text
        return text

    def _source(self):
        """(text, path, first_line) the C++ compiler gets: see tessera/_source.py."""
        return self._source_and_dependencies()[:3]

    def _source_and_dependencies(self):
        """(text, path, first_line, depends elsewhere, _compose.Reads): the kernel's source, reduced
        once per JITFunction (3 to 10 ms a kernel, most of a compile hit) or read from the disk cache
        (_source_cache.py): the handle, tessera.compile() and cache_key share it, as kernel[grid]
        keeps its first handle's text."""
        reduced = self._reduced
        if reduced is None:
            entry = self._source_entry() if _ext.C is not None else None
            if entry is not None and entry.text is not None:
                reduced = (entry.text, self.fn.__code__.co_filename, 1, entry.reads is not None, None)
            else:
                from . import _compose
                reads = _compose.Reads(self.fn.__globals__)
                reduced = _compose.kernel_source_and_dependencies(self.fn, reads) + (reads,)
            self._reduced = reduced
        return reduced

    def _unsafe_update_src(self, new_src):
        """Triton's JITFunction._unsafe_update_src: from now on the kernel is the function `new_src`
        defines (Triton's own tests substitute expressions into a kernel template this way).

        The front-end compiles a kernel from its file's text (imports, globals, the @jit functions it
        calls), so the new definition replaces the old one's lines in a copy of that text, kept in
        linecache under a name of its own; the decorators stay. Line numbers are kept where the new
        text is as long as the old one, so errors still point into the file."""
        import inspect
        import linecache
        import textwrap
        fn = self.fn
        path = fn.__code__.co_filename
        lines = linecache.getlines(path, fn.__globals__)
        old_lines, first = inspect.getsourcelines(fn)
        if not lines or lines[first - 1:first - 1 + len(old_lines)] != old_lines:
            raise RuntimeError(f"_unsafe_update_src: cannot find the source of {self.__name__} in {path}")
        indent = old_lines[0][:len(old_lines[0]) - len(old_lines[0].lstrip())]
        decorators = _split_decorators(old_lines)[0]
        new_def = "".join(_split_decorators(textwrap.dedent(new_src).splitlines(True))[1])
        body = textwrap.indent(new_def, indent).splitlines(True)
        body = [line if line.endswith("\n") else line + "\n" for line in body]
        new_lines = decorators + body
        text = lines[:first - 1] + new_lines + lines[first - 1 + len(old_lines):]
        fake_path = f"{path.split('::patched-')[0]}::patched-{next(_patch_counter)}"
        linecache.cache[fake_path] = (sum(map(len, text)), None, text, fake_path)
        code = compile("\n" * (first - 1) + textwrap.dedent("".join(new_lines)), fake_path, "exec")
        namespace = {}
        exec(code, fn.__globals__, namespace)
        new_fn = namespace[fn.__name__]
        while isinstance(new_fn, JITFunction):  # the decorators ran again
            new_fn = new_fn.fn
        JITFunction.__init__(self, new_fn, **self.options)

    def _defaults(self):
        fn = self.fn
        code = getattr(fn, "__code__", None)
        if code is None or hasattr(fn, "__wrapped__"):  # not a plain function: ask inspect
            import inspect
            return {name: p.default for name, p in inspect.signature(fn).parameters.items()
                    if p.default is not inspect.Parameter.empty}
        # A plain function's defaults without inspect.signature (0.1 ms of a warm start in a new process).
        positional = code.co_varnames[:code.co_argcount]
        values = fn.__defaults__ or ()
        out = dict(zip(positional[len(positional) - len(values):], values))
        out.update(fn.__kwdefaults__ or {})
        return out

    def _interpret_launch(self, grid, args, kwargs):
        """Runs the kernel on the host (interpret mode); returns the specialisation's
        InterpretedKernel."""
        if self._interpreter is None:
            text, path, first_line = self._source()
            interpreter = _ext.require().Interpreter(text, path, first_line, self.__name__, self._defaults(),
                                                     self.options.get("do_not_specialize"),
                                                     bool(self.options.get("debug", True)))
            # A weak reference: the interpreter's cache holds what the factory makes.
            interpreter.result_factory = functools.partial(InterpretedKernel, weakref.ref(self))
            self._interpreter = interpreter
        return self._interpreter.run(grid, args, kwargs)

    def _source_entry(self):
        """What the disk cache remembers of this kernel (_source_cache.Entry), read once."""
        entry = self._entry
        if entry is None:
            entry = self._entry = _source_cache.lookup(_ext.require(), self.fn)
        return entry

    def _new_handle(self, C):
        """The extension's JitKernel for this kernel: from the reduction remembered on disk when
        there is one (_source_cache.py: a warm start)."""
        # (The constexpr parameters the kernel calls are a launch's question, asked before this on that
        # path, so that the entry written with the reduction holds the answer; compiling never asks.)
        return _source_cache.jit_kernel(C, self._source_entry(), self.fn, self.__name__, self._defaults(),
                                        self.options.get("do_not_specialize"), self._source_and_dependencies)

    def _get_handle(self):
        if self._handle is None:
            C = _ext.require()
            handle = self._new_handle(C)
            if self._backend:  # a new handle's is "" (TESSERA_BACKEND)
                handle.backend = self._backend
            name_of = self.options.get("repr")
            handle.compiled_kernel_factory = CompiledKernel if name_of is None else \
                _compiled_kernel_factory(name_of, handle.params)
            self._handle = handle
            self._launch = C.launch
            # kernel[grid](...) without Python in between: a vectorcall object (bindings/FastLaunch.cpp).
            self._fast = C.KernelLauncher(self._handle)
            self.__dict__.pop("_guarded", None)  # a launcher of an earlier handle
        return self._handle

    @property
    def params(self):
        """[KernelParam(name, is_constexpr, has_default)] of the kernel's parameters (tuples)."""
        if self.fn is None:
            return self._params_without_function()
        handle = self._get_handle()
        if self.__dict__.get("_params_of") is not handle:
            import inspect
            signature = inspect.signature(self.fn).parameters
            listed = lambda option: set(self.options.get(option) or ())  # names or positions
            dns, dnsa = listed("do_not_specialize"), listed("do_not_specialize_on_alignment")
            self._kernel_params = []
            for num, p in enumerate(handle.params):
                declared = signature.get(p[0])
                annotation = "" if declared is None or declared.annotation is inspect.Parameter.empty else \
                    getattr(declared.annotation, "__name__", str(declared.annotation))
                self._kernel_params.append(KernelParam(
                    *p, num=num, default=inspect.Parameter.empty if declared is None else declared.default,
                    annotation=annotation, do_not_specialize=p[0] in dns or num in dns,
                    do_not_specialize_on_alignment=p[0] in dnsa or num in dnsa))
            self._params_of = handle
        return self._kernel_params

    def _params_without_function(self):
        """params of a JITFunction unpickled without its Python function (torch's Inductor drops it
        before sending a kernel back from a compile worker: docs/torch-compile.md)."""
        params = self.__dict__.get("_kernel_params")
        if params is None:
            raise RuntimeError(f"{self.__name__}: this JITFunction has no Python function (it was pickled "
                               "without one) and no parameters were read before")
        return params

    @property
    def arg_names(self):
        return [p[0] for p in self.params]

    @property
    def constexprs(self):
        return [i for i, p in enumerate(self.params) if p[1]]

    def _function_params(self):
        """The constexpr parameters the kernel calls (they may receive @jit functions)."""
        params = self.__dict__.get("_fn_params")
        if params is None:
            params = self._fn_params = _source_cache.callable_params(_ext.require(), self._source_entry(), self.fn)
        return params

    def _with_functions(self, args, kwargs):
        """(kernel, args, kwargs): for @jit functions passed as constexprs, the kernel composed
        with their source (compose()) and the functions replaced by their names."""
        functions, args, kwargs = _function_args.split_function_args(self, args, kwargs)
        if not functions:
            return self, args, kwargs
        kernel = compose(self, functions)
        kwargs.update(_function_args.function_constexprs(functions))
        return kernel, args, kwargs

    def _subscript(self, grid):
        """kernel[grid] while self._direct is None (the C base class calls this)."""
        if self.interpret:
            return _Launcher(self, grid)
        self._direct = self._direct_launcher()  # from now on kernel[grid] is the C slot alone
        return self._direct[grid]

    def _direct_launcher(self):
        """What kernel[grid] and run() launch through: the C++ launcher, guarded (FastLaunch.cpp) for a
        kernel whose constexprs may receive @jit functions: a launch with only plain arguments (no
        function among them) goes straight to C++, any other to _Launcher (composing the kernel)."""
        if self._handle is None:
            self._get_handle()
        if not self._function_params():
            return self._fast
        guarded = self.__dict__.get("_guarded")
        if guarded is None:
            # A weak reference: the launcher is held by this JITFunction (no cycle the GC cannot see).
            fallback = functools.partial(_launch_in_python, weakref.ref(self))
            guarded = self._guarded = _ext.require().KernelLauncher(self._handle, fallback)
        return guarded

    def run(self, *args, grid, warmup=False, **kwargs):
        """Triton's spelling: kernel.run(*args, grid=grid, warmup=False, **kwargs)."""
        if warmup:
            return self.warmup(*args, grid=grid, **kwargs)
        direct = self._direct  # set when not interpreted (see _subscript)
        if direct is not None:
            return direct(grid, *args, **kwargs)  # KernelLauncher(grid, *args, **kwargs): vectorcall
        if self.interpret:
            return _Launcher(self, grid)(*args, **kwargs)
        self._direct = direct = self._direct_launcher()
        return direct(grid, *args, **kwargs)

    def warmup(self, *args, grid=None, target="", **kwargs):
        """Compiles for these arguments without launching (needs no GPU: without one it
        compiles for `target`, default sm_90a; Triton's `arch="sm80"` names it too). Returns the
        specialisation's CompiledKernel: the object its launches return (a later launch reuses what
        was compiled)."""
        if "arch" in kwargs and "arch" not in self.arg_names:  # Triton's option, unless a parameter's name
            arch = kwargs.pop("arch")
            if arch is not None and not target:
                target = _target_of_triton_arch(arch)
        if self._function_params():
            kernel, args, kwargs = self._with_functions(args, kwargs)
            if kernel is not self:
                return kernel.warmup(*args, grid=grid, target=target, **kwargs)
        return self._get_handle().warmup(args, kwargs, target)

    def specialization(self, *args, **kwargs):
        """(signature, constexprs, options, device) these arguments specialise to, e.g.
        ("*fp32:16,*fp32:16,*fp32:16,i32", {"BLOCK_SIZE": 1024}, {"num_warps": 4, ...}, 0)."""
        return self._get_handle().specialization(args, kwargs)

    def cache_info(self):
        return self._get_handle().cache_info() if self._handle is not None else {"compiled": 0, "loaded": {}}

    def __repr__(self):
        return f"JITFunction({self.__module__}:{self.__qualname__})"  # also without its function (unpickled)

    # What a JITFunction made for itself at run time (the extension's handles, the interpreter, locks):
    # not state. pickle and copy.copy() leave them out; the copy makes its own on first use.
    _RUNTIME_STATE = ("_fast", "_guarded", "_params_of", "_fn_params", "_composed", "_hash_lock")
    # Made again on first use (the reduced source too: a copy may be unpickled where the files differ).
    _RUNTIME_HANDLES = {"_handle": None, "_launch": None, "_interpreter": None, "_reduced": None}

    def __getstate__(self):
        # The C base's _direct is not state either: a copy asks _subscript again on its first kernel[grid].
        if self.fn is not None and "_kernel_params" not in self.__dict__ and _ext.C is not None:
            self.params  # read while the function is here: an unpickled copy may come without it
        state = {k: v for k, v in self.__dict__.items() if k not in self._RUNTIME_STATE}
        state.update(self._RUNTIME_HANDLES)
        if self.fn is None:  # dropped by the owner (Inductor's prepare_for_pickle): so is its alias
            state.pop("__wrapped__", None)
        return state

    def repr(self, _=None):
        """Triton's JITFunction.repr(specialization): the kernel's name (Inductor calls it before
        pickling)."""
        return self.__name__

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"{self.__name__} is a tessera kernel: launch it with {self.__name__}[grid](...), "
            "or call it from another @tessera.jit function")

    # Triton's JITFunction attributes that libraries read (docs/compatibility.md).
    @property
    def cache_key(self):
        """A digest of the source the kernel compiles from: it changes when that source does."""
        import hashlib
        text, path, first_line = self._source()
        return hashlib.sha256(f"{path}:{first_line}:{self.__name__}\n{text}".encode()).hexdigest()

    @property
    def signature(self):
        import inspect
        return inspect.signature(self.fn)

    @property
    def __globals__(self):
        if "_globals" in self.__dict__:
            return self._globals
        return self.fn.__globals__

    @__globals__.setter
    def __globals__(self, value):
        """Settable as Triton's attribute is (Inductor sets None before pickling, and back after)."""
        if self.fn is not None and value is self.fn.__globals__:
            self.__dict__.pop("_globals", None)  # back to the function's own
        else:
            self._globals = value

    @property
    def module(self):
        return self.fn.__module__

    @property
    def starting_line_number(self):
        return self.fn.__code__.co_firstlineno

    @property
    def do_not_specialize(self):
        return list(self.options.get("do_not_specialize") or [])

    @property
    def debug(self):
        return self.options.get("debug")

    @property
    def noinline(self):
        return bool(self.options.get("noinline", False))


def _target_of_triton_arch(arch):
    """Triton's arch option ("sm80", "sm90a", 90) as tessera's target ("sm_80", "sm_90a")."""
    text = str(arch)
    if text.startswith("sm") and not text.startswith("sm_"):
        text = "sm_" + text[2:]
    elif text.isdigit():
        text = "sm_" + text
    return text


def _compiled_kernel_factory(name_of, params):
    """What the C++ cache calls once per compiled specialisation: its CompiledKernel. `name_of`:
    Triton's @jit(repr=fn), which names it from the specialisation."""
    if name_of is None:
        return CompiledKernel
    return lambda h: CompiledKernel(h, name_of(specialization_proxy(params, h.signature, h.constexprs)))


class InterpretedKernel:
    """One specialisation of an interpreted kernel, what its launches return: launched again
    with the runtime arguments (or every parameter, constexprs ignored), as a CompiledKernel
    is. Its compiled form's attributes (asm, metadata, n_regs, ...) compile the same
    specialisation (for the GPU's arch; sm_90a without one) on first use."""

    def __init__(self, fn_ref, signature, constexprs, num_warps, num_stages):
        fn = fn_ref()
        params = fn.params
        self._fn_ref = fn_ref
        self._names = [p.name for p in params]
        self._is_constexpr = [p.is_constexpr for p in params]
        self.signature = signature
        # Runtime parameters specialised as None are in `constexprs` too: what the compiler takes.
        self._specialised = dict(constexprs)
        self.constexprs = {k: v for k, v in constexprs.items() if k in self._names
                           and self._is_constexpr[self._names.index(k)]}
        self.num_warps, self.num_stages = num_warps, num_stages
        self.name = fn.__name__
        self._compiled = None

    def _fn(self):
        fn = self._fn_ref()
        if fn is None:
            raise RuntimeError(f"{self.name}: its @jit function no longer exists")
        return fn

    def __getitem__(self, grid):
        def launch(*args, stream=None):
            self.run(grid, *args)
        return launch

    def run(self, grid, *args, stream=None):
        runtime = [n for n, c in zip(self._names, self._is_constexpr) if not c]
        if len(args) == len(self._names):
            args = [a for a, c in zip(args, self._is_constexpr) if not c]
        self._fn()._interpret_launch(grid, (), {**dict(zip(runtime, args)), **self.constexprs,
                                                "num_warps": self.num_warps, "num_stages": self.num_stages})

    def compiled(self):
        """The CompiledKernel of this specialisation (compiled on first use, no GPU needed)."""
        if self._compiled is None:
            fn = self._fn()
            C = _ext.require()
            text, path, first_line = fn._source()
            arch = "" if C.driver_available() and C.device_count() > 0 else "sm_90a"
            handle = C.compile(text, path, first_line, fn.__name__, self.signature, self._specialised,
                               self.num_warps, self.num_stages, arch, fn.backend)
            self._compiled = _compiled_kernel_factory(fn.options.get("repr"), fn._get_handle().params)(handle)
        return self._compiled

    def __getattr__(self, name):  # asm, metadata, packed_metadata, n_regs, n_spills, hash, ...
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __repr__(self):
        return f"InterpretedKernel({self.name}, signature={self.signature!r}, constexprs={self.constexprs})"


_NO_DEFAULT = object()  # KernelParam's default when none is given: inspect.Parameter.empty, imported then


# JITFunction.params' entries: tuples (name, is_constexpr, has_default), with Triton's KernelParam
# attribute names; its other attributes (num, default, do_not_specialize, ...) beside the tuple.
class KernelParam(collections.namedtuple("KernelParam", ["name", "is_constexpr", "has_default"])):
    def __new__(cls, name, is_constexpr, has_default, num=None, default=_NO_DEFAULT,
                annotation="", do_not_specialize=False, do_not_specialize_on_alignment=False):
        """`default`: the parameter's default; inspect.Parameter.empty (Triton's value) without one."""
        if default is _NO_DEFAULT:
            import inspect
            default = inspect.Parameter.empty
        param = super().__new__(cls, name, is_constexpr, has_default)
        param.num = num
        param.default = default
        param.annotation = annotation
        param.do_not_specialize = do_not_specialize
        param.do_not_specialize_on_alignment = do_not_specialize_on_alignment
        param.is_const = False
        return param


class SourceKernel(JITFunction):
    """A @jit kernel compiled from a given source text (not from a Python function's file)."""

    def __init__(self, text, name, path, params_defaults=None, **options):
        def placeholder():
            pass
        placeholder.__name__ = name
        placeholder.__qualname__ = name
        placeholder.__module__ = "tessera._generated"
        super().__init__(placeholder, **options)
        self.text = text
        self.path = path
        self._param_defaults = dict(params_defaults or {})

    @property
    def src(self):
        return self.text

    def _source(self):
        return self.text, self.path, 1

    def _defaults(self):
        return dict(self._param_defaults)

    def _new_handle(self, C):
        return C.JitKernel(self.text, self.path, 1, self.__name__, self._defaults(),
                           self.options.get("do_not_specialize"))

    def _source_entry(self):
        return _source_cache.Entry(None)  # no file of its own: nothing remembered

    def __repr__(self):
        return f"SourceKernel({self.__name__} from {self.path})"


def _kernel_text(kernel):
    if isinstance(kernel, SourceKernel):
        return kernel.text, kernel.path, None
    text, path, first_line = kernel._source()
    if first_line != 1:
        # A kernel without a file of its own: its function text (with the prelude) becomes line 1.
        path = f"{path} (from line {first_line})"
    return text, path, kernel.fn.__code__.co_filename


def compose(kernel, functions):
    """A SourceKernel: `kernel` (a JITFunction) with the @jit functions `functions`
    ({constexpr name: function}) appended to its source. Launch it with
    {name: function.__name__} as those constexprs (_compose.function_constexprs())."""
    from . import _compose
    jfs = {}
    for param, f in functions.items():
        jf = _compose.as_jit(f)
        if jf is None:
            raise _compose.CompositionError(f"{kernel.__name__}(): constexpr '{param}' must be a @tessera.jit "
                                            f"function, got {type(f).__name__}")
        jfs[param] = jf
    cache = kernel.__dict__.setdefault("_composed", {})
    key = tuple(sorted((p, id(jf.fn)) for p, jf in jfs.items()))
    hit = cache.get(key)
    if hit is not None:
        return hit[0]
    text, path, file = _kernel_text(kernel)
    if not text.endswith("\n"):
        text += "\n"
    extra = _compose.function_source(list(jfs.values()), text, file)
    options = dict(kernel.options)
    options["interpret"] = kernel.interpret
    options["backend"] = kernel.backend or None
    composed = SourceKernel(text + extra, kernel.__name__, path, kernel._defaults(), **options)
    # Keep the functions alive so that id() stays unique for the cache entry.
    cache[key] = (composed, [jf.fn for jf in jfs.values()])
    return composed


def _launch_in_python(fn_ref, grid, *args, **kwargs):
    """A guarded launcher's fallback: kernel[grid](*args, **kwargs) through _Launcher (arguments that
    may hold @jit functions)."""
    fn = fn_ref()
    if fn is None:
        raise RuntimeError("the @jit function of this launcher no longer exists")
    return _Launcher(fn, grid)(*args, **kwargs)


class _Launcher:
    """kernel[grid]: calling it launches."""
    __slots__ = ("_fn", "_grid")

    def __init__(self, fn, grid):
        self._fn = fn
        self._grid = grid

    def __call__(self, *args, **kwargs):
        """Launches; returns the specialisation's CompiledKernel (InterpretedKernel)."""
        fn = self._fn
        if fn._function_params():
            kernel, args, kwargs = fn._with_functions(args, kwargs)
            if kernel is not fn:
                return kernel[self._grid](*args, **kwargs)
            if not fn.interpret:  # no function given: the C++ fast path
                if fn._handle is None:
                    fn._get_handle()
                return fn._fast[self._grid](*args, **kwargs)
        if fn.interpret:
            return fn._interpret_launch(self._grid, args, kwargs)
        handle = fn._handle if fn._handle is not None else fn._get_handle()
        return fn._launch(handle, self._grid, args, kwargs, None)


def jit(fn=None, **options):
    """Use as @jit or @jit(do_not_specialize=["n"], interpret=True, ...). As in Triton,
    repr=fn names what warmup() returns: fn(specialization) with .signature and .constants
    (tessera._compiled_kernel.specialization_proxy); the PTX entry keeps the function's name."""
    if fn is None:
        return lambda f: JITFunction(f, **options)
    return JITFunction(fn, **options)
