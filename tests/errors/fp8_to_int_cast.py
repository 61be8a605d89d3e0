# RUN: --kernel k --signature "*fp8e4nv,*i32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, y_ptr):
    o = tl.arange(0, 128)
    tl.store(y_ptr + o, tl.load(x_ptr + o).to(tl.int32))
