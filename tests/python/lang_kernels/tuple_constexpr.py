# A tuple constexpr as a shape (tests/python/test_lang_python_builtins.py: the CLI parses "(16, 4)").
import tessera
import tessera.language as tl

@tessera.jit
def k(z_ptr, x_ptr, OUT_SHAPE: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 64))
    z = tl.reshape(x, OUT_SHAPE)
    tl.store(z_ptr + tl.arange(0, OUT_SHAPE[0])[:, None] * OUT_SHAPE[1] + tl.arange(0, OUT_SHAPE[1])[None, :], z)
