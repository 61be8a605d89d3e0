# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr):
    a, b, c = 1, 2
    tl.store(x_ptr, a)
