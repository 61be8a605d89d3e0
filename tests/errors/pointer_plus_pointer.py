# RUN: --kernel k --signature "*fp32,*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(a_ptr, b_ptr):
    tl.store(a_ptr + b_ptr, 1.0)
