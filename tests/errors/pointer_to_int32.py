# RUN: --kernel k --signature "*fp32,*i32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, out_ptr):
    tl.store(out_ptr, x_ptr.to(tl.int32))
