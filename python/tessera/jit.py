"""@tessera.jit: marks a function as a kernel (or a device function it calls).

The decorated object keeps the function's source text and location; the
C++ compiler specialises it per call signature.
"""
import inspect


class JITFunction:
    def __init__(self, fn, **options):
        self.fn = fn
        self.options = options
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn

    @property
    def src(self):
        return inspect.getsource(self.fn)

    def __repr__(self):
        return f"JITFunction({self.fn.__module__}:{self.fn.__qualname__})"

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"{self.__name__} is a tessera kernel: launch it with {self.__name__}[grid](...), "
            "or call it from another @tessera.jit function")


def jit(fn=None, **options):
    """Use as @jit or @jit(debug=True, ...)."""
    if fn is None:
        return lambda f: JITFunction(f, **options)
    return JITFunction(fn, **options)
