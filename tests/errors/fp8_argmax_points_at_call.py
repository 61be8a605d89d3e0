# RUN: --kernel k --signature "*fp8e4nv,*i32" --arch sm_90a
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 32))
    tl.store(out_ptr, tl.argmax(x, axis=0))
