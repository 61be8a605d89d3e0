import tessera
import tessera.language as tl


@tessera.jit
def rand_kernel(out_ptr, iout_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    r = tl.rand(seed, offs)
    g = tl.randn(seed, offs)
    i = tl.randint(seed, offs)
    a, b, c, d = tl.randint4x(seed, offs)
    u1, u2, u3, u4 = tl.rand4x(seed, offs)
    n1, n2, n3, n4 = tl.randn4x(seed, offs)
    tl.store(out_ptr + offs, r + g + u1 + u2 + u3 + u4 + n1 + n2 + n3 + n4, mask=m)
    tl.store(iout_ptr + offs, i + a + b + c + d, mask=m)
