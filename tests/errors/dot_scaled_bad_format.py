# RUN: --kernel k --signature "*u8,*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, out_ptr):
    i = tl.arange(0, 32)
    x = tl.load(x_ptr + i[:, None] * 32 + i[None, :])
    c = tl.dot_scaled(x, None, "e4m3", x, None, "mxfp4")
    tl.store(out_ptr + i[:, None] * 32 + i[None, :], c)
