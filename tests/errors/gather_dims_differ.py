# RUN: --kernel k --signature "*fp32,*i32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, i_ptr):
    src = tl.load(x_ptr + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :])
    idx = tl.load(i_ptr + tl.arange(0, 8)[:, None] * 8 + tl.arange(0, 8)[None, :])
    tl.store(x_ptr + tl.arange(0, 8)[:, None] * 8 + tl.arange(0, 8)[None, :], tl.gather(src, idx, 0))
