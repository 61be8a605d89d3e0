# RUN: --kernel k --signature "*u8,*i16"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, y_ptr):
    x = tl.load(x_ptr)
    y = tl.load(y_ptr)
    tl.store(y_ptr, y % x)
