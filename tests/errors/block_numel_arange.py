# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr):
    offsets = tl.arange(0, 2**21)
    tl.store(x_ptr + offsets, 1.0)
