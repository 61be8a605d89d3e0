"""Host-side stand-ins for the language's device functions (below tessera.language and its
extra modules, which all make them)."""


def _device_only(name):
    def fn(*args, **kwargs):
        raise RuntimeError(f"tessera.language.{name} can only be called inside a @tessera.jit kernel")
    fn.__name__ = name
    fn.__module__ = "tessera.language"  # where kernels import it from (_compose's language-function imports)
    return fn
