"""@tessera.jit: marks a function as a kernel (or a device function it calls).

    @tessera.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr): ...

    add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)            # launch
    add_kernel[lambda meta: (tessera.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, out, n, BLOCK_SIZE=1024)
    add_kernel.warmup(x, y, out, n, BLOCK_SIZE=1024, grid=(1,))  # compile only -> CompiledKernel

The Python side of a launch is one call into C++ (tessera._C.launch), which
binds the arguments, specialises them as Triton does, looks the key up in a
per-device cache, compiles and loads on a miss, and launches on torch's
current stream (when the arguments are torch tensors) on the tensors' device.
Launch options: num_warps (default 4), num_stages (default 3), stream (an int
CUstream or an object with .cuda_stream; default: torch's current stream, or
the legacy default stream without torch).
"""
import inspect

from . import _source


def _ext():
    from . import _C, _C_error
    if _C is None:
        from ._loader import missing_message
        raise ImportError(missing_message(_C_error))
    return _C


class JITFunction:
    def __init__(self, fn, **options):
        self.fn = fn
        self.options = options
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self._handle = None
        self._launch = None

    @property
    def src(self):
        return inspect.getsource(self.fn)

    def _source(self):
        """(text, path, first_line) the C++ compiler gets: see tessera/_source.py."""
        return _source.kernel_source(self.fn)

    def _get_handle(self):
        if self._handle is None:
            C = _ext()
            text, path, first_line = self._source()
            defaults = {name: p.default for name, p in inspect.signature(self.fn).parameters.items()
                        if p.default is not inspect.Parameter.empty}
            self._handle = C.JitKernel(text, path, first_line, self.__name__, defaults,
                                       self.options.get("do_not_specialize"))
            self._launch = C.launch
        return self._handle

    @property
    def params(self):
        """[(name, is_constexpr, has_default)] of the kernel's parameters."""
        return self._get_handle().params

    @property
    def arg_names(self):
        return [p[0] for p in self.params]

    @property
    def constexprs(self):
        return [i for i, p in enumerate(self.params) if p[1]]

    def __getitem__(self, grid):
        return _Launcher(self, grid)

    def run(self, *args, grid, warmup=False, **kwargs):
        """Triton's spelling: kernel.run(*args, grid=grid, warmup=False, **kwargs)."""
        if warmup:
            return self.warmup(*args, grid=grid, **kwargs)
        handle = self._handle if self._handle is not None else self._get_handle()
        self._launch(handle, grid, args, kwargs, None)

    def warmup(self, *args, grid=None, target="", **kwargs):
        """Compiles for these arguments without launching (needs no GPU: without one it
        compiles for `target`, default sm_90a). Returns a CompiledKernel; a later launch
        with the same specialisation reuses it."""
        from .compiler import CompiledKernel
        return CompiledKernel(self._get_handle().warmup(args, kwargs, target))

    def specialization(self, *args, **kwargs):
        """(signature, constexprs, options, device) these arguments specialise to, e.g.
        ("*fp32:16,*fp32:16,*fp32:16,i32", {"BLOCK_SIZE": 1024}, {"num_warps": 4, ...}, 0)."""
        return self._get_handle().specialization(args, kwargs)

    def cache_info(self):
        return self._get_handle().cache_info() if self._handle is not None else {"compiled": 0, "loaded": {}}

    def __repr__(self):
        return f"JITFunction({self.fn.__module__}:{self.__qualname__})"

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"{self.__name__} is a tessera kernel: launch it with {self.__name__}[grid](...), "
            "or call it from another @tessera.jit function")


class _Launcher:
    """kernel[grid]: calling it launches."""
    __slots__ = ("_fn", "_grid")

    def __init__(self, fn, grid):
        self._fn = fn
        self._grid = grid

    def __call__(self, *args, **kwargs):
        fn = self._fn
        handle = fn._handle if fn._handle is not None else fn._get_handle()
        fn._launch(handle, self._grid, args, kwargs, None)


def jit(fn=None, **options):
    """Use as @jit or @jit(do_not_specialize=["n"], ...)."""
    if fn is None:
        return lambda f: JITFunction(f, **options)
    return JITFunction(fn, **options)
