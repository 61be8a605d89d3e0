# RUN: --kernel k --signature "*fp8e5"
import tessera
import tessera.language as tl

@tessera.jit
def k(y_ptr):
    o = tl.arange(0, 128)
    tl.store(y_ptr + o, o)
