# RUN: --kernel k --signature "*i32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr):
    tl.atomic_add(x_ptr + tl.arange(0, 64), 1, sem="seq_cst")
