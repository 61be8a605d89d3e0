# RUN: --kernel k --signature "*i1,*fp8e4nv"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, y_ptr):
    o = tl.arange(0, 128)
    tl.store(y_ptr + o, tl.cast(tl.load(x_ptr + o), tl.float8e4nv))
