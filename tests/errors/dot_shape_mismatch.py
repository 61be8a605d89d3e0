# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr):
    a = tl.load(x_ptr + tl.arange(0, 16)[:, None] * 32 + tl.arange(0, 32)[None, :])
    c = tl.dot(a, a)
    tl.store(x_ptr + tl.arange(0, 16), tl.sum(c, axis=1))
