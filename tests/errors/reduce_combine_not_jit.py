# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

def add(a, b):
    return a + b

@tessera.jit
def k(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 64))
    tl.store(x_ptr, tl.reduce(x, 0, add))
