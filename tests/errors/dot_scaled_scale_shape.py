# RUN: --kernel k --signature "*u8,*u8,*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr, scale_ptr, out_ptr):
    i = tl.arange(0, 64)
    x = tl.load(x_ptr + i[:, None] * 64 + i[None, :])
    scale = tl.load(scale_ptr + i[None, :] * 2 + tl.arange(0, 2)[:, None])  # [2, 64]: transposed
    c = tl.dot_scaled(x, None, "e4m3", x, scale, "e5m2")
    tl.store(out_ptr + i[:, None] * 64 + i[None, :], c)
