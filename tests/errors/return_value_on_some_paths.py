# RUN: --kernel k --signature "*fp32,i32"
import tessera
import tessera.language as tl

@tessera.jit
def clamp_index(i, n):
    if i >= n:
        return n - 1
    return  # a value on one path, None on another (falling off the end would return poison)

@tessera.jit
def k(x_ptr, n):
    tl.store(x_ptr + clamp_index(tl.program_id(0), n), 1.0)
