# RUN: --kernel k --signature "*fp32,i32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, n):
    for i in tl.static_range(4):
        if i < n:
            break
        tl.store(x_ptr + i, 1.0)
