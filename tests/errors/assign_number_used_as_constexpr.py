# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr):
    B = 128
    tl.store(x_ptr + tl.arange(0, B), 1.0)
