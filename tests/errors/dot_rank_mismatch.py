# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr):
    a = tl.load(x_ptr + tl.arange(0, 256)).reshape(16, 16)
    b = tl.load(x_ptr + tl.arange(0, 512)).reshape(2, 16, 16)
    c = tl.dot(a, b)
    tl.store(x_ptr + tl.arange(0, 512), c.reshape(512))
