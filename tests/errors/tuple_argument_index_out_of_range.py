# RUN: --kernel k --signature "(*fp32:16,(*i32,None)),i32"
import tessera
import tessera.language as tl

@tessera.jit
def k(ptrs, n):
    tl.store(ptrs[1][0], n)
    tl.store(ptrs[2], n)
