# RUN: --kernel k --signature "*fp32,i32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, n):
    offsets = tl.arange(0, n)
    tl.store(x_ptr + offsets, 1.0)
