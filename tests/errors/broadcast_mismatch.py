# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr):
    a = tl.arange(0, 64)
    b = tl.arange(0, 32)
    tl.store(x_ptr + a + b, 1.0)
