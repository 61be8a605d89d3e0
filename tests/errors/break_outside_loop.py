# RUN: --kernel k --signature "*fp32,i32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, n):
    if n > 0:
        break
    tl.store(x_ptr, 1.0)
