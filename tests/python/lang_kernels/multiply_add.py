import tessera
import tessera.language as tl


@tessera.jit
def axpy_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """x * y + z: one fma.rn.f32 with floating-point contraction (the default), a rounded
    multiply and a rounded add without (tests/python/test_compile_options.py)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    z = tl.load(z_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * y + z, mask=mask)
