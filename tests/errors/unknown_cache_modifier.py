# RUN: --kernel k --signature "*fp32,*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, y_ptr):
    offs = tl.arange(0, 64)
    x = tl.load(x_ptr + offs, cache_modifier=".zz")
    tl.store(y_ptr + offs, x)
