# RUN: --kernel k --signature "*fp32,i32"
import tessera
import tessera.language as tl

@tessera.jit
def first_negative(x_ptr, n):
    for i in range(0, n):
        if tl.load(x_ptr + i) < 0:
            return i
    return -1

@tessera.jit
def k(x_ptr, n):
    tl.store(x_ptr, first_negative(x_ptr, n).to(tl.float32))
