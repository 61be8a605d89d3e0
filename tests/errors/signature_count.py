# RUN: --kernel k --signature "*fp32,*fp32,i32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, n):
    tl.store(x_ptr, 1.0)
