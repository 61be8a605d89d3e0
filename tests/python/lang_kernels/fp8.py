import tessera
import tessera.language as tl


@tessera.jit
def fp8_kernel(x_ptr, y_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    a = x.to(tl.float8e4nv)
    b = x.to(tl.float8e5)
    tl.store(y_ptr + offs, a)
    back = a.to(tl.float32) + b.to(tl.float32) + tl.load(z_ptr + offs).to(tl.float32)
    c = tl.full((BLOCK,), 1.5, tl.float8e4nv)
    tl.store(x_ptr + offs, back + c.to(tl.float16).to(tl.float32))
