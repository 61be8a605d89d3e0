# RUN: --kernel k --signature "*fp8e4nv,*fp32,i32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, y_ptr, n):
    o = tl.arange(0, 128)
    v = tl.load(x_ptr + o, mask=o < n, other=0)
    tl.store(y_ptr + o, v.to(tl.float32), mask=o < n)
