# RUN: --kernel k --signature "*u32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr):
    x = tl.load(x_ptr)
    tl.store(x_ptr, x - (-1))
