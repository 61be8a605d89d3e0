# Integer semantics (tests/python/test_integer_semantics.py): mixed-signedness
# shifts and float atomic max/min, compiled through both back-ends.
import tessera
import tessera.language as tl


@tessera.jit
def shift_right(x_ptr, y_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(z_ptr + offs, x >> y)


@tessera.jit
def atomic_float_max_min(inp, out_max, out_min, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(inp + offs)
    tl.atomic_max(out_max + offs, x)
    tl.atomic_min(out_min + offs, x)


@tessera.jit
def compare_min_max(x_ptr, y_ptr, lt_ptr, min_ptr, max_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(lt_ptr + offs, x < y)
    tl.store(min_ptr + offs, tl.minimum(x, y))
    tl.store(max_ptr + offs, tl.maximum(x, y))
