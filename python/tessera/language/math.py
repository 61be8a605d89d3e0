"""tl.math: the math functions (same names as triton.language.math)."""


def _device_only(name):
    def fn(*args, **kwargs):
        raise RuntimeError(f"tessera.language.math.{name} can only be called inside a @tessera.jit kernel")
    fn.__name__ = name
    return fn


for _name in ["exp", "exp2", "log", "log2", "sqrt", "abs"]:
    globals()[_name] = _device_only(_name)
del _name
