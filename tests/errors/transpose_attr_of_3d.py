# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

@tessera.jit
def k(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 64)).reshape(2, 4, 8)
    tl.store(x_ptr + tl.arange(0, 64), x.T.reshape(64))
