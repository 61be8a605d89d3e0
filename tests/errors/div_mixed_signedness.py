# RUN: --kernel k --signature "*i32,*u32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, y_ptr):
    x = tl.load(x_ptr)
    y = tl.load(y_ptr)
    tl.store(x_ptr, (x / y).to(tl.int32))
