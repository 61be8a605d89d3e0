# RUN: --kernel k --signature "*fp32,(fp32,i32,4)"
import tessera
import tessera.language as tl

@tessera.jit
def k(out, pair):
    a, b = pair
    tl.store(out, a + b)
