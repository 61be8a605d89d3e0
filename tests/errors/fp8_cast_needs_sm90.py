# RUN: --kernel k --signature "*fp32,*fp8e4nv" --arch sm_80
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, y_ptr):
    offs = tl.arange(0, 64)
    x = tl.load(x_ptr + offs)
    y = x.to(tl.float8e4nv)
    tl.store(y_ptr + offs, y)
