"""tl.random: Philox random numbers (the same streams as triton.language.random)."""


def _device_only(name):
    def fn(*args, **kwargs):
        raise RuntimeError(f"tessera.language.random.{name} can only be called inside a @tessera.jit kernel")
    fn.__name__ = name
    return fn


for _name in ["rand", "randn", "randint", "randint4x", "rand4x", "randn4x", "philox",
              "uint_to_uniform_float", "pair_uniform_to_normal", "philox_impl"]:
    globals()[_name] = _device_only(_name)
del _name
