# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 512)).reshape(2, 16, 16)
    tl.store(x_ptr + tl.arange(0, 512), tl.permute(x, 1, 0).reshape(512))
